package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// rpcCall is one JSON-RPC request a fake server received.
type rpcCall struct {
	Header  http.Header
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  map[string]any
}

// fakeServer is a loopback HTTP server answering JSON-RPC calls with a
// test-provided handler and recording what it received.
type fakeServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []rpcCall
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, c rpcCall)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c rpcCall
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(body, &c)
		c.Header = r.Header.Clone()
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		answer(w, r, c)
	}))
	t.Cleanup(f.Close)
	return f
}

// last returns the last call received.
func (f *fakeServer) last(t *testing.T) rpcCall {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.calls, "server received no call")
	return f.calls[len(f.calls)-1]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func result(id json.RawMessage, v any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": v}
}

func rpcError(id json.RawMessage, code int, msg string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}}
}

// sseFrame returns one SSE event whose data is a JSON-RPC result.
func sseFrame(id string, res any) string {
	b, _ := json.Marshal(result(json.RawMessage("1"), res))
	var s strings.Builder
	if id != "" {
		fmt.Fprintf(&s, "id: %s\n", id)
	}
	fmt.Fprintf(&s, "data: %s\n\n", b)
	return s.String()
}

// writeSSE answers with an event stream of the given raw chunks, flushing
// after each.
func writeSSE(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, c := range chunks {
		_, _ = io.WriteString(w, c)
		if fl != nil {
			fl.Flush()
		}
	}
}

// statusEvent is a 1.0 statusUpdate stream response.
func statusEvent(task, state string) map[string]any {
	return map[string]any{"statusUpdate": map[string]any{
		"taskId": task, "contextId": "ctx-1", "status": map[string]any{"state": state},
	}}
}

func taskJSON(id, state string) map[string]any {
	return map[string]any{"id": id, "contextId": "ctx-1", "status": map[string]any{"state": state}}
}
