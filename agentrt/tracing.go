package agentrt

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// scope is the worker runtime's instrumentation scope.
const scope = "github.com/a2amesh/a2amesh/agentrt"

// startConsume starts the consumer span of one work item, a child of the
// context its message carries (traceparent header, else the item's
// a2a.trace metadata).
func (w *Worker) startConsume(m *bus.Msg, item *taskstore.WorkItem, meta *bus.MsgInfo) trace.Span {
	ctx := tracing.ExtractNATS(context.Background(), m.Header(), item.Metadata)
	_, span := tracing.Tracer(scope).Start(ctx, "process "+bus.WorkFilter(w.Name), trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(
			tracing.AttrMessagingSystem.String("nats"),
			tracing.AttrMessagingDestination.String(m.Subject()),
			tracing.AttrMessagingTemplate.String(bus.WorkFilter(w.Name)),
			tracing.AttrMessagingOperation.String("process"),
			tracing.AttrMessagingOpName.String("process"),
			tracing.AttrMessagingMessageID.String(m.MsgID()),
			tracing.AttrMessagingDelivery.Int64(int64(meta.NumDelivered)),
			tracing.AttrAgent.String(w.Name),
			tracing.AttrTaskID.String(item.TaskID),
			tracing.AttrContextID.String(item.ContextID),
		)
	}
	return span
}

// runTraced runs the agent inside a span of its own.
func (w *Worker) runTraced(ctx context.Context, req *Request, wr *writer) error {
	ctx, span := tracing.Tracer(scope).Start(ctx, "run "+w.Name)
	defer span.End()
	err := w.runAgent(ctx, req, wr)
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrAgent.String(w.Name), tracing.AttrTaskID.String(req.TaskID),
			attribute.Int("a2a.run.attempt", req.Attempt))
		if st := wr.finalState(); st != "" {
			span.SetAttributes(tracing.AttrTaskState.String(string(st)))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, failureText(err))
		}
	}
	return err
}

// startDelegate starts the client span of a delegation to agent.
func startDelegate(ctx context.Context, agent string) (context.Context, trace.Span) {
	return tracing.Tracer(scope).Start(ctx, "delegate "+agent, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.AttrAgent.String(agent)))
}

// endDelegate ends a delegation's span with the called task's outcome.
func endDelegate(span trace.Span, t *a2a.Task, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if t != nil {
		span.SetAttributes(tracing.AttrTaskID.String(t.ID), tracing.AttrContextID.String(t.ContextID),
			tracing.AttrTaskState.String(string(t.Status.State)))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "delegation failed")
	}
}
