package proxy_test

// An upstream agent's error reaches the mesh's client sanitized: an
// internal or implementation-defined JSON-RPC error by its code only, an
// HTTP failure by its status only; the upstream's raw error text (which may
// hold its internals) is never in anything the client can read: the send's
// answer, the stream, GetTask, ListTasks.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// upstreamSecret is the raw internal text the upstream's errors carry.
const upstreamSecret = "SECRET-pq: password authentication failed for user admin at 10.0.0.7:5432"

// scriptedUpstream is a hand-written A2A 1.0 JSON-RPC agent on loopback
// that fails the way mode says:
//
//	send-internal  SendMessage answers -32603 with the secret (message and data)
//	send-server    SendMessage answers -32050 (implementation-defined) with it
//	send-http      SendMessage answers HTTP 500, text/plain, with it
//	poll-internal  SendMessage answers a working task; GetTask answers -32603
//	stream-reply   SendStreamingMessage answers -32603 as a plain JSON reply
//	stream-frame   SendStreamingMessage streams the working task, then an
//	               error frame -32603
type scriptedUpstream struct {
	URL   string
	mode  string
	calls atomic.Int64 // JSON-RPC calls received
}

func startScriptedUpstream(t *testing.T, mode string) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &scriptedUpstream{URL: "http://" + ln.Addr().String(), mode: mode}
	streaming := strings.HasPrefix(mode, "stream-")
	card := a2a.AgentCard{
		Name: "Scripted " + mode, Description: "fails on purpose", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{{URL: u.URL + "/rpc", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
		Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(streaming)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(card)
	})
	mux.HandleFunc("POST /rpc", u.serveRPC)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	})
	return u
}

func (u *scriptedUpstream) serveRPC(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	reply := func(v map[string]any) {
		v["jsonrpc"], v["id"] = "2.0", req.ID
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	rpcErr := func(code int) map[string]any {
		return map[string]any{"error": map[string]any{"code": code, "message": upstreamSecret,
			"data": map[string]any{"stack": "goroutine 1 [running]: " + upstreamSecret}}}
	}
	task := map[string]any{"id": "up-task-1", "contextId": "up-ctx-1", "status": map[string]any{"state": "TASK_STATE_WORKING"}}
	switch {
	case u.mode == "send-internal" && req.Method == "SendMessage":
		reply(rpcErr(-32603))
	case u.mode == "send-server" && req.Method == "SendMessage":
		reply(rpcErr(-32050))
	case u.mode == "send-http" && req.Method == "SendMessage":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, upstreamSecret)
	case u.mode == "poll-internal" && req.Method == "SendMessage":
		reply(map[string]any{"result": map[string]any{"task": task}})
	case u.mode == "poll-internal" && req.Method == "GetTask":
		reply(rpcErr(-32603))
	case u.mode == "stream-reply" && req.Method == "SendStreamingMessage":
		reply(rpcErr(-32603))
	case u.mode == "stream-frame" && req.Method == "SendStreamingMessage":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		frame := func(v map[string]any) {
			v["jsonrpc"], v["id"] = "2.0", req.ID
			b, _ := json.Marshal(v)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		frame(map[string]any{"result": map[string]any{"task": task}})
		frame(rpcErr(-32603))
	default:
		reply(map[string]any{"error": map[string]any{"code": -32601, "message": "Method not found"}})
	}
}

// meshCall posts a JSON-RPC call to the mesh's edge and returns the raw
// body (an SSE body is read to its end).
func meshCall(t *testing.T, url, method string, params any) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, method)
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	require.NoError(t, err, method)
	return data
}

// lastSSEResult returns the result of the last data frame of an SSE body.
func lastSSEResult(t *testing.T, raw []byte) json.RawMessage {
	t.Helper()
	var last json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			var env struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(d)), &env), d)
			require.Nil(t, env.Error, "the mesh's stream ended with an error frame: %s", env.Error)
			last = env.Result
		}
	}
	return last
}

func TestProxyUpstreamErrorIsSanitized(t *testing.T) {
	m := meshtest.Start(t)
	for _, tc := range []struct {
		mode, want string
	}{
		{"send-internal", "the upstream agent failed (error -32603)"},
		{"send-server", "the upstream agent failed (error -32050)"},
		{"send-http", "the upstream agent answered HTTP 500"},
		{"poll-internal", "the upstream agent failed (error -32603)"},
		{"stream-reply", "the upstream agent failed (error -32603)"},
		{"stream-frame", "the upstream agent failed (error -32603)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			up := startScriptedUpstream(t, tc.mode)
			name := "scripted-" + tc.mode
			runProxy(t, m, up.URL, name)
			url := m.URL + "/agents/" + name

			// The client streams its send: every frame it can read.
			msg := map[string]any{"messageId": "m-" + tc.mode, "role": "ROLE_USER", "parts": []any{map[string]any{"text": "go"}}}
			stream := meshCall(t, url, "SendStreamingMessage", map[string]any{"message": msg})
			requireNoSecret(t, "the client's stream", stream)
			var last struct {
				StatusUpdate *struct {
					TaskID string         `json:"taskId"`
					Status a2a.TaskStatus `json:"status"`
				} `json:"statusUpdate"`
			}
			require.NoError(t, json.Unmarshal(lastSSEResult(t, stream), &last))
			require.NotNil(t, last.StatusUpdate, "the stream's last frame is a status update: %s", trim(stream))
			assert.Equal(t, a2a.StateFailed, last.StatusUpdate.Status.State)
			require.NotNil(t, last.StatusUpdate.Status.Message)
			assert.Equal(t, tc.want, last.StatusUpdate.Status.Message.Text(), "the client sees the upstream's error sanitized")
			assert.Positive(t, up.calls.Load(), "the upstream was called")

			// Nor does anything read afterwards show it.
			id := last.StatusUpdate.TaskID
			got := meshCall(t, url, "GetTask", map[string]any{"id": id, "historyLength": 100})
			requireNoSecret(t, "GetTask", got)
			assert.Contains(t, string(got), tc.want)
			list := meshCall(t, url, "ListTasks", map[string]any{"historyLength": 100, "includeArtifacts": true})
			requireNoSecret(t, "ListTasks", list)
		})
	}
}

// requireNoSecret fails the test when body holds the upstream's raw error
// text, quoting where.
func requireNoSecret(t *testing.T, what string, body []byte) {
	t.Helper()
	i := bytes.Index(body, []byte("SECRET"))
	if i < 0 {
		return
	}
	from := max(0, i-120)
	to := min(len(body), i+len(upstreamSecret)+20)
	t.Fatalf("%s shows the upstream's raw error text: …%s…", what, body[from:to])
}

func trim(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
