package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

func TestV03SendUsesV03MethodAndShapes(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{
			"kind": "task", "id": "t-1", "contextId": "ctx-1",
			"status":    map[string]any{"state": "completed"},
			"artifacts": []any{map[string]any{"artifactId": "a-1", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}}},
		}))
	})
	c := New(f.URL, WithProtocolVersion("0.3.0"), WithTenant("ignored"))
	res, err := c.Send(context.Background(), &a2a.SendMessageRequest{
		Message:       TextMessage("hello"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true, AcceptedOutputModes: []string{"text/plain"}},
	})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
	require.Len(t, res.Task.Artifacts, 1)
	assert.Equal(t, "hi", res.Task.Artifacts[0].Parts[0].Text)

	call := f.last(t)
	assert.Equal(t, "message/send", call.Method)
	p := call.Params
	assert.NotContains(t, p, "tenant")
	msg := p["message"].(map[string]any)
	assert.Equal(t, "message", msg["kind"])
	assert.Equal(t, "user", msg["role"])
	assert.Equal(t, "text", msg["parts"].([]any)[0].(map[string]any)["kind"])
	assert.Equal(t, false, p["configuration"].(map[string]any)["blocking"])
}

func TestV03StreamReadsKindEvents(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		assert.Equal(t, "message/stream", c.Method)
		writeSSE(w,
			sseFrame("", (map[string]any{"kind": "task", "id": "t-1", "contextId": "c", "status": map[string]any{"state": "submitted"}})),
			sseFrame("", (map[string]any{"kind": "artifact-update", "taskId": "t-1", "contextId": "c",
				"artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "x"}}}})),
			sseFrame("", (map[string]any{"kind": "status-update", "taskId": "t-1", "contextId": "c", "final": true,
				"status": map[string]any{"state": "completed"}})),
		)
	})
	s, err := New(f.URL, WithProtocolVersion("0.3")).Stream(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("hi")})
	require.NoError(t, err)
	defer s.Close()
	var got []string
	for i := 0; i < 10; i++ {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch r := ev.Response; {
		case r.Task != nil:
			got = append(got, "task")
		case r.ArtifactUpdate != nil:
			got = append(got, "artifact:"+r.ArtifactUpdate.Artifact.Parts[0].Text)
		case r.StatusUpdate != nil:
			got = append(got, "status:"+string(r.StatusUpdate.Status.State))
		}
	}
	assert.Equal(t, []string{"task", "artifact:x", "status:" + string(a2a.StateCompleted)}, got)
}

func TestV03MethodNamesAndList(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{"kind": "task", "id": "t-1", "contextId": "c", "status": map[string]any{"state": "canceled"}}))
	})
	c := New(f.URL, WithProtocolVersion("0.3"))
	_, err := c.GetTask(context.Background(), "t-1", nil)
	require.NoError(t, err)
	assert.Equal(t, "tasks/get", f.last(t).Method)
	task, err := c.Cancel(context.Background(), "t-1")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, task.Status.State)
	assert.Equal(t, "tasks/cancel", f.last(t).Method)
	_, err = c.ListTasks(context.Background(), nil)
	assert.ErrorIs(t, err, ErrUnsupported)
}
