package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// The scale benchmark: for each worker count N it starts a fresh mesh
// (embedded NATS on a loopback port, one edge, N agentrt.Workers of the
// slow agent, each with its own NATS connection as separate processes
// would have) and drives it through the edge over HTTP with blocking
// sends. The slow agent waits Work per task (it is sent "chunks=2
// delay=<Work>": one chunk at once, the second Work later), so a worker
// with Concurrency C can at best finish C/Work tasks per second, and N of
// them N*C/Work.

// Limits of the scale benchmark.
const (
	// MaxScaleWorkers caps one worker count.
	MaxScaleWorkers = 64
	// MaxScaleSlots caps workers × per-worker concurrency.
	MaxScaleSlots = 4096
	// MaxScaleWork is the slow agent's longest delay.
	MaxScaleWork = 10 * time.Second
	// maxScaleLevels caps how many worker counts one run measures.
	maxScaleLevels = 16
	// scaleAgent is the agent name the benchmark's workers serve.
	scaleAgent = "slow"
	// sampleEvery is how often queue depth and heap are sampled.
	sampleEvery = 100 * time.Millisecond
)

// ScaleOptions configures a scale run.
type ScaleOptions struct {
	// Workers lists the worker counts to measure, each on a fresh mesh
	// (default 1, 2, 4).
	Workers []int
	// Concurrency is each worker's task limit (agentrt.Worker.Concurrency;
	// default 8).
	Concurrency int
	// Work is how long the slow agent waits per task (default 100ms; 0
	// sends a single chunk at once).
	Work time.Duration
	// Clients is the number of concurrent HTTP clients, each with one
	// blocking send in flight (default 64).
	Clients int
	// Duration and Warmup are per worker count (defaults 10s and none).
	Duration, Warmup time.Duration
	// Method is MethodSend10 (default) or MethodSend03.
	Method string
	// TempDir is where each mesh's JetStream files go (default: the
	// system's temporary directory); each mesh's are removed afterwards.
	TempDir string
	// EdgeBin, if set, is an a2amesh binary: the edge then runs as its
	// own process (`EdgeBin edge`), and its resident memory is sampled
	// (Linux). By default the edge runs in this process.
	EdgeBin string
	// Logger receives the mesh's warnings (default: warnings to stderr).
	Logger *slog.Logger
	// Progress, if set, is told what is about to run.
	Progress func(msg string)
}

// ScaleResult is what one worker count measured.
type ScaleResult struct {
	Workers, Concurrency, Clients int
	Work                          time.Duration
	// Result is the load generator's measurement (after warmup).
	Result Result
	// Ideal is min(N*C, Clients)/Work tasks per second: every slot busy
	// with nothing but the agent's wait (0 when Work is 0).
	Ideal float64
	// Efficiency is Result.Throughput / Ideal (0 when Ideal is 0).
	Efficiency float64
	// Speedup is Result.Throughput relative to the run with one worker
	// (or the first worker count measured); set by RunScale.
	Speedup float64
	// MaxInFlight is, per worker, the most tasks its agent ran at once
	// (over warmup and measurement); MaxInFlightTotal over all workers.
	MaxInFlight      []int64
	MaxInFlightTotal int64
	// Runs is how many times the agents ran in all.
	Runs int64
	// MaxQueued and MaxAckPending are the largest depths sampled of the
	// agent's durable consumer: work items waiting for a worker, and work
	// items handed to workers and not yet acknowledged.
	MaxQueued, MaxAckPending uint64
	// PeakHeap is the most Go heap in use by this whole process
	// (load generator, edge, workers and NATS server alike), sampled
	// every 100ms during the measurement; FirstHalfHeap and SecondHalfHeap
	// are its means over each half, which stay level when memory is
	// bounded.
	PeakHeap, FirstHalfHeap, SecondHalfHeap uint64
	// PeakGoroutines is the most goroutines sampled.
	PeakGoroutines int
	// With ScaleOptions.EdgeBin, the edge process's resident memory:
	// EdgeRSSStart when the measurement started, EdgeRSSFirstHalf and
	// EdgeRSSSecondHalf its means over each half, EdgeRSSPeak its
	// high-water mark (VmHWM, since the process started).
	EdgeRSSStart, EdgeRSSFirstHalf, EdgeRSSSecondHalf, EdgeRSSPeak uint64
}

