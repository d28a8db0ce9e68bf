package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/lazylog"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/tracing"
)

// The HTTP+JSON binding (spec §11): the A2A operations as resource routes
// (POST /message:send, GET /tasks/{id}, ...), a thin codec over the same
// service as JSON-RPC. Each call decodes its path, query and body into the
// operation's typed request, calls one service method and encodes what it
// returns; errors are google.rpc.Status JSON with the HTTP status of the
// error (a2a.Error.Status).
//
// The routes are served three ways: under an agent, /agents/{name}/<route>
// (the call is pinned to the agent, as JSON-RPC's /agents/{name}); at the
// edge's root, /<route> (the mesh endpoint: the service routes by task or
// to the default agent); and at the root with a tenant,
// /{tenant}/<route>, which sets the request's tenant. Go's ServeMux cannot
// hold /{tenant}/tasks/{id} beside /agents/{name}/..., so the binding
// routes its paths itself (parseRESTPath), behind the mux's catch-all.

// Media types of HTTP+JSON bodies.
const (
	mediaA2AJSON = "application/a2a+json"
	mediaJSON    = "application/json"
)

// restRoute is what a path of the binding names.
type restRoute struct {
	// agent is the {name} of /agents/{name}/...; tenant the {tenant} of
	// /{tenant}/...; both empty at the root.
	agent, tenant string
	op            a2a.Op
	// method is the operation's proto method name (span name, metrics).
	method string
	// taskID and configID are the ids the path names (URL-decoded).
	taskID, configID string
	// template is the route as the spec writes it, with its mount:
	// "/agents/{name}/tasks/{id}:cancel" (the span's http.route).
	template string
	// allow lists the HTTP methods the route takes.
	allow []string
}

// allows reports whether the route takes the HTTP method m (HEAD with
// GET, except on a stream, which a HEAD would hold open with no body).
func (rt *restRoute) allows(m string) bool {
	if m == http.MethodHead {
		if rt.op.Streaming() {
			return false
		}
		m = http.MethodGet
	}
	for _, a := range rt.allow {
		if a == m {
			return true
		}
	}
	return false
}

// parseRESTPath reads an escaped request path as a route of the binding;
// ok is false for a path that is none. /agents/{name}/... is always the
// agent's mount; otherwise the path is a route at the root, or else one
// under a tenant.
func parseRESTPath(escaped string) (rt restRoute, ok bool) {
	p, found := strings.CutPrefix(escaped, "/")
	if !found || p == "" {
		return rt, false
	}
	p = strings.TrimSuffix(p, "/")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return rt, false
		}
		segs[i] = u
	}
	if segs[0] == "agents" {
		if len(segs) < 3 {
			return rt, false
		}
		if !rt.parseOp(segs[2:]) {
			return rt, false
		}
		rt.agent = segs[1]
		rt.template = "/agents/{name}" + rt.template
		return rt, true
	}
	if rt.parseOp(segs) {
		return rt, true
	}
	if len(segs) > 1 && rt.parseOp(segs[1:]) {
		rt.tenant = segs[0]
		rt.template = "/{tenant}" + rt.template
		return rt, true
	}
	return restRoute{}, false
}

