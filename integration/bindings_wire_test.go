package integration

// The wire clients of the cross-binding suite (bindings_test.go). Each
// speaks one binding straight on the wire, written here from the spec
// rather than with the repo's client or an SDK: JSON-RPC envelopes posted
// to /agents/{name}; HTTP+JSON requests to the REST routes (§11.3) under
// /agents/{name} or /{tenant}; gRPC calls through the generated
// a2apb.A2AServiceClient with the tenant field. All three 1.0 bindings
// share the ProtoJSON shapes of a2a.proto, so a request is built once as a
// JSON object and each wire carries it its own way (gRPC parses it into
// the request message with protojson); what comes back is the same JSON,
// decoded once. Errors come back as bErr: the A2A reason each binding
// carries (JSON-RPC: the code; HTTP+JSON and gRPC: the google.rpc.ErrorInfo
// detail) plus the binding's own status, checked against the spec's
// mapping table (§5.4) here, so a case only says which A2A error it wants.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	pb "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2amesh/a2amesh/a2a"
)

// bCall says who calls which agent: the agent the binding routes to and
// the request headers (gRPC: metadata, lower-cased) such as X-Api-Key,
// A2A-Version and Last-Event-ID.
type bCall struct {
	agent string
	hdr   map[string]string
}

// with returns a copy of c with header k set to v ("" removes it).
func (c bCall) with(k, v string) bCall {
	h := make(map[string]string, len(c.hdr)+1)
	for hk, hv := range c.hdr {
		if !strings.EqualFold(hk, k) {
			h[hk] = hv
		}
	}
	if v != "" {
		h[k] = v
	}
	return bCall{agent: c.agent, hdr: h}
}

// to returns a copy of c calling agent.
func (c bCall) to(agent string) bCall { c.agent = agent; return c }

// bErr is an error as a binding reported it.
type bErr struct {
	// Reason is the A2A error (google.rpc.ErrorInfo reason, for JSON-RPC
	// the reason of its code): TASK_NOT_FOUND, INVALID_PARAMS, ...
	Reason string
	// Unauth is the binding's refusal of a caller without valid
	// credentials (HTTP 401, gRPC UNAUTHENTICATED).
	Unauth  bool
	Code    int        // JSON-RPC error code
	HTTP    int        // HTTP status (JSON-RPC, HTTP+JSON)
	GRPC    codes.Code // gRPC status code
	Message string
	Wire    string // what came back, for failure messages
}

func (e *bErr) String() string {
	if e == nil {
		return "<no error>"
	}
	return fmt.Sprintf("reason=%q unauth=%v code=%d http=%d grpc=%s msg=%q wire=%s", e.Reason, e.Unauth, e.Code, e.HTTP, e.GRPC, e.Message, trimBody([]byte(e.Wire)))
}

// bFrame is one event of a stream: its event id (SSE id; "" if none),
// its payload (a 1.0 StreamResponse, or a 0.3 result) or an error.
type bFrame struct {
	ID  string
	Raw json.RawMessage
	Err *bErr
}

// bStream is an open stream. next returns false at its end; close drops it.
type bStream struct {
	next  func() (bFrame, bool)
	close func()
}

// wire10 carries 1.0 operations (op is the method name of §5.3, params
// the request as ProtoJSON, without tenant: the wire routes to
// bCall.agent its own way).
type wire10 interface {
	unary(t testing.TB, cx bCall, op string, params map[string]any) (json.RawMessage, *bErr)
	stream(t testing.TB, cx bCall, op string, params map[string]any) (*bStream, *bErr)
}

// a2aStatusOf is the spec's mapping (§5.4) for an ErrorInfo reason: the
// A2A JSON-RPC code, HTTP status and gRPC code the reason must travel with.
func a2aStatusOf(reason string) (code int, st a2a.Status, ok bool) {
	for c := -32700; c <= -32000; c++ {
		s := (&a2a.Error{Code: c}).Status()
		if s.Reason == reason && reason != "" {
			return c, s, true
		}
	}
	return 0, a2a.Status{}, false
}

// ---- JSON-RPC ----

