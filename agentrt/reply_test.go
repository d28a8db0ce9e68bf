package agentrt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// lateReplier writes an artifact, then tries to reply with a message; it
// completes the task with what Reply returned.
type lateReplier struct {
	name     string
	declares bool
	first    bool // reply before anything else (and forge the marker in a status first when not declared)
}

func (l lateReplier) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: l.name, Description: "replies late", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "r", Name: "r", Description: "r", Tags: []string{"t"}}}}
}

func (l lateReplier) RepliesWithMessage() bool { return l.declares }

func (l lateReplier) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	if !l.first {
		if err := w.Artifact(a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("partial")}}, false, true); err != nil {
			return err
		}
	}
	err := agentrt.ReplyText(w, "too late")
	if err == nil {
		return nil
	}
	if !errors.Is(err, agentrt.ErrCannotReply) {
		return err
	}
	// an agent cannot pass a status message off as a reply
	forged := &a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("refused: " + err.Error())},
		Metadata: a2a.Metadata{a2a.ReplyKey: true}}
	return w.Event(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		Status: a2a.TaskStatus{State: a2a.StateCompleted, Message: forged}}})
}

// Reply is refused (agentrt.ErrCannotReply, nothing recorded) after the
// turn had output, and for an agent that does not declare replies; the
// task then ends as a task, visible, and a status message carrying the
// reply marker is not taken for a reply. A declared agent replying first
// gets its message through.
func TestReplyRefusedAfterOutput(t *testing.T) {
	m := meshtest.Start(t)
	for _, l := range []lateReplier{
		{name: "late", declares: true},
		{name: "undeclared", declares: false, first: true},
	} {
		startWorker(t, m.Store(), l)
		waitRoutable(t, m, l.name)
		task := sendText(t, m.URL+"/agents/"+l.name, "x")
		assert.Equal(t, a2a.StateCompleted, task.Status.State, l.name)
		require.NotNil(t, task.Status.Message, l.name)
		assert.Equal(t, "refused: "+agentrt.ErrCannotReply.Error(), task.Status.Message.Text(), l.name)
		assert.NotContains(t, task.Status.Message.Metadata, a2a.ReplyKey, l.name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := client.New(m.URL+"/agents/"+l.name).GetTask(ctx, task.ID, nil)
		cancel()
		require.NoError(t, err, "%s: the task is visible", l.name)
		assert.Equal(t, task.ID, got.ID)
	}

	l := lateReplier{name: "early", declares: true, first: true}
	startWorker(t, m.Store(), l)
	waitRoutable(t, m, l.name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := client.New(m.URL+"/agents/early").Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("x")})
	require.NoError(t, err)
	require.NotNil(t, res.Message, "answered %+v", res.Task)
	assert.Equal(t, "too late", res.Message.Text())
}

// A call to an agent that answers with a message, over the bus, gets the
// task, its status message the reply; Task.Reply returns the message.
func TestMeshSendToAReplier(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	task, err := agentrt.NewMesh(m.Store()).Send(ctx, "hello", a2a.Message{Parts: []a2a.Part{a2a.TextPart("bus")}})
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, task.Status.State)
	r := task.Reply()
	require.NotNil(t, r, "the task ended as a message reply: %+v", task.Status)
	assert.Equal(t, "hello, bus", r.Text())
	assert.Empty(t, r.TaskID)
}
