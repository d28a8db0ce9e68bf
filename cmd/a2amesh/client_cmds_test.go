package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// runCLI runs a client command with captured streams.
func runCLI(t *testing.T, fn func(*cli, context.Context, []string) error, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := fn(&cli{out: &out, errOut: &errOut, in: strings.NewReader(stdin)}, context.Background(), args)
	return out.String(), errOut.String(), err
}

// rpcCall is one JSON-RPC request the fake mesh received.
type rpcCall struct {
	Path   string
	Header http.Header
	ID     json.RawMessage
	Method string
	Params map[string]any
}

// fakeMesh is a loopback HTTP server shaped like the mesh's edge: cards at
// /.well-known/agent-card.json and /agents/{name}/.well-known/agent-card.json,
// JSON-RPC at POST /agents/{name}.
type fakeMesh struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []rpcCall
	answer func(w http.ResponseWriter, c rpcCall)
}

func newMesh(t *testing.T, answer func(w http.ResponseWriter, c rpcCall)) *fakeMesh {
	t.Helper()
	m := &fakeMesh{answer: answer}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, meshCard)
	})
	mux.HandleFunc("GET /agents/echo/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, echoCard)
	})
	rpc := func(w http.ResponseWriter, r *http.Request) {
		var c rpcCall
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(body, &c)
		c.Path, c.Header = r.URL.Path, r.Header.Clone()
		m.mu.Lock()
		m.calls = append(m.calls, c)
		m.mu.Unlock()
		if r.URL.Path != "/a2a" && r.PathValue("name") != "echo" {
			http.NotFound(w, r)
			return
		}
		m.answer(w, c)
	}
	mux.HandleFunc("POST /agents/{name}", rpc)
	mux.HandleFunc("POST /a2a", rpc) // the mesh endpoint: tasks of any agent
	m.Server = httptest.NewServer(mux)
	t.Cleanup(m.Close)
	return m
}

func (m *fakeMesh) last(t *testing.T) rpcCall {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotEmpty(t, m.calls)
	return m.calls[len(m.calls)-1]
}

const meshCard = `{"name":"a2amesh","description":"An A2A mesh.","version":"0.1.0",
 "supportedInterfaces":[{"url":"http://127.0.0.1:8080/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
 "capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[],
 "signatures":[{"protected":"x","signature":"y"}]}`

const echoCard = `{"name":"echo","description":"Echoes what\nyou send.","version":"1.2.3",
 "provider":{"organization":"a2amesh","url":"https://example.com"},
 "supportedInterfaces":[
  {"url":"http://127.0.0.1:8080/agents/echo","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
  {"url":"http://127.0.0.1:8080/t/acme/agents/echo","protocolBinding":"JSONRPC","protocolVersion":"1.0","tenant":"acme"},
  {"url":"http://127.0.0.1:8080/agents/echo","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],
 "capabilities":{"streaming":true,"pushNotifications":false},
 "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain","application/json"],
 "skills":[{"id":"echo","name":"Echo","description":"Says it back","tags":["test","demo"],"examples":["hello"]},
  {"id":"upper-case","name":"Shout","description":"","tags":[]}]}`

func writeResult(w http.ResponseWriter, id json.RawMessage, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func writeEvents(w http.ResponseWriter, id json.RawMessage, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range events {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": ev})
		fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, b)
	}
}

func textParts(s ...string) []any {
	out := make([]any, len(s))
	for i, t := range s {
		out[i] = map[string]any{"text": t}
	}
	return out
}

func task(state string, status string, artifacts ...any) map[string]any {
	t := map[string]any{"id": "task-1", "contextId": "ctx-1", "status": map[string]any{"state": state}}
	if status != "" {
		t["status"].(map[string]any)["message"] = map[string]any{"messageId": "m-s", "role": "ROLE_AGENT", "parts": textParts(status)}
	}
	if len(artifacts) > 0 {
		t["artifacts"] = artifacts
	}
	return t
}

func artifact(id, name string, parts ...any) map[string]any {
	return map[string]any{"artifactId": id, "name": name, "parts": parts}
}