// parseOp reads the route segments that follow the mount.
func (rt *restRoute) parseOp(segs []string) bool {
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	set := func(op a2a.Op, method, template string, allow ...string) bool {
		rt.op, rt.method, rt.template, rt.allow = op, method, template, allow
		return true
	}
	switch len(segs) {
	case 1:
		switch segs[0] {
		case "message:send":
			return set(a2a.OpSend, "SendMessage", "/message:send", post)
		case "message:stream":
			return set(a2a.OpStream, "SendStreamingMessage", "/message:stream", post)
		case "tasks":
			return set(a2a.OpList, "ListTasks", "/tasks", get)
		case "extendedAgentCard":
			return set(a2a.OpExtendedCard, "GetExtendedAgentCard", "/extendedAgentCard", get)
		}
		return false
	case 2:
		if segs[0] != "tasks" {
			return false
		}
		// The verb is a suffix of the id segment; an id with another
		// suffix is just an id (no task has one: GetTask says not found).
		if id, verb, ok := cutLast(segs[1], ':'); ok && id != "" {
			switch verb {
			case "cancel":
				rt.taskID = id
				return set(a2a.OpCancel, "CancelTask", "/tasks/{id}:cancel", post)
			case "subscribe":
				// The spec's text says POST, its proto GET: both.
				rt.taskID = id
				return set(a2a.OpSubscribe, "SubscribeToTask", "/tasks/{id}:subscribe", get, post)
			}
		}
		rt.taskID = segs[1]
		return set(a2a.OpGet, "GetTask", "/tasks/{id}", get)
	case 3, 4:
		if segs[0] != "tasks" || segs[2] != "pushNotificationConfigs" {
			return false
		}
		rt.taskID = segs[1]
		if len(segs) == 3 {
			// One route, two operations: the method picks (forMethod).
			return set(a2a.OpPushList, "ListTaskPushNotificationConfigs", "/tasks/{taskId}/pushNotificationConfigs", get, post)
		}
		rt.configID = segs[3]
		return set(a2a.OpPushGet, "GetTaskPushNotificationConfig", "/tasks/{taskId}/pushNotificationConfigs/{id}", get, del)
	}
	return false
}

// forMethod fixes the operation of a route that serves two by HTTP
// method: the push-config collection (list, create) and a config (get,
// delete).
func (rt *restRoute) forMethod(m string) {
	switch {
	case rt.op == a2a.OpPushList && m == http.MethodPost:
		rt.op, rt.method = a2a.OpPushSet, "CreateTaskPushNotificationConfig"
	case rt.op == a2a.OpPushGet && m == http.MethodDelete:
		rt.op, rt.method = a2a.OpPushDelete, "DeleteTaskPushNotificationConfig"
	}
}

func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// restHandler is the HTTP+JSON transport: a path that is no route gets
// 404, a route asked with a method it does not take 405 with Allow (both
// before the middleware, as the mux's own 404 and methodGuard's 405);
// the others go through the edge's middleware to serveREST.
func (e *Edge) restHandler() http.Handler {
	guarded := map[string]http.Handler{
		mediaA2AJSON: e.guard(restRefusals{media: mediaA2AJSON}, http.HandlerFunc(e.serveREST)),
		mediaJSON:    e.guard(restRefusals{media: mediaJSON}, http.HandlerFunc(e.serveREST)),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		media := restMediaType(r.Header.Get("Accept"))
		rt, ok := parseRESTPath(r.URL.EscapedPath())
		if !ok {
			writeRESTStatus(w, media, http.StatusNotFound, "NOT_FOUND", "",
				"no such route: "+trunc(r.URL.Path, 128)+" (the HTTP+JSON routes are /message:send, /message:stream, /tasks, /tasks/{id}, "+
					"/tasks/{id}:cancel, /tasks/{id}:subscribe, /tasks/{id}/pushNotificationConfigs[/{configId}] and /extendedAgentCard, "+
					"at the root, under /{tenant} or under /agents/{name}; JSON-RPC is POST /a2a or /agents/{name})", nil)
			return
		}
		if !rt.allows(r.Method) {
			allow := strings.Join(rt.allow, ", ")
			if r.Method == http.MethodOptions && len(e.cfg.CORSOrigins) > 0 {
				w.Header().Set("Allow", "OPTIONS, "+allow)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Allow", allow)
			writeRESTStatus(w, media, http.StatusMethodNotAllowed, "UNIMPLEMENTED", "",
				"HTTP method "+trunc(r.Method, 16)+" is not allowed on "+rt.template+": use "+strings.Join(rt.allow, " or "), nil)
			return
		}
		guarded[media].ServeHTTP(w, r)
	})
}

