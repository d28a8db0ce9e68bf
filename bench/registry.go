package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/registry"
)

// The registry benchmark: how long a worker takes to be counted as a live
// worker of its agent (join), and to stop being counted after a graceful
// stop or a crash (leave). The agent itself stays known between its
// workers (registry/agents.go: its card is served, its sends are queued),
// so what is timed is its live workers: Table.Workers, and the "status"
// of GET /agents at an edge. Each round starts one worker of an agent no
// other worker serves, waits until the agent shows a live worker, stops
// or kills it, and waits until the agent shows none; it watches both a
// registry.Table of its own (its own NATS connection) and, if given, an
// edge over HTTP.

// Limits of the registry benchmark.
const (
	// MaxRegistryRounds caps rounds of either kind.
	MaxRegistryRounds = 1000
	// tablePoll and edgePoll are how often the table and the edge are
	// looked at while waiting for a change (an edge's resolution is that
	// or one GET /agents, whichever is longer).
	tablePoll = time.Millisecond
	edgePoll  = 2 * time.Millisecond
	// settleAfterJoin is how long a worker runs after it joined before a
	// graceful stop (so it is past its start-up).
	settleAfterJoin = 100 * time.Millisecond
)

// WorkerLauncher starts workers of the agent the registry benchmark
// watches.
type WorkerLauncher interface {
	// Start starts one worker and returns it with the instant it started:
	// when its process was spawned, or when Worker.Run was called.
	Start(ctx context.Context) (StartedWorker, time.Time, error)
}

// StartedWorker is a running worker.
type StartedWorker interface {
	// Stop stops it gracefully (SIGTERM, or its context canceled).
	Stop() error
	// Kill stops it as a crash would: it never deregisters.
	Kill() error
	// Wait waits up to timeout for it to end and returns when it ended.
	Wait(timeout time.Duration) (time.Time, error)
}

// ProcessLauncher runs workers as processes: Path with Args (e.g. an
// a2amesh binary with "worker --nats ... --agent echo"), with Env added to
// this process's environment.
type ProcessLauncher struct {
	Path string
	Args []string
	Env  []string
}

// Start spawns one worker process.
func (l ProcessLauncher) Start(ctx context.Context) (StartedWorker, time.Time, error) {
	p, err := StartProc(l.Path, l.Args, l.Env)
	if err != nil {
		return nil, time.Time{}, err
	}
	return procWorker{p}, p.Started, nil
}

type procWorker struct{ p *Proc }

func (w procWorker) Stop() error { return w.p.Terminate() }
func (w procWorker) Kill() error { return w.p.Kill() }
func (w procWorker) Wait(timeout time.Duration) (time.Time, error) {
	at, err := w.p.Wait(timeout)
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) && ee.ExitCode() == -1 {
		err = nil // killed by a signal: what a crash round asks for
	}
	if err != nil {
		err = fmt.Errorf("%w; output: %s", err, w.p.Output())
	}
	return at, err
}

// InProcessLauncher runs workers in this process, each with its own NATS
// connection to NATSURL. Kill closes the connection before the worker is
// stopped, so its registry entry is never deleted.
type InProcessLauncher struct {
	NATSURL string
	// Name is the agent's name; Agent what it runs.
	Name  string
	Agent agentrt.Agent
	// Bus is the layout configuration (RegistryTTL sets the entries'
	// TTL).
	Bus    bus.Config
	Logger *slog.Logger
}

// Start opens a connection, then calls Worker.Run.
func (l InProcessLauncher) Start(ctx context.Context) (StartedWorker, time.Time, error) {
	b, nc, err := openBus(ctx, l.NATSURL, "a2amesh-bench-worker", l.Bus, 30*time.Second)
	if err != nil {
		return nil, time.Time{}, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	w := &inprocWorker{nc: nc, cancel: cancel, done: make(chan struct{})}
	aw := &agentrt.Worker{Store: b, Agent: l.Agent, Name: l.Name, Concurrency: 1, Logger: quietLogger(l.Logger)}
	start := time.Now()
	go func() {
		defer close(w.done)
		w.err = aw.Run(wctx)
		w.exitAt = time.Now()
	}()
	return w, start, nil
}

type inprocWorker struct {
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan struct{}
	exitAt time.Time
	err    error
}

func (w *inprocWorker) Stop() error { w.cancel(); return nil }

func (w *inprocWorker) Kill() error {
	w.nc.Close() // first: the worker can no longer reach the registry
	w.cancel()
	return nil
}

func (w *inprocWorker) Wait(timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
		w.nc.Close()
		return w.exitAt, w.err
	case <-t.C:
		w.nc.Close()
		return time.Time{}, fmt.Errorf("bench: worker did not stop within %v", timeout)
	}
}

