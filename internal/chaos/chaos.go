// Package chaos is the mesh's chaos harness: it runs the production shape
// on loopback — a 3-node `a2amesh nats` cluster, edges and workers, every
// one a real process of the a2amesh binary, with R3 streams — drives it
// with blocking and streaming A2A 1.0 clients, kills (or pauses, or cuts
// off) a random role every few seconds and starts it again, and then
// checks every promise the mesh makes about acknowledged work:
//
//   - every acknowledged task (a JSON-RPC result, or a stream's first
//     event) completed, exactly once, with exactly the right artifact, and
//     no task failed;
//   - every stream, resumed on the other edge with Last-Event-ID after a
//     break, delivered exactly the task's logged events: no gap, no
//     duplicate, ids strictly increasing;
//   - every send acknowledged, or answered -32000 until its retry budget
//     ran out; never -32603, never another code, never "unknown agent"
//     for an agent whose workers run, never hung past its deadline;
//   - no messageId made two tasks (ListTasks, from the server's side);
//   - no role process exited on its own.
//
// It also measures how fast the fleet recovers from each kind of fault.
// It is test tooling, not a benchmark: `a2amesh bench chaos` runs it from
// the command line (RunAndReport; a soak run with --duration 30m), and
// TestChaos runs a bounded version. It reads streams with ssetest and
// imports nothing of the module above a2a, bus and taskstore.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one chaos run. Zero fields take the defaults of the comments.
type Config struct {
	// Bin is the a2amesh binary every role runs (required).
	Bin string
	// Dir holds the NATS nodes' data directories (default: a new
	// temporary directory, removed afterwards unless Keep).
	Dir  string
	Keep bool
	// Duration is how long the clients send and faults are injected
	// (default 60s).
	Duration time.Duration
	// Clients is the number of concurrent clients, half blocking, half
	// streaming (default 16).
	Clients int
	// KillMin..KillMax is the pause between two faults (default 3s–6s).
	KillMin, KillMax time.Duration
	// Seed makes the clients' choices and the faults' victims repeatable
	// (default: the time).
	Seed int64
	// Faults are the fault modes: kill (any role), pause and partition
	// (NATS nodes) (default: kill).
	Faults []string
	// PauseFor and PartitionFor are how long a pause or a cut lasts
	// (default 20s and 10s).
	PauseFor, PartitionFor time.Duration
	// SendDeadline bounds one send, stream resumes included; past it the
	// send hung (default 60s). RetryBudget and MaxAttempts bound its
	// retries before acknowledgement (default 30s, 20).
	SendDeadline time.Duration
	RetryBudget  time.Duration
	MaxAttempts  int
	// SettleBudget bounds waiting, after the load, for the fleet to be
	// whole and for acknowledged tasks to finish (default 60s).
	SettleBudget time.Duration
	// CatchUpBudget bounds waiting for the cluster to catch up after a
	// NATS fault (default 90s).
	CatchUpBudget time.Duration
	// ListBudget bounds listing the tasks per agent; LogCheckBudget bounds
	// reading the acknowledged tasks' event logs (default 3m each; 15m for
	// a soak run, longer than 10m).
	ListBudget, LogCheckBudget time.Duration
	// ServerScan is how the final check reads every task the server
	// holds: ScanList (ListTasks, page by page, per agent), ScanBucket
	// (one pass over the events stream, each task log's last message; for
	// long runs, where paging ListTasks reads every task) or ScanAuto
	// (default: ListTasks up to 20 000 acknowledged tasks).
	ServerScan string
	// The fleet (default 2 edges, 2 echo and 2 slow workers, R3).
	Edges, EchoWorkers, SlowWorkers, Replicas int
	// EdgeArgs are more flags for every edge (the figures' --drain).
	EdgeArgs []string
	// LogLevel of the roles (default info); TailBytes of each role's
	// output kept for the report (default 256 KiB).
	LogLevel  string
	TailBytes int
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (c *Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

func (c *Config) hasFault(k string) bool {
	for _, f := range c.Faults {
		if f == k {
			return true
		}
	}
	return false
}

// Server scans of the final check.
const (
	ScanAuto   = "auto"
	ScanList   = "list"
	ScanBucket = "bucket"
)

// Limits of a run, so that a typo cannot start a week-long one.
const (
	MaxDuration = 24 * time.Hour
	MaxClients  = 512
)

func (c *Config) defaults() error {
	if c.Bin == "" {
		return errors.New("chaos: Config.Bin (the a2amesh binary) is required")
	}
	if !faultsSupported {
		return errors.New("chaos: needs a Unix system")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defI := func(i *int, v int) {
		if *i == 0 {
			*i = v
		}
	}
	def(&c.Duration, 60*time.Second)
	defI(&c.Clients, 16)
	def(&c.KillMin, 3*time.Second)
	def(&c.KillMax, 6*time.Second)
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	if len(c.Faults) == 0 {
		c.Faults = []string{FaultKill}
	}
	def(&c.PauseFor, 20*time.Second)
	def(&c.PartitionFor, 10*time.Second)
	def(&c.SendDeadline, 60*time.Second)
	def(&c.RetryBudget, 30*time.Second)
	defI(&c.MaxAttempts, 20)
	def(&c.SettleBudget, 60*time.Second)
	def(&c.CatchUpBudget, 90*time.Second)
	checkBudget := 3 * time.Minute
	if c.Duration > 10*time.Minute {
		// A soak run holds many more tasks: give the final listing and
		// the log reads room.
		checkBudget = 15 * time.Minute
	}
	def(&c.ListBudget, checkBudget)
	def(&c.LogCheckBudget, checkBudget)
	if c.ServerScan == "" {
		c.ServerScan = ScanAuto
	}
	defI(&c.Edges, 2)
	defI(&c.EchoWorkers, 2)
	defI(&c.SlowWorkers, 2)
	defI(&c.Replicas, 3)
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	defI(&c.TailBytes, 256<<10)
	switch {
	case c.Duration < 0 || c.Duration > MaxDuration:
		return fmt.Errorf("chaos: duration must be in (0, %v]", MaxDuration)
	case c.Clients < 1 || c.Clients > MaxClients:
		return fmt.Errorf("chaos: clients must be in [1, %d]", MaxClients)
	case c.KillMin <= 0 || c.KillMax < c.KillMin:
		return errors.New("chaos: want 0 < kill-min <= kill-max")
	case c.Edges < 2:
		return errors.New("chaos: at least 2 edges (a client retries on the other one)")
	case c.EchoWorkers < 2 || c.SlowWorkers < 2:
		return errors.New("chaos: at least 2 workers per agent (one always runs while the other restarts)")
	case c.Replicas != 3:
		return errors.New("chaos: the cluster has 3 nodes: replicas must be 3")
	case c.RetryBudget >= c.SendDeadline:
		return errors.New("chaos: the retry budget must be shorter than the send deadline")
	}
	switch c.ServerScan {
	case ScanAuto, ScanList, ScanBucket:
	default:
		return fmt.Errorf("chaos: server scan %q: want auto, list or bucket", c.ServerScan)
	}
	for _, f := range c.Faults {
		switch f {
		case FaultKill, FaultPause, FaultPartition:
		default:
			return fmt.Errorf("chaos: unknown fault %q (kill, pause, partition)", f)
		}
	}
	return nil
}

// ParseFaults reads "kill,pause,partition".
func ParseFaults(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" || seen[f] {
			continue
		}
		switch f {
		case FaultKill, FaultPause, FaultPartition:
		default:
			return nil, fmt.Errorf("unknown fault %q: want kill, pause or partition", f)
		}
		seen[f] = true
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, errors.New("no fault given")
	}
	return out, nil
}

// ParseRange reads "3s-6s" (or one duration, "5s").
func ParseRange(s string) (lo, hi time.Duration, err error) {
	a, b, ok := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, err
	}
	hi = lo
	if ok {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, err
		}
	}
	if lo <= 0 || hi < lo {
		return 0, 0, fmt.Errorf("%q: want 0 < low <= high", s)
	}
	return lo, hi, nil
}

