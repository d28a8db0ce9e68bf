package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// The open-streams benchmark: N SSE streams (SubscribeToTask, PerTask of
// them on each of N/PerTask tasks of the slow agent, which emits an
// artifact chunk every ChunkDelay) held open on one edge at once. It
// starts `a2amesh nats`, `a2amesh edge` and `a2amesh worker --agent slow`
// as processes of their own (or uses an existing mesh), so that the
// edge's and the NATS server's resident memory and CPU are each their
// own; opens the streams; holds them for Hold while sampling; then
// cancels the tasks and checks every stream: events in order, each chunk
// exactly once from where its snapshot left off, ending at the task's
// final state with the task's last chunk.

// Limits of the streams benchmark.
const (
	MaxStreams        = 50_000
	maxStreamsPerTask = 1000
	// streamsChunks is how many chunks each task is asked for: the slow
	// agent's most, so a task outlives the open phase and the hold; the
	// benchmark cancels the tasks when it is done.
	streamsChunks = 1000
)

// StreamsOptions configures a streams run.
type StreamsOptions struct {
	// Streams is how many streams to hold open (default 1000).
	Streams int
	// PerTask is how many streams subscribe to each task (default 10).
	PerTask int
	// ChunkDelay is the slow agent's delay between chunks (default 1s).
	ChunkDelay time.Duration
	// Hold is how long every stream stays open after the last one opened
	// (default 30s): memory, CPU and latency are measured over it.
	Hold time.Duration
	// OpenConcurrency is how many streams are being opened at once
	// (default 64).
	OpenConcurrency int
	// Bin is the a2amesh binary to start the mesh's processes from
	// (without URL).
	Bin string
	// URL, if set, is an existing mesh's base URL, serving the slow
	// agent: no processes are started and no RSS is measured; NATSURL,
	// if set, is its NATS server, for the event latency.
	URL, NATSURL string
	// EdgeArgs are extra arguments for the edge process.
	EdgeArgs []string
	// TempDir holds the NATS server's files (default: the system's).
	TempDir string
	// Progress, if set, is told what is about to happen.
	Progress func(msg string)
}

func (o *StreamsOptions) normalize() error {
	if o.Streams == 0 {
		o.Streams = 1000
	}
	if o.PerTask == 0 {
		o.PerTask = 10
	}
	if o.ChunkDelay == 0 {
		o.ChunkDelay = time.Second
	}
	if o.Hold == 0 {
		o.Hold = 30 * time.Second
	}
	if o.OpenConcurrency == 0 {
		o.OpenConcurrency = 64
	}
	switch {
	case o.Streams < 1 || o.Streams > MaxStreams:
		return fmt.Errorf("bench: streams %d not in [1, %d]", o.Streams, MaxStreams)
	case o.PerTask < 1 || o.PerTask > maxStreamsPerTask || o.PerTask > o.Streams:
		return fmt.Errorf("bench: streams per task %d not in [1, min(%d, streams)]", o.PerTask, maxStreamsPerTask)
	case o.ChunkDelay < 10*time.Millisecond || o.ChunkDelay > 10*time.Second:
		return fmt.Errorf("bench: chunk delay %v not in [10ms, 10s]", o.ChunkDelay)
	case o.Hold < time.Second || o.Hold > MaxDuration:
		return fmt.Errorf("bench: hold %v not in [1s, %v]", o.Hold, MaxDuration)
	case o.OpenConcurrency < 1 || o.OpenConcurrency > MaxConcurrency:
		return fmt.Errorf("bench: open concurrency %d not in [1, %d]", o.OpenConcurrency, MaxConcurrency)
	case o.URL == "" && o.Bin == "":
		return errors.New("bench: streams needs an a2amesh binary or a mesh URL")
	}
	// The tasks must outlive opening every stream and the hold.
	if time.Duration(streamsChunks)*o.ChunkDelay < o.Hold+5*time.Minute {
		return fmt.Errorf("bench: %d chunks %v apart end before the hold (%v) and 5 minutes to open the streams; use a longer --chunk-delay",
			streamsChunks, o.ChunkDelay, o.Hold)
	}
	return nil
}

