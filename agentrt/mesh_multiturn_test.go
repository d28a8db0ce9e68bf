package agentrt_test

// Multi-turn delegation: a task an agent delegated stops at input-required;
// a later turn continues it through Mesh.Send with its TaskID. Only calls
// on behalf of the task's owner may continue it.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// relay drives the built-in ask agent through the mesh:
//
//	"start"              delegates "hi" to ask and stops at input-required,
//	                     naming the called task: "child <id> <state>";
//	"continue <id> <t>"  continues ask's task <id> with <t> and completes
//	                     with "child <id> <state> <artifact text>", or fails
//	                     with "refused: not found" / "refused: not continuable".
type relay struct{}

func (relay) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "relay", Description: "continues delegated tasks", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "r", Name: "r", Description: "r", Tags: []string{"t"}}}}
}

func (relay) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	f := strings.Fields(req.Text())
	switch {
	case len(f) == 1 && f[0] == "start":
		task, err := req.Mesh().Send(ctx, "ask", a2a.Message{Parts: []a2a.Part{a2a.TextPart("hi")}})
		if err != nil {
			return err
		}
		return w.InputRequired("child " + task.ID + " " + string(task.Status.State))
	case len(f) == 3 && f[0] == "continue":
		task, err := req.Mesh().Send(ctx, "ask", a2a.Message{TaskID: f[1], Parts: []a2a.Part{a2a.TextPart(f[2])}})
		switch {
		case errors.Is(err, taskstore.ErrTaskNotFound):
			return w.Fail("refused: not found")
		case errors.Is(err, agentrt.ErrNotContinuable):
			return w.Fail("refused: not continuable")
		case err != nil:
			return err
		}
		text := ""
		for _, a := range task.Artifacts {
			for _, p := range a.Parts {
				text += p.Text
			}
		}
		return w.Complete("child " + task.ID + " " + string(task.Status.State) + " " + text)
	}
	return w.Reject("say start or continue <id> <text>")
}

const (
	aliceKey = "alice-secret-0123456789"
	bobKey   = "bob-secret-0123456789ab"
)

func TestMeshContinuesDelegatedTask(t *testing.T) {
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	startWorker(t, m.Store(), relay{})
	alice := client.New(m.URL+"/agents/relay", client.WithHeader(edge.APIKeyHeader, aliceKey))
	bob := client.New(m.URL+"/agents/relay", client.WithHeader(edge.APIKeyHeader, bobKey))
	require.Eventually(t, func() bool {
		_, err := alice.Card(context.Background())
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	send := func(c *client.Client, text, taskID string) *a2a.Task {
		t.Helper()
		msg := client.TextMessage(text)
		msg.TaskID = taskID
		res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: msg})
		require.NoError(t, err, text)
		require.NotNil(t, res.Task, text)
		return res.Task
	}
	status := func(task *a2a.Task) string {
		if task.Status.Message == nil {
			return ""
		}
		return task.Status.Message.Text()
	}

	// Alice's relay task delegates to ask, which asks for input.
	parent := send(alice, "start", "")
	require.Equal(t, a2a.StateInputRequired, parent.Status.State, status(parent))
	f := strings.Fields(status(parent))
	require.Len(t, f, 3, status(parent))
	childID := f[1]
	assert.Equal(t, string(a2a.StateInputRequired), f[2], "the delegated task waits for input")
	child, err := m.Store().LoadTask(ctx, childID)
	require.NoError(t, err)
	assert.Equal(t, "alice", child.Owner, "the delegated task belongs to the caller's owner")
	childTurns := len(child.Task.History)

	// Bob's relay task names Alice's delegated task: refused as if it did
	// not exist, and the task is untouched.
	stolen := send(bob, "continue "+childID+" Mallory", "")
	assert.Equal(t, a2a.StateFailed, stolen.Status.State)
	assert.Equal(t, "refused: not found", status(stolen), "another owner must not continue the task")
	child, err = m.Store().LoadTask(ctx, childID)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateInputRequired, child.Task.Status.State, "the task after another owner's attempt")
	assert.Len(t, child.Task.History, childTurns, "another owner's message reached the task's history")
	for _, h := range child.Task.History {
		assert.NotContains(t, h.Text(), "Mallory")
	}

	// Alice's next turn continues the delegated task to completion.
	done := send(alice, "continue "+childID+" Ada", parent.ID)
	assert.Equal(t, parent.ID, done.ID)
	require.Equal(t, a2a.StateCompleted, done.Status.State, status(done))
	assert.Equal(t, "child "+childID+" "+string(a2a.StateCompleted)+" Hello, Ada!", status(done),
		"the continued task is the one delegated before, not a new one")
	child, err = m.Store().LoadTask(ctx, childID)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, child.Task.Status.State)
	asks, err := m.Store().ListTasks(ctx, func(r *taskstore.TaskRecord) bool { return r.Agent == "ask" })
	require.NoError(t, err)
	assert.Len(t, asks, 1, "ask tasks: the continuation must not start another")

	// A completed task does not take another turn.
	again := send(alice, "continue "+childID+" Bea", "")
	assert.Equal(t, a2a.StateFailed, again.Status.State)
	assert.Equal(t, "refused: not continuable", status(again))
}

// Code outside a run (agentrt.NewMesh) continues a task it started.
func TestRootMeshContinuesTask(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mesh := agentrt.NewMesh(m.Store())
	first, err := mesh.Send(ctx, "ask", a2a.Message{Parts: []a2a.Part{a2a.TextPart("hi")}})
	require.NoError(t, err)
	require.Equal(t, a2a.StateInputRequired, first.Status.State)
	require.NotNil(t, first.Status.Message)
	assert.Equal(t, agents.Question, first.Status.Message.Text())

	second, err := mesh.Send(ctx, "ask", a2a.Message{TaskID: first.ID, Parts: []a2a.Part{a2a.TextPart("Root")}})
	require.NoError(t, err)
	assert.Equal(t, first.ID, second.ID)
	require.Equal(t, a2a.StateCompleted, second.Status.State)
	require.Len(t, second.Artifacts, 1)
	assert.Equal(t, "Hello, Root!", second.Artifacts[0].Parts[0].Text)

	_, err = mesh.Send(ctx, "ask", a2a.Message{TaskID: first.ID, Parts: []a2a.Part{a2a.TextPart("again")}})
	assert.ErrorIs(t, err, agentrt.ErrNotContinuable)
}
