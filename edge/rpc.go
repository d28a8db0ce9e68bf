package edge

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/lazylog"
	"github.com/a2amesh/a2amesh/service"
)

// call is one JSON-RPC call being served: the codec's side of it. What
// the service needs of the call (principal, agent of the route, dialect,
// logger) is in sc, which travels to the service in the context.
type call struct {
	w       http.ResponseWriter
	r       *http.Request
	req     *a2a.Request
	op      a2a.Op
	version a2a.Version
	sc      *service.Call
	// span is the call's server span (tracing.go).
	span     trace.Span
	spanTask string // the task noted on span
}

// serveRPC serves one JSON-RPC call: it parses the request, dispatches it
// to the service and encodes the answer. Metrics, authentication, the rate
// limit and the body limit are middleware around it (middleware.go,
// rpcHandler).
func (e *Edge) serveRPC(w http.ResponseWriter, r *http.Request) {
	caller := callerFrom(r.Context())
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if bodyTooLarge(w, err, rpcRefusals{}) {
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
	ctx, span := startCallSpan(r, req) // ended by traceCalls
	r = r.WithContext(ctx)
	c := &call{w: w, r: r, req: req, op: op, version: mv, span: span}
	version, rpcErr := a2a.NegotiateVersion(mv, hv)
	if rpcErr != nil {
		e.writeError(c, rpcErr)
		return
	}
	c.version = version
	c.sc = &service.Call{Principal: caller.Principal, Grants: caller.Grants, Binding: bindingJSONRPC, From: r.RemoteAddr,
		Agent: r.PathValue("name"), Version: version,
		Extensions: requestedExtensions(r.Header), Legacy02: isLegacySend(req.Method), Log: lazylog.New(e.log).With("method", req.Method),
		OnAgent: c.traced, OnTask: c.taskTraced}
	e.dispatch(c)
}

// rpcHandler is the JSON-RPC transport with the edge's middleware.
func (e *Edge) rpcHandler() http.Handler {
	return e.guard(rpcRefusals{}, http.HandlerFunc(e.serveRPC))
}

func isLegacySend(method string) bool {
	return method == "tasks/send" || method == "tasks/sendSubscribe"
}

// dispatch decodes the call's params (once), calls the service's method
// for its operation, and encodes what it returns for the call's protocol
// version: a result, an error, or an SSE stream.
func (e *Edge) dispatch(c *call) {
	var (
		result any
		stream service.Stream
		err    error
	)
	defer c.logServed(time.Now(), &err)
	if c.op.Streaming() {
		defer e.cfg.Metrics.SSEOpened()()
	}
	ctx := service.WithCall(c.r.Context(), c.sc)
	switch c.op {
	case a2a.OpSend, a2a.OpStream:
		var p a2a.SendMessageRequest
		if err = decode(c, &p); err != nil {
			break
		}
		if c.op == a2a.OpStream {
			stream, err = e.svc.SendStreamingMessage(ctx, &p, c.r.Header.Get("Last-Event-ID"))
			break
		}
		var res *a2a.StreamResponse
		if res, err = e.svc.SendMessage(ctx, &p); err == nil {
			result = c.encodeEvent(res) // 1.0 wraps the task, 0.3 is the task itself
		}
	case a2a.OpGet:
		var p a2a.GetTaskRequest
		if err = decode(c, &p); err != nil {
			break
		}
		var t *a2a.Task
		if t, err = e.svc.GetTask(ctx, &p); err == nil {
			result = c.encodeTask(t)
		}
	case a2a.OpList:
		var p a2a.ListTasksRequest
		if err = decode(c, &p); err != nil {
			break
		}
		var res *a2a.ListTasksResponse
		if res, err = e.svc.ListTasks(ctx, &p); err == nil {
			result = *res
		}
	case a2a.OpCancel:
		var p a2a.TaskIDRequest
		if err = decode(c, &p); err != nil {
			break
		}
		var t *a2a.Task
		if t, err = e.svc.CancelTask(ctx, &p); err == nil {
			result = c.encodeTask(t)
		}
	case a2a.OpSubscribe:
		var p a2a.TaskIDRequest
		if err = decode(c, &p); err != nil {
			break
		}
		stream, err = e.svc.SubscribeToTask(ctx, &p, c.r.Header.Get("Last-Event-ID"))
	case a2a.OpPushSet, a2a.OpPushGet, a2a.OpPushList, a2a.OpPushDelete:
		result, err = e.pushConfigCall(ctx, c) // push.go
	case a2a.OpExtendedCard:
		var p service.GetExtendedAgentCardRequest
		if len(c.req.Params) > 0 {
			_ = json.Unmarshal(c.req.Params, &p)
		}
		var card *a2a.AgentCard
		if card, err = e.svc.GetExtendedAgentCard(ctx, &p); err == nil {
			noStoreExtended(c.w)
			result = e.extendedCard(ctx, e.baseURL(c.r), card)
		}
	default:
		err = a2a.ErrMethodNotFound
	}
	if err == nil {
		echoExtensions(c.w, c.version, c.sc) // extensions.go
	}
	if err == nil && stream != nil {
		e.writeStream(c, stream) // sse.go
		return
	}
	if err != nil && c.r.Context().Err() != nil {
		// The client went away (closed the connection, or its deadline
		// passed): whatever failed failed for that, and no one reads an
		// answer. Not an error of the edge.
		c.sc.Log.Debug("client gone before the answer", "err", err)
		return
	}
	if err != nil {
		e.writeError(c, rpcError(err))
		return
	}
	e.writeRPC(c.w, http.StatusOK, a2a.NewResult(c.req.ID, result))
}

// decode reads the call's params into v (an untyped nil error when they
// decode: DecodeParams returns a *a2a.Error).
func decode(c *call, v any) error {
	if err := a2a.DecodeParams(c.req.Params, v); err != nil {
		return err
	}
	return nil
}

// rpcError is the JSON-RPC error a call's failure is answered with
// (service.ToError: a bus failover is -32000, retry; a full store -32000
// saying so; never internal text).
func rpcError(err error) *a2a.Error { return service.ToError(err) }

// logServed writes the call's access line at debug level: method, agent,
// task, trace id (all on c.sc.Log by now), outcome and duration.
func (c *call) logServed(start time.Time, err *error) {
	if c.sc == nil || !c.sc.Log.Enabled(c.r.Context(), slog.LevelDebug) {
		return
	}
	code := 0
	if *err != nil {
		code = a2a.AsError(*err).Code
	}
	c.sc.Log.Debug("call served", "code", code, "duration_ms", float64(time.Since(start).Microseconds())/1000)
}

// writeError answers a call with an error. Clients read a stream call's
// answer as SSE whatever its content type (the 0.3 JS client, the Go SDK in
// both versions): there an error must be an event of its own to keep its
// code, whether it arises in the handler or before it (version, agent).
func (e *Edge) writeError(c *call, rerr *a2a.Error) {
	c.failed(rerr)
	noteCode(c.w, rerr.Code)
	if c.op.Streaming() {
		_ = newSSE(c.w).event(0, c.errorResponse(rerr))
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

func (e *Edge) writeRPC(w http.ResponseWriter, status int, resp *a2a.Response) {
	if resp.Error != nil {
		writeJSON(w, status, resp)
		return
	}
	buf := rpcBufs.Get().(*bytes.Buffer)
	defer putRPCBuf(buf)
	buf.Reset()
	if err := resp.EncodeTo(buf); err != nil {
		writeJSON(w, status, resp) // says what writeJSON always said
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// rpcBufs holds the buffers answers are encoded in.
var rpcBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putRPCBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 { // a rare huge answer is not kept
		rpcBufs.Put(b)
	}
}

// encodeTask and encodeEvent shape a result for the call's protocol version.
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