func (o *ScaleOptions) normalize() error {
	if len(o.Workers) == 0 {
		o.Workers = []int{1, 2, 4}
	}
	if len(o.Workers) > maxScaleLevels {
		return fmt.Errorf("bench: at most %d worker counts", maxScaleLevels)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	for _, n := range o.Workers {
		if n < 1 || n > MaxScaleWorkers {
			return fmt.Errorf("bench: worker count %d not in [1, %d]", n, MaxScaleWorkers)
		}
		if n*o.Concurrency > MaxScaleSlots {
			return fmt.Errorf("bench: %d workers × concurrency %d above %d slots", n, o.Concurrency, MaxScaleSlots)
		}
	}
	if o.Work < 0 || o.Work > MaxScaleWork {
		return fmt.Errorf("bench: work %v not in [0, %v]", o.Work, MaxScaleWork)
	}
	if o.Clients <= 0 {
		o.Clients = 64
	}
	if o.Clients > MaxConcurrency {
		return fmt.Errorf("bench: %d clients above %d", o.Clients, MaxConcurrency)
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration > MaxDuration || o.Warmup < 0 || o.Warmup > MaxDuration {
		return fmt.Errorf("bench: duration %v or warmup %v out of range", o.Duration, o.Warmup)
	}
	switch o.Method {
	case "":
		o.Method = MethodSend10
	case MethodSend03, MethodSend10:
	default:
		return fmt.Errorf("bench: method %q not supported", o.Method)
	}
	o.Logger = quietLogger(o.Logger)
	return nil
}

// slowText is the message that makes the slow agent wait work.
func slowText(work time.Duration) (text, lastChunk string) {
	if work <= 0 {
		return "chunks=1", "chunk 1/1"
	}
	return "chunks=2 delay=" + work.String(), "chunk 2/2"
}

// RunScale measures each of o.Workers in turn, on a fresh mesh each.
func RunScale(ctx context.Context, o ScaleOptions) ([]ScaleResult, error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	out := make([]ScaleResult, 0, len(o.Workers))
	for _, n := range o.Workers {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf("%d worker(s) × concurrency %d, %d clients, work %v: %v (+%v warmup)",
				n, o.Concurrency, o.Clients, o.Work, o.Duration, o.Warmup))
		}
		r, err := runScaleOne(ctx, o, n)
		if err != nil {
			return out, fmt.Errorf("at %d workers: %w", n, err)
		}
		out = append(out, r)
	}
	base := out[0].Result.Throughput
	for _, r := range out {
		if r.Workers == 1 {
			base = r.Result.Throughput
			break
		}
	}
	for i := range out {
		if base > 0 {
			out[i].Speedup = out[i].Result.Throughput / base
		}
	}
	return out, nil
}

// countingAgent runs an agent and counts the runs in flight.
type countingAgent struct {
	inner agentrt.Agent
	total *gauge // shared by every worker's agent
	mine  gauge
	runs  *atomic.Int64
}

// gauge is a count with a high-water mark.
type gauge struct{ cur, max atomic.Int64 }

func (g *gauge) inc() {
	n := g.cur.Add(1)
	// A bounded compare-and-swap loop: each failure means another
	// goroutine raised max, so few rounds are ever needed.
	for range 1000 {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) dec() { g.cur.Add(-1) }

func (a *countingAgent) Card() a2a.AgentCard { return a.inner.Card() }

func (a *countingAgent) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	a.mine.inc()
	a.total.inc()
	defer a.total.dec()
	defer a.mine.dec()
	a.runs.Add(1)
	return a.inner.Run(ctx, req, w)
}

