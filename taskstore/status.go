package taskstore

import (
	"context"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
)

// StatusEvent is a status update moving rec's task to st, with an agent
// message of text when text is not empty.
func StatusEvent(rec *TaskRecord, st a2a.TaskState, text string) *a2a.StreamResponse {
	s := a2a.TaskStatus{State: st, Timestamp: a2a.Now()}
	if text != "" {
		s.Message = &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleAgent, TaskID: rec.Task.ID,
			ContextID: rec.Task.ContextID, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: s}}
}

// SetStatus appends a status change of task id (rec: the task as last
// seen, or nil), by someone other than its worker: an edge failing a task
// it could not queue, say. Like UpdateTask it returns ErrTerminal, with the
// task as it is, when the task had already ended.
func (b *Store) SetStatus(ctx context.Context, id string, rec *TaskRecord, st a2a.TaskState, text string) (*TaskRecord, error) {
	next, _, err := b.UpdateTask(ctx, id, rec, func(cur *TaskRecord) (*a2a.StreamResponse, error) {
		return StatusEvent(cur, st, text), nil
	})
	return next, err
}

// CancelTask records task id as canceled and tells the worker holding it
// to stop. The record is what binds: if the notice is lost the worker
// stops at its next event, which finds the task closed. ErrTerminal (with
// the task as it is) when the task had already ended.
func (b *Store) CancelTask(ctx context.Context, id string, rec *TaskRecord, text string) (*TaskRecord, error) {
	next, err := b.SetStatus(ctx, id, rec, a2a.StateCanceled, text)
	if err == nil {
		_ = b.bus.PublishCancel(id)
	}
	return next, err
}
