package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"go.opentelemetry.io/otel/trace"
)

// call is one JSON-RPC call being served.
type call struct {
	w       http.ResponseWriter
	r       *http.Request
	req     *a2a.Request
	op      a2a.Op
	version a2a.Version
	// agent is the agent the call addresses; pinned is true when the
	// client named it (path or tenant), so tasks of other agents are not
	// visible through it.
	agent  string
	pinned bool
	owner  string
	// routed is the task an unpinned call was routed to the agent of
	// (routeByTask); loadTask uses it once instead of reading it again.
	routed *bus.TaskRecord
	log    *slog.Logger
	// span is the call's server span (tracing.go).
	span     trace.Span
	spanTask string // the task noted on span
}

func (e *Edge) serveRPC(w http.ResponseWriter, r *http.Request) {
	w, counted := e.countRequest(w)
	defer counted()
	var principal string
	if e.cfg.Auth != nil {
		p, ok := e.cfg.Auth.Authenticate(r)
		if !ok {
			unauthorized(w)
			return
		}
		principal = p
	}
	if !e.allow(w, r, principal) {
		return
	}
	if r.ContentLength > e.cfg.MaxBodyBytes {
		e.writeRPC(w, http.StatusRequestEntityTooLarge, a2a.NewError(nil,
			a2a.ErrInvalidRequest.With("request body exceeds %d bytes", e.cfg.MaxBodyBytes)))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, e.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			e.writeRPC(w, http.StatusRequestEntityTooLarge, a2a.NewError(nil,
				a2a.ErrInvalidRequest.With("request body exceeds %d bytes", e.cfg.MaxBodyBytes)))
			return
		}
		e.writeRPC(w, http.StatusBadRequest, a2a.NewError(nil, a2a.ErrInvalidRequest.With("could not read request body")))
		return
	}
	if !utf8.Valid(body) {
		// RFC 8259 JSON is UTF-8; decoding would silently replace the bad
		// bytes, so reject the body as unparseable instead.
		e.writeRPC(w, http.StatusOK, a2a.NewError(nil, a2a.ErrParse.With("Invalid JSON payload: not valid UTF-8")))
		return
	}
	hv := r.Header.Get("A2A-Version")
	if hv == "" {
		hv = r.URL.Query().Get("A2A-Version")
	}
	req, rpcErr := a2a.ParseRequest(body)
	var id json.RawMessage
	if req != nil {
		id = req.ID
	}
	if rpcErr != nil {
		if rpcErr.Code == a2a.CodeParseError && !jsonContentType(r.Header.Get("Content-Type")) {
			// The body is not JSON because the client sent another
			// media type: say that, not that its JSON is broken.
			rpcErr = a2a.ErrContentTypeNotSupported.With("Incompatible content types: Content-Type %s is not supported; send application/json",
				quoteTrunc(r.Header.Get("Content-Type")))
		}
		e.writeRPC(w, http.StatusOK, earlyError(hv, id, rpcErr))
		return
	}
	op, mv, ok := a2a.LookupMethod(req.Method)
	if !ok {
		e.writeRPC(w, http.StatusOK, earlyError(hv, id, a2a.ErrMethodNotFound.With("Method not found: %s", trunc(req.Method, 64))))
		return
	}
	noteMethod(w, req.Method)
	ctx, span := startCallSpan(r, req)
	defer span.End()
	r = r.WithContext(ctx)
	c := &call{w: w, r: r, req: req, op: op, version: mv, owner: principal, span: span}
	version, rpcErr := a2a.NegotiateVersion(mv, hv)
	if rpcErr != nil {
		e.writeError(c, rpcErr)
		return
	}
	c.version = version
	if rpcErr := e.resolveAgent(c); rpcErr != nil {
		e.writeError(c, rpcErr)
		return
	}
	c.log = e.log.With("method", req.Method, "agent", c.agent)
	c.traced()
	e.dispatch(c)
}

