package edge_test

// A small mesh for the tests of the edge's HTTP surface (http_*_test.go):
// an embedded NATS server with JetStream, the bus, a registry table,
// workers for the built-in agents a test names, and the edge served by
// edge.NewServer (the server every role runs it behind) on a loopback
// port. Unlike package mesh it lets a test run an edge without a
// default agent, and it records what the edge logs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

type httpMesh struct {
	URL   string
	Store *taskstore.Store
	Logs  *logRecorder
	hc    *http.Client
}

// startHTTPMesh runs an edge configured by cfg (its Bus, Registry and
// Logger filled in here) with workers for the named built-in agents.
func startHTTPMesh(t *testing.T, cfg edge.Config, agentNames ...string) *httpMesh {
	t.Helper()
	nd := natstest.StartSingle(t)
	nc := natstest.Connect(t, "http-mesh", nd.URL())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
	defer ocancel()
	b, err := bustest.OpenStoreOn(octx, nc, bus.Config{})
	require.NoError(t, err)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	table := registry.NewTable(b.Bus())
	table.Logger = quiet
	wg.Add(1)
	go func() { defer wg.Done(); _ = table.Run(ctx) }()
	builtin := agents.Builtin()
	for _, name := range agentNames {
		a, ok := builtin[name]
		require.True(t, ok, "no built-in agent %s", name)
		w := &agentrt.Worker{Store: b, Agent: a, Name: name, Concurrency: 8, Timeout: 30 * time.Second, Logger: quiet}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	require.True(t, natstest.Eventually(ctx, 15*time.Second, func() bool {
		if !table.Loaded() {
			return false
		}
		for _, name := range agentNames {
			if _, ok := table.Lookup(name); !ok {
				return false
			}
		}
		return true
	}), "agents %v not registered", agentNames)

	rec := &logRecorder{}
	cfg.Store, cfg.Registry, cfg.Logger = b, table, slog.New(rec)
	e := edge.New(cfg)
	srv := edge.NewServer(e, cfg.Logger)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	})
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &httpMesh{URL: "http://" + ln.Addr().String(), Store: b, Logs: rec, hc: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
}

// logRecorder is a slog.Handler keeping every record (debug included);
// with A2AMESH_TEST_LOG set it also prints them.
type logRecorder struct {
	mu      sync.Mutex
	records []logLine
	attrs   []slog.Attr
	parent  *logRecorder
}

type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (h *logRecorder) root() *logRecorder {
	if h.parent != nil {
		return h.parent.root()
	}
	return h
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		l.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { l.Attrs[a.Key] = a.Value.String(); return true })
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		os.Stderr.WriteString(l.Level.String() + " " + l.Msg + " " + strconv.Quote(stringAttrs(l.Attrs)) + "\n")
	}
	root := h.root()
	root.mu.Lock()
	root.records = append(root.records, l)
	root.mu.Unlock()
	return nil
}

func stringAttrs(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=" + v + " ")
	}
	return b.String()
}

func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{parent: h, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// lines returns the records kept so far.
func (h *logRecorder) lines() []logLine {
	root := h.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	return append([]logLine{}, root.records...)
}

// ---- raw JSON-RPC and SSE ----

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcErr         `json:"error"`
}

func rpcBody(t testing.TB, method string, params any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	return b
}

// post sends one JSON-RPC call to path (1.0 unless the method is a 0.3
// one) and decodes the JSON answer.
func (m *httpMesh) post(t testing.TB, path, method string, params any) *rpcResp {
	t.Helper()
	return m.postH(t, path, method, params, nil)
}

// postH is post with extra request headers.
func (m *httpMesh) postH(t testing.TB, path, method string, params any, hdr map[string]string) *rpcResp {
	t.Helper()
	resp := m.postRPC(t, context.Background(), path, method, params, hdr)
	defer resp.Body.Close()
	var out rpcResp
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return &out
}

// postRPC posts a JSON-RPC call (1.0 unless the method is a 0.3 one) with
// extra headers and requires HTTP 200.
func (m *httpMesh) postRPC(t testing.TB, ctx context.Context, path, method string, params any, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+path, bytes.NewReader(rpcBody(t, method, params)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if !strings.Contains(method, "/") {
		req.Header.Set("A2A-Version", "1.0")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	return resp
}

// sseFrame is one event of an SSE answer.
type sseFrame struct {
	ID   uint64
	Resp rpcResp
}

// streamCall posts a streaming call with extra headers and reads its SSE
// answer to the end, bounded by limit; it fails the test when the stream
// is still open then.
func (m *httpMesh) streamCall(t testing.TB, path, method string, params any, hdr map[string]string, limit time.Duration) []sseFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	resp := m.postRPC(t, ctx, path, method, params, hdr)
	defer resp.Body.Close()
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), "content type %s", resp.Header.Get("Content-Type"))
	evs, err := ssetest.ReadAll(resp.Body)
	if err != nil {
		require.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded), "stream still open after %v (%d events)", limit, len(evs))
		require.NoError(t, err)
	}
	var frames []sseFrame
	for _, ev := range evs {
		var f sseFrame
		require.NoError(t, json.Unmarshal(ev.Data, &f.Resp))
		if ev.HasID {
			f.ID, err = ev.Seq()
			require.NoError(t, err)
		}
		frames = append(frames, f)
	}
	return frames
}
