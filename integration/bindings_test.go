package integration

// One black-box suite for every binding (spec §5.1: the bindings are
// functionally equivalent). Each case is written once against the small
// binding interface below and runs through every binding as
// TestBindings/<case>/<binding>: JSON-RPC (1.0, and the 0.3 dialect where
// the case exists in 0.3), HTTP+JSON under the agent's path and by tenant,
// and gRPC. The wire clients are in bindings_wire_test.go. One mesh serves
// the whole suite, with API keys (alice, bob) and push delivery to
// receivers on 127.0.0.1.

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// ---- what every binding returns ----

// bTask is a task, whatever binding or version carried it; State is
// spelled as in 1.0.
type bTask struct {
	ID, ContextID, State string
	Artifacts            string // the text of its artifacts
	Status               string // the text of its status message
	History              int
}

// bEvent is one stream event.
type bEvent struct {
	ID     string // event id ("" when the binding gives none)
	Kind   string // task, message, status, artifact
	TaskID string
	State  string // task and status events, 1.0 spelling
	Text   string // artifact chunk or status message text
	Task   bTask  // task events
}

type bList struct {
	Tasks     []bTask
	Next      string
	Total     int
	PageSize  int
	HasTotals bool
}

type bPush struct{ ID, TaskID, URL, Token string }

// bCard is an agent card: its name, skill ids, interface URLs (1.0
// supportedInterfaces, or 0.3 url and additionalInterfaces) and whether
// it says it has an extended card (1.0 capabilities.extendedAgentCard, or
// 0.3 supportsAuthenticatedExtendedCard).
type bCard struct {
	Name     string
	Skills   []string
	URLs     []string
	Extended bool
}

type sendOpts struct {
	MessageID         string // "" for a fresh one
	NonBlocking       bool
	TaskID, ContextID string
	History           *int
	NoParts           bool   // a message without parts (invalid)
	Push              *bPush // a push config in the send's configuration
}

type listQ struct {
	ContextID, Status, PageToken string
	PageSize, History            *int
	Artifacts                    bool
	NoArtifacts                  bool   // send includeArtifacts false explicitly
	After                        string // statusTimestampAfter
}

// binding is one binding (and version) as a client sees it.
type binding interface {
	Send(t testing.TB, cx bCall, text string, o sendOpts) (bTask, *bErr)
	Get(t testing.TB, cx bCall, id string, history *int) (bTask, *bErr)
	List(t testing.TB, cx bCall, q listQ) (bList, *bErr)
	Cancel(t testing.TB, cx bCall, id string) (bTask, *bErr)
	// Stream and Subscribe return the stream, or the error the call was
	// refused with (at once, or as the stream's only event).
	Stream(t testing.TB, cx bCall, text string, o sendOpts) (*bEvents, *bErr)
	Subscribe(t testing.TB, cx bCall, id string) (*bEvents, *bErr)
	CreatePush(t testing.TB, cx bCall, p bPush) (bPush, *bErr)
	GetPush(t testing.TB, cx bCall, taskID, id string) (bPush, *bErr)
	ListPush(t testing.TB, cx bCall, taskID string) ([]bPush, *bErr)
	DeletePush(t testing.TB, cx bCall, taskID, id string) *bErr
	// ExtendedCard returns the agent's extended card.
	ExtendedCard(t testing.TB, cx bCall) (bCard, *bErr)
	// dialect is the protocol version (push payloads are in it).
	dialect() proto
}

func ptr[T any](v T) *T { return &v }

var states03 = map[string]string{
	"submitted": "TASK_STATE_SUBMITTED", "working": "TASK_STATE_WORKING", "completed": "TASK_STATE_COMPLETED",
	"failed": "TASK_STATE_FAILED", "canceled": "TASK_STATE_CANCELED", "input-required": "TASK_STATE_INPUT_REQUIRED",
	"rejected": "TASK_STATE_REJECTED", "auth-required": "TASK_STATE_AUTH_REQUIRED",
}

func state10(p proto, s string) string {
	if p.name == v03.name {
		if v, ok := states03[s]; ok {
			return v
		}
	}
	return s
}

func taskOf(p proto, tk wTask) bTask {
	return bTask{ID: tk.ID, ContextID: tk.ContextID, State: state10(p, tk.Status.State),
		Artifacts: tk.artifactText(), Status: tk.Status.Message.text(), History: len(tk.History)}
}

func eventOf(p proto, id string, it streamItem) bEvent {
	ev := bEvent{ID: id, Kind: it.Kind, TaskID: it.TaskID, State: state10(p, it.State), Text: it.Text}
	if it.Kind == "task" {
		ev.Task = taskOf(p, it.Task)
	}
	return ev
}

// bEvents reads a stream's events, decoded.
type bEvents struct {
	s   *bStream
	p   proto
	err *bErr // an error event, which ends the stream
}

// Next returns the next event; false at the end or at an error event
// (then Err says which).
func (s *bEvents) Next(t testing.TB) (bEvent, bool) {
	t.Helper()
	if s.err != nil {
		return bEvent{}, false
	}
	f, ok := s.s.next()
	if !ok {
		return bEvent{}, false
	}
	if f.Err != nil {
		s.err = f.Err
		return bEvent{}, false
	}
	return eventOf(s.p, f.ID, s.p.event(t, f.Raw)), true
}

// All reads the stream to its end (at most 200 events) and requires that
// it ended without an error event.
func (s *bEvents) All(t testing.TB) []bEvent {
	t.Helper()
	var out []bEvent
	for i := 0; i < 200; i++ {
		ev, ok := s.Next(t)
		if !ok {
			require.Nilf(t, s.err, "the stream ended with an error event: %s", s.err)
			return out
		}
		out = append(out, ev)
	}
	t.Fatalf("stream still going after 200 events")
	return nil
}

func (s *bEvents) Close() { s.s.close() }