// StreamsResult is what a streams run measured.
type StreamsResult struct {
	Streams, Tasks int
	ChunkDelay     time.Duration
	// NoFile is the open-files limit the benchmark ran with (raised to
	// its hard limit; the mesh's processes inherit it).
	NoFile uint64
	// OpenTime is how long opening every stream took; OpenP50/P99 the
	// time from a stream's request to its first event (the snapshot).
	OpenTime, OpenP50, OpenP99 time.Duration
	// EdgeRSSBefore is the edge's resident memory with the tasks running
	// and no stream open; EdgeRSSHold its mean over the hold;
	// EdgeRSSPeak its high-water mark. The same for the NATS server.
	EdgeRSSBefore, EdgeRSSHold, EdgeRSSPeak uint64
	NATSRSSBefore, NATSRSSHold, NATSRSSPeak uint64
	// PerStream is (EdgeRSSHold - EdgeRSSBefore) / Streams.
	PerStream uint64
	// CPU used (cores, averaged) while the streams opened and over the
	// hold, by the edge and by the NATS server.
	EdgeCPUOpen, NATSCPUOpen, EdgeCPUHold, NATSCPUHold float64
	// WorkerCPUHold and BenchCPUHold are the slow worker's and this
	// process's (the clients reading the streams) over the hold: they
	// share the machine with the edge and the NATS server.
	WorkerCPUHold, BenchCPUHold float64
	// Events is how many chunks the streams received over the hold;
	// LatencyP50/P99/Max the time from the chunk's append (its
	// publication, seen by the benchmark's own NATS subscription) to its
	// SSE event, over the hold (Latencies counts them).
	Events                             int64
	Latencies                          int
	LatencyP50, LatencyP99, LatencyMax time.Duration
	// Checked is how many streams were checked whole after the tasks
	// were canceled; Failed how many of them broke a rule (Failures
	// gives the first few).
	Checked, Failed int
	Failures        []string
}

// raiseNoFile raises the soft open-files limit to the hard limit (this
// process's streams, and its children's, each hold a descriptor).
func raiseNoFile() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			return want.Cur
		}
	}
	return lim.Cur
}

// streamsMesh is the mesh a streams run uses.
type streamsMesh struct {
	pm      *ProcMesh
	worker  *Proc
	url     string // base URL of the edge
	natsURL string
}

func (m *streamsMesh) close() {
	if m.worker != nil {
		m.worker.Stop(10 * time.Second)
	}
	if m.pm != nil {
		m.pm.Close()
	}
}

func startStreamsMesh(ctx context.Context, o StreamsOptions, tasks int) (_ *streamsMesh, err error) {
	m := &streamsMesh{url: strings.TrimSuffix(o.URL, "/"), natsURL: o.NATSURL}
	if m.url != "" {
		return m, nil
	}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	m.pm = &ProcMesh{}
	if m.pm.dir, err = os.MkdirTemp(o.TempDir, "a2amesh-bench-streams-*"); err != nil {
		return nil, err
	}
	natsAddr, err := FreePort()
	if err != nil {
		return nil, err
	}
	if m.pm.NATS, err = StartProc(o.Bin, []string{"nats", "--data", m.pm.dir, "--listen", natsAddr, "--log-level", "warn"}, nil); err != nil {
		return nil, err
	}
	m.natsURL = "nats://" + natsAddr
	m.pm.NATSURL = m.natsURL
	if err := waitTCP(ctx, m.pm.NATS, natsAddr, 30*time.Second); err != nil {
		return nil, err
	}
	if m.pm.Edge, m.url, err = StartEdgeProc(ctx, o.Bin, m.natsURL, o.EdgeArgs...); err != nil {
		return nil, err
	}
	m.pm.EdgeURL = m.url
	m.worker, err = StartProc(o.Bin, []string{"worker", "--nats", m.natsURL, "--agent", "slow", "--log-level", "warn",
		"--concurrency", strconv.Itoa(tasks), "--task-timeout", "2h"}, nil)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, m.worker, m.url+"/agents/slow/.well-known/agent-card.json", 60*time.Second); err != nil {
		return nil, err
	}
	return m, nil
}