func TestAgentURL(t *testing.T) {
	cases := []struct {
		url, agent string
		set        bool
		want, err  string
	}{
		{url: "http://127.0.0.1:8080", agent: "echo", want: "http://127.0.0.1:8080/agents/echo"},
		{url: "http://127.0.0.1:8080/", agent: "echo", want: "http://127.0.0.1:8080/agents/echo"},
		{url: "http://127.0.0.1:8080", agent: "slow", set: true, want: "http://127.0.0.1:8080/agents/slow"},
		{url: "http://127.0.0.1:8080/agents/ask", agent: "echo", want: "http://127.0.0.1:8080/agents/ask"},
		{url: "http://127.0.0.1:8080/agents/ask/", agent: "echo", want: "http://127.0.0.1:8080/agents/ask"},
		{url: "http://127.0.0.1:8080/agents/ask", agent: "ask", set: true, want: "http://127.0.0.1:8080/agents/ask"},
		{url: "http://127.0.0.1:8080/agents/ask", agent: "slow", set: true, err: "already names agent"},
		{url: "http://127.0.0.1:8080/agents/ask/.well-known/agent-card.json", agent: "echo", want: "http://127.0.0.1:8080/agents/ask"},
		{url: "http://127.0.0.1:8080/.well-known/agent-card.json", agent: "echo", want: "http://127.0.0.1:8080/agents/echo"},
		{url: "https://mesh.example/prefix", agent: "echo", set: true, want: "https://mesh.example/prefix/agents/echo"},
		{url: "https://other.example/rpc", agent: "echo", want: "https://other.example/rpc"},
		{url: "http://h:1/t/acme/agents/echo", agent: "echo", want: "http://h:1/t/acme/agents/echo"},
		{url: "http://h:1", agent: "my agent", set: true, want: "http://h:1/agents/my%20agent"},
		{url: "http://h:1", agent: "", set: true, err: "invalid --agent"},
		{url: "http://h:1", agent: "a/b", set: true, err: "invalid --agent"},
		{url: "127.0.0.1:8080", agent: "echo", err: "invalid --url"},
		{url: "ftp://h/x", agent: "echo", err: "invalid --url"},
		{url: "http://", agent: "echo", err: "invalid --url"},
	}
	for _, tc := range cases {
		got, err := agentURL(tc.url, tc.agent, tc.set)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, got, "%+v", tc)
	}
}

func TestCardURLResolution(t *testing.T) {
	for _, tc := range []struct {
		url, agent string
		set        bool
		want       string
	}{
		{"http://127.0.0.1:8080", "", false, "http://127.0.0.1:8080/.well-known/agent-card.json"},
		{"http://127.0.0.1:8080/", "", false, "http://127.0.0.1:8080/.well-known/agent-card.json"},
		{"http://127.0.0.1:8080/agents/echo", "", false, "http://127.0.0.1:8080/agents/echo/.well-known/agent-card.json"},
		{"http://127.0.0.1:8080/.well-known/agent-card.json", "", false, "http://127.0.0.1:8080/.well-known/agent-card.json"},
		{"http://h/.well-known/agent.json", "", false, "http://h/.well-known/agent.json"},
		{"http://127.0.0.1:8080", "slow", true, "http://127.0.0.1:8080/agents/slow/.well-known/agent-card.json"},
	} {
		got, err := cardURL(tc.url, tc.agent, tc.set)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc)
	}
	_, err := cardURL("nope", "", false)
	assert.ErrorContains(t, err, "invalid --url")
}

func TestParseFlags(t *testing.T) {
	c := &cli{out: io.Discard, errOut: io.Discard}
	f := newSendFlags("send", "TEXT...", "")
	pos, done, err := c.parse(f.commonFlags, []string{"hello", "--agent", "ask", "big", "--json", "world", "--", "--not-a-flag", "-x"})
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, []string{"hello", "big", "world", "--not-a-flag", "-x"}, pos)
	assert.Equal(t, "ask", f.agent)
	assert.True(t, f.agentSet)
	assert.True(t, f.json)

	f = newSendFlags("send", "TEXT...", "")
	pos, _, err = c.parse(f.commonFlags, []string{"a", "b", "c", "d", "e"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, pos)
	assert.False(t, f.agentSet)
	assert.Equal(t, "echo", f.agent)
}

