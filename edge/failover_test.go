package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Failover tests on an in-process 3-node cluster (R3). Every client stays
// on node n0; stopping n1 and n2 takes JetStream's quorum away (no leader
// for any stream or bucket) while core NATS on n0 keeps working, which is
// what a client sees during an election, for as long as the test wants.

func failoverLogger() *slog.Logger {
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// clusterBus opens a bus with replicas on its own connection to url.
func clusterBus(t *testing.T, url, name string, replicas int) *taskstore.Store {
	t.Helper()
	nc := natstest.Connect(t, name, url)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{Replicas: replicas})
		cancel()
		if err == nil {
			return b
		}
		require.True(t, time.Now().Before(deadline), "bus not open: %v", err)
		time.Sleep(250 * time.Millisecond)
	}
}

// failoverEdge is an edge (its own bus, registry table, HTTP server) on
// node n0 of a fresh cluster, and a second bus for the test to act as a
// worker with.
type failoverEdge struct {
	c      *natstest.Cluster
	e      *Edge
	srv    *httptest.Server
	worker *taskstore.Store
	ctx    context.Context
	// pusher is the push deliverer beside the edge (Config.Push on), run
	// by runPush as a host runs it (mesh, the edge role).
	pusher *push.Deliverer
	pushWG sync.WaitGroup
}

func startFailoverEdge(t *testing.T, cfg Config) *failoverEdge {
	t.Helper()
	if testing.Short() {
		t.Skip("a 3-node cluster: skipped with -short")
	}
	c := natstest.StartCluster(t, 3)
	url := c.Nodes[0].URL()
	f := &failoverEdge{c: c, worker: clusterBus(t, url, "worker", 3)}
	f.start(t, clusterBus(t, url, "edge", 3), cfg)
	return f
}

// startSingleEdge is startFailoverEdge on one node (R1).
func startSingleEdge(t *testing.T, cfg Config) *failoverEdge {
	t.Helper()
	nd := natstest.StartSingle(t)
	f := &failoverEdge{c: &natstest.Cluster{Nodes: []*natstest.Node{nd}}, worker: clusterBus(t, nd.URL(), "worker", 1)}
	f.start(t, clusterBus(t, nd.URL(), "edge", 1), cfg)
	return f
}

func (f *failoverEdge) start(t *testing.T, b *taskstore.Store, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	table := registry.NewTable(b.Bus())
	table.Logger = failoverLogger()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = table.Run(ctx) }()
	cfg.Store, cfg.Registry, cfg.Logger = b, table, failoverLogger()
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = time.Second
	}
	pusher, err := NewPushDeliverer(cfg)
	require.NoError(t, err)
	f.pusher, cfg.PushDeliverer = pusher, pusher
	f.e = New(cfg)
	f.srv = httptest.NewServer(f.e)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		cancel()
		f.pushWG.Wait()
		wg.Wait()
	})
	require.True(t, natstest.Eventually(ctx, 30*time.Second, table.Loaded), "registry table loaded")
}

// runPush runs the push deliverer until f.ctx ends, and returns once it
// runs: nil, or its configuration error.
func (f *failoverEdge) runPush() error {
	ran := make(chan error, 1)
	f.pushWG.Add(1)
	go func() {
		defer f.pushWG.Done()
		ran <- f.pusher.Run(f.ctx)
	}()
	select {
	case <-f.pusher.Ready():
		return nil
	case err := <-ran:
		return err
	}
}

// loseQuorum stops n1 and n2 and waits until the events stream has no
// leader (a leader read fails: a leader on n0 steps down only once it
// notices its followers are gone); restore starts n1 again (quorum 2 of 3).
func (f *failoverEdge) loseQuorum(t *testing.T, id string) {
	t.Helper()
	f.c.Nodes[1].Stop()
	f.c.Nodes[2].Stop()
	require.True(t, natstest.Eventually(f.ctx, 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(f.ctx, time.Second)
		defer cancel()
		_, err := f.worker.LastEventSeq(ctx, id)
		return err != nil
	}), "the events stream still answers without quorum")
}
func (f *failoverEdge) restore(t *testing.T) {
	f.c.Nodes[1].Start(t)
}

