package agentrt_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCounter answers at once and counts its runs.
type runCounter struct{ runs chan string }

func (runCounter) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "late", Description: "counts its runs", Version: "1", DefaultOutputModes: []string{"text/plain"}}
}

func (c runCounter) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	c.runs <- req.TaskID
	return w.Complete("ran")
}

// A new task's work item carries the task as created, and its worker
// starts from that copy instead of reading the snapshot. A copy gone
// stale while the item waited (the task was canceled) runs nothing: the
// run's first append expects the log to end where the copy does.
func TestCarriedTaskGoneStaleRunsNothing(t *testing.T) {
	m := meshtest.Start(t)
	registerGhost(t, m.Bus(), "late")
	waitRoutable(t, m, "late")
	c := client.New(m.URL + "/agents/late")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("later"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	id := res.Task.ID
	canceled, err := c.Cancel(ctx, id)
	require.NoError(t, err)
	require.Equal(t, a2a.StateCanceled, canceled.Status.State)

	a := runCounter{runs: make(chan string, 4)}
	startWorker(t, m.Bus(), a)
	require.Eventually(t, func() bool {
		queued, err := m.Bus().Queued(ctx, "late", id)
		return err == nil && !queued
	}, 10*time.Second, 20*time.Millisecond, "the worker never took the item")
	select {
	case got := <-a.runs:
		t.Fatalf("the agent ran task %s, canceled while queued", got)
	case <-time.After(200 * time.Millisecond):
	}
	rec, err := m.Bus().LoadTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, rec.Task.Status.State)

	// A fresh task runs from its carried copy, and its terminal snapshot
	// is stored (no revision to compare with).
	done, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("now")})
	require.NoError(t, err)
	require.NotNil(t, done.Task)
	assert.Equal(t, a2a.StateCompleted, done.Task.Status.State)
	stored, err := m.Bus().PeekTask(ctx, done.Task.ID)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, stored.Task.Status.State)
}

// Only a creation's copy is taken: one that is not the item's task, or
// not a creation, is read from the bucket instead.
func TestWorkItemStartTakesOnlyACreation(t *testing.T) {
	rec := &bus.TaskRecord{Task: a2a.Task{ID: "t1", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}, LastSeq: 7, Events: 1}
	assert.NotNil(t, (&bus.WorkItem{TaskID: "t1", Task: rec}).Start())
	assert.Nil(t, (&bus.WorkItem{TaskID: "t2", Task: rec}).Start(), "another task's")
	assert.Nil(t, (&bus.WorkItem{TaskID: "t1"}).Start(), "none")
	later := *rec
	later.Events = 3
	assert.Nil(t, (&bus.WorkItem{TaskID: "t1", Task: &later}).Start(), "not a creation")
}
