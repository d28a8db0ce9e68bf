package client_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"strings"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// sdkExecutor echoes, except "wait": that task works until canceled.
type sdkExecutor struct{}

func (sdkExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		var text string
		for _, p := range ec.Message.Parts {
			if t, ok := p.Content.(goa2a.Text); ok {
				text += string(t)
			}
		}
		if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch text {
		case "wait":
			if !yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateWorking, nil), nil) {
				return
			}
			<-ctx.Done()
			return
		}
		if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart(text)), nil) {
			return
		}
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil), nil)
	}
}

func (sdkExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// kinds names the events of a stream: task, message, status:STATE,
// artifact:TEXT.
func kinds(t *testing.T, s *client.Stream) ([]string, error) {
	t.Helper()
	var out []string
	for range 50 {
		ev, err := s.Next()
		if err != nil {
			return out, err
		}
		switch r := ev.Response; {
		case r.Task != nil:
			out = append(out, "task")
		case r.Message != nil:
			out = append(out, "message")
		case r.StatusUpdate != nil:
			out = append(out, "status:"+strings.TrimPrefix(string(r.StatusUpdate.Status.State), "TASK_STATE_"))
		case r.ArtifactUpdate != nil:
			var b strings.Builder
			for _, p := range r.ArtifactUpdate.Artifact.Parts {
				b.WriteString(p.Text)
			}
			out = append(out, "artifact:"+b.String())
		}
	}
	return out, errors.New("stream did not end")
}

// The client speaks each binding to the a2a-go SDK's own server of it,
// choosing the binding from the card: every method, and the SDK's errors
// come back as the A2A codes.
func TestBindingsAgainstSDKServer(t *testing.T) {
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		t.Run(binding, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			srv, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{
				Binding: binding, Executor: sdkExecutor{}, Streaming: true,
				Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			require.NoError(t, err)
			defer srv.Stop()

			card, err := client.Card(ctx, client.CardURL(srv.URL))
			require.NoError(t, err)
			c, err := client.FromCard(card, nil, client.WithHeader("Authorization", "Bearer t"))
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, binding, c.Binding())
			require.Equal(t, srv.Endpoint, c.URL())

			// Send, then read the task back.
			res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("hello")})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
			got, err := c.GetTask(ctx, res.Task.ID, nil)
			require.NoError(t, err)
			assert.Equal(t, res.Task.ID, got.ID)
			assert.Equal(t, a2a.StateCompleted, got.Status.State)
			require.Len(t, got.Artifacts, 1)
			assert.Equal(t, "hello", got.Artifacts[0].Parts[0].Text)
			one := 1
			got, err = c.GetTask(ctx, res.Task.ID, &one)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(got.History), 1)

			// Stream.
			s, err := c.Stream(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("streamed")})
			require.NoError(t, err)
			evs, err := kinds(t, s)
			require.ErrorIs(t, err, io.EOF)
			require.NoError(t, s.Close())
			assert.Equal(t, []string{"task", "artifact:streamed", "status:COMPLETED"}, evs)

			// A stream the server refuses fails with an A2A error, at
			// once or as its first event.
			msg := client.TextMessage("more")
			msg.TaskID = "no-such-task"
			s, err = c.Stream(ctx, &a2a.SendMessageRequest{Message: msg})
			if err == nil {
				_, err = kinds(t, s)
				_ = s.Close()
			}
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)

			// The SDK lists tasks of authenticated callers only: its
			// refusal comes back as an A2A error too.
			_, err = c.ListTasks(ctx, nil)
			var refused *a2a.Error
			assert.ErrorAs(t, err, &refused)

			// Errors by code.
			_, err = c.GetTask(ctx, "no-such-task", nil)
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			var ae *a2a.Error
			require.ErrorAs(t, err, &ae)
			assert.NotEmpty(t, ae.Message)
			_, err = c.Cancel(ctx, res.Task.ID)
			assert.ErrorIs(t, err, a2a.ErrTaskNotCancelable, "a completed task")
			_, err = c.Cancel(ctx, "no-such-task")
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)

			// A working task: subscribe, then cancel it.
			res, err = c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("wait"),
				Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			sub, err := c.Subscribe(ctx, res.Task.ID, "")
			require.NoError(t, err)
			defer sub.Close()
			ev, err := sub.Next()
			require.NoError(t, err)
			require.NotNil(t, ev.Response)
			canceled, err := c.Cancel(ctx, res.Task.ID)
			require.NoError(t, err)
			assert.Equal(t, a2a.StateCanceled, canceled.Status.State)
			evs, err = kinds(t, sub)
			assert.ErrorIs(t, err, io.EOF)
			assert.Contains(t, evs, "status:CANCELED")

			// The stream of a task already ended is refused (at once, or
			// as the stream's first event).
			sub, err = c.Subscribe(ctx, res.Task.ID, "")
			if err == nil {
				_, err = kinds(t, sub)
				_ = sub.Close()
			}
			assert.ErrorAs(t, err, &refused)
		})
	}
}