// procCPU is a process's CPU time so far (user + system), from /proc.
func procCPU(p *Proc) time.Duration {
	if p == nil {
		return 0
	}
	return pidCPU(strconv.Itoa(p.Pid()))
}

// pidCPU is the CPU time so far of process pid ("self": this one).
func pidCPU(pid string) time.Duration {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	// Fields after the command: state is f[0]; utime and stime are the
	// 14th and 15th of the line, f[11] and f[12] here, in clock ticks
	// (100 a second on Linux).
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func procRSS(p *Proc) (rss, hwm uint64) {
	if p == nil {
		return 0, 0
	}
	rss, hwm, _ = p.RSS()
	return rss, hwm
}

// arrival is one event a stream received, and when.
type arrival struct {
	seq uint64
	at  int64 // UnixNano
}

// benchStream is one open stream and what it received.
type benchStream struct {
	task     int
	openedIn time.Duration // request to first event; 0: not opened
	// What the stream received, in order (set by its reader).
	firstChunk   int // chunks in the snapshot's artifact
	chunks       []int32
	snapID       uint64   // the snapshot's id
	ids          []uint64 // the ids of the events after it
	lastID       uint64
	finalState   a2a.TaskState
	arrivals     []arrival
	fail         string
	ended        bool
	receivedHold int64
}

// RunStreams runs the open-streams benchmark.
func RunStreams(ctx context.Context, o StreamsOptions) (StreamsResult, error) {
	if err := o.normalize(); err != nil {
		return StreamsResult{}, err
	}
	ntasks := (o.Streams + o.PerTask - 1) / o.PerTask
	res := StreamsResult{Streams: o.Streams, Tasks: ntasks, ChunkDelay: o.ChunkDelay, NoFile: raiseNoFile()}
	progress := func(f string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(f, a...))
		}
	}
	if o.URL == "" {
		progress("starting nats, edge and a slow worker (concurrency %d) as processes", ntasks)
	}
	m, err := startStreamsMesh(ctx, o, ntasks)
	if err != nil {
		return res, err
	}
	defer m.close()
	var edgeP, natsP *Proc
	if m.pm != nil {
		edgeP, natsP = m.pm.Edge, m.pm.NATS
	}
	endpoint := m.url + "/agents/slow"

	client := streamsClient()
	defer client.CloseIdleConnections()

	// The tasks.
	progress("starting %d slow tasks (chunks=%d delay=%v)", ntasks, streamsChunks, o.ChunkDelay)
	ids := make([]string, ntasks)
	text := fmt.Sprintf("chunks=%d delay=%s", streamsChunks, o.ChunkDelay)
	if err := forEach(ctx, ntasks, 32, func(i int) error {
		id, err := startSlowTask(ctx, client, endpoint, text)
		if err != nil {
			return err
		}
		ids[i] = id
		return nil
	}); err != nil {
		return res, err
	}
	defer cancelTasks(client, endpoint, ids) // on an early return too: the worker stops anyway
	sleepCtx(ctx, 2*time.Second)             // every task is running
	runtimeGCProcs(edgeP)
	res.EdgeRSSBefore, _ = procRSS(edgeP)
	res.NATSRSSBefore, _ = procRSS(natsP)

	// Open the streams.
	progress("opening %d streams, %d at a time", o.Streams, o.OpenConcurrency)
	streams := make([]*benchStream, o.Streams)
	for i := range streams {
		streams[i] = &benchStream{task: i % ntasks}
	}
	var holdFrom atomic.Int64 // UnixNano; 0: not holding yet
	holdFrom.Store(1 << 62)
	var opened atomic.Int64
	var readers sync.WaitGroup
	sctx, stopStreams := context.WithCancel(ctx)
	defer func() {
		stopStreams()
		readers.Wait()
	}()
	cpuE0, cpuN0, t0 := procCPU(edgeP), procCPU(natsP), time.Now()
	sem := make(chan struct{}, o.OpenConcurrency)
	var openErr atomic.Value
	for i, st := range streams {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if openErr.Load() != nil {
			<-sem
			break
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			ready := make(chan struct{})
			go func() {
				select {
				case <-ready:
				case <-sctx.Done():
				}
				<-sem
			}()
			if err := st.run(sctx, client, endpoint, ids[st.task], &holdFrom, ready); err != nil && openErr.Load() == nil {
				openErr.Store(fmt.Errorf("stream %d: %w", i, err))
			}
			opened.Add(1)
		}()
	}
	// Every stream has its first event (or failed).
	for i := 0; i < o.OpenConcurrency; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	res.OpenTime = time.Since(t0)
	if err, _ := openErr.Load().(error); err != nil {
		return res, err
	}
	res.EdgeCPUOpen = (procCPU(edgeP) - cpuE0).Seconds() / res.OpenTime.Seconds()
	res.NATSCPUOpen = (procCPU(natsP) - cpuN0).Seconds() / res.OpenTime.Seconds()
	opens := make([]time.Duration, 0, len(streams))
	for _, st := range streams {
		if st.openedIn > 0 {
			opens = append(opens, st.openedIn)
		}
	}
	if len(opens) != len(streams) {
		return res, fmt.Errorf("bench: %d of %d streams opened", len(opens), len(streams))
	}
	res.OpenP50, res.OpenP99 = pct(opens, 50), pct(opens, 99)

	// Hold.
	progress("all %d streams open after %v; holding them %v", o.Streams, res.OpenTime.Round(time.Millisecond), o.Hold)
	holdStart := time.Now()
	holdFrom.Store(holdStart.UnixNano())
	cpuE0, cpuN0 = procCPU(edgeP), procCPU(natsP)
	cpuW0, cpuB0 := procCPU(m.worker), pidCPU("self")
	var edgeRSS, natsRSS []uint64
	tick := time.NewTicker(time.Second)
	for range int(o.Hold / time.Second) {
		select {
		case <-ctx.Done():
			tick.Stop()
			return res, ctx.Err()
		case <-tick.C:
		}
		if r, _ := procRSS(edgeP); r > 0 {
			edgeRSS = append(edgeRSS, r)
		}
		if r, _ := procRSS(natsP); r > 0 {
			natsRSS = append(natsRSS, r)
		}
	}
	tick.Stop()
	holdEnd := time.Now()
	holdFrom.Store(-holdEnd.UnixNano()) // negative: the hold is over at this time
	held := holdEnd.Sub(holdStart).Seconds()
	res.EdgeCPUHold = (procCPU(edgeP) - cpuE0).Seconds() / held
	res.NATSCPUHold = (procCPU(natsP) - cpuN0).Seconds() / held
	res.WorkerCPUHold = (procCPU(m.worker) - cpuW0).Seconds() / held
	res.BenchCPUHold = (pidCPU("self") - cpuB0).Seconds() / held
	res.EdgeRSSHold, res.NATSRSSHold = meanU64(edgeRSS), meanU64(natsRSS)
	_, res.EdgeRSSPeak = procRSS(edgeP)
	_, res.NATSRSSPeak = procRSS(natsP)
	if res.EdgeRSSHold > res.EdgeRSSBefore {
		res.PerStream = (res.EdgeRSSHold - res.EdgeRSSBefore) / uint64(o.Streams)
	}

	// End the tasks; every stream ends with them.
	progress("canceling the tasks; checking every stream")
	cancelTasks(client, endpoint, ids)
	done := make(chan struct{})
	go func() {
		readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		stopStreams()
		<-done
	}
	// What each task's log holds, to check every stream against; and
	// when each event was stored, for the latency.
	var logs map[string][]logEntry
	if m.natsURL != "" {
		progress("reading the event log")
		if logs, err = readEventLog(ctx, m.natsURL, ids); err != nil {
			return res, err
		}
	}
	final := make([]int, ntasks)
	if logs == nil { // no log to check against: the chunks' numbers
		if err := forEach(ctx, ntasks, 32, func(i int) error {
			n, err := taskChunks(ctx, client, endpoint, ids[i])
			final[i] = n
			return err
		}); err != nil {
			return res, err
		}
	}
	stored := map[uint64]int64{}
	for _, l := range logs {
		for _, e := range l {
			stored[e.seq] = e.at
		}
	}
	var lats []time.Duration
	for i, st := range streams {
		res.Checked++
		var msg string
		if logs != nil {
			msg = st.checkLog(logs[ids[st.task]])
		} else {
			msg = st.check(final[st.task])
		}
		if msg != "" {
			res.Failed++
			if len(res.Failures) < 10 {
				res.Failures = append(res.Failures, fmt.Sprintf("stream %d (task %s): %s", i, ids[st.task], msg))
			}
		}
		res.Events += st.receivedHold
		for _, a := range st.arrivals {
			if t, ok := stored[a.seq]; ok {
				lats = append(lats, time.Duration(a.at-t))
			}
		}
	}
	res.Latencies = len(lats)
	if len(lats) > 0 {
		res.LatencyP50, res.LatencyP99 = pct(lats, 50), pct(lats, 99)
		res.LatencyMax = slices.Max(lats)
	}
	return res, nil
}

