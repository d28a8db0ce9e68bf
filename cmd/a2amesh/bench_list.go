package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/bench"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
)

// maxListTasks bounds the tasks one bench list run retains.
const maxListTasks = 2_000_000

// runBenchList measures how ListTasks latency grows with the tasks the
// mesh retains: it fills a dev mesh with echo tasks up to each level and
// times the first page of ListTasks there.
func runBenchList(ctx context.Context, args []string) error {
	fs := newFlagSet("bench list", "",
		"Measure ListTasks latency as the retained tasks grow.\n\n"+
			"Starts a dev mesh in this process, fills it with echo tasks (blocking sends by\n"+
			"--clients clients) up to each --tasks level, and there times --calls ListTasks\n"+
			"calls for the first page (pageSize 50, no history, no artifacts), one after another.")
	levelsFlag := fs.String("tasks", "1000,10000", fmt.Sprintf("comma-separated numbers of retained tasks to measure at, increasing, at most %d", maxListTasks))
	calls := fs.Int("calls", 20, "ListTasks calls at each level (1 to 10000)")
	clients := fs.Int("clients", 64, "concurrent senders filling the mesh")
	dataDir := fs.String("data", "", "dev mesh data directory (default: a temporary directory, removed afterwards)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var levels []int
	for _, f := range strings.Split(*levelsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxListTasks || (len(levels) > 0 && n <= levels[len(levels)-1]) {
			return fmt.Errorf("--tasks: %q: want increasing numbers in [1, %d]", f, maxListTasks)
		}
		levels = append(levels, n)
	}
	if len(levels) == 0 || len(levels) > maxBenchLevels {
		return fmt.Errorf("--tasks: 1 to %d levels", maxBenchLevels)
	}
	if *calls < 1 || *calls > 10_000 || *clients < 1 || *clients > bench.MaxConcurrency {
		return fmt.Errorf("--calls must be in [1, 10000] and --clients in [1, %d]", bench.MaxConcurrency)
	}
	dir, cleanup, err := benchDataDir(*dataDir, "a2amesh-bench-list-*")
	if err != nil {
		return err
	}
	defer cleanup()
	logger := benchLogger()
	// Retention above the top level, so nothing is evicted while filling.
	maxTasks := max(bus.DefaultMaxTasks, int64(levels[len(levels)-1])*2)
	m, err := mesh.Start(ctx, mesh.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: logger,
		Bus: bus.Config{MaxTasks: maxTasks}})
	if err != nil {
		return fmt.Errorf("starting dev mesh: %w", err)
	}
	defer m.Close()
	return bench.RunList(ctx, os.Stdout, bench.ListOptions{Endpoint: strings.TrimSuffix(m.URL(), "/") + "/agents/echo",
		Levels: levels, Calls: *calls, Clients: *clients})
}
