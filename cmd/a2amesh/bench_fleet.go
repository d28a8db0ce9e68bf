package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/chaos"
)

// runBenchFleet measures what a fleet of processes does when its parts
// come and go: a worker started for an agent whose sends queued, the
// registry across NATS node restarts, and a rolling restart under load.
func runBenchFleet(ctx context.Context, args []string) error {
	fs := newFlagSet("bench fleet", "",
		"Measure a fleet as its processes come and go (3 NATS nodes, 2 edges, workers; all\n"+
			"processes of this binary on loopback), and print markdown tables:\n\n"+
			"  scale from zero   sends queue for an agent with no worker; a worker starts; the\n"+
			"                    time to the first answer and to every queued task completed\n"+
			"  NATS restarts     kill -9 a NATS node, start or stop a worker while it is down,\n"+
			"                    restart the node; the time until every edge shows the change\n"+
			"  rolling restart   SIGTERM and restart each worker, then each edge, under blocking\n"+
			"                    load; clients route to an edge for --route-lag after its SIGTERM;\n"+
			"                    nothing retries, every failed request counts")
	scale := fs.Int("scale-rounds", 20, "scale-from-zero rounds; 0 skips them")
	queued := fs.Int("queued", 10, "sends queued in each scale-from-zero round besides the timed blocking one")
	restarts := fs.Int("nats-restarts", 20, "NATS node restarts, each with a worker started or stopped while the node is down; 0 skips them")
	down := fs.Duration("nats-down", time.Second, "how long a killed NATS node stays down")
	rolling := fs.Bool("rolling", true, "run the rolling restart")
	clients := fs.Int("clients", 16, "rolling restart: concurrent blocking clients")
	workers := fs.Int("workers", 4, "rolling restart: echo workers")
	drain := fs.Duration("drain", defaultDrain, "rolling restart: the edges' --drain (0: no drain)")
	lag := fs.Duration("route-lag", time.Second, "rolling restart: how long clients still route to an edge after its SIGTERM")
	bin := fs.String("bin", "", "a2amesh binary the roles run (default: this one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := benchBinary(*bin)
	if err != nil {
		return err
	}
	fig, err := chaos.RunFigures(ctx, chaos.FiguresConfig{
		Bin: path, ScaleRounds: *scale, Queued: *queued, Restarts: *restarts, NATSDown: *down,
		Rolling: *rolling, RollClients: *clients, RollWorkers: *workers, Drain: *drain, RouteLag: *lag,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench fleet: "+format+"\n", args...) },
	})
	if fig != nil {
		printFigures(os.Stdout, fig)
	}
	return err
}

func printFigures(w io.Writer, f *chaos.Figures) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	row := func(name string, v []time.Duration) {
		if len(v) == 0 {
			return
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", name, len(v), ms(v[0]), ms(v[len(v)/2]), ms(v[(len(v)*9)/10]), ms(v[len(v)-1]))
	}
	head := "| | n | min | p50 | p90 | max |\n|---|---|---|---|---|---|\n"
	if len(f.ScaleFromZero) > 0 {
		var first, all []time.Duration
		for _, r := range f.ScaleFromZero {
			first, all = append(first, r.FirstAnswer), append(all, r.AllDone)
		}
		fmt.Fprintf(w, "\n### Scale from zero (worker process started → …)\n\n%s", head)
		row("the queued blocking send answered, completed", first)
		row(fmt.Sprintf("all %d queued tasks read back completed", f.ScaleFromZero[0].Queued), all)
	}
	if len(f.Convergence) > 0 {
		var started, registered, stopped, fromBack, down []time.Duration
		for _, r := range f.Convergence {
			fromBack, down = append(fromBack, r.FromBack), append(down, r.Down)
			if r.Change == "worker started" {
				started, registered = append(started, r.FromChange), append(registered, r.FromRegistration)
			} else {
				stopped = append(stopped, r.FromChange)
			}
		}
		fmt.Fprintf(w, "\n### Registry convergence across NATS node restarts (a worker started or stopped while a node is down)\n\n%s", head)
		row("worker registered (logs \"worker started\") → every edge lists it", registered)
		row("worker process started → every edge lists it", started)
		row("worker SIGTERM → every edge shows it gone", stopped)
		row("node listening again → every edge shows the change (0: before)", fromBack)
		row("node down (SIGKILL → listening)", down)
	}
	if r := f.Rolling; r != nil {
		fmt.Fprintf(w, "\n### Rolling restart: %d workers then 2 edges, %d blocking clients, --drain %v, clients route to an edge %v after its SIGTERM\n\n",
			r.Workers, r.Clients, r.Drain, r.RouteLag)
		fmt.Fprintf(w, "| requests | failed | p50 | p99 | max | took |\n|---|---|---|---|---|---|\n")
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s |\n", r.Requests, r.Failures, ms(r.P50), ms(r.P99), ms(r.Max), r.Took.Round(100*time.Millisecond))
		if r.Failures > 0 {
			var kinds []string
			for k, n := range r.Failed {
				kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
			}
			sort.Strings(kinds)
			fmt.Fprintf(w, "\nfailures: %s\n", strings.Join(kinds, ", "))
			for _, e := range r.Examples {
				fmt.Fprintf(w, "- %s\n", e)
			}
		}
	}
}
