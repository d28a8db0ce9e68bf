package tracing

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
)

// natsCarrier adapts a NATS message header (case-sensitive keys) to the
// propagators' carrier, with the lower-case names W3C uses.
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string { return nats.Header(c).Get(key) }
func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }
func (c natsCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

var _ propagation.TextMapCarrier = natsCarrier(nil)

// InjectNATS writes ctx's trace context into a NATS message header.
func InjectNATS(ctx context.Context, h nats.Header) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, natsCarrier(h))
}

// ExtractNATS returns ctx with the parent a bus message carries: its
// traceparent header, else the a2a.trace entry of md (the work item's
// metadata), else none.
func ExtractNATS(ctx context.Context, h nats.Header, md a2a.Metadata) context.Context {
	if h.Get(HeaderTraceparent) != "" {
		if out := propagator.Extract(ctx, natsCarrier(h)); trace.SpanContextFromContext(out).IsRemote() {
			return out
		}
	}
	if sc, ok := FromMetadata(md); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Messaging attributes (OpenTelemetry messaging semantic conventions).
const (
	AttrMessagingSystem      = attribute.Key("messaging.system")
	AttrMessagingDestination = attribute.Key("messaging.destination.name")
	AttrMessagingTemplate    = attribute.Key("messaging.destination.template")
	AttrMessagingOperation   = attribute.Key("messaging.operation.type")
	AttrMessagingOpName      = attribute.Key("messaging.operation.name")
	AttrMessagingMessageID   = attribute.Key("messaging.message.id")
	AttrMessagingDelivery    = attribute.Key("messaging.nats.delivery_count")
)

// Mesh attributes.
const (
	AttrAgent           = attribute.Key("a2a.agent")
	AttrTaskID          = attribute.Key("a2a.task.id")
	AttrContextID       = attribute.Key("a2a.context.id")
	AttrProtocolVersion = attribute.Key("a2a.protocol.version")
	AttrTaskState       = attribute.Key("a2a.task.state")
)

// StartPublish starts the producer span of publishing a work item on
// subject (whose template is the subject with its last token, the task id,
// as a wildcard) and writes its context into hdr, which it creates when
// nil. End the span once the publish returns.
func StartPublish(ctx context.Context, tracer trace.Tracer, subject, template, msgID string, hdr nats.Header) (context.Context, trace.Span, nats.Header) {
	if hdr == nil {
		hdr = nats.Header{}
	}
	ctx, span := tracer.Start(ctx, "send "+template, trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(
			AttrMessagingSystem.String("nats"),
			AttrMessagingDestination.String(subject),
			AttrMessagingTemplate.String(template),
			AttrMessagingOperation.String("send"),
			AttrMessagingOpName.String("publish"),
			AttrMessagingMessageID.String(msgID),
		)
	}
	InjectNATS(ctx, hdr)
	return ctx, span, hdr
}
