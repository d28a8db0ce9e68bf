package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// DefaultIdempotencyWindow is the idempotency window when
// Config.IdempotencyWindow is zero: JetStream's default duplicate window.
const DefaultIdempotencyWindow = 2 * time.Minute

// Config tunes a Service.
type Config struct {
	// IdempotencyWindow is how long after a task's creation a turn
	// repeating the messageId that created it (same agent and owner) is
	// a retry of that turn: it finds the task instead of starting
	// another. Past the window the messageId starts a new task. Zero
	// means DefaultIdempotencyWindow; negative turns recognition off:
	// every turn is new, a new task's id is random, and a work item's
	// Nats-Msg-Id is unique.
	IdempotencyWindow time.Duration
}

// Service runs the lifecycle of the tasks on one bus. It holds no state
// of its own: any number may share a bus.
type Service struct {
	bus    *bus.Bus
	window time.Duration
}

// New returns the lifecycle of the tasks on b.
func New(b *bus.Bus, cfg Config) *Service {
	if cfg.IdempotencyWindow == 0 {
		cfg.IdempotencyWindow = DefaultIdempotencyWindow
	}
	return &Service{bus: b, window: cfg.IdempotencyWindow}
}

// ErrNotContinuable is matched by the error of a turn that names a task
// that takes no message now: it is working, or it has ended.
var ErrNotContinuable = errors.New("tasks: the task takes no message now")

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
	return &failure{a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64)), bus.ErrTaskNotFound}
}

// Get returns task id as it stands. A task that does not exist is
// a2a.ErrTaskNotFound (and bus.ErrTaskNotFound).
func (s *Service) Get(ctx context.Context, id string) (*bus.TaskRecord, error) {
	rec, err := s.bus.LoadTask(ctx, id)
	if errors.Is(err, bus.ErrTaskNotFound) {
		return nil, notFound(id)
	}
	return rec, err
}

// Cancel records task id as canceled, saying why in reason (it may be
// empty), and tells the worker holding it to stop; it returns the canceled
// task. seen is the task as the caller last read it (nil: Cancel reads
// it). A task that has already ended is a2a.ErrTaskNotCancelable (and
// bus.ErrTerminal), returned with the task as it is.
func (s *Service) Cancel(ctx context.Context, id string, seen *bus.TaskRecord, reason string) (*bus.TaskRecord, error) {
	next, err := s.bus.CancelTask(ctx, id, seen, reason)
	switch {
	case errors.Is(err, bus.ErrTerminal):
		return next, &failure{a2a.ErrTaskNotCancelable.With("Task cannot be canceled: it is already %s",
			a2a.StateV03(next.Task.Status.State)), bus.ErrTerminal}
	case errors.Is(err, bus.ErrTaskNotFound):
		return nil, notFound(id)
	}
	return next, err
}

// failTimeout bounds the write that fails a task whose turn could not be
// enqueued.
const failTimeout = 5 * time.Second

// fail fails task id, saying why in text; it outlives ctx's cancelation,
// so a caller gone away does not leave the task waiting for good.
func (s *Service) fail(ctx context.Context, id, text string) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failTimeout)
	defer cancel()
	_, _ = s.bus.SetStatus(fctx, id, nil, a2a.StateFailed, text)
}

// trunc cuts a caller-given string quoted in an error.
func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
