package agentrt_test

// Redelivery paths of the worker:
//
//   - a run that stalls past AckWait (its worker cut off from NATS) is
//     superseded by the redelivery that replaced it: once back, its
//     events are refused, so the two runs never interleave;
//   - a worker that stops hands its task back at once (nak), so another
//     worker runs it well before AckWait;
//   - a run whose first write (claiming the task) the bus refuses hands
//     the work back to run later, instead of dropping it.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// gatedProxy is a TCP proxy on loopback whose traffic can be held (both
// ways) and let go: a NATS client behind it is cut off without a
// disconnect, as by a network partition or a stalled process.
type gatedProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	held   bool
	open   chan struct{} // closed while traffic flows
}

func startGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &gatedProxy{ln: ln, target: target, open: make(chan struct{})}
	close(p.open)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.release() })
	return p
}

func (p *gatedProxy) URL() string { return "nats://" + p.ln.Addr().String() }

func (p *gatedProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

// pipe copies from src to dst, waiting while the gate is held.
func (p *gatedProxy) pipe(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *gatedProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		p.held, p.open = true, make(chan struct{})
	}
}

func (p *gatedProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		close(p.open)
	}
}

// stepper runs each attempt of a turn step by step: it says when an
// attempt started, waits to be let go, then writes an artifact naming the
// attempt and completes; it says when the attempt ended, and how.
type stepper struct {
	name    string
	started chan int
	release map[int]chan struct{}
	ended   chan error
}

func newStepper(name string) *stepper {
	s := &stepper{name: name, started: make(chan int, 4), ended: make(chan error, 4), release: map[int]chan struct{}{}}
	for i := 1; i <= 4; i++ {
		s.release[i] = make(chan struct{})
	}
	return s
}

func (s *stepper) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: s.name, Description: "runs step by step", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "s", Tags: []string{"t"}}}}
}

func (s *stepper) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) (err error) {
	defer func() { s.ended <- err }()
	s.started <- req.Attempt
	rel := s.release[req.Attempt]
	if rel == nil {
		return fmt.Errorf("unexpected attempt %d", req.Attempt)
	}
	select {
	case <-rel:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := w.Artifact(a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprint("from attempt ", req.Attempt))}}, false, true); err != nil {
		return err
	}
	return w.Complete(fmt.Sprint("completed by attempt ", req.Attempt))
}

func waitInt(t *testing.T, ch <-chan int, d time.Duration, what string) int {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
		return 0
	}
}

