package agentrt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// coordinator delegates the text it gets to the agent named by its first
// word ("echo hello" calls echo with "hello") and completes with the
// called task's artifacts and state.
type coordinator struct {
	// stopFirst makes the first run wait after delegating, until its
	// context ends (the test stops the worker to force a re-run).
	stopFirst bool
	runs      atomic.Int64
	delegated chan struct{}
}

func (c *coordinator) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "coordinator", Description: "delegates", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "d", Name: "d", Description: "d", Tags: []string{"t"}}}}
}

func (c *coordinator) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	run := c.runs.Add(1)
	agent, text, _ := strings.Cut(req.Text(), " ")
	task, err := req.Mesh().Send(ctx, agent, a2a.Message{Parts: []a2a.Part{a2a.TextPart(text)}})
	if errors.Is(err, agentrt.ErrUnknownAgent) {
		return w.Fail("no such agent: " + agent)
	}
	if err != nil {
		return err
	}
	if c.delegated != nil {
		select {
		case c.delegated <- struct{}{}:
		default:
		}
	}
	if c.stopFirst && run == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	for _, a := range task.Artifacts {
		if err := w.Artifact(a, false, true); err != nil {
			return err
		}
	}
	return w.Complete(task.ID + " " + string(task.Status.State))
}

func startWorker(t *testing.T, b *taskstore.Store, a agentrt.Agent) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: b, Agent: a, Concurrency: 4, Timeout: 20 * time.Second}
		_ = w.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func waitRoutable(t *testing.T, m *meshtest.Mesh, name string) {
	t.Helper()
	c := client.New(m.URL + "/agents/" + name)
	require.Eventually(t, func() bool {
		_, err := c.Card(context.Background())
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
}

func sendText(t *testing.T, url, text string) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := client.New(url).Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage(text)})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	return res.Task
}

func TestDelegationThroughTheBus(t *testing.T) {
	m := meshtest.Start(t)
	startWorker(t, m.Store(), &coordinator{})
	waitRoutable(t, m, "coordinator")

	parent := sendText(t, m.URL+"/agents/coordinator", "echo hello there")
	require.Equal(t, a2a.StateCompleted, parent.Status.State)
	require.Len(t, parent.Artifacts, 1)
	assert.Equal(t, "hello there", parent.Artifacts[0].Parts[0].Text)

	// The called task: the same context, and its parent named.
	childID, _, _ := strings.Cut(parent.Status.Message.Text(), " ")
	child, err := m.Store().LoadTask(context.Background(), childID)
	require.NoError(t, err)
	assert.Equal(t, "echo", child.Agent)
	assert.Equal(t, parent.ContextID, child.Task.ContextID)
	assert.Equal(t, a2a.StateCompleted, child.Task.Status.State)
	ref, ok := child.Task.Metadata[agentrt.MetaParent].(map[string]any)
	require.True(t, ok, "the called task names its parent: %v", child.Task.Metadata)
	assert.Equal(t, parent.ID, ref["taskId"])
	assert.Equal(t, "coordinator", ref["agent"])

	// The called task is an ordinary mesh task: a client can read it.
	got, err := client.New(m.URL+"/agents/echo").GetTask(context.Background(), childID, nil)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, got.Status.State)
}

func TestDelegationToUnknownAgent(t *testing.T) {
	m := meshtest.Start(t)
	startWorker(t, m.Store(), &coordinator{})
	waitRoutable(t, m, "coordinator")
	task := sendText(t, m.URL+"/agents/coordinator", "nobody hi")
	assert.Equal(t, a2a.StateFailed, task.Status.State)
	assert.Contains(t, task.Status.Message.Text(), "no such agent: nobody")
}