// health returns /healthz's status code and body.
func (f *failoverEdge) health(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// An edge whose push start-up meets a JetStream without quorum waits for
// it (healthz 503, naming push delivery), and becomes ready once quorum is
// back, instead of failing.
func TestPushStartRidesOutNoQuorum(t *testing.T) {
	f := startFailoverEdge(t, Config{Push: PushConfig{Enabled: true}})
	f.loseQuorum(t, "x")
	started := make(chan error, 1)
	go func() { started <- f.runPush() }()

	// For a while: not ready, and Start has not given up.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-started:
			t.Fatalf("Start returned while JetStream had no quorum: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		code, body := f.health(t)
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, "push delivery")
	}
	// A push call meanwhile is -32000 (retry), not "not supported".
	resp := rpcCall(t, f.srv.URL+"/a2a", "GetTaskPushNotificationConfig", map[string]any{"taskId": "t1", "id": "c1"})
	require.NotNil(t, resp.Error)
	require.Equal(t, a2a.CodeServerBusy, resp.Error.Code, resp.Error.Message)

	f.restore(t)
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(90 * time.Second):
		t.Fatal("push did not start within 90s of quorum coming back")
	}
	code, body := f.health(t)
	require.Equal(t, http.StatusOK, code, body)
}

// A stream opened while the events stream has no leader (its task read
// from a replica, its reader refused) waits out the failover and then
// delivers every event after Last-Event-ID: no gap, no duplicate, no error.
func TestStreamRidesOutFailover(t *testing.T) {
	f := startFailoverEdge(t, Config{})
	// How long a node takes to rejoin and its raft groups to elect varies
	// a lot on a loaded machine (seen: 2-15s under -race): the test is
	// about riding out, not about the budget (TestStreamEndsBusyPastBudget).
	f.e.budget = 90 * time.Second
	ctx := f.ctx
	id := uuid.NewString()
	w := newTestWriter(t, f.worker, id)
	w.append(ctx, 3)

	outage := time.Now()
	f.loseQuorum(t, id)
	after := w.seqs[1] // the client saw the first two events
	got := make(chan sseResult, 1)
	go func() { got <- readStream(f.srv.URL, id, after, 90*time.Second) }()
	// Longer than the bus's own failover budget (15 s): the stream's task
	// read and its first reader fail, and the stream must wait on with
	// its own budget.
	time.Sleep(bus.FailoverBudget + time.Second)
	f.restore(t)
	// The task goes on once JetStream is back (appends retry through the
	// failover), and ends.
	w.append(ctx, 3)
	w.complete(ctx)
	recovered := time.Since(outage)
	t.Logf("task done %v after quorum was lost", recovered.Round(time.Millisecond))

	r := <-got
	require.NoError(t, r.err)
	// However long JetStream took to come back (within the stream's
	// budget), the stream rode it out: its reads wait for the stream's
	// budget, not the bus's own 15 s.
	require.Empty(t, r.errors, "no error frame")
	ids := r.ids
	want := w.seqs[2:]
	require.Equal(t, want, ids, "every event after Last-Event-ID exactly once, in order")
}

// A stream whose reader cannot be opened (here: the events stream refuses
// new consumers, as a stream without a leader does) keeps trying, and once
// it can, delivers every event after Last-Event-ID, including those
// appended meanwhile: no gap, no duplicate, no error frame.
func TestStreamReopensItsReader(t *testing.T) {
	f := startSingleEdge(t, Config{})
	ctx := f.ctx
	id := uuid.NewString()
	w := newTestWriter(t, f.worker, id)
	w.append(ctx, 2)

	js := f.worker.Bus().JetStream()
	s, err := js.Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	open := cfg.MaxConsumers
	cfg.MaxConsumers = max(s.CachedInfo().State.Consumers, 1)
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	// Every consumer slot taken: the stream's reader cannot be created.
	for i := s.CachedInfo().State.Consumers; i < cfg.MaxConsumers; i++ {
		_, err := js.OrderedConsumer(ctx, taskstore.StreamLog, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"a2a.task.none"}})
		require.NoError(t, err)
	}

	got := make(chan sseResult, 1)
	go func() { got <- readStream(f.srv.URL, id, w.seqs[0], 60*time.Second) }()
	time.Sleep(time.Second)
	w.append(ctx, 2) // meanwhile
	time.Sleep(time.Second)
	cfg.MaxConsumers = open
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	w.append(ctx, 1)
	w.complete(ctx)

	r := <-got
	require.NoError(t, r.err)
	require.Empty(t, r.errors, "no error frame")
	require.Equal(t, w.seqs[1:], r.ids, "every event after Last-Event-ID exactly once, in order")
}