// jsonrpcWire speaks JSON-RPC to /agents/{agent}; methods names the
// dialect's methods (nil: the 1.0 names).
type jsonrpcWire struct {
	m       *rawMesh
	methods map[string]string
	// root posts to /a2a, where the params' tenant (or, without one, the
	// edge's default agent) names the agent.
	root bool
}

func (w jsonrpcWire) path(agent string) string {
	if w.root {
		return "/a2a"
	}
	return "/agents/" + agent
}

func (w jsonrpcWire) method(op string) string {
	if w.methods != nil {
		return w.methods[op]
	}
	return op
}

func (w jsonrpcWire) post(t testing.TB, ctx context.Context, cx bCall, body []byte, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.m.URL+w.path(cx.agent), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for k, v := range cx.hdr {
		req.Header.Set(k, v)
	}
	resp, err := w.m.hc.Do(req)
	require.NoError(t, err, "POST %s", w.path(cx.agent))
	return resp
}

// rpcErr turns a JSON-RPC error object into a bErr; a 1.0 error's
// ErrorInfo, when present, must name the reason of its code.
func rpcErr(t testing.TB, e *rpcError, httpStatus int, wire []byte) *bErr {
	t.Helper()
	st := (&a2a.Error{Code: e.Code}).Status()
	be := &bErr{Reason: st.Reason, Code: e.Code, HTTP: httpStatus, Message: e.Message, Wire: string(wire)}
	var details []errorInfo
	if len(e.Data) > 0 && json.Unmarshal(e.Data, &details) == nil && len(details) > 0 && details[0].Reason != "" {
		require.Equalf(t, st.Reason, details[0].Reason, "JSON-RPC error %d carries ErrorInfo reason %s: %s", e.Code, details[0].Reason, wire)
	}
	return be
}

// refusal401 reads an HTTP 401 answer of any HTTP binding: it must
// challenge the client (WWW-Authenticate) and carry a JSON body.
func refusal401(t testing.TB, resp *http.Response, body []byte) *bErr {
	t.Helper()
	require.NotEmptyf(t, resp.Header.Values("WWW-Authenticate"), "a 401 without a WWW-Authenticate challenge: %s", body)
	require.Truef(t, json.Valid(body), "the 401 body is not JSON: %s", body)
	return &bErr{Unauth: true, HTTP: resp.StatusCode, Wire: string(body)}
}

func (w jsonrpcWire) unary(t testing.TB, cx bCall, op string, params map[string]any) (json.RawMessage, *bErr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	id := w.m.newReqID()
	resp := w.post(t, ctx, cx, rpcBody(t, id, w.method(op), params), "")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, refusal401(t, resp, body)
	}
	r := decodeReply(t, resp, body)
	require.Equalf(t, http.StatusOK, r.Status, "HTTP status of %s: %s", op, body)
	requireEnvelope(t, r)
	require.JSONEq(t, string(id), string(r.ID), "response id")
	if r.Error != nil {
		requireCleanMessage(t, r.Error.Message)
		return nil, rpcErr(t, r.Error, r.Status, body)
	}
	return r.Result, nil
}

func (w jsonrpcWire) stream(t testing.TB, cx bCall, op string, params map[string]any) (*bStream, *bErr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawStreamTimeout)
	id := w.m.newReqID()
	resp := w.post(t, ctx, cx, rpcBody(t, id, w.method(op), params), "text/event-stream")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if resp.StatusCode == http.StatusUnauthorized {
			return nil, refusal401(t, resp, body)
		}
		r := decodeReply(t, resp, body)
		require.NotNilf(t, r.Error, "%s answered JSON without an error: %s", op, body)
		return nil, rpcErr(t, r.Error, r.Status, body)
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSEStream(resp, cancel)
	t.Cleanup(s.Close)
	return &bStream{close: s.Close, next: func() (bFrame, bool) {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return bFrame{}, false
		}
		require.NoError(t, err, "reading SSE")
		var r rpcReply
		require.NoErrorf(t, json.Unmarshal(ev.Data, &r), "SSE data is not JSON: %s", ev.Data)
		require.NoError(t, json.Unmarshal(ev.Data, &r.Keys))
		r.Body = ev.Data
		requireEnvelope(t, &r)
		require.JSONEq(t, string(id), string(r.ID), "SSE frame id member")
		if r.Error != nil {
			return bFrame{ID: ev.ID, Err: rpcErr(t, r.Error, http.StatusOK, ev.Data)}, true
		}
		return bFrame{ID: ev.ID, Raw: r.Result}, true
	}}, nil
}