func TestEnvURL(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_COMPLETED", "")})
	})
	t.Setenv(urlEnv, m.URL)
	_, _, err := runCLI(t, cliSend, "", "hi")
	require.NoError(t, err)
	assert.Equal(t, "/agents/echo", m.last(t).Path)

	// --url wins over the environment.
	m2 := newMesh(t, m.answer)
	_, _, err = runCLI(t, cliSend, "", "--url", m2.URL, "hi")
	require.NoError(t, err)
	assert.Equal(t, "/agents/echo", m2.last(t).Path)
}

func TestHelpAndUsageErrors(t *testing.T) {
	for name, fn := range map[string]func(*cli, context.Context, []string) error{
		"card": cliCard, "send": cliSend, "stream": cliStream, "get": cliGet, "cancel": cliCancel,
	} {
		out, errOut, err := runCLI(t, fn, "", "-h")
		require.NoError(t, err, name)
		assert.Contains(t, out, "usage: a2amesh "+name, name)
		assert.Contains(t, out, "-url", name)
		assert.Empty(t, errOut, name)

		out, errOut, err = runCLI(t, fn, "", "--no-such-flag")
		require.Error(t, err, name)
		assert.Empty(t, out, name)
		assert.Contains(t, errOut, "usage: a2amesh "+name, name)
	}
	for name, tc := range map[string]struct {
		fn   func(*cli, context.Context, []string) error
		args []string
		want string
	}{
		"send without text":           {cliSend, nil, "nothing to send"},
		"stream without text or task": {cliStream, nil, "nothing to send"},
		"stream last-event-id + text": {cliStream, []string{"--task", "t", "--last-event-id", "3", "hi"}, "--last-event-id only applies"},
		"get without id":              {cliGet, nil, "want exactly one TASK_ID"},
		"cancel with two ids":         {cliCancel, []string{"a", "b"}, "want exactly one TASK_ID"},
		"card with argument":          {cliCard, []string{"x"}, "unexpected argument"},
		"bad url":                     {cliSend, []string{"--url", "localhost:8080", "hi"}, "invalid --url"},
	} {
		_, _, err := runCLI(t, tc.fn, "", tc.args...)
		assert.ErrorContains(t, err, tc.want, name)
	}
}

func TestSendPrintsTask(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_COMPLETED", "Done.",
			artifact("a-1", "echo", map[string]any{"text": "hello world"}),
			artifact("a-2", "", map[string]any{"data": map[string]any{"n": 1, "ok": true}}, map[string]any{"text": "line1\nline2"}),
		)})
	})
	out, errOut, err := runCLI(t, cliSend, "", "--url", m.URL, "hello", "world")
	require.NoError(t, err)
	assert.Equal(t, `task     task-1
context  ctx-1
status   completed: Done.
artifact echo: hello world
artifact a-2:
  {"n":1,"ok":true}
  line1
  line2
`, out)
	assert.Empty(t, errOut)

	c := m.last(t)
	assert.Equal(t, "SendMessage", c.Method)
	assert.Equal(t, "1.0", c.Header.Get("A2A-Version"))
	msg := c.Params["message"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"text": "hello world"}}, msg["parts"])
	assert.Equal(t, "ROLE_USER", msg["role"])
	assert.NotEmpty(t, msg["messageId"])
	assert.NotContains(t, msg, "contextId")
	assert.NotContains(t, c.Params, "configuration")
}

func TestSendFlagsReachTheRequest(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_WORKING", "")})
	})
	_, errOut, err := runCLI(t, cliSend, "", "--url", m.URL+"/agents/echo", "--context", "ctx-9", "--task", "task-9", "--no-wait", "again")
	require.NoError(t, err)
	c := m.last(t)
	msg := c.Params["message"].(map[string]any)
	assert.Equal(t, "ctx-9", msg["contextId"])
	assert.Equal(t, "task-9", msg["taskId"])
	assert.Equal(t, map[string]any{"returnImmediately": true}, c.Params["configuration"])
	u := m.URL + "/agents/echo"
	assert.Equal(t, "follow with: a2amesh stream --url "+u+" --task task-1  (or: a2amesh get --url "+u+" task-1)\n", errOut)
	assert.Equal(t, "/agents/echo", c.Path)
}