// runtimeGCProcs is a pause for the edge to settle before a baseline is
// read (it runs its own GC; there is nothing to ask it).
func runtimeGCProcs(p *Proc) {
	if p != nil {
		time.Sleep(time.Second)
	}
}

// pct is the p-th percentile of v (sorted in place).
func pct(v []time.Duration, p int) time.Duration {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := (len(v)*p + 99) / 100
	return v[min(max(i-1, 0), len(v)-1)]
}

// forEach runs f(0..n-1), at most par at once; the first error wins.
func forEach(ctx context.Context, n, par int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	sem := make(chan struct{}, par)
	for i := range n {
		sem <- struct{}{}
		mu.Lock()
		stop := ferr != nil || ctx.Err() != nil
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				ferr = errors.Join(ferr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ferr == nil {
		ferr = ctx.Err()
	}
	return ferr
}

func streamsClient() *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr}
}

// rpc posts one JSON-RPC 1.0 call and decodes its result into out.
func rpc(ctx context.Context, client *http.Client, endpoint, method string, params, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *a2a.Error      `json:"error"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", method, resp.StatusCode, err)
	}
	if env.Error != nil {
		return fmt.Errorf("%s: %d %s", method, env.Error.Code, env.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

func startSlowTask(ctx context.Context, client *http.Client, endpoint, text string) (string, error) {
	var out a2a.StreamResponse
	msg := map[string]any{"role": "ROLE_USER", "messageId": fmt.Sprintf("bench-streams-%d", time.Now().UnixNano()),
		"parts": []any{map[string]any{"text": text}}}
	if err := rpc(ctx, client, endpoint, "SendMessage",
		map[string]any{"message": msg, "configuration": map[string]any{"returnImmediately": true}}, &out); err != nil {
		return "", err
	}
	if out.Task == nil || out.Task.ID == "" {
		return "", errors.New("SendMessage: no task in the answer")
	}
	return out.Task.ID, nil
}

// cancelTasks cancels every task (best effort).
func cancelTasks(client *http.Client, endpoint string, ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = forEach(ctx, len(ids), 32, func(i int) error {
		if ids[i] != "" {
			_ = rpc(ctx, client, endpoint, "CancelTask", map[string]any{"id": ids[i]}, nil)
		}
		return nil
	})
}

// taskChunks is how many chunks task id's artifact holds.
func taskChunks(ctx context.Context, client *http.Client, endpoint, id string) (int, error) {
	var t a2a.Task
	if err := rpc(ctx, client, endpoint, "GetTask", map[string]any{"id": id}, &t); err != nil {
		return 0, err
	}
	if !t.Status.State.Terminal() {
		return 0, fmt.Errorf("task %s is %s after its cancel", id, t.Status.State)
	}
	return artifactChunks(t.Artifacts), nil
}

func artifactChunks(arts []a2a.Artifact) int {
	n := 0
	for _, a := range arts {
		if a.Name == "chunks" {
			n += len(a.Parts)
		}
	}
	return n
}

// chunkOf reads the chunk number of a logged artifact event.
func chunkOf(data []byte) (int, bool) {
	var ev a2a.StreamResponse
	if json.Unmarshal(data, &ev) != nil || ev.ArtifactUpdate == nil {
		return 0, false
	}
	return chunkNumber(ev.ArtifactUpdate.Artifact)
}

// chunkNumber reads "chunk i/N" from the slow agent's artifact chunk.
func chunkNumber(a a2a.Artifact) (int, bool) {
	if len(a.Parts) != 1 {
		return 0, false
	}
	s, ok := strings.CutPrefix(a.Parts[0].Text, "chunk ")
	if !ok {
		return 0, false
	}
	s, _, _ = strings.Cut(s, "/")
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// run opens the stream and reads it to its end; ready is closed at the
// first event (or when the stream fails before it).
func (st *benchStream) run(ctx context.Context, client *http.Client, endpoint, id string, holdFrom *atomic.Int64, ready chan struct{}) error {
	readyOnce := sync.OnceFunc(func() { close(ready) })
	defer readyOnce()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": map[string]any{"id": id}})
	if err != nil {
		return err
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sse := ssetest.NewReader(resp.Body)
	sse.MaxEvent = 4 << 20
	first := true
	for {
		ev, err := sse.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if !st.ended && st.fail == "" && ctx.Err() == nil {
				st.fail = fmt.Sprintf("stream ended without a final state (%v)", err)
			}
			return nil
		}
		now := time.Now()
		if first {
			st.openedIn = now.Sub(start)
			first = false
			readyOnce()
		}
		id, _ := ev.Seq() // 0 without one: st.event fails the stream
		st.event(id, ev.Data, now, holdFrom.Load())
		if st.ended || st.fail != "" {
			return nil
		}
	}
}

// event checks one SSE event as it arrives.
func (st *benchStream) event(id uint64, data []byte, now time.Time, holdFrom int64) {
	var env struct {
		Result *a2a.StreamResponse `json:"result"`
		Error  *a2a.Error          `json:"error"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		st.fail = "undecodable event: " + err.Error()
		return
	}
	if env.Error != nil {
		st.fail = fmt.Sprintf("error event: %d %s", env.Error.Code, env.Error.Message)
		return
	}
	ev := env.Result
	if ev == nil {
		st.fail = "event without a result"
		return
	}
	if id == 0 || id <= st.lastID {
		st.fail = fmt.Sprintf("event id %d after %d", id, st.lastID)
		return
	}
	st.lastID = id
	if ev.Task == nil {
		st.ids = append(st.ids, id)
	}
	switch {
	case ev.Task != nil:
		st.snapID = id
		if len(st.chunks) > 0 || st.firstChunk != 0 {
			st.fail = "a second snapshot"
			return
		}
		st.firstChunk = artifactChunks(ev.Task.Artifacts)
		if st.snapID == 0 {
			st.fail = "a snapshot without an id"
			return
		}
		if ev.Task.Status.State.Terminal() {
			st.finalState, st.ended = ev.Task.Status.State, true
		}
	case ev.ArtifactUpdate != nil:
		n, ok := chunkNumber(ev.ArtifactUpdate.Artifact)
		if !ok {
			st.fail = "an artifact event that is not a chunk"
			return
		}
		st.chunks = append(st.chunks, int32(n))
		if holdFrom > 0 && now.UnixNano() >= holdFrom {
			st.receivedHold++
			st.arrivals = append(st.arrivals, arrival{seq: id, at: now.UnixNano()})
		}
	case ev.StatusUpdate != nil:
		if ev.StatusUpdate.Status.State.Terminal() {
			st.finalState, st.ended = ev.StatusUpdate.Status.State, true
		}
	}
}

