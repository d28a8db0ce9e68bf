package integration

// Helpers of the black-box protocol tests (protocol_test.go, stream_test.go,
// badinput_test.go). They speak raw JSON-RPC over net/http and read SSE with
// their own small parser, so the tests do not depend on the repo's client
// package nor on its wire model. Every wait is bounded by a context.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

const (
	// rawCallTimeout bounds one plain JSON-RPC call (a blocking send
	// included: the agents used finish well within it).
	rawCallTimeout = 15 * time.Second
	// rawStreamTimeout bounds a whole SSE stream.
	rawStreamTimeout = 20 * time.Second
	// rawPollTimeout bounds a poll loop waiting for a task state.
	rawPollTimeout = 10 * time.Second
)

// rawMesh is a test mesh driven with raw HTTP.
type rawMesh struct {
	*meshtest.Mesh
	hc     *http.Client
	nextID atomic.Int64
}

// startRawMesh starts a mesh with its own HTTP transport (closed with the
// test, so no idle client connection outlives it).
func startRawMesh(t *testing.T, opts ...meshtest.Option) *rawMesh {
	t.Helper()
	m := meshtest.Start(t, opts...)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawMesh{Mesh: m, hc: &http.Client{Transport: tr}}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// rpcReply is a JSON-RPC response as received, with its HTTP envelope.
type rpcReply struct {
	Status  int             `json:"-"`
	Header  http.Header     `json:"-"`
	Body    []byte          `json:"-"`
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	// Keys are the top-level members present in the response object.
	Keys map[string]json.RawMessage `json:"-"`
}

// newReqID returns a fresh numeric request id as JSON.
func (m *rawMesh) newReqID() json.RawMessage {
	return json.RawMessage(strconv.FormatInt(m.nextID.Add(1), 10))
}

// rpcBody builds a JSON-RPC request body.
func rpcBody(t testing.TB, id json.RawMessage, method string, params any) []byte {
	t.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	require.NoError(t, err)
	return b
}

// postRaw POSTs body to path and returns the response (body unread); the
// caller closes it. hdr adds request headers.
func (m *rawMesh) postRaw(ctx context.Context, t testing.TB, path string, body io.Reader, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err, "POST %s", path)
	return resp
}

// postBody POSTs a raw body and decodes the JSON-RPC response.
func (m *rawMesh) postBody(t testing.TB, path string, body []byte, hdr map[string]string) *rpcReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	resp := m.postRaw(ctx, t, path, bytes.NewReader(body), hdr)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return decodeReply(t, resp, data)
}

func decodeReply(t testing.TB, resp *http.Response, data []byte) *rpcReply {
	t.Helper()
	r := &rpcReply{Status: resp.StatusCode, Header: resp.Header, Body: data}
	require.Truef(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"),
		"content type %q, body %s", resp.Header.Get("Content-Type"), trimBody(data))
	require.NoErrorf(t, json.Unmarshal(data, r), "response is not JSON: %s", trimBody(data))
	require.NoErrorf(t, json.Unmarshal(data, &r.Keys), "response is not a JSON object: %s", trimBody(data))
	return r
}

// call sends one JSON-RPC request to path and checks the envelope: HTTP
// 200, jsonrpc 2.0, the id echoed, exactly one of result and error.
func (m *rawMesh) call(t testing.TB, path, method string, params any, hdr ...map[string]string) *rpcReply {
	t.Helper()
	id := m.newReqID()
	var h map[string]string
	if len(hdr) > 0 {
		h = hdr[0]
	}
	r := m.postBody(t, path, rpcBody(t, id, method, params), h)
	require.Equalf(t, http.StatusOK, r.Status, "HTTP status of %s: %s", method, trimBody(r.Body))
	requireEnvelope(t, r)
	require.JSONEqf(t, string(id), string(r.ID), "response id of %s", method)
	return r
}