// RegistryOptions configures a registry run.
type RegistryOptions struct {
	// NATSURL is the NATS the workers use; the benchmark watches the
	// registry there with a Table of its own (required).
	NATSURL string
	// Bus is the layout configuration the benchmark opens the bus with;
	// keep RegistryTTL equal to the workers' (the bucket's age limit
	// follows it).
	Bus bus.Config
	// EdgeURL, if set, is an edge timed too, by its GET /agents: the
	// agent's status there counts a live worker (join), then none, or the
	// agent is not listed (leave).
	EdgeURL string
	// GraceEdgeURL, if set, is another edge timed the same way: one with
	// a lost grace (--lost-grace). The grace keeps routable only an agent
	// with no record in the agents bucket (a worker of an older release);
	// these workers record theirs, and its status counts listed instances
	// only, so the grace delays nothing here: this edge should see a
	// departure as soon as the other.
	GraceEdgeURL string
	// Agent is the agent the launcher's workers serve; no other worker
	// may serve it (default "echo").
	Agent string
	// Launcher starts the workers (required).
	Launcher WorkerLauncher
	// Rounds is the number of graceful rounds (start, join, stop, leave),
	// CrashRounds the number of crash rounds (start, join, a random wait
	// of up to one heartbeat, kill, leave once the edges find its
	// connection gone, or its TTL runs out).
	Rounds, CrashRounds int
	// Timeout bounds a join or a graceful leave (default 60s); a crash
	// leave gets 2×TTL+10s.
	Timeout time.Duration
	// Progress, if set, is told about each round.
	Progress func(msg string)
}

// RegistryResult holds the figures of a registry run.
type RegistryResult struct {
	// TTL is the registry entries' TTL and Heartbeat the interval of
	// their renewal, as the workers published them.
	TTL, Heartbeat time.Duration
	// Join: from start to a live worker of the agent counted by the table
	// (Workers) / by the edge's GET /agents (status[agent].workers).
	JoinTable, JoinEdge []time.Duration
	// Leave after a graceful stop: from the stop to no live worker
	// counted by the table / by the edge's GET /agents; StopExit is from
	// the stop to the worker's exit.
	LeaveTable, LeaveEdge, StopExit []time.Duration
	// Leave after a crash: from the kill to no live worker counted by the
	// table / by the edge's GET /agents.
	CrashTable, CrashEdge []time.Duration
	// The same at the edge with a lost grace (GraceEdgeURL).
	JoinGraceEdge, LeaveGraceEdge, CrashGraceEdge []time.Duration
}

