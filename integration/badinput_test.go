package integration

// Malformed and hostile input: every bad body gets a well-formed JSON-RPC
// error with the right code and a clean message, and the server keeps
// serving. Also a goroutine-leak check over a mix of calls.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestBadInput(t *testing.T) {
	m := startRawMesh(t)

	const okMsg = `{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	send := func(params string) string {
		return `{"jsonrpc":"2.0","id":42,"method":"SendMessage","params":` + params + `}`
	}
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	deepArr := strings.Repeat(`[`, 200) + strings.Repeat("]", 200)
	huge := `{"jsonrpc":"2.0","id":42,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` +
		strings.Repeat("x", 1<<20) + `"}]}}}`
	// Over the limit and not even JSON: rejected for its size, before parsing.
	hugeGarbage := `{"jsonrpc":"2.0","id":42,` + strings.Repeat("@", (1<<20)+10)

	cases := []struct {
		name string
		body string
		// chunked sends the body without Content-Length.
		chunked bool
		status  int
		code    int
		id      string // the id the error must echo ("null" when unreadable)
	}{
		{name: "empty body", body: ``, code: -32600, id: "null"},
		{name: "whitespace body", body: " \r\n\t ", code: -32600, id: "null"},
		{name: "invalid JSON", body: `{"jsonrpc":"2.0","id":1,"method":`, code: -32700, id: "null"},
		{name: "invalid JSON token", body: `{"jsonrpc":"2.0","id":1,"method":SendMessage}`, code: -32700, id: "null"},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}} {}`, code: -32700, id: "null"},
		{name: "array batch", body: `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`, code: -32600, id: "null"},
		{name: "empty batch", body: `[]`, code: -32600, id: "null"},
		{name: "JSON string", body: `"SendMessage"`, code: -32600, id: "null"},
		{name: "JSON number", body: `12`, code: -32600, id: "null"},
		{name: "JSON null", body: `null`, code: -32600, id: "null"},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":7,"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "7"},
		{name: "jsonrpc missing", body: `{"id":7,"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "7"},
		{name: "jsonrpc a number", body: `{"jsonrpc":2.0,"id":7,"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "7"},
		{name: "missing method", body: `{"jsonrpc":"2.0","id":"abc","params":{}}`, code: -32600, id: `"abc"`},
		{name: "method not a string", body: `{"jsonrpc":"2.0","id":"abc","method":123}`, code: -32600, id: `"abc"`},
		{name: "method null", body: `{"jsonrpc":"2.0","id":"abc","method":null}`, code: -32600, id: `"abc"`},
		{name: "missing id", body: `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "null"},
		{name: "id an object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "null"},
		{name: "id an array", body: `{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "null"},
		{name: "id a bool", body: `{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{"id":"x"}}`, code: -32600, id: "null"},
		{name: "params an array", body: `{"jsonrpc":"2.0","id":9,"method":"GetTask","params":["x"]}`, code: -32602, id: "9"},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":"hi"}`, code: -32602, id: "9"},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":10,"method":"tasks/explode","params":{}}`, code: -32601, id: "10"},
		{name: "unknown method, wrong case", body: `{"jsonrpc":"2.0","id":10,"method":"sendmessage","params":{}}`, code: -32601, id: "10"},
		{name: "parts a string", body: send(`{"message":{"messageId":"m","role":"ROLE_USER","parts":"hi"}}`), code: -32602, id: "42"},
		{name: "message a string", body: send(`{"message":"hi"}`), code: -32602, id: "42"},
		{name: "messageId a number", body: send(`{"message":{"messageId":5,"role":"ROLE_USER","parts":[{"text":"hi"}]}}`), code: -32602, id: "42"},
		{name: "configuration a list", body: send(`{"message":` + okMsg + `,"configuration":[]}`), code: -32602, id: "42"},
		{name: "historyLength a string", body: `{"jsonrpc":"2.0","id":11,"method":"GetTask","params":{"id":"x","historyLength":"all"}}`, code: -32602, id: "11"},
		{name: "pageSize a string", body: `{"jsonrpc":"2.0","id":11,"method":"ListTasks","params":{"pageSize":"ten"}}`, code: -32602, id: "11"},
		{name: "unknown role", body: send(`{"message":{"messageId":"m","role":"ROLE_ROBOT","parts":[{"text":"hi"}]}}`), code: -32602, id: "42"},
		{name: "agent role", body: send(`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`), code: -32602, id: "42"},
		{name: "part with no content", body: send(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{}]}}`), code: -32602, id: "42"},
		{name: "part with two contents", body: send(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"https://x"}]}}`), code: -32602, id: "42"},
		{name: "0.3 part of unknown kind", body: `{"jsonrpc":"2.0","id":12,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"video"}]}}}`, code: -32602, id: "12"},
		{name: "raw part not base64", body: send(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"%%%"}]}}`), code: -32602, id: "42"},
		{name: "no parts", body: send(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}`), code: -32602, id: "42"},
		{name: "no message", body: send(`{}`), code: -32602, id: "42"},
		{name: "message without messageId", body: send(`{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}`), code: -32602, id: "42"},
		{name: "0.3 message without messageId", body: `{"jsonrpc":"2.0","id":13,"method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, code: -32602, id: "13"},
		{name: "nesting 200 objects deep", body: `{"jsonrpc":"2.0","id":14,"method":"SendMessage","params":{"message":` + okMsg + `,"metadata":` + deep + `}}`, code: -32600, id: "null"},
		{name: "nesting 200 arrays deep", body: deepArr, code: -32600, id: "null"},
		{name: "body over 1 MiB", body: huge, status: http.StatusRequestEntityTooLarge, code: -32600, id: "null"},
		{name: "body over 1 MiB, chunked", body: huge, chunked: true, status: http.StatusRequestEntityTooLarge, code: -32600, id: "null"},
		{name: "body over 1 MiB, not JSON", body: hugeGarbage, status: http.StatusRequestEntityTooLarge, code: -32600, id: "null"},
		{name: "body over 1 MiB, not JSON, chunked", body: hugeGarbage, chunked: true, status: http.StatusRequestEntityTooLarge, code: -32600, id: "null"},
		{name: "invalid UTF-8 in a string", body: send(`{"message":{"messageId":"m-utf8","role":"ROLE_USER","parts":[{"text":"bad ` + "\xff\xfe" + ` bytes"}]}}`), code: -32700, id: "null"},
		{name: "invalid UTF-8 in a key", body: `{"jsonrpc":"2.0","id":15,"method":"GetTask","params":{"i` + "\xc3\x28" + `d":"x"}}`, code: -32700, id: "null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
			defer cancel()
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			resp := m.postRaw(ctx, t, "/a2a", body, nil)
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			assert.Equal(t, status, resp.StatusCode, "HTTP status: %s", trimBody(data))
			r := decodeReply(t, resp, data)
			requireEnvelope(t, r)
			require.NotNil(t, r.Error, "want an error: %s", trimBody(data))
			assert.Equal(t, tc.code, r.Error.Code, "error: %s", trimBody(data))
			assert.JSONEq(t, tc.id, string(r.ID), "response id")
			requireCleanMessage(t, r.Error.Message)
			assert.Len(t, r.Keys, 3, "jsonrpc, id, error and nothing else: %s", trimBody(data))

			// still serving
			m.fails(t, "/a2a", "GetTask", map[string]any{"id": uuid.NewString()}, -32001)
		})
	}

	t.Run("nothing was created by bad input", func(t *testing.T) {
		l := m.listTasks(t, map[string]any{"pageSize": 100})
		assert.Equal(t, 0, *l.TotalSize, "no bad request made a task")
	})

	t.Run("a normal send after all that", func(t *testing.T) {
		tk := v10.sendTask(t, m.ok(t, "/a2a", "SendMessage", sendParams(v10.msg("still here"), nil)))
		assert.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State)
		assert.Equal(t, "still here", tk.artifactText())
	})

	t.Run("wrong HTTP method or path", func(t *testing.T) {
		status, _, _ := m.getJSON(t, "/a2a", nil)
		assert.NotEqual(t, http.StatusOK, status)
		status, _, _ = m.getJSON(t, "/no/such/path", nil)
		assert.Equal(t, http.StatusNotFound, status)
	})

	t.Run("id shapes are echoed", func(t *testing.T) {
		for _, id := range []string{`"a string"`, `0`, `-12`, `1.5`, `12345678901234567890`, `""`, `null`} {
			body := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"GetTask","params":{"id":"` + uuid.NewString() + `"}}`)
			r := m.postBody(t, "/a2a", body, nil)
			requireEnvelope(t, r)
			require.NotNil(t, r.Error)
			assert.Equal(t, -32001, r.Error.Code, "id %s: %s", id, r.Body)
			assert.Equal(t, id, string(r.ID), "the id is echoed verbatim")
		}
	})
}