// ---- HTTP+JSON ----

// restWire speaks HTTP+JSON. byTenant uses the routes at the edge's base
// with the tenant as the first path segment (/{tenant}/message:send);
// otherwise the agent's own base (/agents/{agent}/message:send).
// subscribeGET subscribes with GET (a2a.proto's route) instead of POST
// (the spec text's); contentType labels request bodies.
type restWire struct {
	m            *rawMesh
	byTenant     bool
	subscribeGET bool
	contentType  string
	// root uses the routes at the edge's base without a tenant (the
	// edge's default agent); emptyBodies sends a POST whose request has
	// nothing left for the body (cancel, subscribe) with no body at all,
	// still labelled contentType, as the A2A TCK's client does.
	root, emptyBodies bool
}

func (w restWire) base(agent string) string {
	if w.root {
		return ""
	}
	if w.byTenant {
		return "/" + url.PathEscape(agent)
	}
	return "/agents/" + url.PathEscape(agent)
}

// route maps an operation onto its HTTP method, path, query and body
// (a2a.proto's google.api.http rules: path fields leave the body, GET
// and DELETE carry the rest as camelCase query parameters).
func (w restWire) route(t testing.TB, agent, op string, params map[string]any) (method, path string, body map[string]any) {
	t.Helper()
	rest := map[string]any{}
	for k, v := range params {
		rest[k] = v
	}
	take := func(k string) string {
		v, ok := rest[k]
		require.Truef(t, ok, "%s needs %s", op, k)
		delete(rest, k)
		return url.PathEscape(fmt.Sprint(v))
	}
	query := func() string {
		q := url.Values{}
		for k, v := range rest {
			q.Set(k, fmt.Sprint(v))
		}
		if len(q) == 0 {
			return ""
		}
		return "?" + q.Encode()
	}
	b := w.base(agent)
	switch op {
	case "SendMessage":
		return http.MethodPost, b + "/message:send", rest
	case "SendStreamingMessage":
		return http.MethodPost, b + "/message:stream", rest
	case "GetTask":
		id := take("id")
		return http.MethodGet, b + "/tasks/" + id + query(), nil
	case "ListTasks":
		return http.MethodGet, b + "/tasks" + query(), nil
	case "CancelTask":
		id := take("id")
		return http.MethodPost, b + "/tasks/" + id + ":cancel", rest
	case "SubscribeToTask":
		id := take("id")
		if w.subscribeGET {
			return http.MethodGet, b + "/tasks/" + id + ":subscribe" + query(), nil
		}
		return http.MethodPost, b + "/tasks/" + id + ":subscribe", rest
	case "CreateTaskPushNotificationConfig":
		task := take("taskId")
		return http.MethodPost, b + "/tasks/" + task + "/pushNotificationConfigs", rest
	case "GetTaskPushNotificationConfig":
		task, id := take("taskId"), take("id")
		return http.MethodGet, b + "/tasks/" + task + "/pushNotificationConfigs/" + id + query(), nil
	case "ListTaskPushNotificationConfigs":
		task := take("taskId")
		return http.MethodGet, b + "/tasks/" + task + "/pushNotificationConfigs" + query(), nil
	case "DeleteTaskPushNotificationConfig":
		task, id := take("taskId"), take("id")
		return http.MethodDelete, b + "/tasks/" + task + "/pushNotificationConfigs/" + id + query(), nil
	case "GetExtendedAgentCard":
		return http.MethodGet, b + "/extendedAgentCard" + query(), nil
	}
	t.Fatalf("no HTTP+JSON route for %s", op)
	return "", "", nil
}

func (w restWire) do(t testing.TB, ctx context.Context, cx bCall, op string, params map[string]any, accept string) (*http.Response, string) {
	t.Helper()
	method, path, body := w.route(t, cx.agent, op, params)
	var rd io.Reader
	if body != nil && !(w.emptyBodies && len(body) == 0) {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.m.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", w.contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for k, v := range cx.hdr {
		req.Header.Set(k, v)
	}
	resp, err := w.m.hc.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	return resp, method + " " + path
}