// resolveAgent picks the agent a call addresses: the path's, else the
// tenant param's, else, for a call on a task (GetTask, CancelTask,
// SubscribeToTask, the push-config methods, a send whose message names a
// taskId) the agent of that task, else the default agent. Sends need a
// live agent; task calls only need a name to scope by.
//
// Task ids are unique across the mesh, so the mesh endpoint (/a2a without
// a tenant) finds a task whichever agent owns it; an endpoint that names
// its agent (/agents/{name}, or the tenant field) sees only that agent's
// tasks. The task must still belong to the caller: a task of another
// principal leaves the call on the default agent, where the handler
// answers "Task not found" as for any task it cannot see.
func (e *Edge) resolveAgent(c *call) *a2a.Error {
	if name := c.r.PathValue("name"); name != "" {
		c.agent, c.pinned = name, true
	} else {
		var t struct {
			Tenant string `json:"tenant"`
		}
		if len(c.req.Params) > 0 {
			_ = json.Unmarshal(c.req.Params, &t)
		}
		if t.Tenant != "" {
			c.agent, c.pinned = t.Tenant, true
		} else {
			c.agent = e.cfg.DefaultAgent
			if err := e.routeByTask(c); err != nil {
				return err
			}
		}
	}
	if c.agent != "" && !bus.ValidToken(c.agent) {
		return a2a.ErrInvalidParams.With("unknown agent %q", trunc(c.agent, 64))
	}
	if c.op == a2a.OpSend || c.op == a2a.OpStream {
		if c.agent == "" {
			return errNoDefaultAgent
		}
		if _, ok := e.reg.Lookup(c.agent); !ok {
			if !e.reg.Loaded() {
				// Not "unknown": this edge has not read the registry yet.
				return errRegistryLoading
			}
			if !c.pinned && c.routed == nil {
				return a2a.ErrInvalidParams.With("the default agent of this edge, %q, has no live worker: "+
					"POST to /agents/<name> or name the agent in the tenant field (GET /agents lists the live agents)", c.agent)
			}
			return a2a.ErrInvalidParams.With("unknown agent %q: no live worker serves it", c.agent)
		}
	}
	return nil
}

// errNoDefaultAgent answers a send on the mesh endpoint of an edge run
// without a default agent when it names no agent. It is -32602 (invalid
// params), not -32601: the method exists and works once the agent is
// named, by the tenant param or by the endpoint.
var errNoDefaultAgent = a2a.ErrInvalidParams.With("this edge has no default agent: POST to /agents/<name>, " +
	"or name the agent in the tenant field (GET /agents lists the live agents)")

// routeByTask points an unpinned call on a task at the task's agent: it
// reads the task the call names, and when the caller owns it, the call
// addresses its agent (and the handler reuses the record). A task that
// does not exist, or is another principal's, leaves the call as it was.
func (e *Edge) routeByTask(c *call) *a2a.Error {
	id := taskOfCall(c)
	if id == "" || !bus.ValidToken(id) {
		return nil
	}
	rec, err := e.readTask(c.r.Context(), id)
	switch {
	case errors.Is(err, bus.ErrTaskNotFound):
		return nil
	case err != nil:
		return rpcError(err)
	case rec.Owner != c.owner:
		return nil
	}
	c.agent, c.routed = rec.Agent, rec
	return nil
}

// taskOfCall is the id of the existing task a call is about ("" for none):
// the task of GetTask, CancelTask, SubscribeToTask and the push-config
// methods, and the taskId of a send's message. Params are decoded as
// their handlers decode them (both protocol versions); a decode error is
// left to the handler to report.
func taskOfCall(c *call) string {
	if len(c.req.Params) == 0 {
		return ""
	}
	switch c.op {
	case a2a.OpGet:
		var p a2a.GetTaskRequest
		_ = json.Unmarshal(c.req.Params, &p)
		return p.ID
	case a2a.OpCancel, a2a.OpSubscribe:
		var p a2a.TaskIDRequest
		_ = json.Unmarshal(c.req.Params, &p)
		return p.ID
	case a2a.OpPushSet:
		var p a2a.TaskPushNotificationConfig
		_ = json.Unmarshal(c.req.Params, &p)
		return p.TaskID
	case a2a.OpPushGet, a2a.OpPushList, a2a.OpPushDelete:
		var p pushIDParams
		_ = json.Unmarshal(c.req.Params, &p)
		if c.version == a2a.V10 {
			return p.TaskID // 1.0 names the task by taskId only (push.go)
		}
		id, _ := p.ids()
		return id
	case a2a.OpSend, a2a.OpStream:
		var p a2a.SendMessageRequest
		if json.Unmarshal(c.req.Params, &p) != nil || p.Message == nil {
			return ""
		}
		return p.Message.TaskID
	}
	return ""
}

