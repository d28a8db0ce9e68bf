package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// FiguresConfig selects the fleet figures of docs/measured.md that need a
// cluster of processes: scale from zero, the registry's convergence
// across NATS node restarts, and a rolling restart under load.
type FiguresConfig struct {
	// Bin is the a2amesh binary every role runs (required).
	Bin string
	// ScaleRounds: this many times, queue sends for an agent with no
	// worker, start one and time its first answer (0: skip).
	ScaleRounds int
	// Queued is how many sends wait in the queue of each scale round
	// besides the timed blocking one (default 10).
	Queued int
	// Restarts: this many times, kill -9 a NATS node, start or stop a
	// worker while it is down, restart the node, and time until every
	// edge shows the change (0: skip).
	Restarts int
	// NATSDown is how long a killed node stays down (default 1s).
	NATSDown time.Duration
	// Rolling: restart each worker, then each edge, one at a time, under
	// load from RollClients blocking clients (default 16), and count the
	// requests that failed.
	Rolling     bool
	RollClients int
	// RollWorkers is the echo workers rolled (default 4).
	RollWorkers int
	// Drain is the edges' --drain in the rolling restart; 0 runs them
	// with --drain 0 (no drain: the fault the drain is for).
	Drain time.Duration
	// RouteLag is how long the clients still route to an edge after its
	// SIGTERM, as a load balancer does until it learns of the stop
	// (default 1s).
	RouteLag time.Duration
	Logf     func(format string, args ...any)
}

// Figures is what RunFigures measured.
type Figures struct {
	ScaleFromZero []ScaleRound
	Convergence   []ConvergeRound
	Rolling       *RollingResult
}

// ScaleRound is one start of a worker for an agent whose sends queued.
type ScaleRound struct {
	Queued int
	// FirstAnswer: the worker's process started to the answer of the
	// blocking send that queued first (its task completed).
	FirstAnswer time.Duration
	// AllDone: the worker's process started to every queued task read
	// back completed (polled every 20 ms).
	AllDone time.Duration
}

// ConvergeRound is one NATS node restart with a registry change made
// while the node was down.
type ConvergeRound struct {
	Node   string
	Change string // "worker started" or "worker stopped"
	// FromChange: the worker's process started (or its SIGTERM) to every
	// edge showing the change (polled every 10 ms). A worker registers
	// once its JetStream setup is done, which waits for the streams whose
	// leader was on the killed node to elect another.
	FromChange time.Duration
	// FromRegistration (started workers): the worker logged "worker
	// started", as it registers, to every edge showing it.
	FromRegistration time.Duration
	// FromBack: the killed node listening again to every edge showing the
	// change; 0 when they showed it before the node came back.
	FromBack time.Duration
	// Down is how long the node was down (SIGKILL to listening again).
	Down time.Duration
}

// RollingResult is a rolling restart under load.
type RollingResult struct {
	Clients  int
	Workers  int
	Drain    time.Duration
	RouteLag time.Duration
	Took     time.Duration
	Requests int
	Failures int
	// Failed counts failures by kind; Examples holds a few of them.
	Failed        map[string]int
	Examples      []string
	P50, P99, Max time.Duration
}