// check says what is wrong with the stream as a whole ("" for nothing):
// its chunks must be firstChunk+1, firstChunk+2, ... up to last, the
// task's final chunk count, each once and in order, and it must end at a
// final state.
func (st *benchStream) check(last int) string {
	if st.fail != "" {
		return st.fail
	}
	if !st.ended {
		return "no final state"
	}
	want := int32(st.firstChunk)
	for _, n := range st.chunks {
		if n != want+1 {
			return fmt.Sprintf("chunk %d after %d", n, want)
		}
		want = n
	}
	if int(want) != last {
		return fmt.Sprintf("last chunk %d, the task has %d", want, last)
	}
	return ""
}

// checkLog says what is wrong with the stream ("" for nothing) against
// its task's log: after its snapshot it must have received exactly the
// log's stream items after the snapshot's id, in order, up to and
// including the first final state.
func (st *benchStream) checkLog(log []logEntry) string {
	if st.fail != "" {
		return st.fail
	}
	if !st.ended {
		return "no final state"
	}
	var want []uint64
	if !st.finalState.Terminal() || len(st.ids) > 0 {
		for _, e := range log {
			if e.seq <= st.snapID || !e.item {
				continue
			}
			want = append(want, e.seq)
			if e.final {
				break
			}
		}
	}
	if !slices.Equal(st.ids, want) {
		i := 0
		for i < len(want) && i < len(st.ids) && want[i] == st.ids[i] {
			i++
		}
		return fmt.Sprintf("received %d events after snapshot %d, the log has %d; first difference at #%d (received %v, log %v)",
			len(st.ids), st.snapID, len(want), i, at(st.ids, i), at(want, i))
	}
	return ""
}

