package integration

// Regression tests for what the A2A conformance suite (the TCK) sends and
// checks, beyond the protocol tests: its JSON-RPC client posts to the card's
// URL with a trailing slash and spells ListTasks params the proto way; it
// wants 1.0 errors with a google.rpc.ErrorInfo, -32005 for a body of another
// media type, and cacheable agent cards.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// TestTCKTrailingSlashEndpoints: a client that joins "/" onto the card's
// interface URL (httpx base_url, as the TCK does) reaches the same endpoint.
func TestTCKTrailingSlashEndpoints(t *testing.T) {
	m := startRawMesh(t)
	for _, path := range []string{"/a2a/", "/agents/echo/"} {
		t.Run(path, func(t *testing.T) {
			tk := v10.sendTask(t, m.ok(t, path, "SendMessage", sendParams(v10.msg("hello"), nil)))
			assert.Equal(t, v10.completed, tk.Status.State)
			got := m.getTask(t, v10, path, tk.ID, nil)
			assert.Equal(t, tk.ID, got.ID)
			m.fails(t, path, "GetTask", map[string]any{"id": "no-such-task"}, -32001)
		})
	}
	// The card's own URLs keep working, and other paths stay unknown.
	m.ok(t, "/a2a", "ListTasks", map[string]any{})
	status, _, _ := m.getJSON(t, "/a2a/x", nil)
	assert.Equal(t, http.StatusNotFound, status)
}

// TestTCKListTasksSnakeCaseParams: ListTasks reads the proto field names
// (context_id, page_size, page_token, history_length, include_artifacts),
// which ProtoJSON parsers accept besides lowerCamelCase.
func TestTCKListTasksSnakeCaseParams(t *testing.T) {
	m := startRawMesh(t)
	ctxA, ctxB := "tck-ctx-a-"+t.Name(), "tck-ctx-b-"+t.Name()
	var inA []string
	for i := 0; i < 3; i++ {
		tk := v10.sendTask(t, m.ok(t, "/a2a", "SendMessage", sendParams(inTask(v10.msg("in a"), "", ctxA), nil)))
		inA = append(inA, tk.ID)
	}
	v10.sendTask(t, m.ok(t, "/a2a", "SendMessage", sendParams(inTask(v10.msg("in b"), "", ctxB), nil)))

	ids := func(l wList) []string {
		var out []string
		for _, raw := range l.Tasks {
			out = append(out, decodeTask(t, raw).ID)
		}
		return out
	}

	first := m.listTasks(t, map[string]any{"context_id": ctxA, "page_size": 2})
	require.Len(t, first.Tasks, 2, "page_size is honoured")
	assert.Equal(t, 3, *first.TotalSize, "context_id filters")
	require.NotEmpty(t, *first.NextPageToken)
	second := m.listTasks(t, map[string]any{"context_id": ctxA, "page_size": 2, "page_token": *first.NextPageToken})
	require.Len(t, second.Tasks, 1, "page_token continues the listing")
	assert.Empty(t, *second.NextPageToken)
	assert.ElementsMatch(t, inA, append(ids(first), ids(second)...))

	withArt := m.listTasks(t, map[string]any{"context_id": ctxA, "include_artifacts": true, "history_length": 0})
	require.Len(t, withArt.Tasks, 3)
	for _, raw := range withArt.Tasks {
		tk := decodeTask(t, raw)
		assert.NotEmpty(t, tk.Artifacts, "include_artifacts is honoured")
		assert.Empty(t, tk.History, "history_length is honoured")
	}

	// One field under both spellings is refused, as ProtoJSON refuses it.
	m.fails(t, "/a2a", "ListTasks", map[string]any{"contextId": ctxB, "context_id": ctxA}, -32602)

	// Bad values are rejected whatever the spelling.
	m.fails(t, "/a2a", "ListTasks", map[string]any{"page_size": 0}, -32602)
	m.fails(t, "/a2a", "ListTasks", map[string]any{"page_size": "ten"}, -32602)
	m.fails(t, "/a2a", "ListTasks", map[string]any{"history_length": -1}, -32602)
	m.fails(t, "/a2a", "ListTasks", map[string]any{"page_token": "not-a-token"}, -32602)
}