// restMediaType is the media type of the JSON answers to a request with
// this Accept header: application/a2a+json (spec §11.1), unless the
// client names application/json and not it (the a2a-go client sends
// Accept: application/json, and reads only application/json error
// bodies), or names neither JSON type nor a range covering them (a stream
// request, Accept: text/event-stream, whose error is then JSON all the
// same): then application/json, which every JSON client reads.
func restMediaType(accept string) string {
	if strings.TrimSpace(accept) == "" {
		return mediaA2AJSON
	}
	var a2aJSON, plainJSON, anyJSON bool
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(q, 64); err == nil && f <= 0 {
				continue
			}
		}
		switch mt {
		case mediaA2AJSON:
			a2aJSON = true
		case mediaJSON:
			plainJSON = true
		case "*/*", "application/*":
			anyJSON = true
		}
	}
	switch {
	case a2aJSON:
		return mediaA2AJSON
	case plainJSON:
		return mediaJSON
	case anyJSON:
		return mediaA2AJSON
	}
	return mediaJSON
}

// restCall is one HTTP+JSON call being served. It shares with JSON-RPC's
// call what the service and the span need (the service.Call, the span and
// its agent and task notes); the request is its route, query and body.
type restCall struct {
	*call
	route restRoute
	media string
	body  []byte
}

// serveREST serves one call on a route of the binding (restHandler
// checked the route and its method).
func (e *Edge) serveREST(w http.ResponseWriter, r *http.Request) {
	rt, _ := parseRESTPath(r.URL.EscapedPath())
	rt.forMethod(r.Method)
	media := restMediaType(r.Header.Get("Accept"))
	var body []byte
	if r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			if bodyTooLarge(w, err, restRefusals{media: media}) {
				return
			}
			writeRESTError(w, media, a2a.ErrInvalidRequest.With("could not read request body"), nil)
			return
		}
		body = b
	}
	noteMethod(w, rt.method)
	ctx, span := startServerSpan(r, rt.method, traceMetadata(rt.op, body, r),
		attribute.String("rpc.system", "http"),
		attribute.String("rpc.method", rt.method),
		attribute.String("http.request.method", r.Method),
		attribute.String("http.route", rt.template),
		attribute.String("url.path", r.URL.Path),
	) // ended by traceCalls
	r = r.WithContext(ctx)
	c := &restCall{call: &call{w: w, r: r, op: rt.op, version: a2a.V10, span: span}, route: rt, media: media, body: body}
	caller := callerFrom(ctx)
	c.sc = &service.Call{Principal: caller.Principal, Grants: caller.Grants, Binding: bindingREST, From: r.RemoteAddr, Agent: rt.agent, Version: a2a.V10, Extensions: requestedExtensions(r.Header),
		Log: lazylog.New(e.log).With("method", rt.method, "binding", "http+json"), OnAgent: c.traced, OnTask: c.taskTraced}
	e.restDispatch(c)
}

