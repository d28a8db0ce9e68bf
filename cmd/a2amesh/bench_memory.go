package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
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
		Measured: func(l bench.MemoryLevel) { fmt.Fprintln(os.Stderr, "bench memory: "+levelLine(l)) },
	}
	// Every figure of a level is printed once it is measured (a level of
	// 10^6 tasks takes a while); the summary comes at the end.
	res, err := bench.RunMemory(ctx, o)
	printMemory(os.Stdout, res, *idle)
	return err
}

// printMemory writes a memory run's tables.
func printMemory(w io.Writer, r bench.MemoryResult, idle time.Duration) {
	if len(r.Levels) == 0 {
		return
	}
	fmt.Fprintf(w, "bench memory: --roles %s, --max-tasks %d, %d clients, blocking SendMessage to echo\n\n", r.Roles, r.MaxTasks, r.Clients)
	fmt.Fprintln(w, "| tasks sent | completed/s | errors | retained (snapshots) | settle | events msgs / subjects | index msgs | work msgs | data dir |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, l := range r.Levels {
		ev, ix, wq := l.Stream("A2A_EVENTS"), l.Stream("A2A_INDEX"), l.Stream("A2A_WORK")
		fmt.Fprintf(w, "| %d | %.0f | %d | %d | %s | %d / %d | %d | %d | %s (%d files) |\n",
			l.Sent, l.Fill.Throughput, l.Fill.Errors, l.Retained, l.Settled.Round(100*time.Millisecond),
			ev.Msgs, ev.Subjects, ix.Msgs, wq.Msgs, fmtMiB(l.DataDir), l.DataFiles)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| tasks sent | process | RSS under load | RSS idle (%v) | RSS after GC | high-water | heap live / in use / runtime total |\n", idle)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, l := range r.Levels {
		for _, p := range l.Procs {
			gc, heap := "-", "-"
			if p.GC > 0 {
				gc = fmtMiB(p.GC)
				heap = fmt.Sprintf("%s / %s / %s", fmtMiB(p.HeapAlloc), fmtMiB(p.HeapInuse), fmtMiB(p.Sys))
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", l.Sent, p.Role, fmtMiB(p.Load), fmtMiB(p.Idle), gc, fmtMiB(p.HWM), heap)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| stream | "+levelHeads(r)+" |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---|", len(r.Levels)))
	for _, name := range []string{"A2A_EVENTS", "KV_A2A_TASKS", "A2A_INDEX", "A2A_WORK", "KV_A2A_PUSH"} {
		cells := make([]string, len(r.Levels))
		for i, l := range r.Levels {
			s := l.Stream(name)
			switch {
			case s.Missing:
				cells[i] = "-"
			case s.Unreadable:
				cells[i] = "?"
			default:
				cells[i] = fmt.Sprintf("%d msgs, %d subj, %d deleted, %s", s.Msgs, s.Subjects, s.Deleted, fmtMiB(s.Bytes))
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	// Memory per retained task: the growth over the level before any task
	// (after GC where the process serves profiles, idle otherwise),
	// divided by the tasks retained.
	base := r.Levels[0]
	fmt.Fprintln(w)
	fmt.Fprintln(w, "memory per retained task (RSS after GC, or idle RSS without profiles, minus the same before any task; ÷ retained tasks):")
	for _, l := range r.Levels[1:] {
		if l.Retained == 0 {
			continue
		}
		var parts []string
		var total float64
		for _, p := range l.Procs {
			now, was := p.GC, base.Proc(p.Role).GC
			if now == 0 {
				now, was = p.Idle, base.Proc(p.Role).Idle
			}
			per := (float64(now) - float64(was)) / float64(l.Retained)
			total += per
			s := fmt.Sprintf("%s %.2f KiB", p.Role, per/1024)
			if p.HeapAlloc > 0 {
				s += fmt.Sprintf(" (live heap %.2f KiB)", (float64(p.HeapAlloc)-float64(base.Proc(p.Role).HeapAlloc))/float64(l.Retained)/1024)
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(w, "  at %d sent, %d retained: %s; all %.2f KiB; disk %.2f KiB\n", l.Sent, l.Retained, strings.Join(parts, ", "), total/1024,
			(float64(l.DataDir)-float64(base.DataDir))/float64(l.Retained)/1024)
	}
	for _, l := range r.Levels {
		if l.Fill.Errors > 0 {
			fmt.Fprintf(w, "errors sending up to %d tasks:\n", l.Sent)
			for _, e := range l.Fill.ErrorSummary() {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	var profiles []string
	for _, l := range r.Levels {
		profiles = append(profiles, l.Profiles...)
	}
	if len(profiles) > 0 {
		fmt.Fprintf(w, "heap profiles: %s\n", strings.Join(profiles, " "))
	}
}

// levelLine is a level's figures on one line.
func levelLine(l bench.MemoryLevel) string {
	ev := l.Stream("A2A_EVENTS")
	s := fmt.Sprintf("level %d sent (%d errors, %.0f/s): %d retained, events %d msgs / %d subjects, data dir %s;",
		l.Sent, l.Fill.Errors, l.Fill.Throughput, l.Retained, ev.Msgs, ev.Subjects, fmtMiB(l.DataDir))
	for _, p := range l.Procs {
		s += fmt.Sprintf(" %s RSS load %s idle %s", p.Role, fmtMiB(p.Load), fmtMiB(p.Idle))
		if p.GC > 0 {
			s += fmt.Sprintf(" gc %s heap %s;", fmtMiB(p.GC), fmtMiB(p.HeapAlloc))
		} else {
			s += ";"
		}
	}
	return s
}

func levelHeads(r bench.MemoryResult) string {
	heads := make([]string, len(r.Levels))
	for i, l := range r.Levels {
		heads[i] = strconv.FormatInt(l.Sent, 10) + " sent"
	}
	return strings.Join(heads, " | ")
}