// restStatus is the google.rpc.Status JSON of an HTTP+JSON error.
type restStatus struct {
	Error *struct {
		Code    int             `json:"code"`
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Details []errorInfoJSON `json:"details"`
	} `json:"error"`
}

type errorInfoJSON struct {
	Type   string `json:"@type"`
	Reason string `json:"reason"`
	Domain string `json:"domain"`
}

// restErr reads an HTTP+JSON error answer: google.rpc.Status JSON whose
// code is the HTTP status, with an ErrorInfo whose reason maps (§5.4) to
// that HTTP status and status name.
func restErr(t testing.TB, what string, httpStatus int, body []byte) *bErr {
	t.Helper()
	var st restStatus
	require.NoErrorf(t, json.Unmarshal(body, &st), "%s: error body is not JSON: %s", what, body)
	require.NotNilf(t, st.Error, "%s: error body without an error member: %s", what, body)
	e := st.Error
	be := &bErr{HTTP: httpStatus, Message: e.Message, Wire: string(body)}
	require.Equalf(t, httpStatus, e.Code, "%s: error.code must be the HTTP status: %s", what, body)
	require.NotEmptyf(t, e.Status, "%s: error.status is empty: %s", what, body)
	requireCleanMessage(t, e.Message)
	for _, d := range e.Details {
		require.NotEmptyf(t, d.Type, "%s: a detail without @type: %s", what, body)
		if d.Type == a2a.ErrorInfoType {
			require.Equalf(t, a2a.ErrorDomain, d.Domain, "%s: ErrorInfo domain: %s", what, body)
			be.Reason = d.Reason
		}
	}
	if be.Reason != "" {
		code, want, ok := a2aStatusOf(be.Reason)
		require.Truef(t, ok, "%s: unknown ErrorInfo reason %q: %s", what, be.Reason, body)
		be.Code = code
		require.Equalf(t, want.HTTP, httpStatus, "%s: HTTP status of %s (§5.4): %s", what, be.Reason, body)
		require.Equalf(t, want.GRPC, e.Status, "%s: error.status of %s: %s", what, be.Reason, body)
	}
	return be
}

func (w restWire) unary(t testing.TB, cx bCall, op string, params map[string]any) (json.RawMessage, *bErr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	resp, what := w.do(t, ctx, cx, op, params, "application/json")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, refusal401(t, resp, body)
	}
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode/100 != 2 {
		require.Truef(t, strings.Contains(ct, "json"), "%s: error answered as %q: %s", what, ct, body)
		return nil, restErr(t, what, resp.StatusCode, body)
	}
	if op == "DeleteTaskPushNotificationConfig" && (resp.StatusCode == http.StatusNoContent || len(bytes.TrimSpace(body)) == 0) {
		return json.RawMessage(`{}`), nil
	}
	require.Equalf(t, http.StatusOK, resp.StatusCode, "%s: %s", what, body)
	require.Truef(t, strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "application/a2a+json"), "%s: content type %q", what, ct)
	require.Truef(t, json.Valid(body), "%s: body is not JSON: %s", what, body)
	return body, nil
}

func (w restWire) stream(t testing.TB, cx bCall, op string, params map[string]any) (*bStream, *bErr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawStreamTimeout)
	resp, what := w.do(t, ctx, cx, op, params, "text/event-stream")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if resp.StatusCode == http.StatusUnauthorized {
			return nil, refusal401(t, resp, body)
		}
		require.NotEqualf(t, http.StatusOK, resp.StatusCode, "%s: 200 without a stream: %s", what, body)
		return nil, restErr(t, what, resp.StatusCode, body)
	}
	require.Equal(t, http.StatusOK, resp.StatusCode, what)
	s := newSSEStream(resp, cancel)
	t.Cleanup(s.Close)
	return &bStream{close: s.Close, next: func() (bFrame, bool) {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return bFrame{}, false
		}
		require.NoError(t, err, "reading SSE of %s", what)
		require.Truef(t, json.Valid(ev.Data), "%s: SSE data is not JSON: %s", what, ev.Data)
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(ev.Data, &top))
		if _, isErr := top["error"]; isErr {
			var st restStatus
			require.NoError(t, json.Unmarshal(ev.Data, &st))
			return bFrame{ID: ev.ID, Err: restErr(t, what+" (SSE error event)", st.Error.Code, ev.Data)}, true
		}
		return bFrame{ID: ev.ID, Raw: ev.Data}, true
	}}, nil
}