// TestStalledRunIsSuperseded: worker A's run is cut off from NATS past
// AckWait; the work goes to worker B, whose run claims the task. When A
// comes back, its events are refused: the task holds only B's output.
func TestStalledRunIsSuperseded(t *testing.T) {
	cfg := bus.Config{AckWait: 2 * time.Second, MaxDeliver: 5}
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Bus = cfg
		c.NATSListen = "127.0.0.1:0"
	}))
	const name = "stepper"
	a := newStepper(name)
	proxy := startGatedProxy(t, strings.TrimPrefix(m.NATSURL(), "nats://"))
	nc, err := bus.Dial(bus.DialConfig{URL: proxy.URL(), Name: "worker-a"})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	busA, err := bustest.OpenStoreOn(ctx, nc, cfg)
	cancel()
	require.NoError(t, err)
	metA := metrics.New()
	startWorkerWith(t, &agentrt.Worker{Store: busA, Agent: a, Name: name, Instance: "a", Concurrency: 1, Timeout: time.Minute, Metrics: metA})
	waitRoutable(t, m, name)

	id := sendAsync(t, m.URL+"/agents/"+name, "step")
	require.Equal(t, 1, waitInt(t, a.started, 20*time.Second, "attempt 1 on worker A"))
	// A's run has claimed the task (its claim is written within the
	// writer's linger of the run's start).
	require.Eventually(t, func() bool { return countState(logStates(t, m.Store(), id), a2a.StateWorking) >= 1 }, 10*time.Second, 20*time.Millisecond)
	proxy.hold() // A is cut off: no heartbeat gets out
	startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Instance: "b", Concurrency: 1, Timeout: time.Minute})
	require.Equal(t, 2, waitInt(t, a.started, 3*cfg.AckWait+10*time.Second, "attempt 2 on worker B after AckWait"))
	// B's run has claimed the task (its working event is in the log).
	require.Eventually(t, func() bool { return countState(logStates(t, m.Store(), id), a2a.StateWorking) >= 2 }, 10*time.Second, 20*time.Millisecond)

	proxy.release()
	close(a.release[1]) // A goes on as if nothing happened
	select {
	case err := <-a.ended:
		assert.ErrorIs(t, err, agentrt.ErrTaskClosed, "attempt 1's writes after it was superseded")
	case <-time.After(30 * time.Second):
		t.Fatal("attempt 1 never ended")
	}
	close(a.release[2])
	rec := waitFinal(t, m.Store(), id, 20*time.Second)
	require.NotNil(t, rec)
	states := logStates(t, m.Store(), id)
	require.Equal(t, a2a.StateCompleted, rec.Task.Status.State, "log states %v", states)
	assert.Equal(t, "completed by attempt 2", statusText(rec))
	require.Len(t, rec.Task.Artifacts, 1)
	assert.Equal(t, "from attempt 2", rec.Task.Artifacts[0].Parts[0].Text, "the superseded run's artifact reached the task")
	assert.Equal(t, 1, countState(states, a2a.StateCompleted), "COMPLETED events: %v", states)
	require.Eventually(t, func() bool { return runsOf(t, metA, name, metrics.RunSuperseded) == 1 }, 10*time.Second, 20*time.Millisecond,
		"worker A's run is counted superseded (settled %v)", runsOf(t, metA, name, metrics.RunSettled))
}

// TestStoppedWorkerHandsBack: a worker stopping mid-run hands the task
// back at once; another worker runs it long before AckWait would have.
func TestStoppedWorkerHandsBack(t *testing.T) {
	cfg := bus.Config{AckWait: 30 * time.Second, MaxDeliver: 5}
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus = cfg }))
	const name = "handback"
	a := newStepper(name)
	stopA := startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Instance: "a", Concurrency: 1, Timeout: time.Minute})
	waitRoutable(t, m, name)
	id := sendAsync(t, m.URL+"/agents/"+name, "step")
	require.Equal(t, 1, waitInt(t, a.started, 20*time.Second, "attempt 1 on worker A"))
	stopA()
	stoppedAt := time.Now()
	startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Instance: "b", Concurrency: 1, Timeout: time.Minute})
	// Well under AckWait: only a hand-back explains a run this soon.
	require.Equal(t, 2, waitInt(t, a.started, cfg.AckWait/3, "attempt 2 on worker B after A stopped (AckWait "+cfg.AckWait.String()+")"))
	t.Logf("handed back: attempt 2 started %v after worker A stopped", time.Since(stoppedAt).Round(time.Millisecond))
	close(a.release[2])
	rec := waitFinal(t, m.Store(), id, 20*time.Second)
	require.NotNil(t, rec)
	assert.Equal(t, a2a.StateCompleted, rec.Task.Status.State)
	assert.Equal(t, "completed by attempt 2", statusText(rec))
}

// syncLog is a goroutine-safe log sink.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

// counter counts its runs and completes.
type counter struct {
	name string
	runs atomic.Int64
}

func (c *counter) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: c.name, Description: "completes", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "c", Name: "c", Description: "c", Tags: []string{"t"}}}}
}

func (c *counter) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	c.runs.Add(1)
	return w.Complete(fmt.Sprint("done on attempt ", req.Attempt))
}