func TestSendStdin(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_COMPLETED", "")})
	})
	_, _, err := runCLI(t, cliSend, "from\nstdin\n", "--url", m.URL, "-")
	require.NoError(t, err)
	msg := m.last(t).Params["message"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"text": "from\nstdin"}}, msg["parts"])
}

func TestSendExitStatus(t *testing.T) {
	for state, wantErr := range map[string]bool{
		"TASK_STATE_COMPLETED": false, "TASK_STATE_INPUT_REQUIRED": false, "TASK_STATE_CANCELED": false,
		"TASK_STATE_FAILED": true, "TASK_STATE_REJECTED": true,
	} {
		m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
			writeResult(w, c.ID, map[string]any{"task": task(state, "why")})
		})
		for _, args := range [][]string{{"--url", m.URL, "x"}, {"--url", m.URL, "--json", "x"}} {
			out, errOut, err := runCLI(t, cliSend, "", args...)
			if wantErr {
				assert.ErrorIs(t, err, errTaskFailed, state)
				assert.ErrorContains(t, err, stateName(a2a.TaskState(state)))
			} else {
				assert.NoError(t, err, state)
			}
			assert.NotEmpty(t, out)
			if state == "TASK_STATE_INPUT_REQUIRED" {
				assert.Equal(t, "reply with: a2amesh send --url "+m.URL+" --task task-1 TEXT...\n", errOut)
			}
		}
	}
}

func TestSendJSON(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_COMPLETED", "", artifact("a", "x", map[string]any{"text": "hi"}))})
	})
	out, _, err := runCLI(t, cliSend, "", "--url", m.URL, "--json", "hi")
	require.NoError(t, err)
	var res a2a.StreamResponse
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.NotNil(t, res.Task)
	assert.Equal(t, "task-1", res.Task.ID)
	assert.Contains(t, out, "\n  \"task\": {")
}

func TestSendPrintsMessage(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"message": map[string]any{
			"messageId": "m-1", "contextId": "ctx-1", "role": "ROLE_AGENT", "parts": textParts("pong"),
		}})
	})
	out, _, err := runCLI(t, cliSend, "", "--url", m.URL, "ping")
	require.NoError(t, err)
	assert.Equal(t, "context  ctx-1\nmessage  pong\n", out)
}

func TestErrorsAreExplained(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeRPCError(w, c.ID, a2a.CodeTaskNotFound, "Task not found: task-x")
	})
	_, _, err := runCLI(t, cliGet, "", "--url", m.URL, "task-x")
	require.Error(t, err)
	assert.Equal(t, "Task not found: task-x (code -32001)", err.Error())
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)

	_, _, err = runCLI(t, cliSend, "", "--url", m.URL, "--agent", "nobody", "hi")
	assert.ErrorContains(t, err, "HTTP 404 Not Found")
	assert.ErrorContains(t, err, "no agent at "+m.URL+"/agents/nobody?")

	url := m.URL
	m.Close()
	_, _, err = runCLI(t, cliCard, "", "--url", url)
	assert.ErrorContains(t, err, "is the mesh running?")
}

func TestStreamPrintsEvents(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeEvents(w, c.ID,
			map[string]any{"task": task("TASK_STATE_SUBMITTED", "")},
			map[string]any{"statusUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1",
				"status": map[string]any{"state": "TASK_STATE_WORKING", "message": map[string]any{"messageId": "s", "role": "ROLE_AGENT", "parts": textParts("Thinking…")}}}},
			map[string]any{"artifactUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "artifact": artifact("a-1", "answer", map[string]any{"text": "Hel"})}},
			map[string]any{"artifactUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "append": true, "artifact": artifact("a-1", "", map[string]any{"text": "lo, "})}},
			map[string]any{"artifactUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "append": true, "lastChunk": true, "artifact": artifact("a-1", "", map[string]any{"text": "world"})}},
			map[string]any{"artifactUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "artifact": artifact("a-2", "stats", map[string]any{"data": map[string]any{"n": 2}})}},
			map[string]any{"statusUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "status": map[string]any{"state": "TASK_STATE_COMPLETED"}}},
		)
	})
	out, errOut, err := runCLI(t, cliStream, "", "--url", m.URL, "hi")
	require.NoError(t, err)
	assert.Equal(t, `task     task-1
context  ctx-1
status   submitted
status   working: Thinking…
artifact answer: Hello, world
artifact stats: {"n":2}
status   completed
`, out)
	assert.Empty(t, errOut)
	c := m.last(t)
	assert.Equal(t, "SendStreamingMessage", c.Method)
	assert.Equal(t, "text/event-stream", c.Header.Get("Accept"))
}

func TestStreamJSONLines(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeEvents(w, c.ID,
			map[string]any{"task": task("TASK_STATE_SUBMITTED", "")},
			map[string]any{"statusUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "status": map[string]any{"state": "TASK_STATE_FAILED"}}},
		)
	})
	out, _, err := runCLI(t, cliStream, "", "--url", m.URL, "--json", "hi")
	assert.ErrorIs(t, err, errTaskFailed)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		var r a2a.StreamResponse
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
	}
	assert.Contains(t, lines[1], `"statusUpdate"`)
}

