package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/tracing"
)

// scope is the edge's instrumentation scope.
const scope = "github.com/a2amesh/a2amesh/edge"

// startCallSpan starts the server span of one JSON-RPC call, under the
// caller's trace context: its traceparent header, else the a2a.trace entry
// of params.metadata.
func startCallSpan(r *http.Request, req *a2a.Request) (context.Context, trace.Span) {
	var md a2a.Metadata
	if r.Header.Get(tracing.HeaderTraceparent) == "" && bytes.Contains(req.Params, []byte(`"`+tracing.MetadataKey+`"`)) {
		var p struct {
			Metadata a2a.Metadata `json:"metadata"`
		}
		_ = json.Unmarshal(req.Params, &p)
		md = p.Metadata
	}
	return startServerSpan(r, req.Method, md,
		attribute.String("rpc.system", "jsonrpc"),
		attribute.String("rpc.method", req.Method),
		attribute.String("rpc.jsonrpc.version", "2.0"),
		attribute.String("url.path", r.URL.Path),
	)
}

// startServerSpan starts the server span of the call r carries, named
// name, under the caller's trace context (r's traceparent header, else the
// a2a.trace entry of md), with attrs. The traceCalls middleware around the
// transport ends it when the transport's handler returns.
func startServerSpan(r *http.Request, name string, md a2a.Metadata, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx := tracing.Extract(r.Context(), r.Header, md)
	ctx, span := tracing.Tracer(scope).Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
	}
	if ci, ok := r.Context().Value(callInfoKey{}).(*callInfo); ok {
		ci.span = span
	}
	return ctx, span
}

// startRPCSpan starts the server span of a call that does not arrive as
// an http.Request (gRPC), named name, under the caller's trace context:
// the traceparent and tracestate of carrier (the call's headers, in
// http.Header form), else the a2a.trace entry of md. The transport ends
// it.
func startRPCSpan(ctx context.Context, carrier http.Header, name string, md a2a.Metadata, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx = tracing.Extract(ctx, carrier, md)
	ctx, span := tracing.Tracer(scope).Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// callInfo is what a transport's handler tells the middleware about the
// call it served: the server span it started, which traceCalls ends.
type callInfo struct {
	span trace.Span
}

type callInfoKey struct{}

// traceCalls ends, when the transport's handler returns (or panics), the
// server span it started for the call (startServerSpan).
func traceCalls(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ci := &callInfo{}
		defer func() {
			if ci.span != nil {
				ci.span.End()
			}
		}()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callInfoKey{}, ci)))
	})
}

// traced notes the call's agent (as the service resolved it) and protocol version on its span, and its
// trace id on its logger.
func (c *call) traced(agent string) {
	if c.span.IsRecording() {
		c.span.SetAttributes(tracing.AttrAgent.String(agent), tracing.AttrProtocolVersion.String(string(c.version)))
	}
	if sc := c.span.SpanContext(); sc.IsValid() {
		c.sc.Log = c.sc.Log.With("trace_id", sc.TraceID().String())
	}
}

// taskTraced notes the task a call works on; when the task was created
// under another span (a stream resumed, a resubscription, a new turn), the
// call's span links to it.
func (c *call) taskTraced(t service.TaskRef) {
	if !c.span.IsRecording() || c.spanTask == t.ID {
		return
	}
	c.spanTask = t.ID
	c.span.SetAttributes(tracing.AttrTaskID.String(t.ID), tracing.AttrContextID.String(t.ContextID))
	if sc, ok := tracing.ParseTraceparent(t.Trace); ok && sc.SpanID() != c.span.SpanContext().SpanID() {
		c.span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("a2a.link", "task origin")}})
	}
}

// failed marks the call's span with the JSON-RPC error it answers.
func (c *call) failed(rerr *a2a.Error) {
	if c.span == nil || !c.span.IsRecording() {
		return
	}
	c.span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", rerr.Code))
	c.span.SetStatus(codes.Error, "JSON-RPC error "+strconv.Itoa(rerr.Code))
}