// A stream whose reader loses its consumer (its node died) while no new
// one can be created (here: the events stream refuses new consumers) goes
// on after the last event it read once one can, without a gap or a
// duplicate, and soon (nats.go's ordered consumers, which the streams used,
// back off to 10s between attempts and cannot be stopped meanwhile).
func TestStreamReplacesALostReader(t *testing.T) {
	f := startSingleEdge(t, Config{})
	ctx := f.ctx
	id := uuid.NewString()
	w := newTestWriter(t, f.worker, id)
	w.append(ctx, 2)

	got := make(chan sseResult, 1)
	go func() { got <- readStream(f.srv.URL, id, w.seqs[0], 90*time.Second) }()
	js := f.worker.Bus().JetStream()
	events, err := js.Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	var reader string // the consumer the stream reads
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		for info := range events.ListConsumers(ctx).Info() {
			// The edge's event feed: one ephemeral consumer of every
			// task's events (bus/fanout.go), which the stream reads.
			if info.Config.Durable == "" && info.Config.FilterSubject == taskstore.LogSubjects {
				reader = info.Name
				return true
			}
		}
		return false
	}), "the stream's reader")
	// One consumer fewer allowed than there are (a lower limit keeps the
	// existing ones), then the reader's consumer goes: none can be created.
	_, err = js.OrderedConsumer(ctx, taskstore.StreamLog, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"a2a.task.none"}})
	require.NoError(t, err)
	s, err := js.Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	open := cfg.MaxConsumers
	cfg.MaxConsumers = s.CachedInfo().State.Consumers - 1
	require.Positive(t, cfg.MaxConsumers)
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, js.DeleteConsumer(ctx, taskstore.StreamLog, reader))

	w.append(ctx, 2) // appended while no reader can be created
	// the service's stream probe: after 5s quiet, then three asks 1s apart
	time.Sleep(5*time.Second + 3*time.Second)
	cfg.MaxConsumers = open
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	lifted := time.Now()
	w.append(ctx, 1)
	w.complete(ctx)

	r := <-got
	took := time.Since(lifted)
	t.Logf("stream done %v after consumers could be created again", took.Round(time.Millisecond))
	require.NoError(t, r.err)
	require.Empty(t, r.errors, "no error frame")
	require.Equal(t, w.seqs[1:], r.ids, "every event after Last-Event-ID exactly once, in order")
	require.Less(t, took, 5*time.Second, "the lost reader was replaced promptly")
}

// A task read that meets JetStream not answering (here: the task log's
// stream has lost its quorum for a moment) is retried within the failover
// budget, so the client gets its task rather than an error.
func TestTaskReadRidesOutFailover(t *testing.T) {
	f := startFailoverEdge(t, Config{})
	f.e.budget = 30 * time.Second
	ctx := f.ctx
	id := uuid.NewString()
	w := newTestWriter(t, f.worker, id)
	w.append(ctx, 1)

	f.loseQuorum(t, id)
	got := make(chan *a2a.Response, 1)
	go func() { got <- rpcCall(t, f.srv.URL+"/a2a", "GetTask", map[string]any{"id": id}) }()
	time.Sleep(1500 * time.Millisecond)
	f.restore(t)
	r := <-got
	require.Nil(t, r.Error, "GetTask answered %+v", r.Error)
	require.Contains(t, fmt.Sprint(r.Result), id)
}