// requireEnvelope checks the JSON-RPC 2.0 response envelope.
func requireEnvelope(t testing.TB, r *rpcReply) {
	t.Helper()
	require.Equal(t, "2.0", r.JSONRPC, "jsonrpc member: %s", trimBody(r.Body))
	_, hasID := r.Keys["id"]
	require.True(t, hasID, "response has no id member: %s", trimBody(r.Body))
	_, hasResult := r.Keys["result"]
	_, hasError := r.Keys["error"]
	require.True(t, hasResult != hasError, "response must carry exactly one of result and error: %s", trimBody(r.Body))
}

// ok calls method and requires a result.
func (m *rawMesh) ok(t testing.TB, path, method string, params any, hdr ...map[string]string) json.RawMessage {
	t.Helper()
	r := m.call(t, path, method, params, hdr...)
	require.Nilf(t, r.Error, "%s failed: %s", method, trimBody(r.Body))
	return r.Result
}

// fails calls method and requires an error with code.
func (m *rawMesh) fails(t testing.TB, path, method string, params any, code int, hdr ...map[string]string) *rpcError {
	t.Helper()
	r := m.call(t, path, method, params, hdr...)
	require.NotNilf(t, r.Error, "%s: want error %d, got %s", method, code, trimBody(r.Body))
	require.Equalf(t, code, r.Error.Code, "%s: error %s", method, trimBody(r.Body))
	requireCleanMessage(t, r.Error.Message)
	return r.Error
}

// requireCleanMessage checks an error message is short and leaks nothing
// of the implementation.
func requireCleanMessage(t testing.TB, msg string) {
	t.Helper()
	require.NotEmpty(t, msg, "error message")
	require.LessOrEqual(t, len(msg), 300, "error message too long: %q", msg)
	for _, bad := range []string{"json:", "goroutine", ".go:", "runtime", "panic", "nats:", "jetstream"} {
		require.NotContainsf(t, strings.ToLower(msg), bad, "error message leaks internals: %q", msg)
	}
}

func trimBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// getJSON GETs path and returns status, headers and body.
func (m *rawMesh) getJSON(t testing.TB, path string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+path, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// ---- protocol versions ----

// proto is one protocol version's spelling of methods, messages and states.
type proto struct {
	name                             string
	send, stream, get, cancel, resub string
	// states
	submitted, working, completed, failed, canceled, inputRequired string
	userRole, agentRole                                            string
	// msg builds a user message with one text part.
	msg func(text string) map[string]any
	// nonBlocking is the send configuration returning at once.
	nonBlocking map[string]any
	// sendTask extracts the task of a send result.
	sendTask func(t testing.TB, result json.RawMessage) wTask
	// event normalizes one stream item.
	event func(t testing.TB, result json.RawMessage) streamItem
}

var v10 = proto{
	name: "v1.0", send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", cancel: "CancelTask", resub: "SubscribeToTask",
	submitted: "TASK_STATE_SUBMITTED", working: "TASK_STATE_WORKING", completed: "TASK_STATE_COMPLETED", failed: "TASK_STATE_FAILED",
	canceled: "TASK_STATE_CANCELED", inputRequired: "TASK_STATE_INPUT_REQUIRED", userRole: "ROLE_USER", agentRole: "ROLE_AGENT",
	msg: func(text string) map[string]any {
		return map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	},
	nonBlocking: map[string]any{"returnImmediately": true},
	sendTask: func(t testing.TB, result json.RawMessage) wTask {
		t.Helper()
		var r struct {
			Task *json.RawMessage `json:"task"`
		}
		require.NoError(t, json.Unmarshal(result, &r))
		require.NotNilf(t, r.Task, "1.0 send result must be {\"task\":{...}}: %s", result)
		return decodeTask(t, *r.Task)
	},
	event: event10,
}

var v03 = proto{
	name: "v0.3", send: "message/send", stream: "message/stream", get: "tasks/get", cancel: "tasks/cancel", resub: "tasks/resubscribe",
	submitted: "submitted", working: "working", completed: "completed", failed: "failed",
	canceled: "canceled", inputRequired: "input-required", userRole: "user", agentRole: "agent",
	msg: func(text string) map[string]any {
		return map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user",
			"parts": []any{map[string]any{"kind": "text", "text": text}}}
	},
	nonBlocking: map[string]any{"blocking": false},
	sendTask: func(t testing.TB, result json.RawMessage) wTask {
		t.Helper()
		tk := decodeTask(t, result)
		require.Equalf(t, "task", tk.Kind, "0.3 send result must be a task object: %s", result)
		return tk
	},
	event: event03,
}

