package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
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
	endpoint := strings.TrimSuffix(m.URL(), "/") + "/agents/echo"
	hc := bench.NewClient(*clients)
	defer hc.CloseIdleConnections()

	fmt.Printf("bench list: ListTasks (pageSize 50) on a dev mesh at %s, %d calls per level\n", endpoint, *calls)
	// A row as soon as its level is measured (a large level takes minutes).
	const row = "%14v  %12v  %-16v  %10v  %10v  %10v  %6v  %10v\n"
	fmt.Printf(row, "retained tasks", "fill tasks/s", "query", "list p50", "p99", "max", "tasks", "totalSize")
	have := 0
	for _, level := range levels {
		fill := bench.Result{}
		if n := level - have; n > 0 {
			fill, err = bench.Run(ctx, bench.Options{URL: endpoint, Method: bench.MethodSend10, Concurrency: *clients,
				Duration: bench.MaxDuration, MaxRequests: int64(n), Client: hc})
			if err != nil {
				return err
			}
			if fill.Errors > 0 {
				return fmt.Errorf("filling to %d tasks: %d sends failed: %v", level, fill.Errors, fill.ErrorSummary())
			}
			have += int(fill.Tasks)
		}
		first, err := bench.ListLatency(ctx, hc, endpoint, 1, "")
		if err != nil {
			return err
		}
		if first.FirstError != "" {
			return fmt.Errorf("at %d tasks: ListTasks: %s", have, first.FirstError)
		}
		for _, q := range listQueries(first.NextPageToken) {
			res, err := bench.ListLatency(ctx, hc, endpoint, *calls, q.params)
			if err != nil {
				return err
			}
			if res.FirstError != "" {
				return fmt.Errorf("at %d tasks: ListTasks %s: %s", have, q.name, res.FirstError)
			}
			fmt.Printf(row, have, fmt.Sprintf("%.0f", fill.Throughput), q.name,
				fmtLatency(res.P50), fmtLatency(res.P99), fmtLatency(res.Max), res.PageTasks, res.TotalSize)
		}
	}
	return nil
}

type listQuery struct{ name, params string }

// listQueries are the ListTasks calls bench list times at each level: the
// first page; the page after it; a status every task has (completed); a
// status none has (working: the whole index is looked through); a
// context no task has (the server's subject filter answers).
func listQueries(next string) []listQuery {
	qs := []listQuery{{"first page", bench.ListFirstPage}}
	if next != "" {
		qs = append(qs, listQuery{"second page", `{"pageSize":50,"historyLength":0,"pageToken":"` + next + `"}`})
	}
	return append(qs,
		listQuery{"status=completed", `{"pageSize":50,"historyLength":0,"status":"TASK_STATE_COMPLETED"}`},
		listQuery{"status=working", `{"pageSize":50,"historyLength":0,"status":"TASK_STATE_WORKING"}`},
		listQuery{"unknown context", `{"pageSize":50,"historyLength":0,"contextId":"no-such-context"}`})
}
