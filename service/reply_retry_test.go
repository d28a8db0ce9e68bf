package service_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/taskstore"
)

// countingReplier answers every send with a message naming its run, and
// counts its runs.
type countingReplier struct{ runs atomic.Int32 }

func (r *countingReplier) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "replier", Description: "replies with a message", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "r", Name: "r", Description: "r", Tags: []string{"t"}}}}
}

func (r *countingReplier) RepliesWithMessage() bool { return true }

func (r *countingReplier) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	n := r.runs.Add(1)
	return agentrt.ReplyText(w, fmt.Sprintf("hello, %s (run %d)", req.Text(), n))
}

// A send answered with a Message is idempotent: a retry with the same
// messageId, blocking, returning at once or streaming, gets the very
// message the first attempt got (its id, context and text), from the
// task's log, and the agent does not run again. The task the reply was
// recorded in stays hidden from the task methods.
func TestMessageReplyRetryGetsTheSameMessage(t *testing.T) {
	b := bustest.OpenStore(t, bus.Config{})
	agent := &countingReplier{}
	card := a2a.AgentCard{Name: "replier", Capabilities: a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{
		{URI: a2a.MessageRepliesExtension}}}}
	svc := service.New(service.Config{Store: b, Agents: agents{"replier": card}, DefaultAgent: "replier", KeepAlive: time.Hour})

	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: b, Agent: agent, Name: "replier", Concurrency: 4, Timeout: 20 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })

	ctx := testCtx(t)
	on := func() context.Context { return as(ctx, "alice", "replier") }
	mid := uuid.NewString()
	req := func(cfg *a2a.SendMessageConfiguration) *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Configuration: cfg,
			Message: &a2a.Message{MessageID: mid, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("world")}}}
	}

	res, err := svc.SendMessage(on(), req(nil))
	require.NoError(t, err)
	require.NotNil(t, res.Message, "the agent answered with a message, not %+v", res.Task)
	first := res.Message
	require.Equal(t, "hello, world (run 1)", first.Text())
	require.NotEmpty(t, first.MessageID)
	require.Empty(t, first.TaskID, "a message reply names no task")
	require.Equal(t, int32(1), agent.runs.Load())

	same := func(what string, m *a2a.Message) {
		t.Helper()
		require.NotNil(t, m, "%s: the retry got no message", what)
		assert.Equal(t, first.MessageID, m.MessageID, "%s: the same message", what)
		assert.Equal(t, first.ContextID, m.ContextID, what)
		assert.Equal(t, first.Text(), m.Text(), "%s: the agent did not run again", what)
		assert.Empty(t, m.TaskID, what)
	}
	res, err = svc.SendMessage(on(), req(nil))
	require.NoError(t, err)
	same("blocking retry", res.Message)
	res, err = svc.SendMessage(on(), req(&a2a.SendMessageConfiguration{ReturnImmediately: true}))
	require.NoError(t, err)
	same("non-blocking retry", res.Message)
	s, err := svc.SendStreamingMessage(on(), req(nil), "")
	require.NoError(t, err)
	evs, err := collect(t, s)
	require.NoError(t, err)
	require.Len(t, evs, 1, "the message is the stream's one event")
	require.NotNil(t, evs[0].Resp)
	require.Nil(t, evs[0].Resp.Task, "a streaming retry shows no task")
	same("streaming retry", evs[0].Resp.Message)

	// Nothing ran again (a run would have recorded something, and counted).
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, int32(1), agent.runs.Load(), "the agent ran again for a retry")

	// The task the reply was recorded in is on the bus, ended as the
	// reply, and no task method finds it.
	id := taskstore.DeriveTaskID("replier", "alice", "", mid)
	rec, err := b.LoadTask(ctx, id)
	require.NoError(t, err)
	require.True(t, rec.Task.IsReply())
	_, err = svc.GetTask(as(ctx, "alice", ""), &a2a.GetTaskRequest{ID: id})
	requireCode(t, err, a2a.CodeTaskNotFound)
	list, err := svc.ListTasks(as(ctx, "alice", ""), &a2a.ListTasksRequest{})
	require.NoError(t, err)
	assert.Empty(t, list.Tasks, "a message reply's task is not listed")
}
