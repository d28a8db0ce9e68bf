package push

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/nats-io/nats.go"
)

// failStreak paces and logs a loop's failures in a row: a pause growing
// from 250ms to 5s, one log line per failure until the pause is long, then
// one per 30s, and a line when it works again.
type failStreak struct {
	n      int
	since  time.Time
	logged time.Time
}

func (f *failStreak) failed(log *slog.Logger, msg string, err error) {
	now := time.Now()
	if f.n == 0 {
		f.since = now
	}
	f.n++
	if f.n <= 5 || now.Sub(f.logged) >= 30*time.Second {
		f.logged = now
		log.Warn(msg, "err", err, "failures", f.n, "failing_for_ms", now.Sub(f.since).Milliseconds())
	}
}

func (f *failStreak) ok(log *slog.Logger, msg string) {
	if f.n > 0 {
		log.Info(msg, "after_failures", f.n, "failed_for_ms", time.Since(f.since).Milliseconds())
		f.n = 0
	}
}

func (f *failStreak) pause() time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < f.n && d < 5*time.Second; i++ {
		d *= 2
	}
	return bus.Jitter(min(d, 5*time.Second))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (d *Deliverer) dispatchLoop(ctx context.Context, cons bus.Consumer) {
	var fails failStreak
	for ctx.Err() == nil {
		msgs, err := cons.FetchWait(dispatchBatch, dispatchFetchWait)
		if err != nil {
			if ctx.Err() == nil {
				fails.failed(d.log, "push: dispatch fetch failed; retrying", err)
			}
			sleepCtx(ctx, fails.pause())
			continue
		}
		fails.ok(d.log, "push: dispatch fetches again")
		for {
			group := collect(ctx, msgs)
			if len(group) == 0 {
				break
			}
			if ctx.Err() != nil {
				nakAll(group, 0) // hand them to another deliverer now
				continue
			}
			d.dispatch(ctx, group)
		}
	}
}

// collect returns the next messages of a fetch: it waits for one (until the
// fetch ends), then takes those that follow closely, up to a batch. When
// ctx ends it still drains the fetch, so the caller can hand messages back.
func collect(ctx context.Context, msgs <-chan *bus.Msg) []*bus.Msg {
	first, ok := <-msgs
	if !ok {
		return nil
	}
	group := []*bus.Msg{first}
	linger := time.NewTimer(2 * time.Millisecond)
	defer linger.Stop()
	for len(group) < dispatchBatch {
		select {
		case m, ok := <-msgs:
			if !ok {
				return group
			}
			group = append(group, m)
		case <-linger.C:
			return group
		case <-ctx.Done():
			return group
		}
	}
	return group
}

func nakAll(msgs []*bus.Msg, delay time.Duration) {
	for _, m := range msgs {
		if delay > 0 {
			_ = m.NakWithDelay(delay)
		} else {
			_ = m.Nak()
		}
	}
}

// dispatch turns the events of a batch that have configs into delivery
// jobs, then acks the batch with one cumulative ack.
func (d *Deliverer) dispatch(ctx context.Context, group []*bus.Msg) {
	rev, err := d.kv.LastRevision(ctx)
	if err != nil {
		d.log.Warn("push: could not read the config bucket's state; retrying the batch", "err", err)
		nakAll(group, time.Second)
		return
	}
	if !d.index.waitApplied(ctx, rev, indexWait) {
		if ctx.Err() == nil && d.kv.RevisionGone(ctx, rev) {
			d.index.bump(rev) // the bucket's last entry expired
		} else {
			d.log.Warn("push: config index behind the bucket; retrying the batch", "revision", rev)
			select {
			case d.reindex <- struct{}{}: // its watcher may have lost its server
			default:
			}
			nakAll(group, time.Second)
			return
		}
	}
	for _, m := range group {
		taskID, ok := taskstore.TaskIDOf(m.Subject())
		if !ok {
			continue
		}
		cfgs := d.index.configs(taskID)
		if cfgs == nil {
			continue
		}
		meta, err := m.Info()
		if err != nil {
			continue
		}
		evs, err := taskstore.EventsOf(meta.Seq, nats.Header(m.Header()), m.Data())
		if err != nil {
			continue
		}
		for _, ev := range evs {
			if !pushWorthy(ev.Resp) {
				continue
			}
			for configID, from := range cfgs {
				if ev.Seq <= from {
					continue
				}
				if err := d.kv.PublishJob(ctx, Job{TaskID: taskID, ConfigID: configID, Seq: ev.Seq}); err != nil {
					d.log.Warn("push: could not queue a delivery; retrying the batch", "task_id", taskID, "err", err)
					nakAll(group, time.Second)
					return
				}
			}
		}
	}
	// AckAll: acking the last message acks the whole batch.
	if err := group[len(group)-1].AckSync(ctx); err != nil && ctx.Err() == nil {
		d.log.Warn("push: dispatch ack failed; the batch will be dispatched again (duplicates are dropped)", "err", err)
	}
}