// opened turns a stream call's answer into events or the refusal: an
// error at once, or a stream whose only event is an error.
func opened(t testing.TB, p proto, s *bStream, e *bErr) (*bEvents, *bErr) {
	t.Helper()
	if e != nil {
		return nil, e
	}
	f, ok := s.next()
	if !ok {
		return &bEvents{s: &bStream{next: func() (bFrame, bool) { return bFrame{}, false }, close: s.close}, p: p}, nil
	}
	if f.Err != nil {
		_, more := s.next()
		require.False(t, more, "a stream's error event is its last")
		s.close()
		return nil, f.Err
	}
	first := true
	return &bEvents{p: p, s: &bStream{close: s.close, next: func() (bFrame, bool) {
		if first {
			first = false
			return f, true
		}
		return s.next()
	}}}, nil
}

// ---- the 1.0 bindings: one request shape, three wires ----

type v1Binding struct{ w wire10 }

func (v1Binding) dialect() proto { return v10 }

func (b v1Binding) sendParams(text string, o sendOpts) map[string]any {
	msg := inTask(v10.msg(text), o.TaskID, o.ContextID)
	if o.MessageID != "" {
		msg["messageId"] = o.MessageID
	}
	if o.NoParts {
		msg["parts"] = []any{}
	}
	cfg := map[string]any{}
	if o.NonBlocking {
		cfg["returnImmediately"] = true
	}
	if o.History != nil {
		cfg["historyLength"] = *o.History
	}
	if o.Push != nil {
		cfg["taskPushNotificationConfig"] = map[string]any{"id": o.Push.ID, "url": o.Push.URL, "token": o.Push.Token}
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	return sendParams(msg, cfg)
}

func (b v1Binding) Send(t testing.TB, cx bCall, text string, o sendOpts) (bTask, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "SendMessage", b.sendParams(text, o))
	if e != nil {
		return bTask{}, e
	}
	requireNoKind(t, raw)
	return taskOf(v10, v10.sendTask(t, raw)), nil
}

func (b v1Binding) Get(t testing.TB, cx bCall, id string, history *int) (bTask, *bErr) {
	t.Helper()
	p := map[string]any{"id": id}
	if history != nil {
		p["historyLength"] = *history
	}
	raw, e := b.w.unary(t, cx, "GetTask", p)
	if e != nil {
		return bTask{}, e
	}
	return taskOf(v10, decodeTask(t, raw)), nil
}

func (b v1Binding) List(t testing.TB, cx bCall, q listQ) (bList, *bErr) {
	t.Helper()
	p := map[string]any{}
	if q.ContextID != "" {
		p["contextId"] = q.ContextID
	}
	if q.Status != "" {
		p["status"] = q.Status
	}
	if q.PageToken != "" {
		p["pageToken"] = q.PageToken
	}
	if q.PageSize != nil {
		p["pageSize"] = *q.PageSize
	}
	if q.History != nil {
		p["historyLength"] = *q.History
	}
	if q.Artifacts {
		p["includeArtifacts"] = true
	}
	if q.NoArtifacts {
		p["includeArtifacts"] = false
	}
	if q.After != "" {
		p["statusTimestampAfter"] = q.After
	}
	raw, e := b.w.unary(t, cx, "ListTasks", p)
	if e != nil {
		return bList{}, e
	}
	// ProtoJSON leaves out what is empty (gRPC's answer re-encoded here
	// has no "nextPageToken" on the last page), so absent means zero.
	var l struct {
		Tasks         []json.RawMessage `json:"tasks"`
		NextPageToken string            `json:"nextPageToken"`
		PageSize      int               `json:"pageSize"`
		TotalSize     *int              `json:"totalSize"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &l), "ListTasks: %s", raw)
	out := bList{Next: l.NextPageToken, PageSize: l.PageSize}
	if l.TotalSize != nil {
		out.Total = *l.TotalSize
	}
	for _, r := range l.Tasks {
		out.Tasks = append(out.Tasks, taskOf(v10, decodeTask(t, r)))
	}
	return out, nil
}

func (b v1Binding) Cancel(t testing.TB, cx bCall, id string) (bTask, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "CancelTask", map[string]any{"id": id})
	if e != nil {
		return bTask{}, e
	}
	return taskOf(v10, decodeTask(t, raw)), nil
}

func (b v1Binding) Stream(t testing.TB, cx bCall, text string, o sendOpts) (*bEvents, *bErr) {
	t.Helper()
	s, e := b.w.stream(t, cx, "SendStreamingMessage", b.sendParams(text, o))
	return opened(t, v10, s, e)
}

func (b v1Binding) Subscribe(t testing.TB, cx bCall, id string) (*bEvents, *bErr) {
	t.Helper()
	s, e := b.w.stream(t, cx, "SubscribeToTask", map[string]any{"id": id})
	return opened(t, v10, s, e)
}

func pushOf10(t testing.TB, raw json.RawMessage) bPush {
	t.Helper()
	var c struct {
		ID     string `json:"id"`
		TaskID string `json:"taskId"`
		URL    string `json:"url"`
		Token  string `json:"token"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &c), "push config: %s", raw)
	return bPush{ID: c.ID, TaskID: c.TaskID, URL: c.URL, Token: c.Token}
}

func (b v1Binding) CreatePush(t testing.TB, cx bCall, p bPush) (bPush, *bErr) {
	t.Helper()
	params := map[string]any{"taskId": p.TaskID, "url": p.URL}
	if p.ID != "" {
		params["id"] = p.ID
	}
	if p.Token != "" {
		params["token"] = p.Token
	}
	raw, e := b.w.unary(t, cx, "CreateTaskPushNotificationConfig", params)
	if e != nil {
		return bPush{}, e
	}
	return pushOf10(t, raw), nil
}

func (b v1Binding) GetPush(t testing.TB, cx bCall, taskID, id string) (bPush, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "GetTaskPushNotificationConfig", map[string]any{"taskId": taskID, "id": id})
	if e != nil {
		return bPush{}, e
	}
	return pushOf10(t, raw), nil
}