// TestRefusedClaimRunsLater: the bus refuses a run's first write (the
// message that claims the task); the work goes back to the queue and runs
// once the bus takes writes again, the refused run not counted.
func TestRefusedClaimRunsLater(t *testing.T) {
	cfg := bus.Config{AckWait: 3 * time.Second, MaxDeliver: 10}
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus = cfg }))
	const name = "claimer"
	a := &counter{name: name}
	id := queueTurn(t, m.Store(), name, "claim-")

	pre := capEvents(t, m.Store(), tinyCap)
	t.Cleanup(func() { capEvents(t, m.Store(), pre) })
	logs := &syncLog{}
	startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Concurrency: 1, Timeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	deadline := time.Now().Add(20 * time.Second)
	for !logs.has("the turn will run again") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, logs.has("the turn will run again"), "the worker never met the refused claim")
	capEvents(t, m.Store(), -1)

	rec := waitFinal(t, m.Store(), id, 3*cfg.AckWait+10*time.Second)
	require.NotNil(t, rec)
	require.Equal(t, a2a.StateCompleted, rec.Task.Status.State, "task whose claim was refused once; log states %v", logStates(t, m.Store(), id))
	assert.Equal(t, 1, rec.TurnRuns, "runs the log counts against the turn")
	assert.GreaterOrEqual(t, a.runs.Load(), int64(2), "agent runs")
}

// queueTurn writes a task of agent and its work item as an edge would,
// while no worker runs, and returns the task's id (prefix and the test's
// name).
func queueTurn(t *testing.T, b *taskstore.Store, agent, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := prefix + strings.ReplaceAll(t.Name(), "/", "-")
	msg := a2a.Message{MessageID: "m-" + id, Role: a2a.RoleUser, TaskID: id, ContextID: "ctx-" + id, Parts: []a2a.Part{a2a.TextPart(prefix)}}
	_, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: agent, Task: a2a.Task{ID: id, ContextID: msg.ContextID,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()}, History: []a2a.Message{msg}}})
	require.NoError(t, err)
	require.NoError(t, taskstore.Enqueue(ctx, b.Bus(), &taskstore.WorkItem{TaskID: id, ContextID: msg.ContextID, Agent: agent, Message: msg, Enqueued: a2a.Now()},
		bus.WorkMsgID(id, msg.MessageID), nil))
	return id
}

// TestCanceledWhileQueuedStaysCanceled: a work item carries its task as
// enqueued, and a first delivery runs from it without reading the task;
// a task canceled while its work waited is caught by the run's first
// append (a compare-and-set on the carried task): it stays canceled, with
// nothing of the run in its log, and the work item is done.
func TestCanceledWhileQueuedStaysCanceled(t *testing.T) {
	m := meshtest.Start(t)
	const name = "late"
	a := &counter{name: name}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := "queued-" + t.Name()
	msg := a2a.Message{MessageID: "m-" + id, Role: a2a.RoleUser, TaskID: id, ContextID: "ctx-" + id, Parts: []a2a.Part{a2a.TextPart("go")}}
	rec, err := m.Store().CreateTask(ctx, &taskstore.TaskRecord{Agent: name, Task: a2a.Task{ID: id, ContextID: msg.ContextID,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()}, History: []a2a.Message{msg}}})
	require.NoError(t, err)
	require.NoError(t, taskstore.Enqueue(ctx, m.Store().Bus(), &taskstore.WorkItem{TaskID: id, ContextID: msg.ContextID, Agent: name, Message: msg,
		Enqueued: a2a.Now(), Task: taskstore.EncodeWorkTask(rec)}, bus.WorkMsgID(id, msg.MessageID), nil))
	_, err = m.Store().CancelTask(ctx, id, rec, "changed my mind")
	require.NoError(t, err)

	startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Concurrency: 1, Timeout: time.Minute})
	require.Eventually(t, func() bool {
		queued, err := m.Store().Bus().Queued(ctx, name, id)
		return err == nil && !queued
	}, 15*time.Second, 20*time.Millisecond, "the work item was not done")
	got, err := m.Store().LoadTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, got.Task.Status.State)
	states := logStates(t, m.Store(), id)
	assert.Equal(t, []a2a.TaskState{a2a.StateSubmitted, a2a.StateCanceled}, states, "nothing of the run in the log")
	assert.LessOrEqual(t, a.runs.Load(), int64(1))
}
