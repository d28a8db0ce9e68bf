package taskstore

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// DefaultIdempotencyWindow is the idempotency window when
// Config.IdempotencyWindow is zero: JetStream's default duplicate window.
const DefaultIdempotencyWindow = 2 * time.Minute

// LifecycleConfig tunes a Lifecycle.
type LifecycleConfig struct {
	// IdempotencyWindow is how long after a task's creation a turn
	// repeating the messageId that created it (same agent and owner) is
	// a retry of that turn: it finds the task instead of starting
	// another. Past the window the messageId starts a new task. Zero
	// means DefaultIdempotencyWindow; negative turns recognition off:
	// every turn is new, a new task's id is random, and a work item's
	// Nats-Msg-Id is unique.
	IdempotencyWindow time.Duration
}

// Lifecycle is the caller's side of the tasks in a store: submit a user
// turn, await its settlement, cancel, get, and requeue what was stranded.
// It holds no state of its own: any number may share a store.
type Lifecycle struct {
	store  *Store
	window time.Duration
}

// NewLifecycle returns the lifecycle of the tasks in s.
func NewLifecycle(s *Store, cfg LifecycleConfig) *Lifecycle {
	if cfg.IdempotencyWindow == 0 {
		cfg.IdempotencyWindow = DefaultIdempotencyWindow
	}
	return &Lifecycle{store: s, window: cfg.IdempotencyWindow}
}

// ErrNotContinuable is matched by the error of a turn that names a task
// that takes no message now: it is working, or it has ended.
var ErrNotContinuable = errors.New("taskstore: the task takes no message now")

// failure is an error a client may see, an *a2a.Error, that matches with
// errors.Is the condition behind it too (a bus sentinel, say).
type failure struct {
	client *a2a.Error
	cause  error
}

func (f *failure) Error() string   { return f.client.Message }
func (f *failure) Unwrap() []error { return []error{f.client, f.cause} }

// notFound is the error for a task id that names no task.
func notFound(id string) error {
	return &failure{a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64)), ErrTaskNotFound}
}

// Get returns task id as it stands. A task that does not exist is
// a2a.ErrTaskNotFound (and ErrTaskNotFound).
func (s *Lifecycle) Get(ctx context.Context, id string) (*TaskRecord, error) {
	rec, err := s.store.LoadTask(ctx, id)
	if errors.Is(err, ErrTaskNotFound) {
		return nil, notFound(id)
	}
	return rec, err
}

// Cancel records task id as canceled, saying why in reason (it may be
// empty), and tells the worker holding it to stop; it returns the canceled
// task. seen is the task as the caller last read it (nil: Cancel reads
// it). A task that has already ended is a2a.ErrTaskNotCancelable (and
// ErrTerminal), returned with the task as it is.
func (s *Lifecycle) Cancel(ctx context.Context, id string, seen *TaskRecord, reason string) (*TaskRecord, error) {
	next, err := s.store.CancelTask(ctx, id, seen, reason)
	switch {
	case errors.Is(err, ErrTerminal):
		return next, &failure{a2a.ErrTaskNotCancelable.With("Task cannot be canceled: it is already %s",
			a2a.StateV03(next.Task.Status.State)), ErrTerminal}
	case errors.Is(err, ErrTaskNotFound):
		return nil, notFound(id)
	}
	return next, err
}

// failTimeout bounds the write that fails a task whose turn could not be
// enqueued.
const failTimeout = 5 * time.Second

// fail fails task id, saying why in text; it outlives ctx's cancelation,
// so a caller gone away does not leave the task waiting for good.
func (s *Lifecycle) fail(ctx context.Context, id, text string) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failTimeout)
	defer cancel()
	_, _ = s.store.SetStatus(fctx, id, nil, a2a.StateFailed, text)
}

// trunc cuts a caller-given string quoted in an error.
func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
