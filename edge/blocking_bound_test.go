package edge_test

// A blocking send waits for its task at most Config.BlockingTimeout, then
// answers with the task as it stands; the task goes on and settles later.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// boundTask is the part of a task (1.0 or 0.3) these tests read.
type boundTask struct {
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []json.RawMessage `json:"artifacts"`
}

// boundCall posts one JSON-RPC call and returns its result, failing the
// test on a JSON-RPC error. The HTTP client gives up after 20 s.
func boundCall(t *testing.T, url, method string, params any) json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, method)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoErrorf(t, json.Unmarshal(data, &r), "%s answered %s", method, data)
	require.Nilf(t, r.Error, "%s answered %s", method, data)
	return r.Result
}

// sendTask reads the task out of a send's result: {"task":{…}} in 1.0,
// the task itself in 0.3.
func sendTask(t *testing.T, v10 bool, res json.RawMessage) boundTask {
	t.Helper()
	if v10 {
		var w struct {
			Task *json.RawMessage `json:"task"`
		}
		require.NoError(t, json.Unmarshal(res, &w))
		require.NotNilf(t, w.Task, "1.0 send result without a task: %s", res)
		res = *w.Task
	}
	var tk boundTask
	require.NoErrorf(t, json.Unmarshal(res, &tk), "task: %s", res)
	require.NotEmptyf(t, tk.ID, "task without id: %s", res)
	return tk
}

// The slow agent takes about 2 s; with a 600 ms bound a blocking send of
// each protocol version answers within the bound (plus slack) with the
// task still working or submitted, and the task then completes on its own.
func TestBlockingSendAnswersAtItsBound(t *testing.T) {
	const bound = 600 * time.Millisecond
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.BlockingTimeout = bound }))
	url := m.URL + "/agents/slow"
	const work = "chunks=8 delay=250ms" // about 2 s

	for _, tc := range []struct {
		name   string
		v10    bool
		method string
		params map[string]any
		get    string
		done   string
		open   []string
	}{
		{"1.0 SendMessage", true, "SendMessage",
			map[string]any{"message": map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": work}}}},
			"GetTask", "TASK_STATE_COMPLETED", []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}},
		{"0.3 message/send", false, "message/send",
			map[string]any{"message": map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user",
				"parts": []any{map[string]any{"kind": "text", "text": work}}}},
			"tasks/get", "completed", []string{"submitted", "working"}},
		{"0.2 tasks/send", false, "tasks/send",
			map[string]any{"id": uuid.NewString(), "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": work}}}},
			"tasks/get", "completed", []string{"submitted", "working"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tk := sendTask(t, tc.v10, boundCall(t, url, tc.method, tc.params))
			took := time.Since(start)
			require.Containsf(t, tc.open, tk.Status.State, "a send past its bound answers the task as it stands (took %s)", took)
			require.GreaterOrEqual(t, took, bound-50*time.Millisecond, "the send waited for its bound")
			require.Less(t, took, bound+time.Second, "the send answered at its bound, not when the task ended")

			// Nothing lost: the task runs on and completes.
			deadline := time.Now().Add(10 * time.Second)
			var got boundTask
			for i := 0; i < 200 && time.Now().Before(deadline); i++ {
				var res json.RawMessage
				res = boundCall(t, url, tc.get, map[string]any{"id": tk.ID})
				require.NoError(t, json.Unmarshal(res, &got))
				if got.Status.State == tc.done {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			require.Equal(t, tc.done, got.Status.State, "task %s after the send answered", tk.ID)
			require.NotEmpty(t, got.Artifacts, "the completed task holds the agent's answer")
		})
	}
}

// A negative bound waits for the task however long it takes; a send that
// settles within the bound answers settled, as always.
func TestBlockingSendWithoutBoundWaits(t *testing.T) {
	for _, c := range []struct {
		bound time.Duration
		work  string
	}{
		{-1, "chunks=4 delay=300ms"},              // 1.2 s, no bound
		{5 * time.Second, "chunks=2 delay=100ms"}, // settles well within
	} {
		t.Run(fmt.Sprint(c.bound), func(t *testing.T) {
			m := meshtest.Start(t, meshtest.WithConfig(func(cfg *mesh.Config) { cfg.Edge.BlockingTimeout = c.bound }))
			tk := sendTask(t, true, boundCall(t, m.URL+"/agents/slow", "SendMessage", map[string]any{
				"message": map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": c.work}}}}))
			require.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State)
		})
	}
}