var bothProtos = []proto{v10, v03}

// final reports whether state ends a stream or a blocking call.
func (p proto) final(state string) bool {
	switch state {
	case p.completed, p.failed, p.canceled, p.inputRequired:
		return true
	}
	return state == "TASK_STATE_REJECTED" || state == "rejected" || state == "TASK_STATE_AUTH_REQUIRED" || state == "auth-required"
}

// sendParams wraps a message (and an optional configuration) as params.
func sendParams(msg map[string]any, cfg map[string]any) map[string]any {
	p := map[string]any{"message": msg}
	if cfg != nil {
		p["configuration"] = cfg
	}
	return p
}

// inTask sets a message's taskId and contextId (when not empty).
func inTask(msg map[string]any, taskID, contextID string) map[string]any {
	if taskID != "" {
		msg["taskId"] = taskID
	}
	if contextID != "" {
		msg["contextId"] = contextID
	}
	return msg
}

// ---- wire shapes (read leniently, both versions) ----

type wPart struct {
	Kind string  `json:"kind"`
	Text *string `json:"text"`
}

type wMessage struct {
	Kind      string  `json:"kind"`
	MessageID string  `json:"messageId"`
	ContextID string  `json:"contextId"`
	TaskID    string  `json:"taskId"`
	Role      string  `json:"role"`
	Parts     []wPart `json:"parts"`
}

func (m *wMessage) text() string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

type wArtifact struct {
	ArtifactID string  `json:"artifactId"`
	Name       string  `json:"name"`
	Parts      []wPart `json:"parts"`
}

func (a wArtifact) text() string {
	var b strings.Builder
	for _, p := range a.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

type wStatus struct {
	State   string    `json:"state"`
	Message *wMessage `json:"message"`
}

type wTask struct {
	Kind      string      `json:"kind"`
	ID        string      `json:"id"`
	ContextID string      `json:"contextId"`
	Status    wStatus     `json:"status"`
	Artifacts []wArtifact `json:"artifacts"`
	History   []wMessage  `json:"history"`
	Raw       json.RawMessage
}

func (tk wTask) artifactText() string {
	var b strings.Builder
	for _, a := range tk.Artifacts {
		b.WriteString(a.text())
	}
	return b.String()
}

// has reports whether the task object has the top-level member key.
func (tk wTask) has(t testing.TB, key string) bool {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(tk.Raw, &m))
	_, ok := m[key]
	return ok
}

func decodeTask(t testing.TB, raw json.RawMessage) wTask {
	t.Helper()
	var tk wTask
	require.NoErrorf(t, json.Unmarshal(raw, &tk), "task: %s", raw)
	require.NotEmptyf(t, tk.ID, "task without id: %s", raw)
	require.NotEmptyf(t, tk.ContextID, "task without contextId: %s", raw)
	require.NotEmptyf(t, tk.Status.State, "task without status.state: %s", raw)
	tk.Raw = raw
	return tk
}

// streamItem is one stream event, normalized across versions.
type streamItem struct {
	Kind   string // task, message, status, artifact
	TaskID string
	State  string // task and status items
	Final  *bool  // 0.3 status items
	Text   string // artifact chunk text, status message text
	Task   wTask  // task items
	Raw    json.RawMessage
}

