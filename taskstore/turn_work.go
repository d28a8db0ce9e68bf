package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/tracing"
)

// scope names this package's tracer.
const scope = "github.com/a2amesh/a2amesh/tasks"

// WorkItem asks an agent to process one user turn of a task: what a
// worker fetches from its agent's work queue (bus.WorkSubject).
type WorkItem struct {
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	Agent     string `json:"agent"`
	// Message is the user turn to process (already in the task's history).
	Message a2a.Message `json:"message"`
	// AcceptedOutputModes are the client's accepted media types.
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	// Metadata is the request's metadata.
	Metadata a2a.Metadata `json:"metadata,omitempty"`
	// Extensions are the extension URIs the client requested for the
	// call (A2A-Extensions).
	Extensions []string `json:"extensions,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	Enqueued   string   `json:"enqueued"`
	// Task is the task as the enqueuer left it (EncodeWorkTask): a
	// worker's first delivery runs from it without a read, since its
	// first append is a compare-and-set on it anyway.
	Task json.RawMessage `json:"task,omitempty"`
}

// Enqueue puts item on its agent's work queue on b. msgID makes the
// publish idempotent within the duplicate window; hdr carries trace
// context. A full queue yields bus.ErrQueueFull.
func Enqueue(ctx context.Context, b *bus.Bus, item *WorkItem, msgID string, hdr map[string][]string) error {
	data, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("taskstore: encode work item: %w", err)
	}
	return b.Enqueue(ctx, item.Agent, item.TaskID, data, msgID, hdr)
}

// workItem is the work item of turn msg of task rec.
func workItem(rec *TaskRecord, msg *a2a.Message, t *Turn) *WorkItem {
	item := &WorkItem{
		TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Agent: rec.Agent,
		Message: *msg, Metadata: t.Metadata, AcceptedOutputModes: t.AcceptedOutputModes, Extensions: t.Extensions,
		Owner: rec.Owner, Enqueued: a2a.Now(),
	}
	item.Message.TaskID, item.Message.ContextID = rec.Task.ID, rec.Task.ContextID
	item.Task = EncodeWorkTask(rec)
	return item
}

// recovery returns the work item, and its Nats-Msg-Id, that enqueue turn
// msg of task rec again when the task still waits for its first worker
// and no work item of it is queued or held (nil when none is needed).
// Not under the turn's own message id, which the duplicate window may
// still hold for an item published and then lost (bus.RecoveryMsgID); a
// copy racing the earlier attempt's is harmless (the worker runs one item
// per turn).
func (s *Lifecycle) recovery(ctx context.Context, rec *TaskRecord, msg *a2a.Message, t *Turn) (*WorkItem, string, error) {
	if rec.Task.Status.State != a2a.StateSubmitted {
		return nil, "", nil
	}
	queued, err := s.store.bus.Queued(ctx, rec.Agent, rec.Task.ID)
	if err != nil || queued {
		return nil, "", err
	}
	return workItem(rec, msg, t), bus.RecoveryMsgID(rec.Task.ID, msg.MessageID, rec.LastSeq), nil
}

// enqueue hands a submitted turn to the agent's workers. A full queue
// fails the task (so it is not left waiting for good) and tells the client
// to retry later.
func (s *Lifecycle) enqueue(ctx context.Context, t *Turn, sub *Submitted) error {
	if sub.item == nil {
		return nil
	}
	id, agent := sub.Task.Task.ID, sub.Task.Agent
	if t.Prepare != nil {
		// the turn must not stay recorded but never run
		if err := t.Prepare(ctx, sub.Task); err != nil {
			s.fail(ctx, id, t.PrepareFailure)
			return err
		}
	}
	err := s.publish(ctx, sub.item, sub.msgID, true, t.TraceMetadata)
	if errors.Is(err, bus.ErrQueueFull) {
		s.fail(ctx, id, "the mesh's queue for agent "+agent+" is full; retry later")
		return &failure{a2a.ErrServerBusy.With("agent %s is at capacity (work queue full); retry later", agent), bus.ErrQueueFull}
	}
	return err
}

// publish puts item on the work queue under msgID; traced, under a
// producer span whose context rides in the item's headers (and, with
// inMetadata, in its metadata too).
func (s *Lifecycle) publish(ctx context.Context, item *WorkItem, msgID string, traced, inMetadata bool) error {
	if !traced {
		return Enqueue(ctx, s.store.bus, item, msgID, nil)
	}
	pctx, span, hdr := tracing.StartPublish(ctx, tracing.Tracer(scope), bus.WorkSubject(item.Agent, item.TaskID), bus.WorkFilter(item.Agent), msgID, nil)
	if inMetadata {
		item.Metadata = tracing.ToMetadata(pctx, item.Metadata)
	}
	err := Enqueue(pctx, s.store.bus, item, msgID, hdr)
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, "failed")
	}
	span.End()
	return err
}

// traceparent is the W3C traceparent of ctx's span ("" for none).
func traceparent(ctx context.Context) string {
	return tracing.Traceparent(trace.SpanContextFromContext(ctx))
}

// Requeue recovers task id when it waits for its first worker and no work
// item of its last user turn is queued or held (an edge died between
// recording the turn and enqueueing it, or the item was lost): it enqueues
// the turn again and reports true. A task that needs nothing, or no longer
// exists, reports false and no error. The janitor of the agent's workers
// calls it for tasks submitted long ago.
func (s *Lifecycle) Requeue(ctx context.Context, id string) (bool, error) {
	rec, err := s.store.LoadTask(ctx, id)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	turn := lastUserTurn(rec.Task.History)
	if turn == nil {
		return false, nil
	}
	item, msgID, err := s.recovery(ctx, rec, turn, &Turn{})
	if err != nil || item == nil {
		return false, err
	}
	if err := s.publish(ctx, item, msgID, false, false); err != nil {
		return false, err
	}
	return true, nil
}

func lastUserTurn(h []a2a.Message) *a2a.Message {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == a2a.RoleUser {
			return &h[i]
		}
	}
	return nil
}
