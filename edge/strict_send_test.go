package edge_test

// Strict where the A2A spec is strict, lenient where ProtoJSON is, seen
// through a running edge: a send without message.role is refused on every
// send method (0.2 tasks/send excepted), and a request spelled with proto
// field names (snake_case) is served like its lowerCamelCase twin.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// strictAnswer is one JSON-RPC answer, read from a JSON body or from the
// first SSE frame of a stream.
type strictAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *a2a.Error      `json:"error"`
}

// strictCall posts one JSON-RPC call to the edge's /agents/{agent} and
// returns its answer (the first frame of a stream). The call is retried,
// bounded, while the edge answers -32000 (push starting).
func strictCall(t *testing.T, base, agent, method string, params any) strictAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ans strictAnswer
	for attempt := 0; attempt < 50; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/agents/"+agent, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		ans = strictAnswer{}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			if ev, err := ssetest.NewReader(resp.Body).Next(); err == nil {
				require.NoError(t, json.Unmarshal(ev.Data, &ans), "%s frame %s", method, ev.Data)
			}
		} else {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&ans), method)
		}
		resp.Body.Close()
		if ans.Error == nil || ans.Error.Code != a2a.CodeServerBusy {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ans
}

// strictFails asserts an answer is invalid params whose message says want.
func strictFails(t *testing.T, ans strictAnswer, want, what string) {
	t.Helper()
	if assert.NotNil(t, ans.Error, "%s: want -32602, got result %s", what, ans.Result) {
		assert.Equal(t, a2a.CodeInvalidParams, ans.Error.Code, "%s: %s", what, ans.Error.Message)
		assert.Contains(t, ans.Error.Message, want, what)
	}
}

func strictTaskCount(t *testing.T, base string) int {
	t.Helper()
	ans := strictCall(t, base, "echo", "ListTasks", map[string]any{"pageSize": 100})
	require.Nil(t, ans.Error)
	var res struct {
		TotalSize int `json:"totalSize"`
	}
	require.NoError(t, json.Unmarshal(ans.Result, &res))
	return res.TotalSize
}

func TestStrictSendNeedsRole(t *testing.T) {
	m := meshtest.Start(t)
	parts := []any{map[string]any{"text": "hi"}}
	partsV03 := []any{map[string]any{"kind": "text", "text": "hi"}}
	msg := func(role any, v03 bool) map[string]any {
		m := map[string]any{"messageId": "m-" + time.Now().Format("150405.000000000"), "parts": parts}
		if v03 {
			m["kind"], m["parts"] = "message", partsV03
		}
		if role != nil {
			m["role"] = role
		}
		return m
	}
	before := strictTaskCount(t, m.URL)
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		for _, role := range []any{nil, "ROLE_UNSPECIFIED", 0, ""} {
			ans := strictCall(t, m.URL, "echo", method, map[string]any{"message": msg(role, false)})
			strictFails(t, ans, "message.role is required", method+" role "+jsonText(role))
		}
	}
	for _, method := range []string{"message/send", "message/stream"} {
		for _, role := range []any{nil, ""} {
			ans := strictCall(t, m.URL, "echo", method, map[string]any{"message": msg(role, true)})
			strictFails(t, ans, "message.role is required", method+" role "+jsonText(role))
		}
	}
	assert.Equal(t, before, strictTaskCount(t, m.URL), "a refused send created a task")

	// With a role the same sends are served.
	for _, c := range []struct {
		method string
		role   any
		v03    bool
	}{{"SendMessage", "ROLE_USER", false}, {"SendStreamingMessage", 1, false}, {"message/send", "user", true}, {"message/stream", "user", true}} {
		ans := strictCall(t, m.URL, "echo", c.method, map[string]any{"message": msg(c.role, c.v03)})
		assert.Nil(t, ans.Error, "%s with role %v", c.method, c.role)
	}

	// 0.2 tasks/send names the task and may leave the role out: user.
	ans := strictCall(t, m.URL, "echo", "tasks/send", map[string]any{"id": "legacy-task-1", "sessionId": "s1",
		"message": map[string]any{"parts": []any{map[string]any{"type": "text", "text": "hi"}}}})
	require.Nil(t, ans.Error, "tasks/send without role")
	var task struct {
		ID      string `json:"id"`
		History []struct {
			Role string `json:"role"`
		} `json:"history"`
	}
	require.NoError(t, json.Unmarshal(ans.Result, &task))
	assert.Equal(t, "legacy-task-1", task.ID)
	require.NotEmpty(t, task.History)
	assert.Equal(t, "user", task.History[0].Role)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A 1.0 send and task calls written with proto field names only.
func TestStrictProtoNamesThroughEdge(t *testing.T) {
	m := meshtest.Start(t)
	ans := strictCall(t, m.URL, "echo", "SendMessage", map[string]any{
		"message": map[string]any{"message_id": "snake-1", "context_id": "ctx-snake", "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": "hello", "media_type": "text/plain"}}},
		"configuration": map[string]any{"accepted_output_modes": []string{"text/plain"}, "history_length": 0, "return_immediately": false},
	})
	require.Nil(t, ans.Error, "snake_case SendMessage")
	var res a2a.StreamResponse
	require.NoError(t, json.Unmarshal(ans.Result, &res))
	require.NotNil(t, res.Task)
	assert.Equal(t, "ctx-snake", res.Task.ContextID, "context_id is read")
	assert.Empty(t, res.Task.History, "history_length 0 is honoured")
	assert.Equal(t, a2a.StateCompleted, res.Task.Status.State, "return_immediately false waits")

	get := strictCall(t, m.URL, "echo", "GetTask", map[string]any{"id": res.Task.ID, "history_length": 1})
	require.Nil(t, get.Error)
	var got a2a.Task
	require.NoError(t, json.Unmarshal(get.Result, &got))
	assert.Len(t, got.History, 1, "history_length 1 is honoured")

	// The message's id is read from message_id: resending it is a retry
	// of the same task, not a new one.
	again := strictCall(t, m.URL, "echo", "SendMessage", map[string]any{
		"message": map[string]any{"messageId": "snake-1", "contextId": "ctx-snake", "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": "hello"}}}})
	require.Nil(t, again.Error)
	var res2 a2a.StreamResponse
	require.NoError(t, json.Unmarshal(again.Result, &res2))
	require.NotNil(t, res2.Task)
	assert.Equal(t, res.Task.ID, res2.Task.ID)

	// One field in both spellings is refused, at any depth.
	strictFails(t, strictCall(t, m.URL, "echo", "SendMessage", map[string]any{
		"message": map[string]any{"messageId": "a", "message_id": "b", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}}}),
		"messageId and message_id", "message id twice")
	strictFails(t, strictCall(t, m.URL, "echo", "GetTask", map[string]any{"id": res.Task.ID, "historyLength": 1, "history_length": 2}),
		"historyLength and history_length", "historyLength twice")
	strictFails(t, strictCall(t, m.URL, "echo", "ListTasks", map[string]any{"contextId": "a", "context_id": "b"}),
		"contextId and context_id", "contextId twice")
}
