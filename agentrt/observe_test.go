package agentrt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// webhook is a push receiver on loopback that answers 503 to its first
// request and 200 after, keeping each request's traceparent.
type webhook struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
}

func newWebhook(t *testing.T) *webhook {
	wh := &webhook{}
	wh.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wh.mu.Lock()
		wh.parents = append(wh.parents, r.Header.Get("traceparent"))
		first := len(wh.parents) == 1
		wh.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(wh.Close)
	return wh
}

func (wh *webhook) traceparents() []string {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	return append([]string(nil), wh.parents...)
}

// Each push delivery attempt is a client span beneath the span that created
// the task, carries its context to the receiver, and records the outcome.
func TestTraceOfPushDelivery(t *testing.T) {
	sr, tracer := recordSpans(t)
	wh := newWebhook(t)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push.Enabled = true
		c.Edge.Push.Trusted = []string{strings.TrimPrefix(wh.URL, "http://")}
		c.Edge.Push.Backoff = 50 * time.Millisecond
	}))

	ctx, root := tracer.Start(context.Background(), "client")
	root.End()
	res, err := client.New(m.URL+"/agents/echo", client.WithHeader("traceparent", tracing.Traceparent(root.SpanContext()))).
		Send(ctx, &a2a.SendMessageRequest{
			Message: client.TextMessage("hi"),
			Configuration: &a2a.SendMessageConfiguration{
				TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: wh.URL + "/hook", Token: "tok"},
			},
		})
	require.NoError(t, err)
	require.Equal(t, a2a.StateCompleted, res.Task.Status.State)

	// The server span is the task's origin; every delivery hangs off it.
	var server sdktrace.ReadOnlySpan
	var pushes []sdktrace.ReadOnlySpan
	done := func() bool {
		server, pushes = nil, nil
		for _, s := range sr.Ended() {
			if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
				continue
			}
			switch s.Name() {
			case "SendMessage":
				server = s
			case "push POST":
				pushes = append(pushes, s)
			}
		}
		if server == nil {
			return false
		}
		for _, p := range pushes {
			if attr(p, "http.response.status_code") == "200" && attr(p, "a2a.push.attempt") == "2" {
				return true // the retried first notification went through
			}
		}
		return false
	}
	require.Eventually(t, done, 15*time.Second, 20*time.Millisecond, "no retried push delivery span")

	var failed int
	for _, p := range pushes {
		assert.Equal(t, server.SpanContext().SpanID(), p.Parent().SpanID(), "push span %s is not beneath the server span", p.SpanContext().SpanID())
		assert.Equal(t, res.Task.ID, attr(p, "a2a.task.id"))
		assert.NotEmpty(t, attr(p, "a2a.push.config_id"))
		if p.Status().Code == codes.Error {
			failed++
			assert.Equal(t, "503", attr(p, "http.response.status_code"))
			assert.Equal(t, "1", attr(p, "a2a.push.attempt"))
		}
	}
	assert.Equal(t, 1, failed, "exactly the first delivery failed")

	// The receiver saw each attempt's own span as its parent (a delivery
	// in flight when the loop above ended has its span ended soon after).
	pushSpan := func(id string) bool {
		for _, s := range sr.Ended() {
			if s.Name() == "push POST" && s.SpanContext().SpanID().String() == id {
				return true
			}
		}
		return false
	}
	for _, tp := range wh.traceparents() {
		sc, ok := tracing.ParseTraceparent(tp)
		if !assert.True(t, ok, "delivery without a traceparent: %q", tp) {
			continue
		}
		assert.Equal(t, root.SpanContext().TraceID(), sc.TraceID())
		assert.Eventually(t, func() bool { return pushSpan(sc.SpanID().String()) }, 5*time.Second, 20*time.Millisecond,
			"traceparent %s names no push span", tp)
	}
}

// syncBuffer is a bytes.Buffer safe for the mesh's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines decodes the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	data := append([]byte(nil), s.b.Bytes()...)
	s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "log line not JSON: %s", sc.Text())
		out = append(out, line)
	}
	return out
}

// The edge's and the worker's lines about a task carry its task_id and
// the trace_id of the request that created it.
func TestLogsCarryTaskAndTraceIDs(t *testing.T) {
	_, tracer := recordSpans(t)
	var buf syncBuffer
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))

	ctx, root := tracer.Start(context.Background(), "client")
	root.End()
	res, err := client.New(m.URL+"/agents/echo", client.WithHeader("traceparent", tracing.Traceparent(root.SpanContext()))).
		Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("hi")})
	require.NoError(t, err)
	require.Equal(t, a2a.StateCompleted, res.Task.Status.State)

	want := map[string]bool{"call served": false, "run ended": false}
	require.Eventually(t, func() bool {
		for _, l := range buf.lines(t) {
			msg, _ := l["msg"].(string)
			if _, ok := want[msg]; ok && l["task_id"] == res.Task.ID {
				assert.Equal(t, root.SpanContext().TraceID().String(), l["trace_id"], "%s line: %v", msg, l)
				want[msg] = true
			}
		}
		return want["call served"] && want["run ended"]
	}, 10*time.Second, 20*time.Millisecond, "log lines found: %v", want)

	for _, l := range buf.lines(t) {
		if l["msg"] == "call served" && l["task_id"] == res.Task.ID {
			assert.Equal(t, "SendMessage", l["method"])
			assert.Equal(t, "echo", l["agent"])
			assert.EqualValues(t, 0, l["code"])
		}
		if l["msg"] == "run ended" && l["task_id"] == res.Task.ID {
			assert.Equal(t, "completed", l["state"])
		}
	}
}