// scaleMesh is one fresh mesh of the scale benchmark.
type scaleMesh struct {
	dir      string
	srv      *natsnode.Server
	edge     *edgeNode // the in-process edge, or
	edgeProc *Proc     // the edge process
	edgeURL  string
	mon      *taskstore.Store // the benchmark's own connection, for sampling
	agents   []*countingAgent
	total    gauge
	runs     atomic.Int64
	conns    []*nats.Conn
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errMu    sync.Mutex
	workErr  error
}

func startScaleMesh(ctx context.Context, o ScaleOptions, n int) (_ *scaleMesh, err error) {
	m := &scaleMesh{}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	if m.dir, err = os.MkdirTemp(o.TempDir, "a2amesh-scale-*"); err != nil {
		return nil, err
	}
	if m.srv, err = startNATS(m.dir); err != nil {
		return nil, err
	}
	url := m.srv.ClientURL()
	var monConn *nats.Conn
	if m.mon, monConn, err = openBus(ctx, url, "a2amesh-bench-monitor", bus.Config{}, 30*time.Second); err != nil {
		return nil, err
	}
	m.conns = append(m.conns, monConn)
	if o.EdgeBin != "" {
		if m.edgeProc, m.edgeURL, err = StartEdgeProc(ctx, o.EdgeBin, url); err != nil {
			return nil, err
		}
	} else {
		if m.edge, err = startEdge(ctx, url, bus.Config{}, o.Logger); err != nil {
			return nil, err
		}
		m.edgeURL = m.edge.URL
	}
	wctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	for i := range n {
		b, nc, err := openBus(ctx, url, fmt.Sprintf("a2amesh-bench-worker-%d", i), bus.Config{}, 30*time.Second)
		if err != nil {
			return nil, err
		}
		m.conns = append(m.conns, nc)
		a := &countingAgent{inner: agents.Slow{}, total: &m.total, runs: &m.runs}
		m.agents = append(m.agents, a)
		w := &agentrt.Worker{Store: b, Agent: a, Name: scaleAgent, Instance: fmt.Sprintf("w%d", i),
			Concurrency: o.Concurrency, Logger: o.Logger}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := w.Run(wctx); err != nil {
				m.errMu.Lock()
				m.workErr = errors.Join(m.workErr, err)
				m.errMu.Unlock()
			}
		}()
	}
	// Every worker is up once its registry entry is there (it publishes
	// after creating its consumer).
	kv := m.mon.Bus().Registry()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < n; {
		gctx, gcancel := context.WithTimeout(ctx, time.Second)
		_, err := kv.Get(gctx, scaleAgent+".w"+fmt.Sprint(i))
		gcancel()
		if err == nil {
			i++
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("bench: worker %d not registered after 30s", i)
		}
		m.errMu.Lock()
		werr := m.workErr
		m.errMu.Unlock()
		if werr != nil {
			return nil, werr
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
	// And the edge routes to it once it serves the agent's card.
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for range 3000 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.edgeURL+"/agents/"+scaleAgent+"/.well-known/agent-card.json", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sleepCtx(ctx, 10*time.Millisecond)
	}
	return nil, errors.New("bench: the edge does not serve the slow agent after 30s")
}