func (e *Edge) dispatch(c *call) {
	var (
		result any
		err    error
	)
	defer c.logServed(time.Now(), &err)
	if c.op.Streaming() {
		defer e.cfg.Metrics.SSEOpened()()
	}
	switch c.op {
	case a2a.OpSend:
		result, err = e.send(c)
	case a2a.OpStream:
		err = e.stream(c)
	case a2a.OpGet:
		result, err = e.getTask(c)
	case a2a.OpList:
		result, err = e.listTasks(c)
	case a2a.OpCancel:
		result, err = e.cancelTask(c)
	case a2a.OpSubscribe:
		err = e.subscribe(c)
	case a2a.OpPushSet, a2a.OpPushGet, a2a.OpPushList, a2a.OpPushDelete:
		result, err = e.pushConfigCall(c) // push.go
	case a2a.OpExtendedCard:
		err = a2a.ErrExtendedCardNotConfigured
	default:
		err = a2a.ErrMethodNotFound
	}
	if errors.Is(err, errStreamStarted) {
		return
	}
	if err != nil && c.r.Context().Err() != nil {
		// The client went away (closed the connection, or its deadline
		// passed): whatever failed failed for that, and no one reads an
		// answer. Not an error of the edge.
		c.log.Debug("client gone before the answer", "err", err)
		return
	}
	if err != nil {
		rerr := rpcError(err)
		if rerr.Code == a2a.CodeInternalError {
			c.log.Error("request failed", "err", err)
		}
		e.writeError(c, rerr)
		return
	}
	e.writeRPC(c.w, http.StatusOK, a2a.NewResult(c.req.ID, result))
}

// errRegistryLoading answers a send that names an agent the edge's
// registry table cannot vouch for yet: it has not loaded the registry
// (the edge is starting, or NATS is electing a leader for the bucket).
var errRegistryLoading = a2a.ErrServerBusy.With("this edge is starting: the agent registry is not loaded yet; retry shortly")

// rpcError is the JSON-RPC error a call's failure is answered with. An
// error of the bus that is JetStream being briefly unavailable (no leader,
// no answer) is -32000 "retry", never -32603: the client's retry will
// likely succeed once the failover is over.
//
// A write JetStream refused for lack of storage is -32000 too, saying the
// store is full: retrying at once will not help, later will.
func rpcError(err error) *a2a.Error {
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return a2a.AsError(err)
	}
	if bus.IsStorageFull(err) {
		return a2a.AsError(bus.ErrStoreFull)
	}
	if bus.IsTransient(err) {
		return bus.ErrUnavailable
	}
	return a2a.AsError(err)
}

// logServed writes the call's access line at debug level: method, agent,
// task, trace id (all on c.log by now), outcome and duration.
func (c *call) logServed(start time.Time, err *error) {
	if !c.log.Enabled(c.r.Context(), slog.LevelDebug) {
		return
	}
	code := 0
	if *err != nil && !errors.Is(*err, errStreamStarted) {
		code = a2a.AsError(*err).Code
	}
	c.log.Debug("call served", "code", code, "duration_ms", float64(time.Since(start).Microseconds())/1000)
}

// writeError answers a call with an error. Clients read a stream call's
// answer as SSE whatever its content type (the 0.3 JS client, the Go SDK in
// both versions): there an error must be an event of its own to keep its
// code, whether it arises in the handler or before it (version, agent).
func (e *Edge) writeError(c *call, rerr *a2a.Error) {
	c.failed(rerr)
	noteCode(c.w, rerr.Code)
	if c.op.Streaming() {
		_ = newSSE(c).event(0, c.errorResponse(rerr))
		return
	}
	e.writeRPC(c.w, http.StatusOK, c.errorResponse(rerr))
}

