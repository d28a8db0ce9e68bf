package agentrt

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// janitor re-enqueues tasks of this agent that were created but whose work
// item never reached the queue: an edge that dies between creating a task
// and enqueueing its turn leaves it submitted with nothing to run it. Such a
// task was never acknowledged to its client, but it should not sit in
// ListTasks forever. The first sweep runs StaleAfter after start (so a
// restarted mesh picks up what the crash stranded), then every SweepEvery.
func (w *Worker) janitor(ctx context.Context) {
	jitter := time.Duration(rand.Int64N(int64(w.StaleAfter/4) + 1))
	t := time.NewTimer(w.StaleAfter + jitter)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.sweep(ctx)
		t.Reset(w.SweepEvery + jitter)
	}
}

// sweep re-enqueues this agent's tasks submitted over StaleAfter ago that
// have no work item queued or held.
func (w *Worker) sweep(ctx context.Context) {
	cutoff := time.Now().Add(-w.StaleAfter)
	recs, err := w.Bus.ListTasks(ctx, func(r *bus.TaskRecord) bool {
		if r.Agent != w.Name || r.Task.Status.State != a2a.StateSubmitted {
			return false
		}
		at, err := a2a.ParseTime(r.Updated)
		return err == nil && at.Before(cutoff)
	})
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Warn("sweep for stranded tasks failed", "err", err)
		}
		return
	}
	for _, r := range recs {
		// The scan may have come from a replica behind the log: confirm
		// through the leader that the task is still waiting.
		cur, err := w.Bus.LoadTask(ctx, r.Task.ID)
		if err != nil || cur.Task.Status.State != a2a.StateSubmitted {
			continue
		}
		turn := lastUserTurn(cur.Task.History)
		if turn == nil {
			continue
		}
		queued, err := w.Bus.Queued(ctx, w.Name, cur.Task.ID)
		if err != nil || queued {
			continue
		}
		item := &bus.WorkItem{
			TaskID: cur.Task.ID, ContextID: cur.Task.ContextID, Agent: cur.Agent,
			Message: *turn, Owner: cur.Owner, Enqueued: a2a.Now(),
		}
		// Not the turn's own message id: if its first item was published
		// and then lost, the duplicate window would swallow a repeat.
		msgID := bus.RecoveryMsgID(cur.Task.ID, turn.MessageID, cur.LastSeq)
		if err := w.Bus.Enqueue(ctx, item, msgID, nil); err != nil {
			w.Logger.Warn("re-enqueue of a stranded task failed", "task_id", cur.Task.ID, "err", err)
			continue
		}
		w.Logger.Warn("re-enqueued a submitted task whose work item was lost", "task_id", cur.Task.ID)
	}
}

func lastUserTurn(h []a2a.Message) *a2a.Message {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == a2a.RoleUser {
			return &h[i]
		}
	}
	return nil
}
