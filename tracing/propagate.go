package tracing

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
)

// MetadataKey is the params.metadata entry carrying a caller's trace
// context: {"traceId": <32 hex>, "spanId": <16 hex>}. It is a convention
// of agent fleets, not of the A2A spec; callers that do not know it leave
// it out.
const MetadataKey = "a2a.trace"

// HeaderTraceparent is the W3C trace-context header.
const HeaderTraceparent = "traceparent"

// FromMetadata reads the span context in md's a2a.trace entry. A trace id
// of 16 hex digits (a 64-bit id) is left-padded with zeros; dashes (a
// UUID-shaped id) are ignored. The context is remote and sampled: the
// caller was tracing when it wrote the entry.
func FromMetadata(md a2a.Metadata) (trace.SpanContext, bool) {
	v, ok := md[MetadataKey].(map[string]any)
	if !ok {
		return trace.SpanContext{}, false
	}
	tidS, _ := v["traceId"].(string)
	sidS, _ := v["spanId"].(string)
	tidS = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(tidS), "-", ""))
	sidS = strings.ToLower(strings.TrimSpace(sidS))
	if len(tidS) == 16 {
		tidS = "0000000000000000" + tidS
	}
	tid, err := trace.TraceIDFromHex(tidS)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(sidS)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// ToMetadata returns md with an a2a.trace entry naming ctx's span (a
// copy: md is not changed), or md itself when ctx carries no span.
func ToMetadata(ctx context.Context, md a2a.Metadata) a2a.Metadata {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return md
	}
	out := make(a2a.Metadata, len(md)+1)
	for k, v := range md {
		out[k] = v
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	out[MetadataKey] = map[string]any{"traceId": hex.EncodeToString(tid[:]), "spanId": hex.EncodeToString(sid[:])}
	return out
}

// Extract returns ctx with the remote parent a request carries: its
// traceparent header when that is present and valid, else the a2a.trace
// entry of its metadata, else none (ctx unchanged).
func Extract(ctx context.Context, h http.Header, md a2a.Metadata) context.Context {
	if h.Get(HeaderTraceparent) != "" {
		if out := propagator.Extract(ctx, propagation.HeaderCarrier(h)); trace.SpanContextFromContext(out).IsRemote() {
			return out
		}
	}
	if sc, ok := FromMetadata(md); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Inject writes ctx's trace context (traceparent, tracestate, baggage) into
// h. It writes nothing when ctx carries no span.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is the W3C traceparent of sc ("" when sc is not valid): the
// form in which the mesh stores a task's originating span.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// ParseTraceparent reads a W3C traceparent (as Traceparent writes it).
func ParseTraceparent(s string) (trace.SpanContext, bool) {
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	var fl [1]byte
	if _, err := hex.Decode(fl[:], []byte(s[53:55])); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(fl[0]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// TraceID is the trace id of ctx's span as hex, "" when it has none: the
// trace_id field of log lines.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
