package bus

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// SettleWatch waits for a task to settle: to reach a final (terminal or
// interrupted) state. Start it before the task's work is enqueued, so a
// fast worker's notification is not missed.
type SettleWatch struct {
	b   *Bus
	id  string
	sub *Subscription
	ch  chan *TaskRecord
}

// WatchSettle starts watching task id's snapshots for a final state.
func (b *Bus) WatchSettle(id string) (*SettleWatch, error) {
	w := &SettleWatch{b: b, id: id, ch: make(chan *TaskRecord, 1)}
	sub, err := b.WatchSnapshots(id, a2a.TaskState.Final, func(r *TaskRecord) {
		if r.Task.Status.State.Final() {
			select {
			case w.ch <- r:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	w.sub = sub
	return w, nil
}

// Stop ends the watch.
func (w *SettleWatch) Stop() { w.sub.Stop() }

// Wait returns the task once it has settled; rec is the task as the caller
// last saw it. The stored snapshot arrives whole as soon as a worker
// stores it; once a second the task is also loaded from its log, in case a
// notification was lost or its writer died before storing. It returns
// ctx's error when ctx ends first (the task itself goes on).
func (w *SettleWatch) Wait(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	load := func() (*TaskRecord, error) {
		rec, err := w.b.LoadTask(ctx, w.id)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return rec, err
	}
	if rec.Task.Status.State.Final() {
		// Settled as last seen (a turn recorded before, say): confirm.
		if fresh, err := load(); err != nil || fresh.Task.Status.State.Final() {
			return fresh, err
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case r := <-w.ch:
			return r, nil
		case <-tick.C:
			rec, err := load()
			if err != nil {
				return nil, err
			}
			if rec.Task.Status.State.Final() {
				return rec, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