func event10(t testing.TB, result json.RawMessage) streamItem {
	t.Helper()
	var r map[string]json.RawMessage
	require.NoErrorf(t, json.Unmarshal(result, &r), "stream item: %s", result)
	require.Lenf(t, r, 1, "a 1.0 StreamResponse has exactly one member: %s", result)
	it := streamItem{Raw: result}
	switch {
	case r["task"] != nil:
		it.Kind, it.Task = "task", decodeTask(t, r["task"])
		it.TaskID, it.State = it.Task.ID, it.Task.Status.State
	case r["message"] != nil:
		var m wMessage
		require.NoError(t, json.Unmarshal(r["message"], &m))
		it.Kind, it.TaskID, it.Text = "message", m.TaskID, m.text()
	case r["statusUpdate"] != nil:
		var s struct {
			TaskID string  `json:"taskId"`
			Status wStatus `json:"status"`
		}
		require.NoError(t, json.Unmarshal(r["statusUpdate"], &s))
		it.Kind, it.TaskID, it.State, it.Text = "status", s.TaskID, s.Status.State, s.Status.Message.text()
	case r["artifactUpdate"] != nil:
		var a struct {
			TaskID   string    `json:"taskId"`
			Artifact wArtifact `json:"artifact"`
		}
		require.NoError(t, json.Unmarshal(r["artifactUpdate"], &a))
		it.Kind, it.TaskID, it.Text = "artifact", a.TaskID, a.Artifact.text()
	default:
		t.Fatalf("unknown 1.0 stream item: %s", result)
	}
	return it
}

func event03(t testing.TB, result json.RawMessage) streamItem {
	t.Helper()
	var r struct {
		Kind     string    `json:"kind"`
		ID       string    `json:"id"`
		TaskID   string    `json:"taskId"`
		Status   wStatus   `json:"status"`
		Final    *bool     `json:"final"`
		Artifact wArtifact `json:"artifact"`
	}
	require.NoErrorf(t, json.Unmarshal(result, &r), "stream item: %s", result)
	it := streamItem{Raw: result}
	switch r.Kind {
	case "task":
		it.Kind, it.Task = "task", decodeTask(t, result)
		it.TaskID, it.State = r.ID, r.Status.State
	case "message":
		var m wMessage
		require.NoError(t, json.Unmarshal(result, &m))
		it.Kind, it.TaskID, it.Text = "message", m.TaskID, m.text()
	case "status-update":
		it.Kind, it.TaskID, it.State, it.Final, it.Text = "status", r.TaskID, r.Status.State, r.Final, r.Status.Message.text()
	case "artifact-update":
		it.Kind, it.TaskID, it.Text = "artifact", r.TaskID, r.Artifact.text()
	default:
		t.Fatalf("0.3 stream item without a known kind: %s", result)
	}
	return it
}

// ---- JSON shape checks ----