func (m *scaleMesh) close() {
	if m.edge != nil {
		m.edge.Close()
	}
	if m.edgeProc != nil {
		m.edgeProc.Stop(10 * time.Second)
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	for _, nc := range m.conns {
		_ = nc.Drain()
		nc.Close()
	}
	if m.srv != nil {
		m.srv.Shutdown()
	}
	if m.dir != "" {
		_ = os.RemoveAll(m.dir)
	}
}

// scaleSamples is what the sampler saw.
type scaleSamples struct {
	maxQueued, maxAckPending uint64
	heap                     []uint64
	edgeRSS                  []uint64
	peakGoroutines           int
}

// sample records the consumer's depths, the heap and the goroutines every
// sampleEvery until stop is closed.
func (m *scaleMesh) sample(stop <-chan struct{}, out *scaleSamples) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	// Bounded by stop and by the longest run allowed.
	limit := int(2*MaxDuration/sampleEvery) + 1
	for range limit {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		for _, st := range m.mon.Bus().ConsumerStats(ctx, bus.StreamWork, bus.ConsumerName(scaleAgent)) {
			out.maxQueued = max(out.maxQueued, st.Pending)
			out.maxAckPending = max(out.maxAckPending, st.AckPending)
		}
		cancel()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		out.heap = append(out.heap, ms.HeapInuse)
		out.peakGoroutines = max(out.peakGoroutines, runtime.NumGoroutine())
		if m.edgeProc != nil {
			if rss, _, err := m.edgeProc.RSS(); err == nil {
				out.edgeRSS = append(out.edgeRSS, rss)
			}
		}
	}
}

func runScaleOne(ctx context.Context, o ScaleOptions, n int) (ScaleResult, error) {
	res := ScaleResult{Workers: n, Concurrency: o.Concurrency, Clients: o.Clients, Work: o.Work}
	m, err := startScaleMesh(ctx, o, n)
	if err != nil {
		return res, err
	}
	defer m.close()

	text, last := slowText(o.Work)
	method := o.Method
	lo := Options{
		URL: m.edgeURL + "/agents/" + scaleAgent, Concurrency: o.Clients, Method: method, Text: text,
		Check: func(body []byte) error { return CheckArtifactContains(method, last, body) },
		// A request may wait behind every other client's task.
		RequestTimeout: min(DefaultRequestTimeout+time.Duration(o.Clients)*o.Work, MaxDuration),
	}
	client := NewClient(o.Clients)
	defer client.CloseIdleConnections()
	lo.Client = client
	if o.Warmup > 0 {
		w := lo
		w.Duration = o.Warmup
		if _, err := Run(ctx, w); err != nil {
			return res, err
		}
	}
	runtime.GC()
	if m.edgeProc != nil {
		res.EdgeRSSStart, _, _ = m.edgeProc.RSS()
	}
	var samples scaleSamples
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.sample(stop, &samples)
	}()
	lo.Duration = o.Duration
	r, err := Run(ctx, lo)
	close(stop)
	<-done
	if err != nil {
		return res, err
	}
	res.Result = r
	if o.Work > 0 {
		res.Ideal = float64(min(n*o.Concurrency, o.Clients)) / o.Work.Seconds()
		res.Efficiency = r.Throughput / res.Ideal
	}
	for _, a := range m.agents {
		v := a.mine.max.Load()
		res.MaxInFlight = append(res.MaxInFlight, v)
	}
	res.MaxInFlightTotal = m.total.max.Load()
	res.Runs = m.runs.Load()
	res.MaxQueued, res.MaxAckPending = samples.maxQueued, samples.maxAckPending
	res.PeakGoroutines = samples.peakGoroutines
	if h := samples.heap; len(h) > 0 {
		half := len(h) / 2
		res.FirstHalfHeap, res.SecondHalfHeap = meanU64(h[:half]), meanU64(h[half:])
		for _, v := range h {
			res.PeakHeap = max(res.PeakHeap, v)
		}
	}
	if h := samples.edgeRSS; len(h) > 0 {
		half := len(h) / 2
		res.EdgeRSSFirstHalf, res.EdgeRSSSecondHalf = meanU64(h[:half]), meanU64(h[half:])
		_, res.EdgeRSSPeak, _ = m.edgeProc.RSS()
	}
	return res, nil
}

func meanU64(v []uint64) uint64 {
	if len(v) == 0 {
		return 0
	}
	var s uint64
	for _, x := range v {
		s += x
	}
	return s / uint64(len(v))
}

// MaxOf returns the largest of v (0 for none).
func MaxOf(v []int64) int64 {
	var m int64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// FormatInFlight renders per-worker high-water marks as "8 8 8 8".
func FormatInFlight(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}