// traceMetadata is the metadata of a send's body when it carries the
// caller's trace context (a2a.trace) and the traceparent header does not.
func traceMetadata(op a2a.Op, body []byte, r *http.Request) a2a.Metadata {
	if (op != a2a.OpSend && op != a2a.OpStream) || r.Header.Get(tracing.HeaderTraceparent) != "" ||
		!bytes.Contains(body, []byte(`"`+tracing.MetadataKey+`"`)) {
		return nil
	}
	var p struct {
		Metadata a2a.Metadata `json:"metadata"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Metadata
}

// restDispatch checks the call's version and body, builds the typed
// request of its operation from path, query and body, calls the service
// and encodes what it returns: a JSON answer, an error, or an SSE stream.
func (e *Edge) restDispatch(c *restCall) {
	var (
		result any
		stream service.Stream
		err    error
	)
	defer c.logServed(time.Now(), &err)
	if c.op.Streaming() {
		defer e.cfg.Metrics.SSEOpened()()
	}
	if err = restVersion(c.r); err == nil {
		err = c.checkBody()
	}
	if err == nil {
		result, stream, err = e.restCallService(service.WithCall(c.r.Context(), c.sc), c)
	}
	if err == nil {
		echoExtensions(c.w, a2a.V10, c.sc) // extensions.go
	}
	if err == nil && stream != nil {
		e.writeRESTStream(c, stream)
		return
	}
	if err != nil && c.r.Context().Err() != nil {
		// The client went away: nobody reads an answer (as rpc.go).
		c.sc.Log.Debug("client gone before the answer", "err", err)
		return
	}
	if err != nil {
		c.fail(rpcError(err))
		return
	}
	writeRESTJSON(c.w, c.media, http.StatusOK, result)
}

// restCallService calls the service method of the call's operation with
// the typed request its path, query and body make.
func (e *Edge) restCallService(ctx context.Context, c *restCall) (result any, stream service.Stream, err error) {
	q := restQuery(c.r.URL.Query())
	rt := &c.route
	lastEventID := c.r.Header.Get("Last-Event-ID")
	switch c.op {
	case a2a.OpSend, a2a.OpStream:
		var p a2a.SendMessageRequest
		if err = c.decode(&p); err != nil {
			break
		}
		rt.pinTenant(&p.Tenant)
		if c.op == a2a.OpStream {
			stream, err = e.svc.SendStreamingMessage(ctx, &p, lastEventID)
			break
		}
		var res *a2a.StreamResponse
		if res, err = e.svc.SendMessage(ctx, &p); err == nil {
			result = res
		}
	case a2a.OpGet:
		p := a2a.GetTaskRequest{ID: rt.taskID, Tenant: rt.tenant}
		if p.HistoryLength, err = q.int("historyLength"); err != nil {
			break
		}
		var t *a2a.Task
		if t, err = e.svc.GetTask(ctx, &p); err == nil {
			result = t
		}
	case a2a.OpList:
		var p *a2a.ListTasksRequest
		if p, err = q.listTasks(); err != nil {
			break
		}
		p.Tenant = rt.tenant
		var res *a2a.ListTasksResponse
		if res, err = e.svc.ListTasks(ctx, p); err == nil {
			result = res
		}
	case a2a.OpCancel, a2a.OpSubscribe:
		var p a2a.TaskIDRequest
		if err = c.decode(&p); err != nil {
			break
		}
		if err = pathID(&p.ID, "id", rt.taskID); err != nil {
			break
		}
		rt.pinTenant(&p.Tenant)
		if c.op == a2a.OpSubscribe {
			stream, err = e.svc.SubscribeToTask(ctx, &p, lastEventID)
			break
		}
		var t *a2a.Task
		if t, err = e.svc.CancelTask(ctx, &p); err == nil {
			result = t
		}
	case a2a.OpPushSet:
		var cfg a2a.TaskPushNotificationConfig
		if err = c.decode(&cfg); err != nil {
			break
		}
		if err = pathID(&cfg.TaskID, "taskId", rt.taskID); err != nil {
			break
		}
		rt.pinTenant(&cfg.Tenant)
		var out *a2a.TaskPushNotificationConfig
		if out, err = e.svc.CreateTaskPushNotificationConfig(ctx, &cfg); err == nil {
			result = out
		}
	case a2a.OpPushGet:
		var out *a2a.TaskPushNotificationConfig
		if out, err = e.svc.GetTaskPushNotificationConfig(ctx,
			&service.PushConfigRequest{Tenant: rt.tenant, TaskID: rt.taskID, ID: rt.configID}); err == nil {
			result = out
		}
	case a2a.OpPushList:
		p := service.ListPushConfigsRequest{Tenant: rt.tenant, TaskID: rt.taskID}
		if p.PageSize, err = q.int("pageSize"); err != nil {
			break
		}
		if p.PageToken, err = q.str("pageToken"); err != nil {
			break
		}
		var res *service.ListPushConfigsResponse
		if res, err = e.svc.ListTaskPushNotificationConfigs(ctx, &p); err == nil {
			result = res
		}
	case a2a.OpPushDelete:
		if err = e.svc.DeleteTaskPushNotificationConfig(ctx,
			&service.PushConfigRequest{Tenant: rt.tenant, TaskID: rt.taskID, ID: rt.configID}); err == nil {
			result = struct{}{} // google.protobuf.Empty
		}
	case a2a.OpExtendedCard:
		var card *a2a.AgentCard
		if card, err = e.svc.GetExtendedAgentCard(ctx, &service.GetExtendedAgentCardRequest{Tenant: rt.tenant}); err == nil {
			noStoreExtended(c.w)
			result = e.extendedCard(ctx, e.baseURL(c.r), card)
		}
	default:
		err = a2a.ErrMethodNotFound
	}
	return result, stream, err
}

// pinTenant sets a request's tenant to the path's, when it names one.
func (rt *restRoute) pinTenant(tenant *string) {
	if rt.tenant != "" {
		*tenant = rt.tenant
	}
}

// pathID sets a request's id field from the path; a body naming another
// id is refused.
func pathID(field *string, name, fromPath string) error {
	if *field != "" && *field != fromPath {
		return a2a.ErrInvalidParams.With("Invalid parameters: %s %s in the body does not match %s in the path",
			name, quoteTrunc(*field), quoteTrunc(fromPath))
	}
	*field = fromPath
	return nil
}

// restVersion checks the A2A-Version the call asks for (header, else
// query parameter): none or 1.x is served; the binding has no 0.3 shapes,
// so 0.3 is refused like any version the mesh does not speak.
func restVersion(r *http.Request) error {
	hv := r.Header.Get("A2A-Version")
	if hv == "" {
		hv = r.URL.Query().Get("A2A-Version")
	}
	if _, rerr := a2a.NegotiateVersion(a2a.V10, hv); rerr != nil {
		return rerr
	}
	h := strings.TrimSpace(hv)
	if h == "" || h == "1" || strings.HasPrefix(h, "1.") {
		return nil
	}
	return a2a.ErrVersionNotSupported.With("A2A version %s is not supported over HTTP+JSON; this binding speaks 1.0 (JSON-RPC serves 0.3)", quoteTrunc(h))
}

// checkBody refuses a body that is not JSON: another media type, bytes
// that are not UTF-8, or broken JSON.
func (c *restCall) checkBody() error {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	ct := c.r.Header.Get("Content-Type")
	if !restBodyType(ct) && !(formDefault(ct) && json.Valid(c.body)) {
		return a2a.ErrContentTypeNotSupported.With("Incompatible content types: Content-Type %s is not supported; send %s or %s",
			quoteTrunc(ct), mediaA2AJSON, mediaJSON)
	}
	if !utf8.Valid(c.body) {
		return a2a.ErrParse.With("Invalid JSON payload: not valid UTF-8")
	}
	if !json.Valid(c.body) {
		return a2a.ErrParse.With("Invalid JSON payload: the body is not a JSON object")
	}
	return nil
}

// restBodyType reports whether a request's Content-Type may carry the
// binding's JSON: application/a2a+json, application/json, or none.
// formDefault reports whether ct is curl's default for a body given with
// -d (application/x-www-form-urlencoded): a JSON body sent so is read as
// JSON, as the JSON-RPC transport reads it; a form body is refused.
func formDefault(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

func restBodyType(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == mediaA2AJSON || mt == mediaJSON)
}

// decode reads the call's body (none is {}) into v, as JSON-RPC reads
// params: a bad body is the same *a2a.Error.
func (c *restCall) decode(v any) error {
	if err := a2a.DecodeParams(c.body, v); err != nil {
		return err
	}
	return nil
}

// ---- query parameters (spec §11.5) ----

// restQuery reads the query parameters of a GET: camelCase names (the
// proto's snake_case too), each given once.
type restQuery url.Values

// str is the value of the parameter name ("" when absent); a parameter
// given twice with different values is refused.
func (q restQuery) str(name string) (string, error) {
	vals := q[name]
	if len(vals) == 0 {
		vals = q[snake(name)]
	}
	for _, v := range vals[min(1, len(vals)):] {
		if v != vals[0] {
			return "", a2a.ErrInvalidParams.With("Invalid parameters: query parameter %s is given more than once", name)
		}
	}
	if len(vals) == 0 {
		return "", nil
	}
	return vals[0], nil
}

// int is an integer parameter (nil when absent).
func (q restQuery) int(name string) (*int, error) {
	s, err := q.str(name)
	if err != nil || s == "" {
		return nil, err
	}
	n, perr := strconv.Atoi(strings.TrimSpace(s))
	if perr != nil {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: query parameter %s must be an integer, not %s", name, quoteTrunc(s))
	}
	return &n, nil
}

// bool is a boolean parameter, true or false (nil when absent).
func (q restQuery) bool(name string) (*bool, error) {
	s, err := q.str(name)
	if err != nil || s == "" {
		return nil, err
	}
	var b bool
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		b = true
	case "false":
	default:
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: query parameter %s must be true or false, not %s", name, quoteTrunc(s))
	}
	return &b, nil
}

// listTasks is the ListTasksRequest of the query. statusTimestampAfter
// may also come as lastUpdatedAfter (what the a2a-go client sends).
func (q restQuery) listTasks() (*a2a.ListTasksRequest, error) {
	var (
		p   a2a.ListTasksRequest
		err error
	)
	if p.ContextID, err = q.str("contextId"); err != nil {
		return nil, err
	}
	status, err := q.str("status")
	if err != nil {
		return nil, err
	}
	if status != "" {
		st, ok := a2a.ParseTaskState(status)
		if !ok {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: query parameter status must be a task state such as TASK_STATE_WORKING, not %s", quoteTrunc(status))
		}
		p.Status = st
	}
	if p.PageSize, err = q.int("pageSize"); err != nil {
		return nil, err
	}
	if p.PageToken, err = q.str("pageToken"); err != nil {
		return nil, err
	}
	if p.HistoryLength, err = q.int("historyLength"); err != nil {
		return nil, err
	}
	if p.IncludeArtifacts, err = q.bool("includeArtifacts"); err != nil {
		return nil, err
	}
	for _, name := range []string{"statusTimestampAfter", "lastUpdatedAfter"} {
		s, err := q.str(name)
		if err != nil {
			return nil, err
		}
		if s == "" {
			continue
		}
		if _, terr := a2a.ParseTime(s); terr != nil {
			// A "+" of an offset that was not URL-encoded reads as a space.
			if fixed := strings.ReplaceAll(s, " ", "+"); fixed != s {
				if _, terr = a2a.ParseTime(fixed); terr == nil {
					s = fixed
				}
			}
			if terr != nil {
				return nil, a2a.ErrInvalidParams.With("Invalid parameters: query parameter %s must be an ISO 8601 timestamp such as 2025-11-09T10:30:00Z, not %s", name, quoteTrunc(s))
			}
		}
		p.StatusTimestampAfter = s
		break
	}
	return &p, nil
}

// snake is the proto (snake_case) name of a camelCase parameter.
func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ---- answers ----

// restStatus is a google.rpc.Status as JSON, the binding's error body.
type restStatus struct {
	Error restStatusBody `json:"error"`
}

type restStatusBody struct {
	Code    int             `json:"code"`
	Status  string          `json:"status"`
	Message string          `json:"message"`
	Details []a2a.ErrorInfo `json:"details,omitempty"`
}

// restError is the google.rpc.Status of an A2A error, with its
// google.rpc.ErrorInfo (none for an error without an A2A reason); meta is
// the ErrorInfo's metadata.
func restError(rerr *a2a.Error, meta map[string]string) (int, restStatus) {
	st := rerr.Status()
	return st.HTTP, statusBody(st.HTTP, st.GRPC, st.Reason, rerr.Message, meta)
}

func statusBody(code int, grpc, reason, msg string, meta map[string]string) restStatus {
	s := restStatus{Error: restStatusBody{Code: code, Status: grpc, Message: msg}}
	if reason != "" {
		s.Error.Details = []a2a.ErrorInfo{{Type: a2a.ErrorInfoType, Reason: reason, Domain: a2a.ErrorDomain, Metadata: meta}}
	}
	return s
}

// writeRESTError answers with an A2A error: its HTTP status, and
// Retry-After: 1 for -32000 (the mesh is briefly unavailable: retry).
func writeRESTError(w http.ResponseWriter, media string, rerr *a2a.Error, meta map[string]string) {
	noteCode(w, rerr.Code)
	if rerr.Code == a2a.CodeServerBusy && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	status, body := restError(rerr, meta)
	writeRESTJSON(w, media, status, body)
}

// writeRESTStatus answers with a google.rpc.Status the transport makes
// itself (no route, wrong method, the middleware's refusals).
func writeRESTStatus(w http.ResponseWriter, media string, code int, grpc, reason, msg string, meta map[string]string) {
	writeRESTJSON(w, media, code, statusBody(code, grpc, reason, msg, meta))
}

func writeRESTJSON(w http.ResponseWriter, media string, status int, v any) {
	w.Header().Set("Content-Type", media)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// fail answers the call with an error and marks its span failed.
func (c *restCall) fail(rerr *a2a.Error) {
	c.failedREST(rerr)
	writeRESTError(c.w, c.media, rerr, c.errorMeta())
}

// errorMeta is the ErrorInfo metadata of the call's errors: the task the
// path names.
func (c *restCall) errorMeta() map[string]string {
	if c.route.taskID == "" {
		return nil
	}
	return map[string]string{"taskId": trunc(c.route.taskID, 64)}
}

// failedREST marks the call's span with the error it answers.
func (c *restCall) failedREST(rerr *a2a.Error) {
	if c.span == nil || !c.span.IsRecording() {
		return
	}
	st := rerr.Status()
	c.span.SetAttributes(attribute.Int("http.response.status_code", st.HTTP), attribute.Int("a2a.error.code", rerr.Code))
	if st.Reason != "" {
		c.span.SetAttributes(attribute.String("a2a.error.reason", st.Reason))
	}
	c.span.SetStatus(codes.Error, st.GRPC+" "+strconv.Itoa(rerr.Code))
}

// writeRESTStream answers a streaming call with its stream as SSE: each
// event's data is the StreamResponse JSON itself, with the event-log id;
// an error that ends a started stream is one {"error": google.rpc.Status}
// event without an id.
func (e *Edge) writeRESTStream(c *restCall, stream service.Stream) {
	err := newSSE(c.w).relay(stream,
		func(resp *a2a.StreamResponse) any { return resp },
		func(err error) any {
			rerr := rpcError(err)
			c.failedREST(rerr)
			_, body := restError(rerr, c.errorMeta())
			return body
		})
	if err != nil {
		noteCode(c.w, rpcError(err).Code)
	}
}

// restRefusals are the HTTP+JSON transport's refusals: google.rpc.Status
// bodies in the media type the request accepts.
type restRefusals struct{ media string }

func (restRefusals) binding() string { return bindingREST }

func (f restRefusals) unauthenticated(w http.ResponseWriter, msg string) {
	noteCode(w, codeUnauthenticated)
	writeRESTStatus(w, f.media, http.StatusUnauthorized, "UNAUTHENTICATED", "UNAUTHENTICATED", msg, nil)
}

func (f restRefusals) unavailable(w http.ResponseWriter, msg string) {
	noteCode(w, a2a.CodeServerBusy)
	writeRESTStatus(w, f.media, http.StatusServiceUnavailable, "UNAVAILABLE", "", msg, nil)
}

func (f restRefusals) rateLimited(w http.ResponseWriter, msg string) {
	rerr := &a2a.Error{Code: codeRateLimited, Message: msg}
	noteCode(w, rerr.Code)
	status, body := restError(rerr, nil)
	writeRESTJSON(w, f.media, status, body)
}

func (f restRefusals) tooLarge(w http.ResponseWriter, limit int64) {
	noteCode(w, a2a.CodeInvalidRequest)
	writeRESTStatus(w, f.media, http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED", "INVALID_REQUEST",
		"request body exceeds "+strconv.FormatInt(limit, 10)+" bytes", nil)
}

// restStarting answers a call of the binding while the edge waits for
// NATS (Gate): 503 UNAVAILABLE, retry.
func restStarting(w http.ResponseWriter, r *http.Request) {
	writeRESTError(w, restMediaType(r.Header.Get("Accept")), errEdgeStarting, nil)
}