// ---- gRPC ----

// grpcWire calls lf.a2a.v1.A2AService; the agent travels in the
// request's tenant field, headers as metadata.
type grpcWire struct {
	cli a2apb.A2AServiceClient
}

var pjIn = protojson.UnmarshalOptions{}
var pjOut = protojson.MarshalOptions{}

func (w grpcWire) ctx(cx bCall, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	md := metadata.MD{}
	for k, v := range cx.hdr {
		md.Set(strings.ToLower(k), v)
	}
	return metadata.NewOutgoingContext(ctx, md), cancel
}

// request parses params (plus the tenant) into op's request message.
func (w grpcWire) request(t testing.TB, cx bCall, op string, params map[string]any) pb.Message {
	t.Helper()
	var req pb.Message
	switch op {
	case "SendMessage", "SendStreamingMessage":
		req = &a2apb.SendMessageRequest{}
	case "GetTask":
		req = &a2apb.GetTaskRequest{}
	case "ListTasks":
		req = &a2apb.ListTasksRequest{}
	case "CancelTask":
		req = &a2apb.CancelTaskRequest{}
	case "SubscribeToTask":
		req = &a2apb.SubscribeToTaskRequest{}
	case "CreateTaskPushNotificationConfig":
		req = &a2apb.TaskPushNotificationConfig{}
	case "GetTaskPushNotificationConfig":
		req = &a2apb.GetTaskPushNotificationConfigRequest{}
	case "ListTaskPushNotificationConfigs":
		req = &a2apb.ListTaskPushNotificationConfigsRequest{}
	case "DeleteTaskPushNotificationConfig":
		req = &a2apb.DeleteTaskPushNotificationConfigRequest{}
	case "GetExtendedAgentCard":
		req = &a2apb.GetExtendedAgentCardRequest{}
	default:
		t.Fatalf("no gRPC method for %s", op)
	}
	p := map[string]any{"tenant": cx.agent}
	for k, v := range params {
		p[k] = v
	}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoErrorf(t, pjIn.Unmarshal(b, req), "%s request %s", op, b)
	return req
}

// grpcErr reads a gRPC error: an A2A error carries an ErrorInfo whose
// reason maps (§5.4) to the status code.
func grpcErr(t testing.TB, op string, err error) *bErr {
	t.Helper()
	st, ok := status.FromError(err)
	require.Truef(t, ok, "%s: not a gRPC status: %v", op, err)
	be := &bErr{GRPC: st.Code(), Message: st.Message(), Wire: fmt.Sprintf("%s: %s %v", st.Code(), st.Message(), st.Details())}
	require.NotEqualf(t, codes.Unknown, st.Code(), "%s: status UNKNOWN (a panic or an unmapped error?): %v", op, err)
	if st.Code() == codes.Unauthenticated {
		be.Unauth = true
		return be
	}
	requireCleanMessage(t, st.Message())
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			require.Equalf(t, a2a.ErrorDomain, info.GetDomain(), "%s: ErrorInfo domain", op)
			be.Reason = info.GetReason()
		}
	}
	if be.Reason != "" {
		code, want, ok := a2aStatusOf(be.Reason)
		require.Truef(t, ok, "%s: unknown ErrorInfo reason %q", op, be.Reason)
		be.Code = code
		require.Equalf(t, want.GRPC, strings.ToUpper(codeName(st.Code())), "%s: gRPC code of %s (§5.4)", op, be.Reason)
	}
	return be
}

// codeName is a gRPC code's name as google.rpc.Code spells it.
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

