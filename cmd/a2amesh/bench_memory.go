package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bench"
)

// runBenchMemory sends many tasks through a mesh with --max-tasks below
// them and reports what each process and the NATS data directory take at
// each level (bench.RunMemory).
func runBenchMemory(ctx context.Context, args []string) error {
	fs := newFlagSet("bench memory", "",
		"Measure what a mesh's processes and disk take as tasks go through it, past --max-tasks.\n\n"+
			"Starts `a2amesh nats`, `a2amesh edge` and `a2amesh worker --agent echo` (--roles split)\n"+
			"or one `a2amesh dev` (--roles dev) as processes of this binary, sends blocking 1.0\n"+
			"SendMessage calls to echo (a fresh messageId each) with --clients senders, and at each\n"+
			"--tasks level reports every process's RSS (highest under load, after --idle, and after\n"+
			"a forced GC that returns freed memory to the OS), the Go heap, the NATS data\n"+
			"directory's disk use and what the JetStream streams hold, then memory per retained task.")
	levelsFlag := fs.String("tasks", "100000,500000,1000000", fmt.Sprintf("comma-separated numbers of tasks sent in all, increasing, at most %d", bench.MaxMemoryTasks))
	maxTasks := fs.Int64("max-tasks", 100_000, "the mesh's --max-tasks (tasks retained)")
	clients := fs.Int("clients", 64, "concurrent blocking senders")
	roles := fs.String("roles", bench.RolesSplit, `"split": nats, edge and worker processes (each with --pprof-listen); "dev": one dev process (no profiles)`)
	idle := fs.Duration("idle", 10*time.Second, "rest after each level's load before the idle figures")
	settle := fs.Duration("settle", time.Minute, "wait at most this long after each level's load for the trimmer to bring the retained tasks to 90% of --max-tasks")
	heapDir := fs.String("heap-profile", "", "write a heap profile of each Go process serving profiles at each level into this directory (default: none)")
	dataDir := fs.String("data", "", "data directory of the mesh, kept afterwards (default: a temporary directory, removed)")
	bin := fs.String("bin", "", "a2amesh binary to start the processes from (default: this one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var levels []int64
	for _, f := range strings.Split(*levelsFlag, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 1 || n > bench.MaxMemoryTasks || len(levels) > 0 && n <= levels[len(levels)-1] {
			return fmt.Errorf("--tasks: %q: want increasing numbers in [1, %d]", f, bench.MaxMemoryTasks)
		}
		levels = append(levels, n)
	}
	var err error
	if *bin, err = benchBinary(*bin); err != nil {
		return err
	}
	o := bench.MemoryOptions{Levels: levels, MaxTasks: *maxTasks, Clients: *clients, Roles: *roles, Bin: *bin,
		DataDir: *dataDir, Idle: *idle, Settle: *settle, HeapProfileDir: *heapDir,
		Progress: func(msg string) {
			fmt.Fprintf(os.Stderr, "bench memory: %s %s\n", time.Now().UTC().Format("15:04:05"), msg)
		},
		Measured: func(l bench.MemoryLevel) { fmt.Fprintln(os.Stderr, "bench memory: "+l.Line()) },
	}
	// Every figure of a level is printed once it is measured (a level of
	// 10^6 tasks takes a while); the summary comes at the end.
	res, err := bench.RunMemory(ctx, o)
	bench.PrintMemory(os.Stdout, res, *idle)
	return err
}