// Canceling the calling task cancels the task it is waiting on.
func TestDelegationCancelPropagates(t *testing.T) {
	m := meshtest.Start(t)
	co := &coordinator{}
	startWorker(t, m.Store(), co)
	waitRoutable(t, m, "coordinator")
	c := client.New(m.URL + "/agents/coordinator")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("slow chunks=100 delay=100ms"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	parentID := res.Task.ID

	var childID string
	require.Eventually(t, func() bool {
		recs, err := m.Store().ListTasks(ctx, func(r *taskstore.TaskRecord) bool {
			ref, _ := r.Task.Metadata[agentrt.MetaParent].(map[string]any)
			return ref != nil && ref["taskId"] == parentID && r.Task.Status.State == a2a.StateWorking
		})
		if err != nil || len(recs) == 0 {
			return false
		}
		childID = recs[0].Task.ID
		return true
	}, 10*time.Second, 20*time.Millisecond, "the called task never started")

	_, err = c.Cancel(ctx, parentID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, err := m.Store().LoadTask(ctx, childID)
		return err == nil && rec.Task.Status.State == a2a.StateCanceled
	}, 10*time.Second, 20*time.Millisecond, "the called task must be canceled with its caller")
}

// A turn re-run after its worker stopped finds the task it delegated
// before: the called agent runs once.
func TestDelegationRerunDoesNotDelegateTwice(t *testing.T) {
	m := meshtest.Start(t)
	co := &coordinator{stopFirst: true, delegated: make(chan struct{}, 1)}
	stop := startWorker(t, m.Store(), co)
	waitRoutable(t, m, "coordinator")
	c := client.New(m.URL + "/agents/coordinator")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("echo once"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	select {
	case <-co.delegated:
	case <-ctx.Done():
		t.Fatal("coordinator never delegated")
	}
	stop() // the run is handed back to the queue
	startWorker(t, m.Store(), co)

	task, err := client.New(m.URL+"/agents/coordinator").GetTask(ctx, res.Task.ID, nil)
	require.NoError(t, err)
	for i := 0; i < 200 && !task.Status.State.Final(); i++ {
		time.Sleep(50 * time.Millisecond)
		task, err = c.GetTask(ctx, res.Task.ID, nil)
		require.NoError(t, err)
	}
	require.Equal(t, a2a.StateCompleted, task.Status.State)
	assert.EqualValues(t, 2, co.runs.Load())
	children, err := m.Store().ListTasks(ctx, func(r *taskstore.TaskRecord) bool {
		ref, _ := r.Task.Metadata[agentrt.MetaParent].(map[string]any)
		return ref != nil && ref["taskId"] == res.Task.ID
	})
	require.NoError(t, err)
	assert.Len(t, children, 1, "the re-run must find the task the first run delegated")
}

// failing fails in the way its text names.
type failing struct{}

func (failing) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "failing", Description: "fails", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "f", Name: "f", Description: "f", Tags: []string{"t"}}}}
}

func (failing) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	switch req.Text() {
	case "panic":
		panic("secret-in-panic at /srv/agent.go:42")
	case "timeout":
		return fmt.Errorf("calling db with password hunter2: %w", context.DeadlineExceeded)
	default:
		return errors.New("db password hunter2 rejected")
	}
}

// A failing agent's task fails with a message naming the kind of failure,
// never the error's text or a stack.
func TestFailureIsSanitized(t *testing.T) {
	m := meshtest.Start(t)
	startWorker(t, m.Store(), failing{})
	waitRoutable(t, m, "failing")
	for text, kind := range map[string]string{"panic": "crashed", "timeout": "timed out", "other": "internal error"} {
		task := sendText(t, m.URL+"/agents/failing", text)
		require.Equal(t, a2a.StateFailed, task.Status.State, text)
		require.NotNil(t, task.Status.Message, text)
		got := task.Status.Message.Text()
		assert.Contains(t, got, kind, text)
		for _, leak := range []string{"hunter2", "secret", ".go:", "goroutine"} {
			assert.NotContains(t, got, leak, text)
		}
	}
}