func at(v []uint64, i int) any {
	if i < len(v) {
		return v[i]
	}
	return "none"
}

// logEntry is one event of a task's log: its position, when it was
// stored, whether a stream carries it (not the creation entry, not a
// user turn) and whether it is a final state.
type logEntry struct {
	seq         uint64
	at          int64
	item, final bool
}

// readEventLog reads the whole event log (one ordered consumer) and
// returns the entries of the tasks ids, by task.
func readEventLog(ctx context.Context, natsURL string, ids []string) (map[string][]logEntry, error) {
	nc, err := nats.Connect(natsURL, nats.Name("a2amesh-bench-streams"))
	if err != nil {
		return nil, fmt.Errorf("bench: connect to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stream, err := js.Stream(ctx, taskstore.StreamLog)
	if err != nil {
		return nil, fmt.Errorf("bench: the event log: %w", err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	out := make(map[string][]logEntry, len(ids))
	for _, id := range ids {
		out[id] = nil
	}
	if last == 0 {
		return out, nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{taskstore.LogSubjects}})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	for n := uint64(0); n <= last; n++ {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("bench: reading the event log: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		id, _ := taskstore.TaskIDOf(m.Subject())
		if l, ok := out[id]; ok {
			// A message holds a batch of events, each at its own
			// position (the id streams give it).
			evs, err := taskstore.EventsOf(meta.Sequence.Stream, m.Headers(), m.Data())
			if err != nil {
				return nil, fmt.Errorf("bench: log message %d: %w", meta.Sequence.Stream, err)
			}
			for _, le := range evs {
				ev := le.Resp
				e := logEntry{seq: le.Seq, at: meta.Timestamp.UnixNano()}
				switch {
				case ev.Task != nil:
				case ev.Message != nil && ev.Message.Role == a2a.RoleUser:
				default:
					e.item = true
					e.final = ev.StatusUpdate != nil && ev.StatusUpdate.Status.State.Final()
				}
				l = append(l, e)
			}
			out[id] = l
		}
		if meta.Sequence.Stream >= last {
			break
		}
	}
	return out, nil
}
