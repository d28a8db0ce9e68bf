package agentrt

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/tasks"
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
	lc := tasks.New(w.Bus, tasks.Config{})
	for _, r := range recs {
		// The scan may have come from a replica behind the log: Requeue
		// confirms through the leader that the task is still waiting.
		requeued, err := lc.Requeue(ctx, r.Task.ID)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.Logger.Warn("re-enqueue of a stranded task failed", "task_id", r.Task.ID, "err", err)
			}
		case requeued:
			w.Logger.Warn("re-enqueued a submitted task whose work item was lost", "task_id", r.Task.ID)
		}
	}
}