// A stream whose event log stays unreachable past the failover budget ends
// with -32000 (retry), never -32603.
func TestStreamEndsBusyPastBudget(t *testing.T) {
	f := startFailoverEdge(t, Config{})
	ctx := f.ctx
	id := uuid.NewString()
	w := newTestWriter(t, f.worker, id)
	w.append(ctx, 2)

	got := make(chan sseResult, 1)
	go func() { got <- readStream(f.srv.URL, id, w.seqs[0], 60*time.Second) }()
	// The stream delivers the second event, then quorum goes for good.
	time.Sleep(time.Second)
	start := time.Now()
	f.loseQuorum(t, id)
	r := <-got
	t.Logf("stream ended %v after quorum was lost", time.Since(start).Round(time.Millisecond))
	require.NoError(t, r.err)
	require.Equal(t, w.seqs[1:2], r.ids, "the event before the outage")
	require.Len(t, r.errors, 1, "one error frame ends the stream")
	require.Equal(t, a2a.CodeServerBusy, r.errors[0].Code, r.errors[0].Message)
	require.GreaterOrEqual(t, time.Since(start), bus.FailoverBudget, "the stream waited out the budget first")
}

// ---- helpers ----

// testWriter appends events to a task's log the way a worker does.
type testWriter struct {
	t    *testing.T
	b    *taskstore.Store
	id   string
	ctx  string
	rec  *taskstore.TaskRecord
	n    int
	seqs []uint64 // seq of each appended event (not the creation entry)
}

func newTestWriter(t *testing.T, b *taskstore.Store, id string) *testWriter {
	t.Helper()
	w := &testWriter{t: t, b: b, id: id, ctx: uuid.NewString()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: "echo", Task: a2a.Task{ID: id, ContextID: w.ctx,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()}}})
	require.NoError(t, err)
	w.rec = rec
	return w
}

// update appends one event, retrying through a failover as a worker would.
func (w *testWriter) update(ctx context.Context, ev *a2a.StreamResponse) {
	w.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		next, _, err := w.b.UpdateTask(ctx, w.id, w.rec, func(*taskstore.TaskRecord) (*a2a.StreamResponse, error) { return ev, nil })
		if err == nil {
			w.rec = next
			w.seqs = append(w.seqs, next.LastSeq)
			return
		}
		require.True(w.t, time.Now().Before(deadline), "append: %v", err)
		time.Sleep(200 * time.Millisecond)
		w.rec = nil // reload
	}
}

func (w *testWriter) append(ctx context.Context, n int) {
	for range n {
		w.n++
		w.update(ctx, &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: w.id, ContextID: w.ctx,
			Artifact: a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("chunk %d", w.n))}}, Append: w.n > 1}})
	}
}

func (w *testWriter) complete(ctx context.Context) {
	w.update(ctx, &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: w.id, ContextID: w.ctx,
		Status: a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: a2a.Now()}}})
}

type sseResult struct {
	ids    []uint64
	errors []*a2a.Error
	err    error
}

// readStream resubscribes to task id with Last-Event-ID after (1.0
// SubscribeToTask) and reads the stream to its end.
func readStream(base, id string, after uint64, limit time.Duration) sseResult {
	var res sseResult
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": map[string]any{"id": id}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a", bytes.NewReader(body))
	if err != nil {
		res.err = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		res.err = err
		return res
	}
	defer resp.Body.Close()
	evs, err := ssetest.ReadAll(resp.Body)
	for _, ev := range evs {
		var r struct {
			Error *a2a.Error `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			res.err = err
			return res
		}
		if r.Error != nil {
			res.errors = append(res.errors, r.Error)
		} else {
			id64, _ := ev.Seq()
			res.ids = append(res.ids, id64)
		}
	}
	if err != nil && ctx.Err() != nil {
		res.err = fmt.Errorf("stream still open after %v", limit)
	}
	return res
}

// rpcCall posts one 1.0 JSON-RPC call and decodes the answer.
func rpcCall(t *testing.T, url, method string, params any) *a2a.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out a2a.Response
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return &out
}