func TestStreamResubscribe(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeEvents(w, c.ID,
			map[string]any{"statusUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1",
				"status": map[string]any{"state": "TASK_STATE_INPUT_REQUIRED", "message": map[string]any{"messageId": "q", "role": "ROLE_AGENT", "parts": textParts("Which one?")}}}},
		)
	})
	out, errOut, err := runCLI(t, cliStream, "", "--url", m.URL, "--task", "task-1", "--last-event-id", "41")
	require.NoError(t, err)
	assert.Equal(t, "task     task-1\ncontext  ctx-1\nstatus   input-required: Which one?\n", out)
	assert.Equal(t, "reply with: a2amesh send --url "+m.URL+" --task task-1 TEXT...\n", errOut)
	c := m.last(t)
	assert.Equal(t, "SubscribeToTask", c.Method)
	assert.Equal(t, "/a2a", c.Path, "a task of any agent: the mesh endpoint")
	assert.Equal(t, "task-1", c.Params["id"])
	assert.Equal(t, "41", c.Header.Get("Last-Event-ID"))

	// With text, --task continues the task through SendStreamingMessage.
	_, _, err = runCLI(t, cliStream, "", "--url", m.URL, "--task", "task-1", "the blue one")
	require.NoError(t, err)
	c = m.last(t)
	assert.Equal(t, "SendStreamingMessage", c.Method)
	assert.Equal(t, "task-1", c.Params["message"].(map[string]any)["taskId"])
}

func TestStreamEndsEarly(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeEvents(w, c.ID,
			map[string]any{"artifactUpdate": map[string]any{"taskId": "task-1", "contextId": "ctx-1", "artifact": artifact("a-1", "out", map[string]any{"text": "partial"})}},
		)
	})
	out, errOut, err := runCLI(t, cliStream, "", "--url", m.URL, "hi")
	require.NoError(t, err)
	assert.Equal(t, "task     task-1\ncontext  ctx-1\nartifact out: partial\n", out)
	assert.Equal(t, "stream ended before the task finished; follow with: a2amesh stream --url "+m.URL+" --task task-1\n", errOut)
}