func (w grpcWire) unary(t testing.TB, cx bCall, op string, params map[string]any) (json.RawMessage, *bErr) {
	t.Helper()
	req := w.request(t, cx, op, params)
	ctx, cancel := w.ctx(cx, rawCallTimeout)
	defer cancel()
	var resp pb.Message
	var err error
	switch r := req.(type) {
	case *a2apb.SendMessageRequest:
		resp, err = w.cli.SendMessage(ctx, r)
	case *a2apb.GetTaskRequest:
		resp, err = w.cli.GetTask(ctx, r)
	case *a2apb.ListTasksRequest:
		resp, err = w.cli.ListTasks(ctx, r)
	case *a2apb.CancelTaskRequest:
		resp, err = w.cli.CancelTask(ctx, r)
	case *a2apb.TaskPushNotificationConfig:
		resp, err = w.cli.CreateTaskPushNotificationConfig(ctx, r)
	case *a2apb.GetTaskPushNotificationConfigRequest:
		resp, err = w.cli.GetTaskPushNotificationConfig(ctx, r)
	case *a2apb.ListTaskPushNotificationConfigsRequest:
		resp, err = w.cli.ListTaskPushNotificationConfigs(ctx, r)
	case *a2apb.DeleteTaskPushNotificationConfigRequest:
		resp, err = w.cli.DeleteTaskPushNotificationConfig(ctx, r)
	case *a2apb.GetExtendedAgentCardRequest:
		resp, err = w.cli.GetExtendedAgentCard(ctx, r)
	default:
		t.Fatalf("%s is not a unary gRPC method", op)
	}
	if err != nil {
		return nil, grpcErr(t, op, err)
	}
	b, err := pjOut.Marshal(resp)
	require.NoError(t, err)
	return b, nil
}

// grpcEventIDKey is where a gRPC stream message's event id travels: the
// gRPC binding has no SSE id, so the edge names each message's position
// in the task's event log in the StreamResponse payload's metadata.
const grpcEventIDKey = "a2amesh.eventId"

func (w grpcWire) stream(t testing.TB, cx bCall, op string, params map[string]any) (*bStream, *bErr) {
	t.Helper()
	req := w.request(t, cx, op, params)
	ctx, cancel := w.ctx(cx, rawStreamTimeout)
	var st grpc.ServerStreamingClient[a2apb.StreamResponse]
	var err error
	switch r := req.(type) {
	case *a2apb.SendMessageRequest:
		st, err = w.cli.SendStreamingMessage(ctx, r)
	case *a2apb.SubscribeToTaskRequest:
		st, err = w.cli.SubscribeToTask(ctx, r)
	default:
		t.Fatalf("%s is not a streaming gRPC method", op)
	}
	if err != nil {
		cancel()
		return nil, grpcErr(t, op, err)
	}
	// A server stream reports a refusal at the first Recv: read it now so
	// that a refused call is an error, as in the other bindings.
	first, err := st.Recv()
	if err != nil {
		cancel()
		if errors.Is(err, io.EOF) {
			return &bStream{next: func() (bFrame, bool) { return bFrame{}, false }, close: func() {}}, nil
		}
		return nil, grpcErr(t, op, err)
	}
	t.Cleanup(cancel)
	pending := first
	return &bStream{close: cancel, next: func() (bFrame, bool) {
		msg := pending
		pending = nil
		if msg == nil {
			var err error
			msg, err = st.Recv()
			if errors.Is(err, io.EOF) {
				return bFrame{}, false
			}
			if err != nil {
				return bFrame{Err: grpcErr(t, op, err)}, true
			}
		}
		b, err := pjOut.Marshal(msg)
		require.NoError(t, err)
		return bFrame{ID: grpcEventID(msg), Raw: b}, true
	}}, nil
}

// grpcEventID reads the event id of a gRPC stream message ("" if none).
func grpcEventID(msg *a2apb.StreamResponse) string {
	var md interface {
		GetMetadata() *structpb.Struct
	}
	switch p := msg.GetPayload().(type) {
	case *a2apb.StreamResponse_Task:
		md = p.Task
	case *a2apb.StreamResponse_StatusUpdate:
		md = p.StatusUpdate
	case *a2apb.StreamResponse_ArtifactUpdate:
		md = p.ArtifactUpdate
	case *a2apb.StreamResponse_Message:
		md = p.Message
	}
	if md == nil || md.GetMetadata() == nil {
		return ""
	}
	if v, ok := md.GetMetadata().GetFields()[grpcEventIDKey]; ok {
		switch x := v.GetKind().(type) {
		case *structpb.Value_StringValue:
			return x.StringValue
		case *structpb.Value_NumberValue:
			return strconv.FormatUint(uint64(x.NumberValue), 10)
		}
	}
	return ""
}