func (o *RegistryOptions) normalize() error {
	if o.NATSURL == "" || o.Launcher == nil {
		return errors.New("bench: registry needs NATSURL and Launcher")
	}
	if o.Agent == "" {
		o.Agent = "echo"
	}
	if !bus.ValidToken(o.Agent) {
		return fmt.Errorf("bench: bad agent name %q", o.Agent)
	}
	if o.Rounds < 0 || o.Rounds > MaxRegistryRounds || o.CrashRounds < 0 || o.CrashRounds > MaxRegistryRounds {
		return fmt.Errorf("bench: rounds must be in [0, %d]", MaxRegistryRounds)
	}
	if o.Rounds+o.CrashRounds == 0 {
		return errors.New("bench: no rounds to run")
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	o.EdgeURL = strings.TrimSuffix(o.EdgeURL, "/")
	o.GraceEdgeURL = strings.TrimSuffix(o.GraceEdgeURL, "/")
	return nil
}

// RunRegistry runs o.Rounds graceful rounds, then o.CrashRounds crash
// rounds.
func RunRegistry(ctx context.Context, o RegistryOptions) (RegistryResult, error) {
	var res RegistryResult
	if err := o.normalize(); err != nil {
		return res, err
	}
	b, nc, err := openBus(ctx, o.NATSURL, "a2amesh-bench-registry", o.Bus, 30*time.Second)
	if err != nil {
		return res, err
	}
	defer nc.Close()
	// Its lost grace is left as it is: Workers counts listed instances
	// only, whatever the grace keeps routable.
	table := registry.NewTable(b.Bus())
	tctx, stopTable := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = table.Run(tctx)
	}()
	defer func() { stopTable(); wg.Wait() }()
	select {
	case <-table.Ready():
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(30 * time.Second):
		return res, errors.New("bench: registry table not ready after 30s")
	}
	rb := &registryBench{o: o, table: table, client: &http.Client{Timeout: 2 * time.Second},
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	defer rb.client.CloseIdleConnections()
	total := o.Rounds + o.CrashRounds
	for i := range total {
		crash := i >= o.Rounds
		if err := rb.round(ctx, crash, &res); err != nil {
			kind := "graceful"
			if crash {
				kind = "crash"
			}
			return res, fmt.Errorf("%s round %d: %w", kind, i+1, err)
		}
		if o.Progress != nil {
			o.Progress(rb.describe(i+1, total, crash, &res))
		}
	}
	return res, nil
}

type registryBench struct {
	o      RegistryOptions
	table  *registry.Table
	client *http.Client
	rng    *rand.Rand
}

func (rb *registryBench) describe(i, total int, crash bool, r *RegistryResult) string {
	last := func(v []time.Duration) string {
		if len(v) == 0 {
			return "-"
		}
		return v[len(v)-1].Round(10 * time.Microsecond).String()
	}
	if crash {
		return fmt.Sprintf("round %d/%d (crash): join %s (edge %s), leave %s (edge %s)", i, total,
			last(r.JoinTable), last(r.JoinEdge), last(r.CrashTable), last(r.CrashEdge))
	}
	return fmt.Sprintf("round %d/%d (graceful): join %s (edge %s), leave %s (edge %s), exit %s", i, total,
		last(r.JoinTable), last(r.JoinEdge), last(r.LeaveTable), last(r.LeaveEdge), last(r.StopExit))
}

func (rb *registryBench) round(ctx context.Context, crash bool, res *RegistryResult) (err error) {
	// The agent must have no live worker anywhere first (a crashed worker
	// of the previous round is counted until the edges find it gone). A
	// known agent with none is fine: it stays listed between its workers.
	wait := rb.o.Timeout
	if res.TTL > 0 {
		wait = max(wait, 2*res.TTL+10*time.Second)
	}
	if _, _, _, err := rb.await(ctx, false, wait); err != nil {
		return fmt.Errorf("agent %q still has a live worker before the round: %w", rb.o.Agent, err)
	}
	w, start, err := rb.o.Launcher.Start(ctx)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Kill()
			_, _ = w.Wait(10 * time.Second)
		}
	}()
	tTable, tEdge, tGrace, err := rb.await(ctx, true, rb.o.Timeout)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	res.JoinTable = append(res.JoinTable, tTable.Sub(start))
	if rb.o.EdgeURL != "" {
		res.JoinEdge = append(res.JoinEdge, tEdge.Sub(start))
	}
	if rb.o.GraceEdgeURL != "" {
		res.JoinGraceEdge = append(res.JoinGraceEdge, tGrace.Sub(start))
	}
	for _, e := range rb.table.Agents() {
		// An entry of a live instance; one made of the agent's record
		// (no instance live) has no TTL.
		if e.Agent == rb.o.Agent && e.TTL > 0 {
			res.TTL, res.Heartbeat = e.TTL, e.TTL/3
		}
	}
	if res.TTL <= 0 {
		return errors.New("join: no TTL in the agent's entry")
	}

	if !crash {
		sleepCtx(ctx, settleAfterJoin)
		t0 := time.Now()
		if err := w.Stop(); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		tTable, tEdge, tGrace, err := rb.await(ctx, false, rb.o.Timeout)
		if err != nil {
			return fmt.Errorf("leave: %w", err)
		}
		res.LeaveTable = append(res.LeaveTable, tTable.Sub(t0))
		if rb.o.EdgeURL != "" {
			res.LeaveEdge = append(res.LeaveEdge, tEdge.Sub(t0))
		}
		if rb.o.GraceEdgeURL != "" {
			res.LeaveGraceEdge = append(res.LeaveGraceEdge, tGrace.Sub(t0))
		}
		exitAt, err := w.Wait(rb.o.Timeout)
		stopped = true
		if err != nil {
			return fmt.Errorf("worker exit: %w", err)
		}
		res.StopExit = append(res.StopExit, exitAt.Sub(t0))
		return ctx.Err()
	}

	// A crash lands anywhere between two heartbeats.
	sleepCtx(ctx, time.Duration(rb.rng.Int64N(int64(res.Heartbeat))))
	t0 := time.Now()
	if err := w.Kill(); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	if _, err := w.Wait(10 * time.Second); err != nil {
		return fmt.Errorf("after kill: %w", err)
	}
	stopped = true
	// The grace edge's lost grace is not waited for: it keeps only an
	// agent without a record routable, and never a worker counted.
	tTable, tEdge, tGrace, err = rb.await(ctx, false, 2*res.TTL+10*time.Second)
	if err != nil {
		return fmt.Errorf("leave after crash: %w", err)
	}
	res.CrashTable = append(res.CrashTable, tTable.Sub(t0))
	if rb.o.EdgeURL != "" {
		res.CrashEdge = append(res.CrashEdge, tEdge.Sub(t0))
	}
	if rb.o.GraceEdgeURL != "" {
		res.CrashGraceEdge = append(res.CrashGraceEdge, tGrace.Sub(t0))
	}
	return ctx.Err()
}