func TestStreamErrors(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		if c.Method == "SubscribeToTask" {
			writeRPCError(w, c.ID, a2a.CodeUnsupportedOperation, "Task is in a terminal state")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"task-1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`+"\n\n")
		io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`+"\n\n")
	})
	_, _, err := runCLI(t, cliStream, "", "--url", m.URL, "--task", "task-1")
	assert.ErrorIs(t, err, a2a.ErrUnsupportedOperation)
	assert.EqualError(t, err, "Task is in a terminal state (code -32004)")

	out, _, err := runCLI(t, cliStream, "", "--url", m.URL, "hi")
	assert.ErrorIs(t, err, a2a.ErrInternal)
	assert.Contains(t, out, "status   working\n")
}

func TestStreamMessageAnswer(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeEvents(w, c.ID, map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": textParts("pong")}})
	})
	out, errOut, err := runCLI(t, cliStream, "", "--url", m.URL, "ping")
	require.NoError(t, err)
	assert.Equal(t, "message  pong\n", out)
	assert.Empty(t, errOut)
}

func TestGetAndCancel(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		switch c.Method {
		case "GetTask":
			tk := task("TASK_STATE_COMPLETED", "", artifact("a", "echo", map[string]any{"text": "hi"}))
			tk["history"] = []any{
				map[string]any{"messageId": "1", "role": "ROLE_USER", "parts": textParts("hi")},
				map[string]any{"messageId": "2", "role": "ROLE_AGENT", "parts": textParts("hi")},
			}
			writeResult(w, c.ID, tk)
		case "CancelTask":
			writeResult(w, c.ID, task("TASK_STATE_CANCELED", "Canceled by user"))
		}
	})
	out, _, err := runCLI(t, cliGet, "", "--url", m.URL, "--history", "5", "task-1")
	require.NoError(t, err)
	assert.Equal(t, `task     task-1
context  ctx-1
status   completed
artifact echo: hi
history  user: hi
history  agent: hi
`, out)
	c := m.last(t)
	assert.Equal(t, "GetTask", c.Method)
	assert.Equal(t, "/a2a", c.Path, "a task of any agent: the mesh endpoint")
	assert.Equal(t, "task-1", c.Params["id"])
	assert.EqualValues(t, 5, c.Params["historyLength"])

	out, _, err = runCLI(t, cliGet, "", "--url", m.URL, "task-1")
	require.NoError(t, err)
	assert.NotContains(t, out, "history")
	assert.NotContains(t, m.last(t).Params, "historyLength")

	out, _, err = runCLI(t, cliGet, "", "--url", m.URL, "--json", "task-1")
	require.NoError(t, err)
	var tk a2a.Task
	require.NoError(t, json.Unmarshal([]byte(out), &tk))
	assert.Len(t, tk.History, 2)

	out, _, err = runCLI(t, cliCancel, "", "--url", m.URL, "task-1")
	require.NoError(t, err)
	assert.Equal(t, "task     task-1\ncontext  ctx-1\nstatus   canceled: Canceled by user\n", out)
	assert.Equal(t, "CancelTask", m.last(t).Method)
	assert.Equal(t, "/a2a", m.last(t).Path)

	// With --agent, the agent's own endpoint.
	_, _, err = runCLI(t, cliCancel, "", "--url", m.URL, "--agent", "echo", "task-1")
	require.NoError(t, err)
	assert.Equal(t, "/agents/echo", m.last(t).Path)

	out, _, err = runCLI(t, cliCancel, "", "--url", m.URL, "--json", "task-1")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &tk))
	assert.Equal(t, a2a.StateCanceled, tk.Status.State)
}

func TestCardOutput(t *testing.T) {
	m := newMesh(t, nil)
	out, _, err := runCLI(t, cliCard, "", "--url", m.URL, "--agent", "echo")
	require.NoError(t, err)
	assert.Equal(t, `Name:         echo
Description:  Echoes what you send.
Version:      1.2.3
Provider:     a2amesh (https://example.com)
Interfaces:
  JSONRPC  1.0   http://127.0.0.1:8080/agents/echo
  JSONRPC  1.0   http://127.0.0.1:8080/t/acme/agents/echo  (tenant acme)
  JSONRPC  0.3   http://127.0.0.1:8080/agents/echo
Capabilities: streaming
Input:        text/plain
Output:       text/plain, application/json
Skills:
  echo        Echo: Says it back
              tags: test, demo · e.g. "hello"
  upper-case  Shout
`, out)

	// The same card through an agent URL.
	out2, _, err := runCLI(t, cliCard, "", "--url", m.URL+"/agents/echo")
	require.NoError(t, err)
	assert.Equal(t, out, out2)

	// The mesh card, raw: fields the a2a types do not model survive.
	out, _, err = runCLI(t, cliCard, "", "--url", m.URL, "--json")
	require.NoError(t, err)
	assert.Contains(t, out, `"signatures": [`)
	assert.JSONEq(t, meshCard, out)

	out, _, err = runCLI(t, cliCard, "", "--url", m.URL)
	require.NoError(t, err)
	assert.Contains(t, out, "Name:         a2amesh\n")
	assert.Contains(t, out, "Capabilities: none\n")
}

func TestPartText(t *testing.T) {
	assert.Equal(t, "[report.pdf, application/pdf, 3 bytes]", partText(a2a.Part{Kind: a2a.PartRaw, Raw: []byte("abc"), Filename: "report.pdf", MediaType: "application/pdf"}))
	assert.Equal(t, "[file, 0 bytes]", partText(a2a.Part{Kind: a2a.PartRaw}))
	assert.Equal(t, "[file, image/png] https://x/y.png", partText(a2a.Part{Kind: a2a.PartURL, URL: "https://x/y.png", MediaType: "image/png"}))
	assert.Equal(t, `{"a":[1,2]}`, partText(a2a.Part{Kind: a2a.PartData, Data: json.RawMessage("{ \"a\": [1, 2] }")}))
}

func TestStreamPrinterChunks(t *testing.T) {
	var b bytes.Buffer
	p := &streamPrinter{w: &b}
	chunk := func(id string, appendIt, last bool, text string) *a2a.StreamResponse {
		return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: appendIt, LastChunk: last,
			Artifact: a2a.Artifact{ArtifactID: id, Parts: []a2a.Part{a2a.TextPart(text)}}}}
	}
	for _, r := range []*a2a.StreamResponse{
		chunk("a", false, false, "one "),
		chunk("a", true, false, "two\n"),
		chunk("b", true, false, "other"), // append to an artifact whose line is not open: new line
		chunk("a", true, false, " three"),
		{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateCompleted}}},
	} {
		require.NoError(t, p.event(r))
	}
	p.end()
	assert.Equal(t, "task     t\ncontext  c\nartifact a: one two\nartifact b: other\nartifact a:  three\nstatus   completed\n", b.String())
	assert.True(t, p.finished)
	assert.Equal(t, a2a.StateCompleted, p.state)
}

func TestExplainKeepsOtherErrors(t *testing.T) {
	e := errors.New("plain")
	ctx, cancel := context.WithCancel(context.Background())
	assert.Same(t, e, explain(ctx, e, "x", nil))
	assert.NoError(t, explain(ctx, nil, "x", nil))
	cancel()
	assert.Same(t, errInterrupted, explain(ctx, e, "x", nil))
}

func TestHintCommandLine(t *testing.T) {
	t.Setenv(urlEnv, "")
	f := newFlags("send", "TEXT...", "x", defaultAgent, "")
	c := &cli{out: io.Discard, errOut: io.Discard}
	_, _, err := c.parse(f, []string{"--agent", "my agent", "--api-key", "secret-secret-secret", "hi"})
	require.NoError(t, err)
	assert.Equal(t, "a2amesh send --agent 'my agent' --api-key KEY --task t-1 TEXT...", f.again("send", "--task", "t-1", "TEXT..."))

	f = newFlags("send", "TEXT...", "x", defaultAgent, "")
	_, _, err = c.parse(f, []string{"--url", "http://h:1/a?b=c&d='e'", "hi"})
	require.NoError(t, err)
	assert.Equal(t, `a2amesh get --url 'http://h:1/a?b=c&d='\''e'\''' t-1`, f.again("get", "t-1"))

	// A URL from the environment is the next command's too: not repeated.
	t.Setenv(urlEnv, "http://h:2")
	f = newFlags("get", "TASK_ID", "x", "", "")
	_, _, err = c.parse(f, []string{"t-1"})
	require.NoError(t, err)
	assert.Equal(t, "a2amesh stream --task t-1", f.again("stream", "--task", "t-1"))
}

// A blocking send that the edge answered before the task settled (its
// --blocking-timeout passed: the agent's workers are down) prints how to
// follow the task, as --no-wait does.
func TestSendCutShortByTheEdgePrintsFollowHint(t *testing.T) {
	m := newMesh(t, func(w http.ResponseWriter, c rpcCall) {
		writeResult(w, c.ID, map[string]any{"task": task("TASK_STATE_SUBMITTED", "")})
	})
	_, errOut, err := runCLI(t, cliSend, "", "--url", m.URL+"/agents/echo", "hello")
	require.NoError(t, err)
	assert.NotContains(t, m.last(t).Params, "configuration", "a blocking send")
	u := m.URL + "/agents/echo"
	assert.Equal(t, "follow with: a2amesh stream --url "+u+" --task task-1  (or: a2amesh get --url "+u+" task-1)\n", errOut)
}