// errorResponse is the error answer to the call: in 1.0 its data carries
// the google.rpc.ErrorInfo the spec asks for (§9.5); 0.3 clients read data
// as an object, so theirs has none.
func (c *call) errorResponse(rerr *a2a.Error) *a2a.Response {
	if c.version == a2a.V10 {
		rerr = rerr.WithErrorInfo()
	}
	return a2a.NewError(c.req.ID, rerr)
}

// errStreamStarted means the SSE response was written (and ended) by the
// handler; nothing more to send.
var errStreamStarted = errors.New("stream started")

func (e *Edge) writeRPC(w http.ResponseWriter, status int, resp *a2a.Response) {
	writeJSON(w, status, resp)
}

// encode shapes a result for the call's protocol version.
func (c *call) encodeTask(t *a2a.Task) any {
	if c.version == a2a.V03 {
		return t.ToV03()
	}
	return t
}

func (c *call) encodeEvent(ev *a2a.StreamResponse) any {
	if c.version == a2a.V03 {
		return ev.ToV03()
	}
	return ev
}

// loadTask loads a task visible to the call: it exists, belongs to the
// caller, and to the addressed agent when one was named.
func (e *Edge) loadTask(ctx context.Context, c *call, id string) (*bus.TaskRecord, error) {
	if id == "" {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: id is required")
	}
	var (
		rec *bus.TaskRecord
		err error
	)
	if c.routed != nil && c.routed.Task.ID == id {
		rec, c.routed = c.routed, nil // read by routeByTask an instant ago
	} else {
		rec, err = e.readTask(ctx, id)
	}
	if errors.Is(err, bus.ErrTaskNotFound) {
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64))
	}
	if err != nil {
		return nil, err
	}
	if rec.Owner != c.owner || (c.pinned && rec.Agent != c.agent) {
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64))
	}
	c.taskTraced(rec)
	return rec, nil
}

// readTask loads a task, riding out a failover: a transient error of the
// bus is retried within the failover budget (the last error is returned
// past it, which the caller answers with -32000).
func (e *Edge) readTask(ctx context.Context, id string) (*bus.TaskRecord, error) {
	start := time.Now()
	wait := 100 * time.Millisecond
	var (
		rec *bus.TaskRecord
		err error
	)
	for attempt := 0; attempt < 100; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attempt > 0 { // a retry ends with the budget (the bus's own reads retry too)
			actx, cancel = context.WithDeadline(ctx, start.Add(e.failoverBudget()))
		}
		rec, err = e.bus.LoadTask(actx, id)
		cancel()
		if err == nil || !bus.IsTransient(err) || errors.Is(err, bus.ErrUnavailable) || // the bus rode out its own budget already
			ctx.Err() != nil || time.Since(start)+wait >= e.failoverBudget() {
			return rec, err
		}
		if attempt == 0 {
			e.log.Warn("task read failed; retrying through the failover", "task_id", trunc(id, 64), "err", err)
		}
		if !bus.Sleep(ctx, bus.Jitter(wait)) {
			break
		}
		wait = min(2*wait, time.Second)
	}
	return rec, err
}

// earlyError answers a request that failed before its method fixed the
// protocol version: with 1.0 error details when the A2A-Version header
// names 1.x.
func earlyError(versionHeader string, id json.RawMessage, rerr *a2a.Error) *a2a.Response {
	if v := strings.TrimSpace(versionHeader); v == "1" || strings.HasPrefix(v, "1.") {
		rerr = rerr.WithErrorInfo()
	}
	return a2a.NewError(id, rerr)
}

// jsonContentType reports whether a request's Content-Type may carry a
// JSON-RPC body: JSON types, and none or curl's form default, which
// clients send for JSON bodies too.
func jsonContentType(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch {
	case mt == "application/json", mt == "application/json-rpc", mt == "application/jsonrequest",
		mt == "application/x-www-form-urlencoded", strings.HasSuffix(mt, "+json"):
		return true
	}
	return false
}

func quoteTrunc(s string) string {
	return strconv.Quote(trunc(s, 64))
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func historyLen(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