// errorInfo is a google.rpc.ErrorInfo as the 1.0 error data carries it.
type errorInfo struct {
	Type   string `json:"@type"`
	Reason string `json:"reason"`
	Domain string `json:"domain"`
}

func requireErrorInfo(t *testing.T, e *rpcError, reason string) {
	t.Helper()
	require.NotNil(t, e)
	require.NotEmptyf(t, e.Data, "1.0 error %d has no data", e.Code)
	var details []errorInfo
	require.NoErrorf(t, json.Unmarshal(e.Data, &details), "1.0 error data must be an array: %s", e.Data)
	require.Len(t, details, 1)
	assert.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", details[0].Type)
	assert.Equal(t, "a2a-protocol.org", details[0].Domain)
	assert.Equal(t, reason, details[0].Reason)
}

// TestTCKErrorInfo: 1.0 errors carry [google.rpc.ErrorInfo] in data (§9.5);
// 0.3 errors carry no data (0.3 clients read data as an object).
func TestTCKErrorInfo(t *testing.T) {
	m := startRawMesh(t)
	v1 := map[string]string{"A2A-Version": "1.0"}

	requireErrorInfo(t, m.fails(t, "/a2a", "GetTask", map[string]any{"id": "no-such-task"}, -32001, v1), "TASK_NOT_FOUND")
	requireErrorInfo(t, m.fails(t, "/a2a", "GetTask", map[string]any{"id": "no-such-task"}, -32001), "TASK_NOT_FOUND")
	requireErrorInfo(t, m.fails(t, "/a2a", "CancelTask", map[string]any{"id": "no-such-task"}, -32001, v1), "TASK_NOT_FOUND")
	requireErrorInfo(t, m.fails(t, "/a2a", "CreateTaskPushNotificationConfig",
		map[string]any{"taskId": "t1", "url": "https://example.com/hook"}, -32003, v1), "PUSH_NOTIFICATION_NOT_SUPPORTED")
	requireErrorInfo(t, m.fails(t, "/a2a", "SendMessage", map[string]any{"message": map[string]any{}}, -32602, v1), "INVALID_PARAMS")
	requireErrorInfo(t, m.fails(t, "/a2a", "SendMessage", sendParams(v10.msg("x"), nil), -32009,
		map[string]string{"A2A-Version": "99.0"}), "VERSION_NOT_SUPPORTED")
	requireErrorInfo(t, m.fails(t, "/a2a", "NoSuchMethod", map[string]any{}, -32601, v1), "METHOD_NOT_FOUND")

	tk := v10.sendTask(t, m.ok(t, "/a2a", "SendMessage", sendParams(v10.msg("done"), nil)))
	requireErrorInfo(t, m.fails(t, "/a2a", "CancelTask", map[string]any{"id": tk.ID}, -32002, v1), "TASK_NOT_CANCELABLE")

	// A streaming call's error frame carries it too.
	s, _ := m.stream(t, "/a2a", "SubscribeToTask", map[string]any{"id": "no-such-task"}, v1)
	f := s.readFrame(t, v10, nil)
	require.NotNil(t, f)
	require.NotNil(t, f.Reply.Error)
	assert.Equal(t, -32001, f.Reply.Error.Code)
	requireErrorInfo(t, f.Reply.Error, "TASK_NOT_FOUND")

	// A parse error says so when the client named 1.x, and only then.
	r := m.postBody(t, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask"`), v1)
	require.NotNil(t, r.Error)
	assert.Equal(t, -32700, r.Error.Code)
	requireErrorInfo(t, r.Error, "PARSE_ERROR")
	r = m.postBody(t, "/a2a", []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask"`), nil)
	require.NotNil(t, r.Error)
	assert.Empty(t, r.Error.Data)

	// 0.3 errors: no data member.
	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		e := m.fails(t, "/a2a", method, map[string]any{"id": "no-such-task"}, -32001)
		assert.Emptyf(t, e.Data, "%s error must not carry data", method)
	}
	e := m.fails(t, "/a2a", "tasks/pushNotificationConfig/set",
		map[string]any{"taskId": "t1", "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}, -32003)
	assert.Empty(t, e.Data)
}

// TestTCKContentTypeMismatch: a body that is not JSON because it was sent as
// another media type is -32005; a JSON body is served whatever the label,
// and broken JSON labelled as JSON stays a parse error.
func TestTCKContentTypeMismatch(t *testing.T) {
	m := startRawMesh(t)
	// What Python's str() of a request dict looks like: not JSON.
	pyRepr := []byte(`{'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage', 'params': {}}`)
	for _, ct := range []string{"text/plain", "application/xml", "multipart/form-data; boundary=x"} {
		r := m.postBody(t, "/a2a", pyRepr, map[string]string{"Content-Type": ct, "A2A-Version": "1.0"})
		require.NotNilf(t, r.Error, "%s: %s", ct, r.Body)
		assert.Equalf(t, -32005, r.Error.Code, "%s: %s", ct, r.Body)
		requireCleanMessage(t, r.Error.Message)
		requireErrorInfo(t, r.Error, "CONTENT_TYPE_NOT_SUPPORTED")
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/x-www-form-urlencoded"} {
		r := m.postBody(t, "/a2a", pyRepr, map[string]string{"Content-Type": ct})
		require.NotNil(t, r.Error)
		assert.Equalf(t, -32700, r.Error.Code, "%s: %s", ct, r.Body)
	}
	// A JSON body labelled text/plain (fetch() without headers) is served.
	body := rpcBody(t, json.RawMessage("7"), "SendMessage", sendParams(v10.msg("hi"), nil))
	r := m.postBody(t, "/a2a", body, map[string]string{"Content-Type": "text/plain;charset=UTF-8"})
	require.Nilf(t, r.Error, "%s", r.Body)
	assert.Equal(t, v10.completed, v10.sendTask(t, r.Result).Status.State)
}

// TestTCKContentTypeErrorMessage: the -32005 for acceptedOutputModes says
// what it is in the spec's words.
func TestTCKContentTypeErrorMessage(t *testing.T) {
	m := startRawMesh(t)
	for _, p := range bothProtos {
		e := m.fails(t, "/a2a", p.send, sendParams(p.msg("x"),
			map[string]any{"acceptedOutputModes": []string{"application/x-unsupported"}}), -32005)
		msg := strings.ToLower(e.Message)
		for _, w := range []string{"incompatible content types", "not supported", "application/x-unsupported"} {
			assert.Containsf(t, msg, w, "%s: %q", p.name, e.Message)
		}
	}
}

// TestTCKAgentCardCaching: cards carry Cache-Control with max-age and an
// ETag, and a matching If-None-Match gets 304 (spec §8.6.1).
func TestTCKAgentCardCaching(t *testing.T) {
	m := startRawMesh(t)
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json", "/agents/echo/.well-known/agent-card.json"} {
		t.Run(path, func(t *testing.T) {
			status, h, body := m.getJSON(t, path, nil)
			require.Equal(t, http.StatusOK, status)
			assert.Contains(t, h.Get("Cache-Control"), "max-age=")
			etag := h.Get("ETag")
			require.NotEmpty(t, etag)
			assert.True(t, strings.HasPrefix(etag, `"`) && strings.HasSuffix(etag, `"`), "ETag %s must be quoted", etag)
			var card map[string]any
			require.NoError(t, json.Unmarshal(body, &card))
			assert.NotEmpty(t, card["supportedInterfaces"])

			status, h2, body2 := m.getJSON(t, path, nil)
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, etag, h2.Get("ETag"), "an unchanged card keeps its ETag")
			assert.Equal(t, body, body2)

			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				status, h3, body3 := m.getJSON(t, path, map[string]string{"If-None-Match": inm})
				assert.Equalf(t, http.StatusNotModified, status, "If-None-Match %s", inm)
				assert.Empty(t, body3)
				assert.Equal(t, etag, h3.Get("ETag"))
			}
			status, _, body4 := m.getJSON(t, path, map[string]string{"If-None-Match": `"stale"`})
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, body, body4)
		})
	}
}