func (b v1Binding) ListPush(t testing.TB, cx bCall, taskID string) ([]bPush, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "ListTaskPushNotificationConfigs", map[string]any{"taskId": taskID})
	if e != nil {
		return nil, e
	}
	var l struct {
		Configs []json.RawMessage `json:"configs"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &l), "ListTaskPushNotificationConfigs: %s", raw)
	var out []bPush
	for _, c := range l.Configs {
		out = append(out, pushOf10(t, c))
	}
	return out, nil
}

func (b v1Binding) DeletePush(t testing.TB, cx bCall, taskID, id string) *bErr {
	t.Helper()
	_, e := b.w.unary(t, cx, "DeleteTaskPushNotificationConfig", map[string]any{"taskId": taskID, "id": id})
	return e
}

func (b v1Binding) ExtendedCard(t testing.TB, cx bCall) (bCard, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "GetExtendedAgentCard", map[string]any{})
	if e != nil {
		return bCard{}, e
	}
	var c struct {
		Name   string `json:"name"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
		Interfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
		Capabilities struct {
			Extended bool `json:"extendedAgentCard"`
		} `json:"capabilities"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &c), "extended card: %s", raw)
	out := bCard{Name: c.Name, Extended: c.Capabilities.Extended}
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, s.ID)
	}
	for _, in := range c.Interfaces {
		out.URLs = append(out.URLs, in.URL)
	}
	return out, nil
}

// ---- the 0.3 dialect of JSON-RPC ----

type v03Binding struct{ w jsonrpcWire }

func (v03Binding) dialect() proto { return v03 }

func (b v03Binding) sendParams(text string, o sendOpts) map[string]any {
	msg := inTask(v03.msg(text), o.TaskID, o.ContextID)
	if o.MessageID != "" {
		msg["messageId"] = o.MessageID
	}
	if o.NoParts {
		msg["parts"] = []any{}
	}
	cfg := map[string]any{}
	if o.NonBlocking {
		cfg["blocking"] = false
	}
	if o.History != nil {
		cfg["historyLength"] = *o.History
	}
	if o.Push != nil {
		cfg["pushNotificationConfig"] = map[string]any{"id": o.Push.ID, "url": o.Push.URL, "token": o.Push.Token}
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	return sendParams(msg, cfg)
}

func (b v03Binding) Send(t testing.TB, cx bCall, text string, o sendOpts) (bTask, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "message/send", b.sendParams(text, o))
	if e != nil {
		return bTask{}, e
	}
	requireKinds03(t, raw)
	return taskOf(v03, v03.sendTask(t, raw)), nil
}

func (b v03Binding) Get(t testing.TB, cx bCall, id string, history *int) (bTask, *bErr) {
	t.Helper()
	p := map[string]any{"id": id}
	if history != nil {
		p["historyLength"] = *history
	}
	raw, e := b.w.unary(t, cx, "tasks/get", p)
	if e != nil {
		return bTask{}, e
	}
	requireKinds03(t, raw)
	return taskOf(v03, decodeTask(t, raw)), nil
}

func (b v03Binding) List(t testing.TB, _ bCall, _ listQ) (bList, *bErr) {
	t.Helper()
	t.Fatal("0.3 has no ListTasks: the case must not run in the 0.3 dialect")
	return bList{}, nil
}

func (b v03Binding) Cancel(t testing.TB, cx bCall, id string) (bTask, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "tasks/cancel", map[string]any{"id": id})
	if e != nil {
		return bTask{}, e
	}
	return taskOf(v03, decodeTask(t, raw)), nil
}

func (b v03Binding) Stream(t testing.TB, cx bCall, text string, o sendOpts) (*bEvents, *bErr) {
	t.Helper()
	s, e := b.w.stream(t, cx, "message/stream", b.sendParams(text, o))
	return opened(t, v03, s, e)
}

func (b v03Binding) Subscribe(t testing.TB, cx bCall, id string) (*bEvents, *bErr) {
	t.Helper()
	s, e := b.w.stream(t, cx, "tasks/resubscribe", map[string]any{"id": id})
	return opened(t, v03, s, e)
}

func pushOf03(t testing.TB, raw json.RawMessage) bPush {
	t.Helper()
	var c struct {
		TaskID string `json:"taskId"`
		Cfg    struct {
			ID    string `json:"id"`
			URL   string `json:"url"`
			Token string `json:"token"`
		} `json:"pushNotificationConfig"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &c), "0.3 push config: %s", raw)
	return bPush{ID: c.Cfg.ID, TaskID: c.TaskID, URL: c.Cfg.URL, Token: c.Cfg.Token}
}

func (b v03Binding) CreatePush(t testing.TB, cx bCall, p bPush) (bPush, *bErr) {
	t.Helper()
	cfg := map[string]any{"url": p.URL}
	if p.ID != "" {
		cfg["id"] = p.ID
	}
	if p.Token != "" {
		cfg["token"] = p.Token
	}
	raw, e := b.w.unary(t, cx, "tasks/pushNotificationConfig/set", map[string]any{"taskId": p.TaskID, "pushNotificationConfig": cfg})
	if e != nil {
		return bPush{}, e
	}
	return pushOf03(t, raw), nil
}

func (b v03Binding) GetPush(t testing.TB, cx bCall, taskID, id string) (bPush, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "tasks/pushNotificationConfig/get", map[string]any{"id": taskID, "pushNotificationConfigId": id})
	if e != nil {
		return bPush{}, e
	}
	return pushOf03(t, raw), nil
}

func (b v03Binding) ListPush(t testing.TB, cx bCall, taskID string) ([]bPush, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "tasks/pushNotificationConfig/list", map[string]any{"id": taskID})
	if e != nil {
		return nil, e
	}
	var l []json.RawMessage
	require.NoErrorf(t, json.Unmarshal(raw, &l), "0.3 push config list: %s", raw)
	var out []bPush
	for _, c := range l {
		out = append(out, pushOf03(t, c))
	}
	return out, nil
}

func (b v03Binding) DeletePush(t testing.TB, cx bCall, taskID, id string) *bErr {
	t.Helper()
	_, e := b.w.unary(t, cx, "tasks/pushNotificationConfig/delete", map[string]any{"id": taskID, "pushNotificationConfigId": id})
	return e
}