// walkJSON calls fn for every object in v (decoded JSON), with its path.
func walkJSON(v any, path string, fn func(path string, obj map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(path, x)
		for k, c := range x {
			walkJSON(c, path+"."+k, fn)
		}
	case []any:
		for i, c := range x {
			walkJSON(c, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

func decodeAny(t testing.TB, raw json.RawMessage) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

// requireNoKind checks a 1.0 payload has no "kind" member anywhere.
func requireNoKind(t testing.TB, raw json.RawMessage) {
	t.Helper()
	walkJSON(decodeAny(t, raw), "$", func(path string, obj map[string]any) {
		_, has := obj["kind"]
		require.Falsef(t, has, "1.0 payload has a kind member at %s: %s", path, trimBody(raw))
	})
}

// requireKinds03 checks a 0.3 task/message/event payload: every task,
// message, part and event object carries its kind.
func requireKinds03(t testing.TB, raw json.RawMessage) {
	t.Helper()
	walkJSON(decodeAny(t, raw), "$", func(path string, obj map[string]any) {
		needs := ""
		switch {
		case strings.HasSuffix(path, ".metadata") || strings.Contains(path, ".metadata.") || strings.Contains(path, ".data"):
			return // free-form
		case strings.Contains(lastSeg(path), "parts["):
			needs = "part"
		case obj["messageId"] != nil:
			needs = "message"
		case obj["artifact"] != nil:
			needs = "artifact-update"
		case obj["status"] != nil && obj["taskId"] != nil:
			needs = "status-update"
		case obj["status"] != nil && obj["id"] != nil:
			needs = "task"
		}
		if needs == "" {
			return
		}
		k, _ := obj["kind"].(string)
		require.NotEmptyf(t, k, "0.3 %s object without kind at %s: %s", needs, path, trimBody(raw))
		if needs != "part" {
			require.Equalf(t, needs, k, "kind at %s", path)
		} else {
			require.Containsf(t, []string{"text", "file", "data"}, k, "part kind at %s", path)
		}
	})
}

func lastSeg(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// ---- task polling ----

// getTask reads a task with the proto's get method.
func (m *rawMesh) getTask(t testing.TB, p proto, path, id string, extra map[string]any) wTask {
	t.Helper()
	params := map[string]any{"id": id}
	for k, v := range extra {
		params[k] = v
	}
	return decodeTask(t, m.ok(t, path, p.get, params))
}

// waitState polls the task until its state is want (bounded in time and
// count), failing early when it reaches another final state.
func (m *rawMesh) waitState(t testing.TB, p proto, path, id, want string) wTask {
	t.Helper()
	deadline := time.Now().Add(rawPollTimeout)
	var tk wTask
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		tk = m.getTask(t, p, path, id, nil)
		if tk.Status.State == want {
			return tk
		}
		require.Falsef(t, p.final(tk.Status.State), "task %s reached %s while waiting for %s", id, tk.Status.State, want)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s still %s after %s, want %s", id, tk.Status.State, rawPollTimeout, want)
	return tk
}

// ---- SSE ----

// sseEvent is one server-sent event.
type sseEvent = ssetest.Frame

// sseStream reads an SSE response event by event.
type sseStream struct {
	resp   *http.Response
	sse    *ssetest.Reader
	cancel context.CancelFunc
}

// newSSEStream reads resp's events; cancel ends its request.
func newSSEStream(resp *http.Response, cancel context.CancelFunc) *sseStream {
	s := &sseStream{resp: resp, sse: ssetest.NewReader(resp.Body), cancel: cancel}
	s.sse.KeepComments = true
	return s
}

// openStream POSTs a streaming call. It returns the stream when the answer
// is SSE, or the JSON-RPC reply when it is plain JSON (an error).
func (m *rawMesh) openStream(t testing.TB, path string, body []byte, hdr map[string]string) (*sseStream, *rpcReply) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawStreamTimeout)
	h := map[string]string{"Accept": "text/event-stream"}
	for k, v := range hdr {
		h[k] = v
	}
	resp := m.postRaw(ctx, t, path, bytes.NewReader(body), h)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return nil, decodeReply(t, resp, data)
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSEStream(resp, cancel)
	t.Cleanup(s.Close)
	return s, nil
}

// Next returns the next event; io.EOF when the server ended the stream
// between events.
func (s *sseStream) Next() (*sseEvent, error) {
	ev, err := s.sse.Next()
	if err != nil {
		return nil, err
	}
	return &ev, nil
}

// Comments are the stream's comment lines so far (": keep-alive").
func (s *sseStream) Comments() []string { return s.sse.Comments }

// Close drops the connection.
func (s *sseStream) Close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// frame is one SSE event decoded as a JSON-RPC response with its SSE id.
type frame struct {
	SSEID  uint64
	HasID  bool
	Reply  rpcReply
	Item   streamItem
	RawEvt *sseEvent
}

// readFrame reads and decodes the next event; nil at the end of the stream.
func (s *sseStream) readFrame(t testing.TB, p proto, reqID json.RawMessage) *frame {
	t.Helper()
	ev, err := s.Next()
	if errors.Is(err, io.EOF) {
		return nil
	}
	require.NoError(t, err, "reading SSE")
	f := &frame{RawEvt: ev}
	require.NoErrorf(t, json.Unmarshal(ev.Data, &f.Reply), "SSE data is not JSON: %s", ev.Data)
	require.NoError(t, json.Unmarshal(ev.Data, &f.Reply.Keys))
	f.Reply.Body = ev.Data
	requireEnvelope(t, &f.Reply)
	if reqID != nil {
		require.JSONEq(t, string(reqID), string(f.Reply.ID), "SSE frame id member")
	}
	if ev.HasID {
		n, err := ev.Seq()
		require.NoErrorf(t, err, "SSE id %q is not numeric", ev.ID)
		f.SSEID, f.HasID = n, true
	}
	if f.Reply.Error == nil {
		f.Item = p.event(t, f.Reply.Result)
	}
	return f
}

// readAll reads frames until the stream ends (at most max).
func (s *sseStream) readAll(t testing.TB, p proto, reqID json.RawMessage, max int) []*frame {
	t.Helper()
	var out []*frame
	for i := 0; i < max; i++ {
		f := s.readFrame(t, p, reqID)
		if f == nil {
			return out
		}
		out = append(out, f)
	}
	t.Fatalf("stream did not end after %d events", max)
	return nil
}

// stream starts a streaming call and requires an SSE answer.
func (m *rawMesh) stream(t testing.TB, path, method string, params any, hdr map[string]string) (*sseStream, json.RawMessage) {
	t.Helper()
	id := m.newReqID()
	s, r := m.openStream(t, path, rpcBody(t, id, method, params), hdr)
	require.Nilf(t, r, "%s answered JSON, not SSE: %v", method, r)
	return s, id
}

// requireStreamOrder checks every frame has an SSE id, ids strictly increase
// and nothing is an error.
func requireStreamOrder(t testing.TB, frames []*frame, after uint64) {
	t.Helper()
	last := after
	for i, f := range frames {
		require.Nilf(t, f.Reply.Error, "frame %d is an error: %s", i, f.Reply.Body)
		require.Truef(t, f.HasID, "frame %d has no id: line: %s", i, f.Reply.Body)
		require.Greaterf(t, f.SSEID, last, "frame %d id %d does not increase (previous %d)", i, f.SSEID, last)
		last = f.SSEID
	}
}

func frameIDs(frames []*frame) []uint64 {
	out := make([]uint64, 0, len(frames))
	for _, f := range frames {
		out = append(out, f.SSEID)
	}
	return out
}

// chunkTexts returns the artifact chunk texts of frames, in order.
func chunkTexts(frames []*frame) []string {
	var out []string
	for _, f := range frames {
		if f.Item.Kind == "artifact" {
			out = append(out, strings.TrimSpace(f.Item.Text))
		}
	}
	return out
}

// wantChunks is "chunk 1/n" … "chunk n/n".
func wantChunks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("chunk %d/%d", i+1, n)
	}
	return out
}

// listTasks calls ListTasks with params and decodes the response.
type wList struct {
	Tasks         []json.RawMessage `json:"tasks"`
	NextPageToken *string           `json:"nextPageToken"`
	PageSize      int               `json:"pageSize"`
	TotalSize     *int              `json:"totalSize"`
}

func (m *rawMesh) listTasks(t testing.TB, params map[string]any) wList {
	t.Helper()
	raw := m.ok(t, "/a2a", "ListTasks", params)
	var l wList
	require.NoError(t, json.Unmarshal(raw, &l))
	require.NotNilf(t, l.NextPageToken, "ListTasks must always carry nextPageToken: %s", raw)
	require.NotNilf(t, l.TotalSize, "ListTasks must carry totalSize: %s", raw)
	require.NotNilf(t, l.Tasks, "ListTasks must carry tasks: %s", raw)
	return l
}