// Run runs the fleet, the load and the faults, then the final check. The
// error is for a harness that could not do its job (the fleet did not
// start, say); violations of the mesh's promises are in the report (see
// Report.Err). Cancelling ctx stops the run early: every role is killed.
// Run always stops every process it started before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	rep := &Report{Seed: cfg.Seed, Clients: cfg.Clients, Duration: cfg.Duration, KillMin: cfg.KillMin, KillMax: cfg.KillMax,
		Faults: cfg.Faults, SendDeadline: cfg.SendDeadline, RetryBudget: cfg.RetryBudget,
		Fleet: fmt.Sprintf("3 NATS nodes (R%d), %d edges, echo×%d, slow×%d", cfg.Replicas, cfg.Edges, cfg.EchoWorkers, cfg.SlowWorkers)}
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "a2amesh-chaos-*")
		if err != nil {
			return nil, err
		}
		dir = tmp
		if !cfg.Keep {
			defer os.RemoveAll(tmp)
		}
	}
	f, err := newFleet(&cfg, dir, t0)
	if err != nil {
		return nil, err
	}
	defer f.close()
	viol := newViolations()
	defer func() {
		rep.Elapsed = time.Since(t0)
		rep.RoleExits = f.roleExits()
		for _, e := range rep.RoleExits {
			when := ""
			if e.AtStart {
				when = " while the fleet was starting"
			}
			viol.add(VRoleExit, "%s (pid %d) exited on its own at +%.1fs%s, after %v up: %s; its last line: %s", e.Member, e.Pid, e.At.Seconds(),
				when, e.Uptime.Round(time.Millisecond), e.Status, e.Last)
		}
		rep.ViolationCounts, rep.Violations = viol.snapshot()
		rep.Tails = map[string]string{}
		for _, m := range f.all {
			rep.Tails[m.Name] = m.log.Tail()
			counts := m.log.Counts(m.Name)
			rep.Logs = append(rep.Logs, counts[:min(len(counts), 8)]...)
		}
		sort.SliceStable(rep.Logs, func(i, j int) bool { return rep.Logs[i].N > rep.Logs[j].N })
		if len(rep.Logs) > 40 {
			rep.Logs = rep.Logs[:40]
		}
	}()

	cfg.logf("starting the fleet in %s (seed %d)", dir, cfg.Seed)
	if err := f.start(ctx); err != nil {
		return rep, fmt.Errorf("chaos: the fleet did not start: %w", err)
	}
	rep.StartupTook = time.Since(t0)
	cfg.logf("fleet serving after %v: NATS %s; edges %s, %s", rep.StartupTook.Round(time.Millisecond),
		strings.Join(f.urls, ","), f.edges[0].baseURL, f.edges[1].baseURL)

	l := &load{cfg: &cfg, f: f, rpc: newRPCClient(cfg.Clients * 2), t0: t0, viol: viol,
		run: strconv.FormatInt(time.Now().UnixNano(), 36), errs: map[string]int{}}
	defer l.rpc.close()
	in := newInjector(&cfg, f)

	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.Duration)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		in.run(loadCtx)
	}()
	clientsDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(clientsDone)
		l.runClients(loadCtx, ctx)
	}()
	go func() {
		defer wg.Done()
		l.report(clientsDone, in, viol)
	}()
	wg.Wait()
	rep.LoadEnded = time.Since(t0)
	sends := l.snapshot()
	rep.FaultLog = in.snapshot()
	rep.Sends = sendStats(sends)
	rep.AttemptErrors = l.errs
	for _, s := range sends {
		rep.Resumes += s.Resumes
	}
	rep.Recovery = recovery(rep.FaultLog, sends)
	rep.Slowest = slowest(sends, 5, t0)
	l.sampleConsumers()
	rep.MaxConsumers = l.maxConsumers
	if ctx.Err() != nil {
		rep.Aborted = true
		return rep, nil
	}

	// Settle: the fleet whole again (a role that exited is restarted by
	// then) and the cluster caught up, then the check.
	settle := time.Now()
	cfg.logf("load stopped after %v: %d sends; settling", time.Since(t0).Round(time.Second), len(sends))
	if err := f.waitWhole(ctx, cfg.SettleBudget); err != nil {
		rep.Notes = append(rep.Notes, "fleet not whole after the load: "+err.Error())
	}
	rep.FleetSettled = time.Since(settle)
	ch := &checker{cfg: &cfg, f: f, l: l, viol: viol, rep: rep}
	ch.run(ctx, sends)
	if ctx.Err() != nil {
		rep.Aborted = true
	}
	cfg.logf("check done after %v", time.Since(t0).Round(time.Second))
	return rep, nil
}