// await waits until the agent has a live worker (live) or none, by the
// table and by the edges, and returns when each first saw it.
func (rb *registryBench) await(ctx context.Context, live bool, timeout time.Duration) (tTable, tEdge, tGrace time.Time, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	var edgeErr, graceErr error
	if rb.o.EdgeURL != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tEdge, edgeErr = pollUntil(ctx, edgePoll, func() bool { return rb.edgeLive(ctx, rb.o.EdgeURL, live) })
		}()
	}
	if rb.o.GraceEdgeURL != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tGrace, graceErr = pollUntil(ctx, edgePoll, func() bool { return rb.edgeLive(ctx, rb.o.GraceEdgeURL, live) })
		}()
	}
	// Not Lookup: a known agent is routable with no live worker.
	tTable, err = pollUntil(ctx, tablePoll, func() bool {
		return (rb.table.Workers()[rb.o.Agent] > 0) == live
	})
	wg.Wait()
	if err != nil {
		return tTable, tEdge, tGrace, fmt.Errorf("table: %w", err)
	}
	if edgeErr != nil {
		return tTable, tEdge, tGrace, fmt.Errorf("edge: %w", edgeErr)
	}
	if graceErr != nil {
		return tTable, tEdge, tGrace, fmt.Errorf("edge with a lost grace: %w", graceErr)
	}
	return tTable, tEdge, tGrace, nil
}

// pollUntil calls cond every interval until it holds (returning when) or
// ctx ends.
func pollUntil(ctx context.Context, interval time.Duration, cond func() bool) (time.Time, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	// ctx bounds the time; the count bounds the loop however the ticker
	// behaves.
	for range int(MaxDuration/interval) + 1 {
		if cond() {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
	}
	return time.Time{}, errors.New("bench: poll limit reached")
}

// edgeLive reports whether the edge's GET /agents agrees with live: the
// agent's status counts a live worker, or (live false) counts none or the
// agent is not listed. An edge that does not answer agrees with neither.
func (rb *registryBench) edgeLive(ctx context.Context, edge string, live bool) bool {
	n, ok := agentWorkers(ctx, rb.client, edge, rb.o.Agent)
	return ok && (n > 0) == live
}

// agentWorkers is GET /agents at edge: agent's live workers by its status
// (0 when it is not listed: never registered, or removed), ok false when
// the edge did not answer with a list.
func agentWorkers(ctx context.Context, client *http.Client, edge, agent string) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, edge+"/agents", nil)
	if err != nil {
		return 0, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var body agentsDoc
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxAgentsBytes)).Decode(&body) != nil {
		return 0, false
	}
	return body.Status[agent].Workers, true
}

