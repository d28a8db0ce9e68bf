package agentrt_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// A turn whose work item was published and then lost (here: purged from
// the queue before any worker took it) leaves its task submitted. The
// janitor's re-enqueue must reach a worker although the duplicate window
// still remembers the lost item's Nats-Msg-Id.
func TestJanitorRecoversAWorkItemLostInsideTheDuplicateWindow(t *testing.T) {
	m := meshtest.Start(t)
	b := m.Store()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const agent = "janitored"
	id, ctxID := uuid.NewString(), uuid.NewString()
	msg := a2a.Message{MessageID: uuid.NewString(), TaskID: id, ContextID: ctxID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("lost once")}}
	_, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: agent, Task: a2a.Task{ID: id, ContextID: ctxID,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()}, History: []a2a.Message{msg}}})
	require.NoError(t, err)
	item := &taskstore.WorkItem{TaskID: id, ContextID: ctxID, Agent: agent, Message: msg, Enqueued: a2a.Now()}
	require.NoError(t, taskstore.Enqueue(ctx, b.Bus(), item, bus.WorkMsgID(id, msg.MessageID), nil))
	work, err := b.Bus().JetStream().Stream(ctx, bus.StreamWork)
	require.NoError(t, err)
	require.NoError(t, work.Purge(ctx, jetstream.WithPurgeSubject(bus.WorkSubject(agent, id))))
	queued, err := b.Bus().Queued(ctx, agent, id)
	require.NoError(t, err)
	require.False(t, queued, "the work item is gone")

	echo := agents.Builtin()["echo"]
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: b, Agent: echo, Name: agent, Concurrency: 2,
			StaleAfter: 300 * time.Millisecond, SweepEvery: 300 * time.Millisecond}
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })

	requireCompleted(t, b, id)
}

func requireCompleted(t *testing.T, b *taskstore.Store, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var state a2a.TaskState
	require.Eventually(t, func() bool {
		rec, err := b.LoadTask(ctx, id)
		if err == nil {
			state = rec.Task.Status.State
		}
		return state == a2a.StateCompleted
	}, 20*time.Second, 100*time.Millisecond, "task %s not completed", id)
	_ = state
}

// A work item whose task cannot be read yet is not dropped on the first
// miss: it comes back, and runs once the task is there.
func TestWorkItemForATaskNotFoundYetIsRetried(t *testing.T) {
	m := meshtest.Start(t)
	b := m.Store()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const agent = "early"
	echo := agents.Builtin()["echo"]
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: b, Agent: echo, Name: agent, Concurrency: 2}
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })

	id, ctxID := uuid.NewString(), uuid.NewString()
	msg := a2a.Message{MessageID: uuid.NewString(), TaskID: id, ContextID: ctxID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("early bird")}}
	item := &taskstore.WorkItem{TaskID: id, ContextID: ctxID, Agent: agent, Message: msg, Enqueued: a2a.Now()}
	require.NoError(t, taskstore.Enqueue(ctx, b.Bus(), item, bus.WorkMsgID(id, msg.MessageID), nil))
	time.Sleep(1500 * time.Millisecond) // the worker has looked for the task by now
	_, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: agent, Task: a2a.Task{ID: id, ContextID: ctxID,
		Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()}, History: []a2a.Message{msg}}})
	require.NoError(t, err)
	requireCompleted(t, b, id)
}
