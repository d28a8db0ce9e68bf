package integration

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// An edge that dies between creating a task and enqueueing its turn leaves
// it submitted with no work item; a worker's sweep must pick it up.
func TestStrandedTaskIsReEnqueued(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.StaleAfter, c.SweepEvery = 300*time.Millisecond, 200*time.Millisecond }))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, ctxID := uuid.NewString(), uuid.NewString()
	msg := a2a.Message{MessageID: uuid.NewString(), TaskID: id, ContextID: ctxID, Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart("stranded")}}
	_, err := m.Store().CreateTask(ctx, &taskstore.TaskRecord{
		Task: a2a.Task{ID: id, ContextID: ctxID, Status: a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()},
			History: []a2a.Message{msg}},
		Agent: "echo",
	})
	require.NoError(t, err)
	queued, err := m.Bus().Queued(ctx, "echo", id)
	require.NoError(t, err)
	require.False(t, queued, "precondition: nothing queued for the task")

	tk := m.waitState(t, v10, "/agents/echo", id, v10.completed)
	assert.Equal(t, "stranded", tk.artifactText())
}
