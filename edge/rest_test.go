package edge_test

// The HTTP+JSON binding (rest.go), spoken with raw net/http requests as
// curl would: every route under its three mounts (/agents/{name}, the
// root, /{tenant}), streams with their ids and resumes, push configs, and
// each error's google.rpc.Status and HTTP status.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/tracing"
)

// ---- raw HTTP+JSON ----

type restResp struct {
	Status int
	Header http.Header
	Body   []byte
}

// restDo sends one request to base+path. body is nil (none), a string or
// []byte (sent as is) or a value sent as JSON; a body goes with
// Content-Type: application/a2a+json unless hdr sets another ("" drops
// it).
func restDo(t testing.TB, hc *http.Client, base, method, path string, body any, hdr map[string]string) restResp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/a2a+json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return restResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (m *httpMesh) rest(t testing.TB, method, path string, body any, hdr map[string]string) restResp {
	t.Helper()
	return restDo(t, m.hc, m.URL, method, path, body, hdr)
}

// ok requires 200 with a JSON body and decodes it into v.
func (r restResp) ok(t testing.TB, v any) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Contains(t, []string{"application/a2a+json", "application/json"}, r.Header.Get("Content-Type"))
	require.NoError(t, json.Unmarshal(r.Body, v), "%s", r.Body)
}

// restStatusWire is a google.rpc.Status as the binding answers errors.
type restStatusWire struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Type     string            `json:"@type"`
			Reason   string            `json:"reason"`
			Domain   string            `json:"domain"`
			Metadata map[string]string `json:"metadata"`
		} `json:"details"`
	} `json:"error"`
}

// requireStatus requires an error answer: the HTTP status, the
// google.rpc.Status with the same code, the gRPC status name, and the
// ErrorInfo reason ("" for none).
func requireRESTStatus(t testing.TB, r restResp, code int, grpc, reason string) restStatusWire {
	t.Helper()
	require.Equal(t, code, r.Status, "%s", r.Body)
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "application/"), r.Header.Get("Content-Type"))
	var s restStatusWire
	require.NoError(t, json.Unmarshal(r.Body, &s), "%s", r.Body)
	assert.Equal(t, code, s.Error.Code, "%s", r.Body)
	assert.Equal(t, grpc, s.Error.Status, "%s", r.Body)
	assert.NotEmpty(t, s.Error.Message)
	if reason == "" {
		assert.Empty(t, s.Error.Details, "%s", r.Body)
		return s
	}
	require.Len(t, s.Error.Details, 1, "%s", r.Body)
	d := s.Error.Details[0]
	assert.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", d.Type)
	assert.Equal(t, reason, d.Reason, "%s", r.Body)
	assert.Equal(t, "a2a-protocol.org", d.Domain)
	return s
}

// restFrame is one event of an HTTP+JSON stream.
type restFrame struct {
	ID   uint64
	Data json.RawMessage
}

func (f restFrame) event(t testing.TB) a2a.StreamResponse {
	t.Helper()
	var ev a2a.StreamResponse
	require.NoError(t, json.Unmarshal(f.Data, &ev), "%s", f.Data)
	return ev
}

// restStream makes a streaming call and reads its SSE answer to the end,
// bounded by limit; it requires 200 and text/event-stream.
func (m *httpMesh) restStream(t testing.TB, method, path string, body any, hdr map[string]string, limit time.Duration) []restFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, m.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs, err := ssetest.ReadAll(resp.Body)
	if err != nil {
		require.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded), "stream still open after %v (%d events)", limit, len(evs))
		require.NoError(t, err)
	}
	var frames []restFrame
	for _, ev := range evs {
		f := restFrame{Data: json.RawMessage(ev.Data)}
		if ev.HasID {
			f.ID, err = ev.Seq()
			require.NoError(t, err)
		}
		frames = append(frames, f)
	}
	return frames
}

func restIDs(frames []restFrame) []uint64 {
	var out []uint64
	for _, f := range frames {
		out = append(out, f.ID)
	}
	return out
}

func msgInContext(text, contextID string) map[string]any {
	m := userMsg(text, "")
	m["contextId"] = contextID
	return m
}

func sentTask(t testing.TB, r restResp) a2a.Task {
	t.Helper()
	var res a2a.StreamResponse
	r.ok(t, &res)
	require.NotNil(t, res.Task, "%s", r.Body)
	return *res.Task
}

