package edge_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/ssetest"
)

// waitServed waits (bounded) until the edge has logged n "call served"
// lines for method: the handler of each call has returned.
func (m *httpMesh) waitServed(t *testing.T, method string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		count := 0
		for _, l := range m.Logs.lines() {
			if l.Msg == "call served" && l.Attrs["method"] == method {
				count++
			}
		}
		if count >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the edge did not finish %d %s call(s) within 10s", n, method)
}

// openThenDrop posts a call, reads the first SSE event when stream is
// set (else nothing), and drops the connection.
func (m *httpMesh) openThenDrop(t *testing.T, path, method string, params any, stream bool, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+path, bytes.NewReader(rpcBody(t, method, params)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := m.hc.Do(req)
	if !stream {
		require.Error(t, err, "the call must still be waiting when the client leaves")
		return
	}
	require.NoError(t, err)
	_, err = ssetest.NewReader(resp.Body).Next() // the first event: the stream is under way
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
}

// A client that goes away in the middle of a call or a stream is not an
// error of the edge: nothing is logged at ERROR (the edge notes it at
// debug level).
func TestHTTPClientDisconnectIsNotAnError(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "slow")
	long := map[string]any{"message": userMsg("chunks=3 delay=1s", "")}

	// A blocking send the client gives up on.
	m.openThenDrop(t, "/agents/slow", "SendMessage", long, false, 300*time.Millisecond)
	m.waitServed(t, "SendMessage", 1)

	// A stream dropped after its first event.
	m.openThenDrop(t, "/agents/slow", "SendStreamingMessage", map[string]any{"message": userMsg("chunks=3 delay=1s", "")}, true, 5*time.Second)
	m.waitServed(t, "SendStreamingMessage", 1)

	// A subscription dropped after its snapshot.
	tk := sendResult(t, m.post(t, "/agents/slow", "SendMessage", map[string]any{
		"message": userMsg("chunks=3 delay=1s", ""), "configuration": map[string]any{"returnImmediately": true}}))
	m.openThenDrop(t, "/a2a", "SubscribeToTask", map[string]any{"id": tk.ID}, true, 5*time.Second)
	m.waitServed(t, "SubscribeToTask", 1)

	// A task read the client gives up on at once: whether or not the edge
	// reaches the bus first, nothing is an error.
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/a2a", bytes.NewReader(rpcBody(t, "GetTask", map[string]any{"id": tk.ID})))
		req.Header.Set("A2A-Version", "1.0")
		go func() { time.Sleep(time.Duration(i) * time.Millisecond); cancel() }()
		if resp, err := m.hc.Do(req); err == nil {
			resp.Body.Close()
		}
		cancel()
	}

	time.Sleep(200 * time.Millisecond) // let anything late be logged
	var errs []string
	gone := 0
	for _, l := range m.Logs.lines() {
		if l.Level >= slog.LevelError {
			errs = append(errs, l.Msg+" "+stringAttrs(l.Attrs))
		}
		if l.Msg == "client gone before the answer" {
			gone++
		}
	}
	assert.Empty(t, errs, "client disconnects logged at ERROR")
	assert.GreaterOrEqual(t, gone, 1, "the blocking send's client leaving is noted at debug level")
}
