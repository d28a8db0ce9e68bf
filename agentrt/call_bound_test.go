package agentrt_test

// Mesh.Send's wait for a called agent is bounded: by Mesh.MaxWait, or
// before the caller's own deadline; past it a *WaitError says which agent,
// which task, how it stands and how long Send waited. A called agent with
// no live worker at all fails at once.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// registerGhost makes agent look live (registered, answering pings) while
// nothing consumes its work: what a crashed worker within the registry's
// grace looks like to a caller.
func registerGhost(t *testing.T, b *taskstore.Store, agent string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		card := func() a2a.AgentCard { return a2a.AgentCard{Name: agent, Description: "never answers", Version: "1"} }
		_ = registry.Publish(ctx, b.Bus(), registry.Entry{Agent: agent, Instance: "ghost1"}, card, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		lctx, lcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer lcancel()
		live, _ := registry.Live(lctx, b.Bus(), agent)
		return live
	}, 10*time.Second, 20*time.Millisecond, "ghost agent never became live")
}

func TestSendWaitIsBounded(t *testing.T) {
	m := meshtest.Start(t)
	b := m.Store()
	registerGhost(t, b, "ghost")
	msg := func() a2a.Message { return a2a.Message{Parts: []a2a.Part{a2a.TextPart("anyone?")}} }

	t.Run("MaxWait", func(t *testing.T) {
		mesh := agentrt.NewMesh(b)
		mesh.MaxWait = 700 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		task, err := mesh.Send(ctx, "ghost", msg())
		took := time.Since(start)
		require.Nil(t, task)
		require.ErrorIs(t, err, agentrt.ErrWaitExpired)
		var we *agentrt.WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, "ghost", we.Agent)
		assert.Equal(t, a2a.StateSubmitted, we.State, "no worker took it")
		assert.False(t, we.Deadline, "MaxWait set the bound")
		assert.GreaterOrEqual(t, took, 700*time.Millisecond)
		assert.Less(t, took, 2500*time.Millisecond, "Send gave up at MaxWait")
		assert.Contains(t, err.Error(), we.TaskID)
		assert.Contains(t, err.Error(), `"ghost"`)
		assert.Contains(t, err.Error(), "submitted")

		// The task is left queued, as it stood; the caller may cancel it.
		rec, err := b.LoadTask(ctx, we.TaskID)
		require.NoError(t, err)
		assert.Equal(t, a2a.StateSubmitted, rec.Task.Status.State)
		require.NoError(t, mesh.Cancel(ctx, we.TaskID, "the caller stopped waiting"))
		rec, err = b.LoadTask(ctx, we.TaskID)
		require.NoError(t, err)
		assert.Equal(t, a2a.StateCanceled, rec.Task.Status.State)
		require.NoError(t, mesh.Cancel(ctx, we.TaskID, "again"), "canceling an ended task is no error")
	})

	t.Run("caller deadline", func(t *testing.T) {
		mesh := agentrt.NewMesh(b) // MaxWait 0: DefaultMaxWait, far beyond the deadline
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := mesh.Send(ctx, "ghost", msg())
		took := time.Since(start)
		var we *agentrt.WaitError
		require.ErrorAs(t, err, &we)
		assert.True(t, we.Deadline, "the caller's deadline set the bound")
		assert.NoError(t, ctx.Err(), "Send gave up before the caller's deadline, leaving it time to settle its own task")
		assert.GreaterOrEqual(t, took, 1500*time.Millisecond, "Send waited most of the caller's time")
	})

	t.Run("an unknown agent fails at once", func(t *testing.T) {
		mesh := agentrt.NewMesh(b)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := mesh.Send(ctx, "nobody", msg())
		require.ErrorIs(t, err, agentrt.ErrUnknownAgent)
		assert.Contains(t, err.Error(), "nobody")
		assert.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("an unknown agent for a task waiting for input", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id := uuid.NewString()
		_, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: "gone", Task: a2a.Task{ID: id, ContextID: uuid.NewString(),
			Status: a2a.TaskStatus{State: a2a.StateInputRequired, Timestamp: a2a.Now()}}})
		require.NoError(t, err)
		mesh := agentrt.NewMesh(b)
		mesh.MaxWait = 3 * time.Second
		start := time.Now()
		_, err = mesh.Send(ctx, "gone", a2a.Message{TaskID: id, Parts: []a2a.Part{a2a.TextPart("here is more")}})
		require.ErrorIs(t, err, agentrt.ErrUnknownAgent)
		assert.Less(t, time.Since(start), 2500*time.Millisecond, "failed at once, not at the bound")
		rec, err := b.LoadTask(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, a2a.StateInputRequired, rec.Task.Status.State, "no turn recorded for an agent nobody serves")
	})
}

// delegator sends its text to the agent named by its own MaxWait-less
// mesh and fails its task with the text of the error Send returns.
type delegator struct{ to string }

func (d delegator) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "delegator", Description: "delegates", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "d", Name: "d", Description: "d", Tags: []string{"t"}}}}
}

func (d delegator) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	task, err := req.Mesh().Send(ctx, d.to, a2a.Message{Parts: []a2a.Part{a2a.TextPart(req.Text())}})
	if errors.Is(err, agentrt.ErrWaitExpired) {
		return w.Fail("delegator: " + err.Error())
	}
	if err != nil {
		return err
	}
	return w.Complete(string(task.Status.State))
}

// Inside a run the bound comes from the worker's task timeout: the calling
// agent gets the WaitError with time left to fail its task saying why,
// instead of the worker's "task timed out".
func TestDelegationWaitEndsBeforeTheCallersTimeout(t *testing.T) {
	m := meshtest.Start(t)
	b := m.Store()
	registerGhost(t, b, "ghost")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: b, Agent: delegator{to: "ghost"}, Concurrency: 2, Timeout: 2 * time.Second}
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitRoutable(t, m, "delegator")

	start := time.Now()
	task := sendText(t, m.URL+"/agents/delegator", "hello")
	took := time.Since(start)
	require.Equal(t, a2a.StateFailed, task.Status.State)
	text := task.Status.Message.Text()
	assert.Contains(t, text, `delegator: agent "ghost" did not settle task`)
	assert.Contains(t, text, "submitted")
	assert.NotContains(t, text, "timed out", "the agent failed its task itself, before the worker's timeout")
	assert.Less(t, took, 5*time.Second)
}