func listedIDs(t testing.TB, r restResp) ([]string, a2a.ListTasksResponse) {
	t.Helper()
	var l a2a.ListTasksResponse
	r.ok(t, &l)
	ids := []string{}
	for _, tk := range l.Tasks {
		ids = append(ids, tk.ID)
	}
	return ids, l
}

// ---- tests ----

// A task's life over HTTP+JSON on each mount: the agent's
// (/agents/ask/...), the root (the body's tenant names the agent; task
// calls find every agent's tasks by id) and the tenant's (/ask/..., which
// wins over the body's): send, get, reply, list with its filters and
// pages, cancel.
func TestRESTTaskLifecycleOnEveryMount(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "ask", "echo")

	for _, mount := range []struct{ name, prefix, bodyTenant string }{
		{"agent", "/agents/ask", ""}, {"root", "", "ask"}, {"tenant", "/ask", ""}, {"tenant over body", "/ask", "echo"},
	} {
		t.Run(mount.name, func(t *testing.T) {
			p := mount.prefix
			ctxID := uuid.NewString()
			sendBody := func(msg map[string]any) map[string]any {
				b := map[string]any{"message": msg}
				if mount.bodyTenant != "" {
					b["tenant"] = mount.bodyTenant
				}
				return b
			}
			r := m.rest(t, http.MethodPost, p+"/message:send", sendBody(msgInContext("hi", ctxID)), nil)
			assert.Equal(t, "application/a2a+json", r.Header.Get("Content-Type"))
			a := sentTask(t, r)
			assert.Equal(t, a2a.StateInputRequired, a.Status.State, "the ask agent answered")
			assert.Equal(t, ctxID, a.ContextID)
			b := sentTask(t, m.rest(t, http.MethodPost, p+"/message:send", sendBody(msgInContext("hi", ctxID)), nil))

			var got a2a.Task
			m.rest(t, http.MethodGet, p+"/tasks/"+a.ID, nil, nil).ok(t, &got)
			assert.Equal(t, a.ID, got.ID)
			assert.NotEmpty(t, got.History)
			got = a2a.Task{}
			m.rest(t, http.MethodGet, p+"/tasks/"+a.ID+"?historyLength=0", nil, nil).ok(t, &got)
			assert.Equal(t, a.ID, got.ID)
			assert.Empty(t, got.History)
			s := requireRESTStatus(t, m.rest(t, http.MethodGet, p+"/tasks/"+a.ID+"?historyLength=two", nil, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
			assert.Contains(t, s.Error.Message, "historyLength")

			// The reply completes a; the other mounts see the task or not.
			done := sentTask(t, m.rest(t, http.MethodPost, p+"/message:send", map[string]any{"message": userMsg("Bob", a.ID)}, nil))
			assert.Equal(t, a.ID, done.ID)
			assert.Equal(t, a2a.StateCompleted, done.Status.State)
			require.NotEmpty(t, done.Artifacts)
			assert.Equal(t, "Hello, Bob!", done.Artifacts[0].Parts[0].Text)
			m.rest(t, http.MethodGet, "/tasks/"+a.ID, nil, nil).ok(t, &got)
			requireRESTStatus(t, m.rest(t, http.MethodGet, "/agents/echo/tasks/"+a.ID, nil, nil), 404, "NOT_FOUND", "TASK_NOT_FOUND")
			requireRESTStatus(t, m.rest(t, http.MethodGet, "/echo/tasks/"+a.ID, nil, nil), 404, "NOT_FOUND", "TASK_NOT_FOUND")

			// List: newest status first, filters, pages.
			ids, l := listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID, nil, nil))
			assert.Equal(t, []string{a.ID, b.ID}, ids)
			assert.Equal(t, 2, l.TotalSize)
			assert.Empty(t, l.NextPageToken)
			ids, l = listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&pageSize=1", nil, nil))
			assert.Equal(t, []string{a.ID}, ids)
			require.NotEmpty(t, l.NextPageToken)
			ids, l = listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?context_id="+ctxID+"&page_size=1&pageToken="+l.NextPageToken, nil, nil))
			assert.Equal(t, []string{b.ID}, ids, "the second page (proto names work too)")
			assert.Empty(t, l.NextPageToken)
			for status, want := range map[string][]string{
				"TASK_STATE_COMPLETED": {a.ID}, "TASK_STATE_INPUT_REQUIRED": {b.ID}, "input-required": {b.ID}, "TASK_STATE_WORKING": {},
			} {
				ids, _ = listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&status="+status, nil, nil))
				assert.Equal(t, want, ids, "status=%s", status)
			}
			ids, _ = listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&statusTimestampAfter=2999-01-01T00:00:00Z", nil, nil))
			assert.Empty(t, ids)
			ids, _ = listedIDs(t, m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&statusTimestampAfter=2000-01-01T00:00:00+00:00", nil, nil))
			assert.Len(t, ids, 2, "an unencoded + of an offset reads as a space: still a timestamp")
			var withArt a2a.ListTasksResponse
			m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&status=TASK_STATE_COMPLETED&includeArtifacts=true", nil, nil).ok(t, &withArt)
			require.Len(t, withArt.Tasks, 1)
			assert.NotEmpty(t, withArt.Tasks[0].Artifacts)
			var noArt a2a.ListTasksResponse
			m.rest(t, http.MethodGet, p+"/tasks?contextId="+ctxID+"&status=TASK_STATE_COMPLETED", nil, nil).ok(t, &noArt)
			require.Len(t, noArt.Tasks, 1)
			assert.Empty(t, noArt.Tasks[0].Artifacts)
			for q, param := range map[string]string{
				"status=sleeping": "status", "pageSize=ten": "pageSize", "includeArtifacts=maybe": "includeArtifacts",
				"statusTimestampAfter=yesterday": "statusTimestampAfter", "historyLength=1.5": "historyLength",
				"pageSize=1&pageSize=2": "pageSize",
			} {
				s := requireRESTStatus(t, m.rest(t, http.MethodGet, p+"/tasks?"+q, nil, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
				assert.Contains(t, s.Error.Message, param, q)
			}

			// Cancel: a completed task cannot be; a waiting one can. The
			// body's id, when given, must be the path's.
			s = requireRESTStatus(t, m.rest(t, http.MethodPost, p+"/tasks/"+a.ID+":cancel", nil, nil), 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE")
			assert.Equal(t, a.ID, s.Error.Details[0].Metadata["taskId"])
			requireRESTStatus(t, m.rest(t, http.MethodPost, p+"/tasks/"+b.ID+":cancel", map[string]any{"id": a.ID}, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
			var canceled a2a.Task
			m.rest(t, http.MethodPost, p+"/tasks/"+b.ID+":cancel", map[string]any{"id": b.ID, "metadata": map[string]any{"why": "test"}}, nil).ok(t, &canceled)
			assert.Equal(t, b.ID, canceled.ID)
			assert.Equal(t, a2a.StateCanceled, canceled.Status.State)
		})
	}
}

// Streams: a streaming send's events each carry their event-log id, and a
// subscription with Last-Event-ID (GET or POST, at any mount) resumes
// after it; errors before the stream starts are plain HTTP errors.
func TestRESTStreamAndSubscribe(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo", "slow")

	msg := userMsg("chunks=3 delay=0ms", "")
	first := m.restStream(t, http.MethodPost, "/agents/slow/message:stream", map[string]any{"message": msg}, nil, 10*time.Second)
	require.GreaterOrEqual(t, len(first), 5, "task, working, 3 chunks, completed")
	snap := first[0].event(t)
	require.NotNil(t, snap.Task, "%s", first[0].Data)
	id := snap.Task.ID
	last := first[len(first)-1].event(t)
	require.NotNil(t, last.StatusUpdate, "%s", first[len(first)-1].Data)
	assert.Equal(t, a2a.StateCompleted, last.StatusUpdate.Status.State)
	var prev uint64
	for _, f := range first {
		require.Greater(t, f.ID, prev, "every event has a growing id")
		prev = f.ID
		assert.NotContains(t, string(f.Data), `"jsonrpc"`, "no JSON-RPC envelope")
	}

	// Resume after an id: GET (the proto's verb) and POST (the spec's), on
	// each mount.
	got := m.restStream(t, http.MethodGet, "/agents/slow/tasks/"+id+":subscribe", nil,
		map[string]string{"Last-Event-ID": strconv.FormatUint(first[0].ID, 10)}, 5*time.Second)
	assert.Equal(t, restIDs(first[1:]), restIDs(got))
	got = m.restStream(t, http.MethodPost, "/tasks/"+id+":subscribe", nil,
		map[string]string{"Last-Event-ID": strconv.FormatUint(first[2].ID, 10)}, 5*time.Second)
	assert.Equal(t, restIDs(first[3:]), restIDs(got))
	got = m.restStream(t, http.MethodGet, "/slow/tasks/"+id+":subscribe", nil, map[string]string{"Last-Event-ID": "0"}, 5*time.Second)
	assert.Equal(t, restIDs(first[1:]), restIDs(got))

	// A retried streaming send (same messageId) with its last id: the
	// task as it stands, as the one event.
	got = m.restStream(t, http.MethodPost, "/agents/slow/message:stream", map[string]any{"message": msg},
		map[string]string{"Last-Event-ID": strconv.FormatUint(first[len(first)-1].ID, 10)}, 5*time.Second)
	require.Len(t, got, 1)
	require.NotNil(t, got[0].event(t).Task)
	assert.Equal(t, a2a.StateCompleted, got[0].event(t).Task.Status.State)

	// At the root, the default agent streams.
	root := m.restStream(t, http.MethodPost, "/message:stream", map[string]any{"message": userMsg("hello", "")}, nil, 10*time.Second)
	require.GreaterOrEqual(t, len(root), 2)
	require.NotNil(t, root[0].event(t).Task)
	rootEnd := root[len(root)-1].event(t)
	require.NotNil(t, rootEnd.StatusUpdate, "%s", root[len(root)-1].Data)
	assert.Equal(t, a2a.StateCompleted, rootEnd.StatusUpdate.Status.State)

	// Errors before the stream: an HTTP error with a JSON body, not SSE.
	// Accept: text/event-stream names no JSON type: plain JSON.
	sse := map[string]string{"Accept": "text/event-stream"}
	r := m.rest(t, http.MethodGet, "/tasks/"+id+":subscribe", nil, sse)
	requireRESTStatus(t, r, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	requireRESTStatus(t, m.rest(t, http.MethodPost, "/tasks/no-such-task:subscribe", nil, sse), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	requireRESTStatus(t, m.rest(t, http.MethodGet, "/agents/echo/tasks/"+id+":subscribe", nil, sse), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	s := requireRESTStatus(t, m.rest(t, http.MethodGet, "/tasks/"+id+":subscribe", nil, map[string]string{"Last-Event-ID": "abc"}),
		400, "INVALID_ARGUMENT", "INVALID_PARAMS")
	assert.Contains(t, s.Error.Message, "is not an event id")
	requireRESTStatus(t, m.rest(t, http.MethodPost, "/agents/nobody/message:stream", map[string]any{"message": userMsg("x", "")}, sse),
		400, "INVALID_ARGUMENT", "INVALID_PARAMS")

	// A live subscription: the task as it stands, then its events to the
	// end.
	var started a2a.StreamResponse
	m.rest(t, http.MethodPost, "/agents/slow/message:send", map[string]any{"message": userMsg("chunks=3 delay=200ms", ""),
		"configuration": map[string]any{"returnImmediately": true}}, nil).ok(t, &started)
	require.NotNil(t, started.Task)
	live := m.restStream(t, http.MethodGet, "/tasks/"+started.Task.ID+":subscribe", nil, nil, 10*time.Second)
	require.GreaterOrEqual(t, len(live), 2)
	require.NotNil(t, live[0].event(t).Task, "the snapshot first")
	end := live[len(live)-1].event(t)
	require.NotNil(t, end.StatusUpdate, "%s", live[len(live)-1].Data)
	assert.Equal(t, a2a.StateCompleted, end.StatusUpdate.Status.State)
}

// Push configs over HTTP+JSON: create (the path names the task), list
// with pages, get without credentials, delete, on each mount.
func TestRESTPushConfigs(t *testing.T) {
	m := startPushMesh(t, edge.PushConfig{Enabled: true})
	hc := &http.Client{Timeout: 20 * time.Second}
	call := func(method, path string, body any) restResp {
		t.Helper()
		var r restResp
		for i := 0; i < 50; i++ { // 503 while push starts on the edge: retry, bounded
			r = restDo(t, hc, m.URL, method, path, body, nil)
			if r.Status != http.StatusServiceUnavailable {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return r
	}
	task := sentTask(t, call(http.MethodPost, "/agents/echo/message:send", map[string]any{"message": userMsg("hi", "")}))
	const hook = "https://hooks.example.com/a2a"
	base := "/tasks/" + task.ID + "/pushNotificationConfigs"

	var c1 a2a.TaskPushNotificationConfig
	call(http.MethodPost, "/agents/echo"+base, map[string]any{"id": "c1", "url": hook, "token": "tok",
		"authentication": map[string]any{"scheme": "Bearer", "credentials": "s3cret"}}).ok(t, &c1)
	assert.Equal(t, task.ID, c1.TaskID, "the path names the task")
	assert.Equal(t, "c1", c1.ID)
	require.NotNil(t, c1.Authentication)
	assert.Equal(t, "s3cret", c1.Authentication.Credentials, "create returns the config as stored")
	var c2 a2a.TaskPushNotificationConfig
	call(http.MethodPost, "/echo"+base, map[string]any{"id": "c2", "taskId": task.ID, "url": hook}).ok(t, &c2)
	assert.Equal(t, "c2", c2.ID)
	s := requireRESTStatus(t, call(http.MethodPost, base, map[string]any{"id": "c3", "taskId": "another-task", "url": hook}),
		400, "INVALID_ARGUMENT", "INVALID_PARAMS")
	assert.Contains(t, s.Error.Message, "does not match")
	requireRESTStatus(t, call(http.MethodPost, "/tasks/no-such-task/pushNotificationConfigs", map[string]any{"url": hook}),
		404, "NOT_FOUND", "TASK_NOT_FOUND")

	type page struct {
		Configs       []a2a.TaskPushNotificationConfig `json:"configs"`
		NextPageToken string                           `json:"nextPageToken"`
	}
	var all page
	call(http.MethodGet, base, nil).ok(t, &all)
	require.Len(t, all.Configs, 2)
	for _, c := range all.Configs {
		if c.Authentication != nil {
			assert.Empty(t, c.Authentication.Credentials, "read back without credentials")
		}
	}
	var p1, p2 page
	call(http.MethodGet, "/agents/echo"+base+"?pageSize=1", nil).ok(t, &p1)
	require.Len(t, p1.Configs, 1)
	require.NotEmpty(t, p1.NextPageToken)
	call(http.MethodGet, "/echo"+base+"?pageSize=1&pageToken="+p1.NextPageToken, nil).ok(t, &p2)
	require.Len(t, p2.Configs, 1)
	assert.NotEqual(t, p1.Configs[0].ID, p2.Configs[0].ID)
	assert.Empty(t, p2.NextPageToken)
	requireRESTStatus(t, call(http.MethodGet, base+"?pageSize=all", nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")

	var got a2a.TaskPushNotificationConfig
	call(http.MethodGet, "/echo"+base+"/c1", nil).ok(t, &got)
	assert.Equal(t, hook, got.URL)
	require.NotNil(t, got.Authentication)
	assert.Empty(t, got.Authentication.Credentials)

	r := call(http.MethodDelete, "/agents/echo"+base+"/c1", nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.JSONEq(t, `{}`, string(r.Body))
	requireRESTStatus(t, call(http.MethodGet, base+"/c1", nil), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	all = page{}
	call(http.MethodGet, base, nil).ok(t, &all)
	require.Len(t, all.Configs, 1)
	assert.Equal(t, "c2", all.Configs[0].ID)
}

// Each error in the binding's shape and HTTP status, the answer's media
// type following Accept, and the calls counted in the request metric.
func TestRESTErrors(t *testing.T) {
	met := metrics.New()
	const origin = "https://app.example"
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", MaxBodyBytes: 4096, Metrics: met, CORSOrigins: []string{origin}}, "echo", "slow")

	s := requireRESTStatus(t, m.rest(t, http.MethodGet, "/tasks/no-such-task", nil, nil), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	assert.Equal(t, "no-such-task", s.Error.Details[0].Metadata["taskId"])

	// Bad bodies.
	send := "/agents/echo/message:send"
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, map[string]any{"message": 5}, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
	s = requireRESTStatus(t, m.rest(t, http.MethodPost, send, map[string]any{}, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")
	assert.Contains(t, s.Error.Message, "message is required")
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, `{"message":`, nil), 400, "INVALID_ARGUMENT", "PARSE_ERROR")
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, []byte("{\"message\":\"\xff\"}"), nil), 400, "INVALID_ARGUMENT", "PARSE_ERROR")
	body := map[string]any{"message": userMsg("hello", "")}
	s = requireRESTStatus(t, m.rest(t, http.MethodPost, send, body, map[string]string{"Content-Type": "text/plain"}),
		400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
	assert.Contains(t, s.Error.Message, "application/a2a+json")
	// A form body is no JSON; curl's default type for -d, with a JSON
	// body, is read as JSON (as JSON-RPC reads it).
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, "message=hi", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}),
		400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
	for _, ct := range []string{"application/json", "application/a2a+json; charset=utf-8", "", "application/x-www-form-urlencoded"} {
		tk := sentTask(t, m.rest(t, http.MethodPost, send, map[string]any{"message": userMsg("hello", "")}, map[string]string{"Content-Type": ct}))
		assert.Equal(t, a2a.StateCompleted, tk.Status.State, "Content-Type %q", ct)
	}
	requireRESTStatus(t, m.rest(t, http.MethodPost, "/agents/nobody/message:send", body, nil), 400, "INVALID_ARGUMENT", "INVALID_PARAMS")

	// Body limit: declared, and read past while chunked.
	big := map[string]any{"message": userMsg(strings.Repeat("x", 5000), "")}
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, big, nil), 413, "RESOURCE_EXHAUSTED", "INVALID_REQUEST")
	j, _ := json.Marshal(big)
	requireRESTStatus(t, m.rest(t, http.MethodPost, send, io.MultiReader(bytes.NewReader(j)), nil), 413, "RESOURCE_EXHAUSTED", "INVALID_REQUEST")

	// Versions: 1.x (header or query) is served; 0.3 and others are not.
	for _, v := range []string{"1.0", "1", "1.0.1"} {
		sentTask(t, m.rest(t, http.MethodPost, send, map[string]any{"message": userMsg("v", "")}, map[string]string{"A2A-Version": v}))
	}
	for _, v := range []string{"0.3", "0.3.0", "2.0", "banana"} {
		s = requireRESTStatus(t, m.rest(t, http.MethodPost, send, body, map[string]string{"A2A-Version": v}), 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
		assert.Contains(t, s.Error.Message, "not supported", v)
	}
	requireRESTStatus(t, m.rest(t, http.MethodGet, "/tasks?A2A-Version=0.3", nil, nil), 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")

	// Other operations' errors.
	for _, p := range []string{"/agents/slow/extendedAgentCard", "/slow/extendedAgentCard"} {
		requireRESTStatus(t, m.rest(t, http.MethodGet, p, nil, nil), 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
	}
	requireRESTStatus(t, m.rest(t, http.MethodGet, "/tasks/x/pushNotificationConfigs", nil, nil), 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED")

	// A route asked with a method it does not take: 405 and Allow.
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/message:send", "POST"},
		{http.MethodGet, "/agents/echo/message:stream", "POST"},
		{http.MethodDelete, "/tasks/x", "GET"},
		{http.MethodPost, "/echo/tasks", "GET"},
		{http.MethodGet, "/tasks/x:cancel", "POST"},
		{http.MethodPut, "/tasks/x:subscribe", "GET, POST"},
		{http.MethodPut, "/tasks/x/pushNotificationConfigs", "GET, POST"},
		{http.MethodPost, "/tasks/x/pushNotificationConfigs/c", "GET, DELETE"},
		{http.MethodPost, "/extendedAgentCard", "GET"},
	} {
		r := m.rest(t, c.method, c.path, nil, nil)
		requireRESTStatus(t, r, 405, "UNIMPLEMENTED", "")
		assert.Equal(t, c.allow, r.Header.Get("Allow"), "%s %s", c.method, c.path)
	}
	// What is no route: 404 in the same shape.
	for _, p := range []string{"/nothing", "/a/b/c", "/tasks/x/y", "/agents/echo/x", "/a2a/x"} {
		s = requireRESTStatus(t, m.rest(t, http.MethodGet, p, nil, nil), 404, "NOT_FOUND", "")
		assert.Contains(t, s.Error.Message, "no such route")
	}
	// CORS: DELETE is allowed from a browser; a plain OPTIONS says what
	// the route takes.
	r := m.rest(t, http.MethodOptions, "/tasks/x/pushNotificationConfigs/c", nil,
		map[string]string{"Origin": origin, "Access-Control-Request-Method": "DELETE"})
	assert.Equal(t, http.StatusNoContent, r.Status)
	assert.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "DELETE")
	r = m.rest(t, http.MethodOptions, "/tasks/x/pushNotificationConfigs/c", nil, nil)
	assert.Equal(t, http.StatusNoContent, r.Status)
	assert.Equal(t, "OPTIONS, GET, DELETE", r.Header.Get("Allow"))

	// The media type of answers follows Accept.
	for accept, want := range map[string]string{
		"": "application/a2a+json", "application/a2a+json": "application/a2a+json", "application/json": "application/json",
		"application/a2a+json, application/json": "application/a2a+json", "*/*": "application/a2a+json",
	} {
		r := m.rest(t, http.MethodGet, "/tasks/no-such-task", nil, map[string]string{"Accept": accept})
		assert.Equal(t, want, r.Header.Get("Content-Type"), "error, Accept: %q", accept)
		r = m.rest(t, http.MethodGet, "/tasks?pageSize=1", nil, map[string]string{"Accept": accept})
		assert.Equal(t, http.StatusOK, r.Status)
		assert.Equal(t, want, r.Header.Get("Content-Type"), "result, Accept: %q", accept)
		r = m.rest(t, http.MethodGet, "/nothing", nil, map[string]string{"Accept": accept})
		assert.Equal(t, want, r.Header.Get("Content-Type"), "404, Accept: %q", accept)
	}

	// The request metric counts HTTP+JSON calls by method and code.
	counts := edgeRequests(t, met)
	assert.GreaterOrEqual(t, counts["GetTask -32001"], 1.0, "%v", counts)
	assert.GreaterOrEqual(t, counts["SendMessage ok"], 1.0, "%v", counts)
	assert.GreaterOrEqual(t, counts["SendMessage -32602"], 1.0, "%v", counts)
	assert.GreaterOrEqual(t, counts["SendMessage -32009"], 1.0, "%v", counts)
	assert.GreaterOrEqual(t, counts["ListTasks ok"], 1.0, "%v", counts)
}

// edgeRequests reads a2amesh_edge_requests_total of the rest binding as
// "method code" → count.
func edgeRequests(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "a2amesh_edge_requests_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			var binding, method, code string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "binding":
					binding = l.GetValue()
				case "method":
					method = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			if binding == "rest" {
				out[method+" "+code] += mt.GetCounter().GetValue()
			}
		}
	}
	return out
}

// With auth, a call without credentials is refused 401 before anything
// else, and a principal does not see another's task; over the rate
// limit, 429 with Retry-After.
func TestRESTAuthAndRateLimit(t *testing.T) {
	const aliceKey, bobKey = "alice-secret-0123456789", "bob-secret-0123456789ab"
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", Auth: auth}, "echo")
	alice := map[string]string{edge.APIKeyHeader: aliceKey}
	bob := map[string]string{"Authorization": "Bearer " + bobKey}

	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/agents/echo/message:send"}, {http.MethodGet, "/tasks/x"}, {http.MethodGet, "/echo/tasks"},
	} {
		r := m.rest(t, c.method, c.path, map[string]any{"message": userMsg("hi", "")}, map[string]string{"Accept": "application/json"})
		requireRESTStatus(t, r, 401, "UNAUTHENTICATED", "UNAUTHENTICATED")
		assert.NotEmpty(t, r.Header.Values("WWW-Authenticate"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	}
	tk := sentTask(t, m.rest(t, http.MethodPost, "/message:send", map[string]any{"message": userMsg("hi", "")}, alice))
	var got a2a.Task
	m.rest(t, http.MethodGet, "/tasks/"+tk.ID, nil, alice).ok(t, &got)
	assert.Equal(t, tk.ID, got.ID)
	for _, p := range []string{"/tasks/" + tk.ID, "/agents/echo/tasks/" + tk.ID, "/echo/tasks/" + tk.ID, "/tasks/" + tk.ID + ":subscribe"} {
		requireRESTStatus(t, m.rest(t, http.MethodGet, p, nil, bob), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	}
	requireRESTStatus(t, m.rest(t, http.MethodPost, "/tasks/"+tk.ID+":cancel", nil, bob), 404, "NOT_FOUND", "TASK_NOT_FOUND")
	ids, _ := listedIDs(t, m.rest(t, http.MethodGet, "/tasks", nil, bob))
	assert.Empty(t, ids)

	lm := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", Limits: edge.Limits{Rate: 0.01, Burst: 2}}, "echo")
	var last restResp
	for i := 0; i < 3; i++ {
		last = lm.rest(t, http.MethodGet, "/tasks", nil, nil)
	}
	requireRESTStatus(t, last, 429, "RESOURCE_EXHAUSTED", "")
	assert.NotEmpty(t, last.Header.Get("Retry-After"))
}

// While the edge waits for NATS, an HTTP+JSON call is answered 503
// UNAVAILABLE, retry, in the binding's shape.
func TestRESTGateStarting(t *testing.T) {
	g := edge.NewGate()
	srv := edge.NewServer(g, quietLogger())
	hs := newLoopbackServer(t, srv.Handler)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/agents/echo/message:send"}, {http.MethodGet, "/tasks/x"}, {http.MethodPost, "/echo/message:stream"},
	} {
		r := restDo(t, http.DefaultClient, hs, c.method, c.path, map[string]any{"message": userMsg("hi", "")}, nil)
		requireRESTStatus(t, r, 503, "UNAVAILABLE", "SERVER_ERROR")
		assert.Equal(t, "1", r.Header.Get("Retry-After"))
	}
	r := restDo(t, http.DefaultClient, hs, http.MethodGet, "/healthz", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.Status)
	assert.Contains(t, string(r.Body), "waiting_for")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newLoopbackServer serves h on a loopback port until the test ends and
// returns its base URL.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// restServerSpan waits for the ended server span of trace tid named name.
func restServerSpan(t *testing.T, sr *tracetest.SpanRecorder, tid trace.TraceID, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range sr.Ended() {
			if s.SpanContext().TraceID() == tid && s.Name() == name && s.SpanKind() == trace.SpanKindServer {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no server span %s in trace %s", name, tid)
	return nil
}

// The server span of an HTTP+JSON call: a child of the caller's span
// (traceparent, or a send's a2a.trace metadata), named by the operation,
// with its route, agent and task, and the status of a failure.
func TestRESTServerSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracing.Install(tp)
	t.Cleanup(tracing.Reset)
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo")
	_, parent := tp.Tracer("rest-test-client").Start(context.Background(), "client")
	parent.End()
	tid := parent.SpanContext().TraceID()

	tk := sentTask(t, m.rest(t, http.MethodPost, "/agents/echo/message:send", map[string]any{"message": userMsg("traced", "")},
		map[string]string{"traceparent": tracing.Traceparent(parent.SpanContext())}))
	s := restServerSpan(t, sr, tid, "SendMessage")
	assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	assert.Equal(t, "http", attrs["rpc.system"].AsString())
	assert.Equal(t, "/agents/{name}/message:send", attrs["http.route"].AsString())
	assert.Equal(t, "echo", attrs[tracing.AttrAgent].AsString())
	assert.Equal(t, tk.ID, attrs[tracing.AttrTaskID].AsString())
	assert.Equal(t, otelcodes.Unset, s.Status().Code)

	// A send without traceparent: its metadata's a2a.trace is the parent.
	_, parent2 := tp.Tracer("rest-test-client").Start(context.Background(), "client-2")
	parent2.End()
	sc := parent2.SpanContext()
	sentTask(t, m.rest(t, http.MethodPost, "/echo/message:send", map[string]any{"message": userMsg("traced", ""),
		"metadata": map[string]any{tracing.MetadataKey: map[string]any{"traceId": sc.TraceID().String(), "spanId": sc.SpanID().String()}}}, nil))
	s = restServerSpan(t, sr, sc.TraceID(), "SendMessage")
	assert.Equal(t, sc.SpanID(), s.Parent().SpanID())

	// A failure marks the span.
	m.rest(t, http.MethodGet, "/tasks/no-such-task", nil, map[string]string{"traceparent": tracing.Traceparent(parent.SpanContext())})
	s = restServerSpan(t, sr, tid, "GetTask")
	assert.Equal(t, otelcodes.Error, s.Status().Code)
	attrs = map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	assert.EqualValues(t, 404, attrs["http.response.status_code"].AsInt64())
	assert.Equal(t, "TASK_NOT_FOUND", attrs["a2a.error.reason"].AsString())
}