// waitWhole waits until every role runs and serves and the cluster caught
// up.
func (f *fleet) waitWhole(ctx context.Context, budget time.Duration) error {
	deadline := time.Now().Add(budget)
	left := func() time.Duration { return max(time.Until(deadline), time.Second) }
	err := pollUntil(ctx, left(), 100*time.Millisecond, func() error {
		for _, m := range f.all {
			if m.current() == nil {
				return fmt.Errorf("%s is down", m.Name)
			}
		}
		return nil
	}, "every role running")
	if err != nil {
		return err
	}
	for _, m := range f.edges {
		if _, err := f.waitHealthy(ctx, m, left()); err != nil {
			return err
		}
	}
	if err := f.waitAgents(ctx, left()); err != nil {
		return err
	}
	_, err = f.admin.waitCaughtUp(ctx, f.cfg.Replicas, left())
	return err
}

// report logs a progress line every 10s until the clients are done.
func (l *load) report(clientsDone <-chan struct{}, in *injector, viol *violations) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for i := 0; i < 1_000_000; i++ {
		select {
		case <-clientsDone:
			return
		case <-t.C:
		}
		l.sampleConsumers()
		counts, _ := viol.snapshot()
		total := 0
		for _, n := range counts {
			total += n
		}
		l.cfg.logf("+%.0fs: %d sends done (%d acked, %d -32000, %d hung), %d faults, %d role exits, %d violations",
			time.Since(l.t0).Seconds(), l.nDone.Load(), l.nAcked.Load(), l.nBusy.Load(), l.nHung.Load(),
			len(in.snapshot()), len(l.f.roleExits()), total)
	}
}

// sampleConsumers notes the most consumers each stream had.
func (l *load) sampleConsumers() {
	c, err := l.f.admin.consumers(context.Background())
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxConsumers == nil {
		l.maxConsumers = map[string]int{}
	}
	for k, n := range c {
		l.maxConsumers[k] = max(l.maxConsumers[k], n)
	}
}

// progress counts a finished send.
func (l *load) progress(s *sendRec) {
	l.nDone.Add(1)
	switch s.Outcome {
	case OutcomeAcked:
		l.nAcked.Add(1)
	case OutcomeBusy:
		l.nBusy.Add(1)
	case OutcomeHung:
		l.nHung.Add(1)
	}
}