func (b v03Binding) ExtendedCard(t testing.TB, cx bCall) (bCard, *bErr) {
	t.Helper()
	raw, e := b.w.unary(t, cx, "agent/getAuthenticatedExtendedCard", nil)
	if e != nil {
		return bCard{}, e
	}
	var c struct {
		Name   string `json:"name"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
		URL        string `json:"url"`
		Interfaces []struct {
			URL string `json:"url"`
		} `json:"additionalInterfaces"`
		Extended bool `json:"supportsAuthenticatedExtendedCard"`
	}
	require.NoErrorf(t, json.Unmarshal(raw, &c), "extended card: %s", raw)
	out := bCard{Name: c.Name, Extended: c.Extended, URLs: []string{c.URL}}
	for _, s := range c.Skills {
		out.Skills = append(out.Skills, s.ID)
	}
	for _, in := range c.Interfaces {
		out.URLs = append(out.URLs, in.URL)
	}
	return out, nil
}

// ---- the suite ----

// bColumn is one binding as the suite runs it: how it presents the
// caller's key (X-Api-Key or a bearer token) and whether it has event
// ids (needed to resume a stream).
type bColumn struct {
	name   string
	b      binding
	bearer bool
}

// bEnv is what a case runs against.
type bEnv struct {
	col bColumn
	b   binding
	m   *rawMesh
	rcv *receiver
}

func (e *bEnv) call(agent, key string) bCall {
	if e.col.bearer {
		return bCall{agent: agent, hdr: map[string]string{"Authorization": "Bearer " + key}}
	}
	return bCall{agent: agent, hdr: map[string]string{"X-Api-Key": key}}
}

// alice and bob call agent as those principals.
func (e *bEnv) alice(agent string) bCall { return e.call(agent, aliceKey) }
func (e *bEnv) bob(agent string) bCall   { return e.call(agent, bobKey) }

func noErr(t testing.TB, e *bErr, what string) {
	t.Helper()
	require.Nilf(t, e, "%s failed: %s", what, e)
}

// wantErr requires the A2A error reason.
func wantErr(t testing.TB, e *bErr, reason, what string) {
	t.Helper()
	require.NotNilf(t, e, "%s: want %s, got no error", what, reason)
	require.Equalf(t, reason, e.Reason, "%s: %s", what, e)
}

// waitState polls the task until it is in state (bounded), failing early
// at another final state.
func (e *bEnv) waitState(t testing.TB, cx bCall, id, state string) bTask {
	t.Helper()
	deadline := time.Now().Add(rawPollTimeout)
	var tk bTask
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		var err *bErr
		tk, err = e.b.Get(t, cx, id, nil)
		noErr(t, err, "GetTask")
		if tk.State == state {
			return tk
		}
		require.Falsef(t, v10.final(tk.State), "task %s reached %s while waiting for %s", id, tk.State, state)
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s still %s after %s, want %s", id, tk.State, rawPollTimeout, state)
	return tk
}

// tasksIn returns the ids of the caller's tasks in contextID: through
// ListTasks in 1.0; 0.3 has no ListTasks, so there through the 1.0
// JSON-RPC method on the same endpoint.
func (e *bEnv) tasksIn(t testing.TB, cx bCall, contextID string) []string {
	t.Helper()
	b := e.b
	if b.dialect().name == v03.name {
		b = v1Binding{w: jsonrpcWire{m: e.m}}
	}
	l, err := b.List(t, cx, listQ{ContextID: contextID})
	noErr(t, err, "list")
	var ids []string
	for _, tk := range l.Tasks {
		ids = append(ids, tk.ID)
	}
	return ids
}

// eventChunks returns the artifact chunk texts of events, in order.
func eventChunks(evs []bEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == "artifact" {
			out = append(out, strings.TrimSpace(ev.Text))
		}
	}
	return out
}

// requireTaskEvents checks a task's stream: every event about taskID,
// the task first (when taskFirst), terminal state only on the last event,
// which is a status update in state last; event ids, where the binding
// gives them, strictly increasing.
func requireTaskEvents(t testing.TB, evs []bEvent, taskID string, taskFirst bool, last string) {
	t.Helper()
	require.NotEmpty(t, evs, "no events")
	if taskFirst {
		require.Equalf(t, "task", evs[0].Kind, "the first event is the task: %+v", evs[0])
	}
	var prev uint64
	for i, ev := range evs {
		assert.Equalf(t, taskID, ev.TaskID, "event %d is about the task", i)
		if i > 0 {
			assert.Containsf(t, []string{"status", "artifact"}, ev.Kind, "event %d", i)
		}
		if i < len(evs)-1 && ev.State != "" {
			assert.Falsef(t, v10.final(ev.State), "event %d of %d is final (%s)", i, len(evs), ev.State)
		}
		if ev.ID != "" || evs[0].ID != "" {
			n, err := strconv.ParseUint(ev.ID, 10, 64)
			require.NoErrorf(t, err, "event %d: id %q (when one event has an id, all do)", i, ev.ID)
			require.Greaterf(t, n, prev, "event %d: ids increase", i)
			prev = n
		}
	}
	end := evs[len(evs)-1]
	assert.Equal(t, "status", end.Kind, "the stream ends with a status update")
	assert.Equal(t, last, end.State)
}

type bCase struct {
	name string
	// v03: the case exists in A2A 0.3 too, and runs in the 0.3 JSON-RPC
	// dialect.
	v03 bool
	run func(t *testing.T, e *bEnv)
}

var bindingCases = []bCase{
	{"send blocking", true, func(t *testing.T, e *bEnv) {
		text := "hello " + uuid.NewString()
		tk, err := e.b.Send(t, e.alice("echo"), text, sendOpts{})
		noErr(t, err, "send")
		require.NotEmpty(t, tk.ID)
		require.NotEmpty(t, tk.ContextID)
		assert.Equal(t, "TASK_STATE_COMPLETED", tk.State)
		assert.Equal(t, text, tk.Artifacts)

		bare, err := e.b.Send(t, e.alice("echo"), text, sendOpts{History: ptr(0)})
		noErr(t, err, "send with historyLength 0")
		assert.Equal(t, 0, bare.History, "configuration.historyLength 0")
		assert.Equal(t, text, bare.Artifacts)

		tk, err = e.b.Send(t, e.alice("ask"), "hi", sendOpts{})
		noErr(t, err, "send to ask")
		assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", tk.State)
		assert.Equal(t, agents.Question, tk.Status)
	}},

	{"send non-blocking", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		tk, err := e.b.Send(t, cx, "chunks=3 delay=100ms", sendOpts{NonBlocking: true})
		noErr(t, err, "send")
		require.Falsef(t, v10.final(tk.State), "a non-blocking send answers at once, not %s", tk.State)
		done := e.waitState(t, cx, tk.ID, "TASK_STATE_COMPLETED")
		assert.Equal(t, wantChunks(3), splitChunks(done.Artifacts))
	}},

	{"get with historyLength", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("echo")
		text := "history " + uuid.NewString()
		sent, err := e.b.Send(t, cx, text, sendOpts{})
		noErr(t, err, "send")
		full, err := e.b.Get(t, cx, sent.ID, nil)
		noErr(t, err, "get")
		assert.Equal(t, sent.ID, full.ID)
		assert.Equal(t, sent.ContextID, full.ContextID)
		assert.Equal(t, "TASK_STATE_COMPLETED", full.State)
		assert.Equal(t, text, full.Artifacts)
		require.GreaterOrEqual(t, full.History, 1, "the task's history holds the message")
		none, err := e.b.Get(t, cx, sent.ID, ptr(0))
		noErr(t, err, "get historyLength 0")
		assert.Equal(t, 0, none.History)
		one, err := e.b.Get(t, cx, sent.ID, ptr(1))
		noErr(t, err, "get historyLength 1")
		assert.Equal(t, 1, one.History)
	}},

	{"list with filters and paging", false, func(t *testing.T, e *bEnv) {
		cx := e.alice("echo")
		ctxID := "bindings-" + uuid.NewString()
		want := map[string]bool{}
		for i := 0; i < 3; i++ {
			tk, err := e.b.Send(t, cx, "listed "+strconv.Itoa(i), sendOpts{ContextID: ctxID})
			noErr(t, err, "send")
			want[tk.ID] = true
		}
		_, err := e.b.Send(t, cx, "elsewhere", sendOpts{ContextID: ctxID + "-other"})
		noErr(t, err, "send")

		first, err := e.b.List(t, cx, listQ{ContextID: ctxID, PageSize: ptr(2)})
		noErr(t, err, "list page 1")
		require.Len(t, first.Tasks, 2, "pageSize is honoured")
		assert.Equal(t, 3, first.Total, "totalSize counts the context's tasks")
		require.NotEmpty(t, first.Next, "a further page")
		second, err := e.b.List(t, cx, listQ{ContextID: ctxID, PageSize: ptr(2), PageToken: first.Next})
		noErr(t, err, "list page 2")
		require.Len(t, second.Tasks, 1)
		assert.Empty(t, second.Next, "the last page")
		got := map[string]bool{}
		for _, tk := range append(first.Tasks, second.Tasks...) {
			assert.Equal(t, ctxID, tk.ContextID)
			got[tk.ID] = true
		}
		assert.Equal(t, want, got, "the pages hold the context's tasks, each once")

		done, err := e.b.List(t, cx, listQ{ContextID: ctxID, Status: "TASK_STATE_COMPLETED", History: ptr(0), Artifacts: true})
		noErr(t, err, "list completed")
		require.Len(t, done.Tasks, 3, "status filter")
		for _, tk := range done.Tasks {
			assert.Equal(t, 0, tk.History, "historyLength 0")
			assert.NotEmpty(t, tk.Artifacts, "includeArtifacts")
		}
		plain, err := e.b.List(t, cx, listQ{ContextID: ctxID})
		noErr(t, err, "list")
		require.Len(t, plain.Tasks, 3)
		for _, tk := range plain.Tasks {
			assert.Empty(t, tk.Artifacts, "artifacts only with includeArtifacts")
		}
		working, err := e.b.List(t, cx, listQ{ContextID: ctxID, Status: "TASK_STATE_WORKING"})
		noErr(t, err, "list working")
		assert.Empty(t, working.Tasks, "status filter")
		assert.Equal(t, 0, working.Total)
	}},

	{"cancel", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		tk, err := e.b.Send(t, cx, "chunks=100 delay=200ms", sendOpts{NonBlocking: true})
		noErr(t, err, "send")
		canceled, err := e.b.Cancel(t, cx, tk.ID)
		noErr(t, err, "cancel")
		assert.Equal(t, tk.ID, canceled.ID)
		assert.Equal(t, "TASK_STATE_CANCELED", canceled.State)
		got, err := e.b.Get(t, cx, tk.ID, nil)
		noErr(t, err, "get")
		assert.Equal(t, "TASK_STATE_CANCELED", got.State)

		done, err := e.b.Send(t, e.alice("echo"), "finished", sendOpts{})
		noErr(t, err, "send")
		_, err = e.b.Cancel(t, e.alice("echo"), done.ID)
		wantErr(t, err, "TASK_NOT_CANCELABLE", "cancel a completed task")
	}},

	{"stream to completion", true, func(t *testing.T, e *bEnv) {
		s, err := e.b.Stream(t, e.alice("slow"), "chunks=3 delay=30ms", sendOpts{})
		noErr(t, err, "stream")
		evs := s.All(t)
		require.NotEmpty(t, evs)
		requireTaskEvents(t, evs, evs[0].TaskID, true, "TASK_STATE_COMPLETED")
		assert.Equal(t, wantChunks(3), eventChunks(evs))
		got, gerr := e.b.Get(t, e.alice("slow"), evs[0].TaskID, nil)
		noErr(t, gerr, "get")
		assert.Equal(t, "TASK_STATE_COMPLETED", got.State)
	}},

	{"resubscribe to a running task", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		tk, err := e.b.Send(t, cx, "chunks=5 delay=80ms", sendOpts{NonBlocking: true})
		noErr(t, err, "send")
		s, err := e.b.Subscribe(t, cx, tk.ID)
		noErr(t, err, "subscribe")
		evs := s.All(t)
		// 0.3 does not promise the task first on a resubscription.
		requireTaskEvents(t, evs, tk.ID, e.b.dialect().name != v03.name, "TASK_STATE_COMPLETED")
		var got []string
		if evs[0].Kind == "task" {
			got = splitChunks(evs[0].Task.Artifacts)
		}
		got = append(got, eventChunks(evs)...)
		assert.Equal(t, wantChunks(5), got, "the snapshot and what followed hold every chunk once")
	}},

	{"resume after the last event id", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		s, err := e.b.Stream(t, cx, "chunks=6 delay=60ms", sendOpts{})
		noErr(t, err, "stream")
		var seen []bEvent
		for len(seen) < 3 {
			ev, ok := s.Next(t)
			require.True(t, ok, "the stream ended early")
			seen = append(seen, ev)
		}
		s.Close() // the client goes away mid-stream
		taskID := seen[0].TaskID
		last := seen[len(seen)-1].ID
		require.NotEmptyf(t, last, "%s gives stream events no id to resume after", e.col.name)

		s2, err := e.b.Subscribe(t, cx.with("Last-Event-ID", last), taskID)
		noErr(t, err, "resubscribe after "+last)
		rest := s2.All(t)
		require.NotEmpty(t, rest)
		assert.NotEqual(t, "task", rest[0].Kind, "a resumed stream replays what was missed, not the snapshot")
		all := append(append([]bEvent{}, seen...), rest...)
		requireTaskEvents(t, all, taskID, true, "TASK_STATE_COMPLETED")
		assert.Equal(t, wantChunks(6), eventChunks(all), "no gap, no duplicate")

		// The whole log after the task's creation is what was seen and
		// resumed, id for id.
		ref, err := e.b.Subscribe(t, cx.with("Last-Event-ID", seen[0].ID), taskID)
		noErr(t, err, "replay")
		var refIDs, gotIDs []string
		for _, ev := range ref.All(t) {
			refIDs = append(refIDs, ev.ID)
		}
		for _, ev := range all[1:] {
			gotIDs = append(gotIDs, ev.ID)
		}
		assert.Equal(t, refIDs, gotIDs)
	}},

	{"multi-turn", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("ask")
		first, err := e.b.Send(t, cx, "hi", sendOpts{})
		noErr(t, err, "turn 1")
		require.Equal(t, "TASK_STATE_INPUT_REQUIRED", first.State)
		name := "Ada" + uuid.NewString()[:6]
		second, err := e.b.Send(t, cx, name, sendOpts{TaskID: first.ID, ContextID: first.ContextID})
		noErr(t, err, "turn 2")
		assert.Equal(t, first.ID, second.ID)
		assert.Equal(t, first.ContextID, second.ContextID)
		assert.Equal(t, "TASK_STATE_COMPLETED", second.State)
		assert.Contains(t, second.Artifacts, "Hello, "+name+"!")

		// A completed task takes no third turn.
		_, err = e.b.Send(t, cx, "again", sendOpts{TaskID: first.ID, ContextID: first.ContextID})
		require.NotNil(t, err, "a completed task takes no further turn")
	}},

	{"push config", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		tk, err := e.b.Send(t, cx, "chunks=3 delay=150ms", sendOpts{NonBlocking: true})
		noErr(t, err, "send")
		path := "/" + url.PathEscape(e.col.name) + "/" + uuid.NewString()
		id := "cfg-" + uuid.NewString()[:8]
		made, err := e.b.CreatePush(t, cx, bPush{TaskID: tk.ID, ID: id, URL: e.rcv.URL + path, Token: "tok-" + id})
		noErr(t, err, "create")
		assert.Equal(t, id, made.ID)
		assert.Equal(t, e.rcv.URL+path, made.URL)
		assert.Equal(t, tk.ID, made.TaskID)
		got, err := e.b.GetPush(t, cx, tk.ID, id)
		noErr(t, err, "get")
		assert.Equal(t, e.rcv.URL+path, got.URL)
		list, err := e.b.ListPush(t, cx, tk.ID)
		noErr(t, err, "list")
		require.Len(t, list, 1)
		assert.Equal(t, id, list[0].ID)

		p := e.b.dialect()
		hit := e.rcv.waitState(t, p, path, tk.ID, p.completed)
		assert.Equal(t, "tok-"+id, hit.Header.Get("X-A2A-Notification-Token"))

		noErr(t, e.b.DeletePush(t, cx, tk.ID, id), "delete")
		list, err = e.b.ListPush(t, cx, tk.ID)
		noErr(t, err, "list after delete")
		assert.Empty(t, list)
		_, err = e.b.GetPush(t, cx, tk.ID, id)
		wantErr(t, err, "TASK_NOT_FOUND", "get a deleted config")
		_, err = e.b.CreatePush(t, cx, bPush{TaskID: uuid.NewString(), URL: e.rcv.URL + path})
		wantErr(t, err, "TASK_NOT_FOUND", "a config for no task")
	}},

	{"errors", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("echo")
		ghost := uuid.NewString()
		_, err := e.b.Get(t, cx, ghost, nil)
		wantErr(t, err, "TASK_NOT_FOUND", "get an unknown task")
		_, err = e.b.Cancel(t, cx, ghost)
		wantErr(t, err, "TASK_NOT_FOUND", "cancel an unknown task")
		_, err = e.b.Subscribe(t, cx, ghost)
		wantErr(t, err, "TASK_NOT_FOUND", "subscribe to an unknown task")
		_, err = e.b.Send(t, cx, "x", sendOpts{TaskID: ghost})
		wantErr(t, err, "TASK_NOT_FOUND", "continue an unknown task")

		tk, serr := e.b.Send(t, cx, "x", sendOpts{})
		noErr(t, serr, "send")
		_, err = e.b.Get(t, cx, tk.ID, ptr(-1))
		wantErr(t, err, "INVALID_PARAMS", "a negative historyLength")
		_, err = e.b.Send(t, cx, "", sendOpts{NoParts: true})
		wantErr(t, err, "INVALID_PARAMS", "a message without parts")
		_, err = e.b.Stream(t, cx, "", sendOpts{NoParts: true})
		wantErr(t, err, "INVALID_PARAMS", "a stream of a message without parts")

		start := time.Now()
		_, err = e.b.Send(t, e.alice("nobody"), "x", sendOpts{})
		wantErr(t, err, "INVALID_PARAMS", "send to an unknown agent")
		_, err = e.b.Stream(t, e.alice("nobody"), "x", sendOpts{})
		wantErr(t, err, "INVALID_PARAMS", "stream to an unknown agent")
		assert.Less(t, time.Since(start), 3*time.Second, "an unknown agent is an error at once")

		for _, v := range []string{"2.0", "0.1"} {
			_, err = e.b.Send(t, cx.with("A2A-Version", v), "x", sendOpts{})
			wantErr(t, err, "VERSION_NOT_SUPPORTED", "A2A-Version "+v)
			_, err = e.b.Stream(t, cx.with("A2A-Version", v), "x", sendOpts{})
			wantErr(t, err, "VERSION_NOT_SUPPORTED", "stream with A2A-Version "+v)
		}
	}},

	{"auth", true, func(t *testing.T, e *bEnv) {
		anon := bCall{agent: "echo", hdr: map[string]string{}}
		wrong := e.call("echo", "not-a-key-0123456789")
		for name, cx := range map[string]bCall{"no key": anon, "wrong key": wrong} {
			_, err := e.b.Send(t, cx, "x", sendOpts{})
			require.NotNilf(t, err, "%s: send must be refused", name)
			assert.Truef(t, err.Unauth, "%s: send refused as unauthenticated: %s", name, err)
			_, err = e.b.Get(t, cx, uuid.NewString(), nil)
			require.NotNilf(t, err, "%s: get must be refused", name)
			assert.Truef(t, err.Unauth, "%s: get refused as unauthenticated: %s", name, err)
			_, err = e.b.Stream(t, cx, "x", sendOpts{})
			require.NotNilf(t, err, "%s: stream must be refused", name)
			assert.Truef(t, err.Unauth, "%s: stream refused as unauthenticated: %s", name, err)
		}

		mine, err := e.b.Send(t, e.alice("ask"), "hi", sendOpts{})
		noErr(t, err, "alice's send")
		_, err = e.b.Get(t, e.bob("ask"), mine.ID, nil)
		wantErr(t, err, "TASK_NOT_FOUND", "bob gets alice's task")
		_, err = e.b.Cancel(t, e.bob("ask"), mine.ID)
		wantErr(t, err, "TASK_NOT_FOUND", "bob cancels alice's task")
		_, err = e.b.Subscribe(t, e.bob("ask"), mine.ID)
		wantErr(t, err, "TASK_NOT_FOUND", "bob subscribes to alice's task")
		_, err = e.b.Send(t, e.bob("ask"), "Mallory", sendOpts{TaskID: mine.ID, ContextID: mine.ContextID})
		wantErr(t, err, "TASK_NOT_FOUND", "bob continues alice's task")
		_, err = e.b.ListPush(t, e.bob("ask"), mine.ID)
		wantErr(t, err, "TASK_NOT_FOUND", "bob lists alice's push configs")
		got, err := e.b.Get(t, e.alice("ask"), mine.ID, nil)
		noErr(t, err, "alice gets her task")
		assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", got.State, "bob changed nothing")
	}},

	{"list is per principal", false, func(t *testing.T, e *bEnv) {
		ctxID := "principal-" + uuid.NewString()
		mine, err := e.b.Send(t, e.alice("echo"), "mine", sendOpts{ContextID: ctxID})
		noErr(t, err, "send")
		theirs, err := e.b.List(t, e.bob("echo"), listQ{ContextID: ctxID})
		noErr(t, err, "bob lists")
		assert.Empty(t, theirs.Tasks, "bob sees none of alice's tasks")
		ours, err := e.b.List(t, e.alice("echo"), listQ{ContextID: ctxID})
		noErr(t, err, "alice lists")
		require.Len(t, ours.Tasks, 1)
		assert.Equal(t, mine.ID, ours.Tasks[0].ID)
	}},

	{"list refuses bad paging", false, func(t *testing.T, e *bEnv) {
		cx := e.alice("echo")
		for what, q := range map[string]listQ{
			"pageSize 101":        {PageSize: ptr(101)},
			"a made-up pageToken": {PageToken: "not-a-token"},
			"historyLength -1":    {History: ptr(-1)},
		} {
			_, err := e.b.List(t, cx, q)
			wantErr(t, err, "INVALID_PARAMS", what)
		}
	}},

	{"stream multi-turn", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("ask")
		s, err := e.b.Stream(t, cx, "hi", sendOpts{})
		noErr(t, err, "turn 1")
		first := s.All(t)
		require.NotEmpty(t, first)
		requireTaskEvents(t, first, first[0].TaskID, true, "TASK_STATE_INPUT_REQUIRED")
		assert.Contains(t, first[len(first)-1].Text, agents.Question, "the stream closes at input-required with the question")
		taskID, ctxID := first[0].TaskID, first[0].Task.ContextID
		s, err = e.b.Stream(t, cx, "Grace", sendOpts{TaskID: taskID, ContextID: ctxID})
		noErr(t, err, "turn 2")
		second := s.All(t)
		requireTaskEvents(t, second, taskID, true, "TASK_STATE_COMPLETED")
		assert.Contains(t, strings.Join(eventChunks(second), ""), "Hello, Grace!")
	}},

	{"cancel ends the stream", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		s, err := e.b.Stream(t, cx, "chunks=100 delay=100ms", sendOpts{})
		noErr(t, err, "stream")
		head, ok := s.Next(t)
		require.True(t, ok)
		require.Equal(t, "task", head.Kind)
		canceled, err := e.b.Cancel(t, cx, head.TaskID)
		noErr(t, err, "cancel")
		assert.Equal(t, "TASK_STATE_CANCELED", canceled.State)
		rest := s.All(t)
		requireTaskEvents(t, append([]bEvent{head}, rest...), head.TaskID, true, "TASK_STATE_CANCELED")
	}},

	{"resume by repeating the streaming send", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		o := sendOpts{MessageID: "again-" + uuid.NewString(), ContextID: uuid.NewString()}
		s, err := e.b.Stream(t, cx, "chunks=5 delay=60ms", o)
		noErr(t, err, "stream")
		var seen []bEvent
		for len(seen) < 3 {
			ev, ok := s.Next(t)
			require.True(t, ok, "the stream ended early")
			seen = append(seen, ev)
		}
		s.Close()
		last := seen[len(seen)-1].ID
		require.NotEmptyf(t, last, "%s gives stream events no id to resume after", e.col.name)
		s, err = e.b.Stream(t, cx.with("Last-Event-ID", last), "chunks=5 delay=60ms", o)
		noErr(t, err, "the same send again, after "+last)
		rest := s.All(t)
		require.NotEmpty(t, rest)
		assert.NotEqual(t, "task", rest[0].Kind, "it resumes after Last-Event-ID")
		all := append(append([]bEvent{}, seen...), rest...)
		requireTaskEvents(t, all, seen[0].TaskID, true, "TASK_STATE_COMPLETED")
		assert.Equal(t, wantChunks(5), eventChunks(all))
		assert.Equal(t, 1, len(e.tasksIn(t, cx, o.ContextID)), "the repeated send made no second task")
	}},

	{"push config in the send", true, func(t *testing.T, e *bEnv) {
		cx := e.alice("slow")
		path := "/" + url.PathEscape(e.col.name) + "/inline-" + uuid.NewString()
		p := &bPush{ID: "inline", URL: e.rcv.URL + path, Token: "tok-inline"}
		tk, err := e.b.Send(t, cx, "chunks=2 delay=50ms", sendOpts{NonBlocking: true, Push: p})
		noErr(t, err, "send with a push config")
		hit := e.rcv.waitState(t, e.b.dialect(), path, tk.ID, e.b.dialect().completed)
		assert.Equal(t, "tok-inline", hit.Header.Get("X-A2A-Notification-Token"))
		got, err := e.b.GetPush(t, cx, tk.ID, "inline")
		noErr(t, err, "get the send's config")
		assert.Equal(t, p.URL, got.URL)

		// A receiver the edge does not trust is refused, in the send and
		// through the config methods.
		untrusted := bPush{ID: "x", URL: "http://198.51.100.7/hook", TaskID: tk.ID}
		_, err = e.b.Send(t, cx, "x", sendOpts{Push: &untrusted})
		wantErr(t, err, "INVALID_PARAMS", "a send with an untrusted receiver")
		_, err = e.b.CreatePush(t, cx, untrusted)
		wantErr(t, err, "INVALID_PARAMS", "a config with an untrusted receiver")
	}},

	{"extended card", true, func(t *testing.T, e *bEnv) {
		// echo registers an extended card with one more skill than its
		// public card; the auth file lets alice see it and not bob.
		c, err := e.b.ExtendedCard(t, e.alice("echo"))
		noErr(t, err, "alice's GetExtendedAgentCard")
		assert.Equal(t, "echo", c.Name)
		assert.Equal(t, []string{"echo", agents.EchoDataSkill}, c.Skills, "alice sees the extra skill")
		assert.True(t, c.Extended, "the extended card says it is one")
		require.NotEmpty(t, c.URLs)
		for _, u := range c.URLs {
			assert.NotEmpty(t, u, "every interface points at the edge")
		}
		if e.col.name != "grpc" { // HTTP answers point at the host asked
			assert.Contains(t, c.URLs, e.m.URL+"/agents/echo")
		}
		c, err = e.b.ExtendedCard(t, e.bob("echo"))
		noErr(t, err, "bob's GetExtendedAgentCard")
		assert.Equal(t, []string{"echo"}, c.Skills, "bob's auth line hides the extra skill (skills=-)")

		// Without credentials: the auth refusal every call gets.
		_, err = e.b.ExtendedCard(t, bCall{agent: "echo"})
		require.NotNil(t, err, "no credentials")
		assert.True(t, err.Unauth, "no credentials: %s", err)

		// slow declares no extended card; "xcard-none" declares one and
		// registered none.
		_, err = e.b.ExtendedCard(t, e.alice("slow"))
		wantErr(t, err, "UNSUPPORTED_OPERATION", "an agent without the capability")
		assert.Equal(t, -32004, err.Code, "%s", err)
		_, err = e.b.ExtendedCard(t, e.alice(xcardNone))
		wantErr(t, err, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "declared, not configured")
		assert.Equal(t, -32007, err.Code, "%s", err)
	}},

	{"tenant isolation", true, func(t *testing.T, e *bEnv) {
		tk, err := e.b.Send(t, e.alice("echo"), "echo's", sendOpts{})
		noErr(t, err, "send")
		_, err = e.b.Get(t, e.alice("echo"), tk.ID, nil)
		noErr(t, err, "get through its agent")
		for _, other := range []string{"slow", "ask"} {
			_, err = e.b.Get(t, e.alice(other), tk.ID, nil)
			wantErr(t, err, "TASK_NOT_FOUND", "get echo's task via "+other)
			_, err = e.b.Cancel(t, e.alice(other), tk.ID)
			wantErr(t, err, "TASK_NOT_FOUND", "cancel echo's task via "+other)
			_, err = e.b.Subscribe(t, e.alice(other), tk.ID)
			wantErr(t, err, "TASK_NOT_FOUND", "subscribe to echo's task via "+other)
		}
	}},
}

// startBindingsMesh starts the suite's mesh: API keys for alice and bob,
// push delivery trusting receivers on 127.0.0.1, and the gRPC listener.
func startBindingsMesh(t *testing.T) (*rawMesh, []bColumn) {
	t.Helper()
	creds, err := edge.ParseAuthText("alice " + aliceKey + "\nbob " + bobKey + " skills=-\n")
	require.NoError(t, err)
	auth, err := edge.NewAuthFrom(creds)
	require.NoError(t, err)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Push = pushConfig("127.0.0.1")
	}), bindingsGRPCOption())
	publishXCardNone(t, m)
	cols := []bColumn{
		{name: "jsonrpc", b: v1Binding{w: jsonrpcWire{m: m}}},
		{name: "jsonrpc-0.3", b: v03Binding{w: jsonrpcWire{m: m}}},
		{name: "rest", b: v1Binding{w: restWire{m: m, contentType: "application/a2a+json"}}},
		{name: "rest-tenant", b: v1Binding{w: restWire{m: m, byTenant: true, subscribeGET: true, contentType: "application/json"}}, bearer: true},
		{name: "grpc", b: v1Binding{w: grpcWire{cli: bindingsGRPCClient(t, m)}}},
	}
	return m, cols
}

func TestBindings(t *testing.T) {
	m, cols := startBindingsMesh(t)
	rcv := newReceiver(t)
	for _, c := range bindingCases {
		t.Run(c.name, func(t *testing.T) {
			for _, col := range cols {
				if col.b.dialect().name == v03.name && !c.v03 {
					continue
				}
				t.Run(col.name, func(t *testing.T) {
					c.run(t, &bEnv{col: col, b: col.b, m: m, rcv: rcv})
				})
			}
		})
	}
}