// maxAgentsBytes bounds a GET /agents answer read (one of many agents
// with large cards).
const maxAgentsBytes = 64 << 20

// agentsDoc is what the benches read of GET /agents: each known agent's
// live workers (its "status"; the cards are not read).
type agentsDoc struct {
	Status map[string]struct {
		Workers int `json:"workers"`
	} `json:"status"`
}

// Summary is min, median, 90th percentile and max of a set of durations.
type Summary struct {
	N                     int
	Min, Median, P90, Max time.Duration
}

// Summarize returns v's summary (nearest-rank percentiles).
func Summarize(v []time.Duration) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return Summary{N: len(s), Min: s[0], Median: rank(s, 0.5), P90: rank(s, 0.9), Max: s[len(s)-1]}
}

// Where the roles of RunRegistryOn run.
const (
	// RegistryProcess: `a2amesh nats`, two `a2amesh edge` and each worker
	// are processes of the a2amesh binary.
	RegistryProcess = "process"
	// RegistryInProcess: an embedded NATS server, an edge and
	// agentrt.Workers in this process, each with its own NATS connection.
	RegistryInProcess = "inprocess"
)

// RunRegistryOn starts the mesh of mode and runs RunRegistry on it with
// o's Agent, rounds, Timeout and Progress (the mesh's fields are set
// here). With RegistryProcess the roles are processes of the a2amesh
// binary bin, with the bus default TTL, and a second edge with the
// default lost grace is timed too (GraceEdgeURL: it should match the
// other, the grace delaying no departure); with RegistryInProcess
// agent is what the workers run and ttl the registry TTL (0: the bus
// default).
func RunRegistryOn(ctx context.Context, mode, bin string, agent agentrt.Agent, ttl time.Duration, o RegistryOptions) (RegistryResult, error) {
	if o.Agent == "" {
		o.Agent = "echo"
	}
	switch mode {
	case RegistryProcess:
		if ttl != 0 {
			return RegistryResult{}, errors.New("--ttl works with --mode inprocess only (a worker process uses the bus default)")
		}
		m, err := StartProcMesh(ctx, bin, "")
		if err != nil {
			return RegistryResult{}, err
		}
		defer m.Close()
		o.NATSURL, o.EdgeURL = m.NATSURL, m.EdgeURL
		// A second edge with the default lost grace, which no longer
		// delays what its GET /agents counts: timed to show it.
		ge, geURL, err := StartEdgeProc(ctx, bin, m.NATSURL)
		if err != nil {
			return RegistryResult{}, err
		}
		defer ge.Stop(5 * time.Second)
		o.GraceEdgeURL = geURL
		o.Launcher = ProcessLauncher{Path: bin,
			Args: []string{"worker", "--nats", m.NATSURL, "--agent", o.Agent, "--log-level", "warn"}}
	case RegistryInProcess:
		cfg := bus.Config{RegistryTTL: ttl}
		m, err := StartInProcMesh(ctx, "", cfg, nil)
		if err != nil {
			return RegistryResult{}, err
		}
		defer m.Close()
		o.NATSURL, o.EdgeURL, o.Bus = m.NATSURL, m.EdgeURL, cfg
		o.Launcher = InProcessLauncher{NATSURL: m.NATSURL, Name: o.Agent, Agent: agent, Bus: cfg}
	default:
		return RegistryResult{}, errors.New(`--mode must be "process" or "inprocess"`)
	}
	return RunRegistry(ctx, o)
}
