package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/a2amesh/a2amesh/internal/chaos"
)

// runBenchChaos runs the chaos harness (internal/chaos): the production
// shape on loopback, under load, with a role killed every few seconds,
// then the check of every acknowledged task and stream. It exits non-zero
// on any violation.
func runBenchChaos(ctx context.Context, args []string) error {
	fs := newFlagSet("bench chaos", "",
		"Inject faults into a mesh under load (kill, pause, partition), then check every task.\n\n"+
			"Starts the production shape on loopback (a NATS cluster, edges and workers, each\n"+
			"a process of this binary), sends with --clients for --duration while injecting a\n"+
			"fault every --kill-every, then checks that every acknowledged task and stream\n"+
			"reached a consistent end. Exits non-zero on any violation.")
	duration := fs.Duration("duration", time.Minute, "how long the clients send and faults are injected (e.g. 30m for a soak run)")
	clients := fs.Int("clients", 16, "concurrent clients, half blocking, half streaming")
	killEvery := fs.String("kill-every", "3s-6s", "pause between two faults: min-max (a random pause in that range), or one duration")
	seed := fs.Int64("seed", 0, "seed of the clients' and the faults' choices, printed to repeat a run; 0: from the time")
	bin := fs.String("bin", "", "a2amesh binary the roles run (default: this one)")
	faults := fs.String("faults", chaos.FaultKill, "comma-separated faults: kill (SIGKILL any role), pause (SIGSTOP a NATS node for --pause-for), partition (cut a NATS node's routes for --partition-for)")
	pauseFor := fs.Duration("pause-for", 20*time.Second, "how long a paused NATS node stays stopped")
	partitionFor := fs.Duration("partition-for", 10*time.Second, "how long a NATS node's routes stay cut")
	dir := fs.String("dir", "", "directory for the NATS nodes' data (default: a temporary directory, removed afterwards)")
	scan := fs.String("server-scan", chaos.ScanAuto, "how the final check reads every task: list (ListTasks per agent), bucket (one pass over the task logs), auto (ListTasks up to 20000 acknowledged tasks)")
	logDir := fs.String("log-dir", "", "write each role's output tail here after the run (default: only on violations, to a new temporary directory)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	lo, hi, err := chaos.ParseRange(*killEvery)
	if err != nil {
		return fmt.Errorf("--kill-every: %w", err)
	}
	fl, err := chaos.ParseFaults(*faults)
	if err != nil {
		return fmt.Errorf("--faults: %w", err)
	}
	path, err := benchBinary(*bin)
	if err != nil {
		return err
	}
	cfg := chaos.Config{
		Bin: path, Dir: *dir, Keep: *dir != "", Duration: *duration, Clients: *clients,
		KillMin: lo, KillMax: hi, Seed: *seed, Faults: fl, PauseFor: *pauseFor, PartitionFor: *partitionFor, ServerScan: *scan,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "bench chaos: "+format+"\n", args...)
		},
	}
	return chaos.RunAndReport(ctx, cfg, os.Stdout, *logDir)
}