// TestTCKTransports: the 1.0 TCK (a2a-tck branch 1.0-dev, run with
// `--transport jsonrpc,http_json,grpc`) reads the mesh card at the root
// and takes the first interface of each binding: JSON-RPC at /a2a,
// HTTP+JSON at the edge's base and gRPC at host:port, none with a tenant,
// so every call goes to the default agent (the tck agent, with messageId
// deduplication off, as docs/interop.md runs it). Its clients send
// A2A-Version 1.0 (gRPC: metadata a2a-version), label a POST with no body
// (cancel, subscribe) application/json all the same, list tasks with
// statusTimestampAfter and includeArtifacts=false, and reuse messageIds.
func TestTCKTransports(t *testing.T) {
	m := startRawMesh(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.DefaultAgent = "tck"
		c.Edge.IdempotencyWindow = -1
	}))
	status, _, body := m.getJSON(t, "/.well-known/agent-card.json", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var card wCard
	require.NoError(t, json.Unmarshal(body, &card))
	first := map[string]wInterface{}
	for _, i := range card.SupportedInterfaces {
		if _, ok := first[i.ProtocolBinding]; !ok && i.ProtocolVersion == "1.0" {
			first[i.ProtocolBinding] = i
		}
	}
	assert.Equal(t, wInterface{URL: m.URL + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}, first["JSONRPC"])
	assert.Equal(t, wInterface{URL: m.URL, ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"}, first["HTTP+JSON"])
	assert.Equal(t, wInterface{URL: m.GRPCAddr(), ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}, first["GRPC"],
		"the TCK dials the gRPC url as it stands (grpc.insecure_channel)")

	conn, err := grpc.NewClient(first["GRPC"].URL, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	transports := []struct {
		name string
		b    binding
	}{
		{"jsonrpc", v1Binding{w: jsonrpcWire{m: m, root: true}}},
		{"http_json", v1Binding{w: restWire{m: m, root: true, emptyBodies: true, contentType: "application/json"}}},
		{"grpc", v1Binding{w: grpcWire{cli: a2apb.NewA2AServiceClient(conn)}}},
	}
	cx := bCall{hdr: map[string]string{"A2A-Version": "1.0"}}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			b := tr.b
			id := "tck-complete-task-" + uuid.NewString()[:8]
			tk, err := b.Send(t, cx, "hello", sendOpts{MessageID: id})
			noErr(t, err, "SendMessage")
			assert.Equal(t, "TASK_STATE_COMPLETED", tk.State)
			assert.Equal(t, "Hello from TCK", tk.Status)
			again, err := b.Send(t, cx, "hello", sendOpts{MessageID: id})
			noErr(t, err, "SendMessage with the same messageId")
			assert.NotEqual(t, tk.ID, again.ID, "with deduplication off a reused messageId is a new task")

			got, err := b.Get(t, cx, tk.ID, ptr(0))
			noErr(t, err, "GetTask")
			assert.Equal(t, tk.ID, got.ID)
			_, err = b.Cancel(t, cx, tk.ID)
			wantErr(t, err, "TASK_NOT_CANCELABLE", "CancelTask of a completed task")
			_, err = b.Subscribe(t, cx, tk.ID)
			wantErr(t, err, "UNSUPPORTED_OPERATION", "SubscribeToTask of a completed task")

			l, err := b.List(t, cx, listQ{ContextID: tk.ContextID, After: "2020-01-01T00:00:00Z", NoArtifacts: true, PageSize: ptr(10)})
			noErr(t, err, "ListTasks")
			require.Len(t, l.Tasks, 1)
			assert.Equal(t, tk.ID, l.Tasks[0].ID)
			l, err = b.List(t, cx, listQ{ContextID: tk.ContextID, After: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
			noErr(t, err, "ListTasks after a later time")
			assert.Empty(t, l.Tasks, "statusTimestampAfter filters")

			open, err := b.Send(t, cx, "hello", sendOpts{MessageID: "tck-input-required-" + uuid.NewString()[:8]})
			noErr(t, err, "SendMessage")
			require.Equal(t, "TASK_STATE_INPUT_REQUIRED", open.State)
			canceled, err := b.Cancel(t, cx, open.ID)
			noErr(t, err, "CancelTask")
			assert.Equal(t, "TASK_STATE_CANCELED", canceled.State)

			s, err := b.Stream(t, cx, "hello", sendOpts{MessageID: "tck-stream-001-" + uuid.NewString()[:8]})
			noErr(t, err, "SendStreamingMessage")
			evs := s.All(t)
			require.NotEmpty(t, evs)
			requireTaskEvents(t, evs, evs[0].TaskID, true, "TASK_STATE_COMPLETED")
			assert.Len(t, eventChunks(evs), 1, "one artifact")
		})
	}
}
