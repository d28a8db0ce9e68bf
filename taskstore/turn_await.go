package taskstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// ErrUnsettled is matched by the *UnsettledError of an Await that reached
// its bound.
var ErrUnsettled = errors.New("tasks: the task did not settle within the bound")

// UnsettledError is the error of an Await whose bound passed before the
// task settled. The task is left as it is: still queued (it runs when a
// worker of its agent takes it) or still working. Await returns the task
// as it stands beside it.
type UnsettledError struct {
	TaskID string
	// State is the task's state when the bound passed.
	State a2a.TaskState
	// ReadErr, when not nil, is why the task could not be read afresh at
	// the bound: the task returned beside the error is as last seen.
	ReadErr error
	// StoreFull is true when the wait was cut short because the task's
	// worker could not record its next step for lack of storage
	// (NoticeStoreFull): the task stands and runs once space returns, so
	// a longer wait would only hold the client for the whole bound.
	StoreFull bool
}

func (e *UnsettledError) Error() string {
	return fmt.Sprintf("task %s did not settle within the bound: it is still %s", e.TaskID, a2a.StateV03(e.State))
}

// Unwrap makes an UnsettledError match ErrUnsettled.
func (e *UnsettledError) Unwrap() error { return ErrUnsettled }

// errBound is the cause of a wait that reached Await's bound.
var errBound = errors.New("tasks: await bound reached")

// standsTimeout bounds the read of a task whose wait reached its bound.
const standsTimeout = 2 * time.Second

// Await waits until the task of sub (submitted with Turn.Wait) settles:
// ends, or asks for input. It waits at most until until (zero: only ctx
// bounds the wait). At the bound it returns the task as it stands, read
// afresh (as last seen when that read fails), with an *UnsettledError,
// unless that read finds it settled. When ctx ends first, Await returns
// ctx's error. The task itself goes on either way. Await ends sub's watch.
// A task whose worker says it cannot record a step for lack of storage
// (NoticeStoreFull) is waited for no longer.
func (s *Lifecycle) Await(ctx context.Context, sub *Submitted, until time.Time) (*TaskRecord, error) {
	if sub.watch == nil {
		return nil, errors.New("tasks: Await of a turn not submitted with Wait")
	}
	defer sub.Close()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if !until.IsZero() {
		wctx, cancel = context.WithDeadlineCause(ctx, until, errBound)
	}
	defer cancel()
	settled, err := sub.watch.Wait(wctx, sub.Task)
	// The task's worker could not record its next step for lack of
	// storage: as for a snapshot refused, the task stands and runs once
	// space returns; a longer wait would only hold the client.
	stalled := errors.Is(err, ErrStoreFull)
	if !stalled && (err == nil || ctx.Err() != nil || !errors.Is(context.Cause(wctx), errBound)) {
		return settled, err
	}
	lctx, lcancel := context.WithTimeout(ctx, standsTimeout)
	defer lcancel()
	cur, lerr := s.store.LoadTask(lctx, sub.Task.Task.ID)
	if lerr != nil {
		cur = sub.Task
	} else if cur.Task.Status.State.Final() {
		return cur, nil // settled as the wait ended
	}
	return cur, &UnsettledError{TaskID: cur.Task.ID, State: cur.Task.Status.State, ReadErr: lerr, StoreFull: stalled}
}