// TestGoroutineLeak runs a mix of sends, streams, cancels and dropped
// streams, closes the mesh, and checks nothing it started is left running.
func TestGoroutineLeak(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	m := startRawMesh(t)

	for i := 0; i < 3; i++ {
		for _, p := range bothProtos {
			tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(p.msg("leak "+strconv.Itoa(i)), nil)))
			require.Equal(t, p.completed, tk.Status.State)
		}
	}
	// multi-turn
	ask := v10.sendTask(t, m.ok(t, "/agents/ask", "SendMessage", sendParams(v10.msg("hi"), nil)))
	m.ok(t, "/agents/ask", "SendMessage", sendParams(inTask(v10.msg("Dan"), ask.ID, ask.ContextID), nil))
	// full streams
	for _, p := range bothProtos {
		s, id := m.stream(t, "/agents/slow", p.stream, sendParams(p.msg("chunks=3 delay=10ms"), nil), nil)
		frames := s.readAll(t, p, id, 50)
		require.NotEmpty(t, frames)
	}
	// dropped streams, a cancel of a running task, a dropped subscription
	var running []string
	for _, p := range bothProtos {
		s, id := m.stream(t, "/agents/slow", p.stream, sendParams(p.msg("chunks=50 delay=30ms"), nil), nil)
		f := s.readFrame(t, p, id)
		require.NotNil(t, f)
		running = append(running, f.Item.TaskID)
		s.Close()
	}
	sub, id := m.stream(t, "/agents/slow", "SubscribeToTask", map[string]any{"id": running[0]}, nil)
	require.NotNil(t, sub.readFrame(t, v10, id))
	sub.Close()
	m.ok(t, "/agents/slow", "CancelTask", map[string]any{"id": running[0]})
	// a stream left open while the mesh shuts down, on a task still running
	open, openID := m.stream(t, "/agents/slow", "SubscribeToTask", map[string]any{"id": running[1]}, nil)
	require.NotNil(t, open.readFrame(t, v10, openID))
	// a non-blocking send whose task is still running at shutdown
	m.ok(t, "/agents/slow", "SendMessage", sendParams(v10.msg("chunks=50 delay=30ms"), v10.nonBlocking))
	// bad input
	m.postBody(t, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,`), nil)
	m.postBody(t, "/a2a", bytes.Repeat([]byte("x"), (1<<20)+1), nil)
	m.ok(t, "/a2a", "ListTasks", map[string]any{"pageSize": 2})

	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Close()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("mesh Close did not return within 20s")
	}
	open.Close()
	m.hc.CloseIdleConnections()

	goleak.VerifyNone(t, opt,
		// This test's own HTTP client connections wind down on their own;
		// no server goroutine is ignored.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}