// RunFigures starts the fleets the figures need, measures, and stops
// every process it started before it returns.
func RunFigures(ctx context.Context, fc FiguresConfig) (*Figures, error) {
	if fc.Bin == "" {
		return nil, errors.New("chaos: FiguresConfig.Bin is required")
	}
	if !faultsSupported {
		return nil, errors.New("chaos: needs a Unix system")
	}
	if fc.ScaleRounds < 0 || fc.ScaleRounds > 1000 || fc.Restarts < 0 || fc.Restarts > 1000 {
		return nil, errors.New("chaos: rounds and restarts must be in [0, 1000]")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&fc.NATSDown, time.Second)
	def(&fc.RouteLag, time.Second)
	if fc.Queued <= 0 {
		fc.Queued = 10
	}
	if fc.RollClients <= 0 {
		fc.RollClients = 16
	}
	if fc.RollWorkers <= 0 {
		fc.RollWorkers = 4
	}
	out := &Figures{}
	if fc.ScaleRounds > 0 || fc.Restarts > 0 {
		if err := runRegistryFigures(ctx, fc, out); err != nil {
			return out, err
		}
	}
	if fc.Rolling {
		r, err := runRolling(ctx, fc)
		out.Rolling = r
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// withFleet runs fn on a started fleet in a temporary directory, then
// stops it.
func withFleet(ctx context.Context, fc FiguresConfig, echo int, edgeArgs []string, prepare func(*fleet), fn func(*fleet) error) error {
	dir, err := os.MkdirTemp("", "a2amesh-figures-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := &Config{Bin: fc.Bin, Edges: 2, EchoWorkers: echo, Replicas: 3, LogLevel: "info", TailBytes: 256 << 10,
		Faults: []string{FaultKill}, EdgeArgs: edgeArgs, Logf: fc.Logf}
	f, err := newFleet(cfg, dir, time.Now())
	if err != nil {
		return err
	}
	if prepare != nil {
		prepare(f)
	}
	defer f.close()
	if err := f.start(ctx); err != nil {
		return err
	}
	return fn(f)
}

// probeStatus is an edge's GET /agents view of one agent: its live
// workers, and whether it is listed at all.
func (f *fleet) probeStatus(ctx context.Context, edge *member, agent string) (workers int, listed bool, err error) {
	var body struct {
		Status map[string]struct {
			Workers int `json:"workers"`
		} `json:"status"`
	}
	if err := f.get(ctx, edge.baseURL+"/agents", &body); err != nil {
		return 0, false, err
	}
	st, ok := body.Status[agent]
	return st.Workers, ok, nil
}

// waitEdgesShow polls every edge each `every` until all show agent with
// want live workers; it returns when the last one did.
func (f *fleet) waitEdgesShow(ctx context.Context, agent string, want int, every, budget time.Duration) (time.Time, error) {
	var at time.Time
	err := pollUntil(ctx, budget, every, func() error {
		for _, e := range f.edges {
			n, listed, err := f.probeStatus(ctx, e, agent)
			if err != nil {
				return err
			}
			if !listed || n != want {
				return fmt.Errorf("%s shows %s with %d live workers (listed %v), want %d", e.Name, agent, n, listed, want)
			}
		}
		at = time.Now()
		return nil
	}, fmt.Sprintf("every edge showing %s with %d workers", agent, want))
	return at, err
}

const probeAgent = "probe"

func runRegistryFigures(ctx context.Context, fc FiguresConfig, out *Figures) error {
	var probe *member
	return withFleet(ctx, fc, 1, nil, func(f *fleet) {
		probe = f.addWorker("worker-probe", probeAgent, "--agent", "echo", "--name", probeAgent)
	}, func(f *fleet) error {
		rpc := newRPCClient(8)
		defer rpc.close()
		// The agent becomes known with its first worker, then has none.
		if _, err := probe.start(f.sp, f.onExit); err != nil {
			return err
		}
		if _, err := f.waitEdgesShow(ctx, probeAgent, 1, 20*time.Millisecond, 30*time.Second); err != nil {
			return err
		}
		probe.stop(15 * time.Second)
		if _, err := f.waitEdgesShow(ctx, probeAgent, 0, 20*time.Millisecond, 30*time.Second); err != nil {
			return err
		}
		for i := 0; i < fc.ScaleRounds; i++ {
			r, err := scaleRound(ctx, f, rpc, probe, fc.Queued, i)
			if err != nil {
				return fmt.Errorf("scale round %d: %w", i+1, err)
			}
			out.ScaleFromZero = append(out.ScaleFromZero, r)
			fc.logf("scale from zero %d/%d: first answer %v, %d queued done %v", i+1, fc.ScaleRounds,
				r.FirstAnswer.Round(time.Millisecond), r.Queued, r.AllDone.Round(time.Millisecond))
		}
		for i := 0; i < fc.Restarts; i++ {
			r, err := convergeRound(ctx, f, probe, fc.NATSDown, i)
			if err != nil {
				return fmt.Errorf("restart %d: %w", i+1, err)
			}
			out.Convergence = append(out.Convergence, r)
			if r.FromRegistration > time.Second || (r.Change != "worker started" && r.FromChange > time.Second) {
				fc.logf("slow convergence; %s's output:\n%s", probe.Name, lastLines(probe.log.Tail(), 12))
				for _, e := range f.edges {
					fc.logf("%s's output:\n%s", e.Name, lastLines(e.log.Tail(), 8))
				}
			}
			fc.logf("NATS restart %d/%d (%s down %v, %s): every edge %v after the change (%v after its registration), %v after the node was back", i+1, fc.Restarts,
				r.Node, r.Down.Round(time.Millisecond), r.Change, r.FromChange.Round(time.Millisecond), r.FromRegistration.Round(time.Millisecond), r.FromBack.Round(time.Millisecond))
		}
		return nil
	})
}

func (fc *FiguresConfig) logf(format string, args ...any) {
	if fc.Logf != nil {
		fc.Logf(format, args...)
	}
}

func sendParams(id string, returnNow bool) map[string]any {
	p := map[string]any{"message": map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": id}}}}
	if returnNow {
		p["configuration"] = map[string]any{"returnImmediately": true}
	}
	return p
}

// taskState reads a SendMessage or GetTask result's task id and state.
func taskState(raw json.RawMessage) (id string, state a2a.TaskState, err error) {
	var r struct {
		Task *struct {
			ID     string `json:"id"`
			Status struct {
				State a2a.TaskState `json:"state"`
			} `json:"status"`
		} `json:"task"`
		ID     string `json:"id"`
		Status struct {
			State a2a.TaskState `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", "", err
	}
	if r.Task != nil {
		return r.Task.ID, r.Task.Status.State, nil
	}
	return r.ID, r.Status.State, nil
}

// scaleRound: the probe agent has no worker. A blocking send and queued
// sends wait; the worker starts; the blocking answer and the queued
// tasks' completion are timed from its start.
func scaleRound(ctx context.Context, f *fleet, rpc *rpcClient, probe *member, queued, round int) (ScaleRound, error) {
	r := ScaleRound{Queued: queued}
	type reply struct {
		at  time.Time
		ans answer
	}
	first := make(chan reply, 1)
	bctx, cancel := context.WithTimeout(ctx, 50*time.Second) // under the edges' 60 s blocking bound
	defer cancel()
	go func() {
		a := rpc.call(bctx, f.edges[1].baseURL, probeAgent, "SendMessage", sendParams(fmt.Sprintf("scale-%d-first", round), false), false, 0)
		first <- reply{time.Now(), a}
	}()
	// The blocking send is queued first: its task is the oldest.
	time.Sleep(200 * time.Millisecond)
	var ids []string
	for i := 0; i < queued; i++ {
		a := rpc.call(ctx, f.edges[i%2].baseURL, probeAgent, "SendMessage", sendParams(fmt.Sprintf("scale-%d-%d", round, i), true), false, 0)
		if a.transport != nil || a.rpcErr != nil || a.bad != "" {
			return r, fmt.Errorf("queued send %d: %v %v %s", i, a.transport, a.rpcErr, a.bad)
		}
		id, st, err := taskState(a.result)
		if err != nil || id == "" {
			return r, fmt.Errorf("queued send %d: no task in %s", i, trunc(string(a.result), 200))
		}
		if st.Terminal() {
			return r, fmt.Errorf("queued send %d finished with no worker: %s", i, st)
		}
		ids = append(ids, id)
	}
	p, err := probe.start(f.sp, f.onExit)
	if err != nil {
		return r, err
	}
	t0 := p.started
	var b reply
	select {
	case b = <-first:
	case <-time.After(55 * time.Second):
		return r, errors.New("the blocking send did not answer")
	}
	if b.ans.transport != nil || b.ans.rpcErr != nil || b.ans.bad != "" {
		return r, fmt.Errorf("blocking send: %v %v %s", b.ans.transport, b.ans.rpcErr, b.ans.bad)
	}
	if _, st, err := taskState(b.ans.result); err != nil || st != a2a.StateCompleted {
		return r, fmt.Errorf("blocking send answered %s (%v), not completed", st, err)
	}
	r.FirstAnswer = b.at.Sub(t0)
	done := map[string]bool{}
	err = pollUntil(ctx, 30*time.Second, 20*time.Millisecond, func() error {
		for _, id := range ids {
			if done[id] {
				continue
			}
			a := rpc.call(ctx, f.edges[0].baseURL, probeAgent, "GetTask", map[string]any{"id": id}, false, 0)
			if a.transport != nil || a.rpcErr != nil {
				return fmt.Errorf("GetTask %s: %v %v", id, a.transport, a.rpcErr)
			}
			if _, st, err := taskState(a.result); err == nil && st == a2a.StateCompleted {
				done[id] = true
				continue
			}
			return fmt.Errorf("task %s not completed yet", id)
		}
		return nil
	}, "queued tasks completed")
	if err != nil {
		return r, err
	}
	r.AllDone = time.Since(t0)
	// Back to zero for the next round.
	probe.stop(15 * time.Second)
	if _, err := f.waitEdgesShow(ctx, probeAgent, 0, 20*time.Millisecond, 30*time.Second); err != nil {
		return r, err
	}
	return r, nil
}

// convergeRound kills NATS node round%3, starts (even rounds) or stops
// (odd rounds) the probe worker while the node is down, restarts the node
// after down, and times until every edge shows the change.
func convergeRound(ctx context.Context, f *fleet, probe *member, down time.Duration, round int) (ConvergeRound, error) {
	node := f.nats[round%len(f.nats)]
	start := probe.current() == nil
	r := ConvergeRound{Node: node.Name, Change: "worker stopped"}
	want := 0
	if start {
		r.Change, want = "worker started", 1
	}
	tKill := time.Now()
	if _, err := node.kill(); err != nil {
		return r, err
	}
	time.Sleep(100 * time.Millisecond)
	var tChange time.Time
	var started *proc
	if start {
		p, err := probe.start(f.sp, f.onExit)
		if err != nil {
			return r, err
		}
		tChange, started = p.started, p
	} else {
		tChange = time.Now()
		go probe.stop(15 * time.Second)
	}
	var shown atomic.Int64 // unix nanos when every edge showed the change
	var wg sync.WaitGroup
	var waitErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		at, err := f.waitEdgesShow(ctx, probeAgent, want, 10*time.Millisecond, 60*time.Second)
		waitErr = err
		shown.Store(at.UnixNano())
	}()
	sleepCtx(ctx, time.Until(tKill.Add(down)))
	if _, err := node.start(f.sp, f.onExit); err != nil {
		return r, err
	}
	if err := f.waitListening(ctx, node, 30*time.Second); err != nil {
		return r, err
	}
	tBack := time.Now()
	r.Down = tBack.Sub(tKill)
	wg.Wait()
	if waitErr != nil {
		return r, waitErr
	}
	at := time.Unix(0, shown.Load())
	r.FromChange = at.Sub(tChange)
	if started != nil {
		reg, ok := probe.log.loggedAt(started.pid, `msg="worker started"`)
		if !ok {
			return r, fmt.Errorf("%s showed at every edge, but its log has no \"worker started\"", probe.Name)
		}
		r.FromRegistration = max(0, at.Sub(reg))
	}
	if at.After(tBack) {
		r.FromBack = at.Sub(tBack)
	}
	// The next round starts on a whole cluster.
	if _, err := f.admin.waitCaughtUp(ctx, f.cfg.Replicas, 90*time.Second); err != nil {
		return r, err
	}
	return r, nil
}

// runRolling restarts each worker, then each edge, one at a time, while
// clients send blocking requests to whichever edge they route to. A
// client stops routing to an edge RouteLag after its SIGTERM and routes
// to it again once it answers /healthz. Nothing retries: every failed
// request counts.
func runRolling(ctx context.Context, fc FiguresConfig) (*RollingResult, error) {
	res := &RollingResult{Clients: fc.RollClients, Workers: fc.RollWorkers, Drain: fc.Drain, RouteLag: fc.RouteLag, Failed: map[string]int{}}
	drain := []string{"--drain", fc.Drain.String()}
	err := withFleet(ctx, fc, fc.RollWorkers, drain, nil, func(f *fleet) error {
		routed := make([]atomic.Bool, len(f.edges))
		for i := range routed {
			routed[i].Store(true)
		}
		rpc := newRPCClient(fc.RollClients)
		defer rpc.close()
		lctx, stopLoad := context.WithCancel(ctx)
		defer stopLoad()
		var (
			mu    sync.Mutex
			lat   []time.Duration
			wg    sync.WaitGroup
			next  atomic.Uint64
			count atomic.Int64
		)
		fail := func(kind, what string) {
			mu.Lock()
			defer mu.Unlock()
			res.Failures++
			res.Failed[kind]++
			if len(res.Examples) < 8 {
				res.Examples = append(res.Examples, what)
			}
		}
		for c := 0; c < fc.RollClients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10_000_000 && lctx.Err() == nil; i++ {
					e := -1
					for k := 0; k < len(routed); k++ {
						j := int(next.Add(1) % uint64(len(routed)))
						if routed[j].Load() {
							e = j
							break
						}
					}
					if e < 0 {
						sleepCtx(lctx, 10*time.Millisecond)
						continue
					}
					t := time.Now()
					a := rpc.call(lctx, f.edges[e].baseURL, "echo", "SendMessage", sendParams(fmt.Sprintf("roll-%d-%d", c, i), false), false, 0)
					if lctx.Err() != nil {
						return // the run ended under it: not a failure
					}
					count.Add(1)
					switch {
					case a.transport != nil:
						fail("transport", fmt.Sprintf("edge-%d: %v", e, a.transport))
					case a.bad != "":
						fail("not JSON-RPC", fmt.Sprintf("edge-%d: %s", e, a.bad))
					case a.rpcErr != nil:
						fail(fmt.Sprintf("JSON-RPC %d", a.rpcErr.Code), fmt.Sprintf("edge-%d: %s", e, a.rpcErr))
					default:
						if _, st, err := taskState(a.result); err != nil || st != a2a.StateCompleted {
							fail("not completed", fmt.Sprintf("edge-%d: %s", e, st))
							continue
						}
						mu.Lock()
						lat = append(lat, time.Since(t))
						mu.Unlock()
					}
				}
			}()
		}
		t0 := time.Now()
		sleepCtx(ctx, 3*time.Second) // steady load first
		for _, w := range f.workers {
			before, err := f.admin.registryKeys(ctx)
			if err != nil {
				return err
			}
			fc.logf("rolling: SIGTERM %s", w.Name)
			w.stop(30 * time.Second)
			if _, err := w.start(f.sp, f.onExit); err != nil {
				return err
			}
			if _, err := f.waitNewRegistration(ctx, w, before, 30*time.Second); err != nil {
				return err
			}
			sleepCtx(ctx, time.Second)
		}
		for i, e := range f.edges {
			fc.logf("rolling: SIGTERM %s (clients route to it for %v more)", e.Name, fc.RouteLag)
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				e.stop(30 * time.Second)
			}()
			sleepCtx(ctx, fc.RouteLag)
			routed[i].Store(false)
			<-stopped
			if _, err := e.start(f.sp, f.onExit); err != nil {
				return err
			}
			if _, err := f.waitHealthy(ctx, e, 60*time.Second); err != nil {
				return err
			}
			routed[i].Store(true)
			sleepCtx(ctx, time.Second)
		}
		sleepCtx(ctx, 2*time.Second)
		stopLoad()
		wg.Wait()
		res.Took = time.Since(t0)
		res.Requests = int(count.Load())
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		if len(lat) > 0 {
			res.P50, res.P99, res.Max = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
		}
		return nil
	})
	return res, err
}
