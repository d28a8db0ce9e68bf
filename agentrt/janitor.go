package agentrt

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

// janitor re-enqueues tasks of this agent that were created but whose work
// item never reached the queue: an edge that dies between creating a task
// and enqueueing its turn leaves it submitted with nothing to run it. Such a
// task was never acknowledged to its client, but it should not sit in
// ListTasks forever. The first sweep runs StaleAfter after start (so a
// restarted mesh picks up what the crash stranded), then every SweepEvery.
//
// A sweep reads no task whole. It reads the headers of the log messages
// written since the previous sweep's bound (taskstore.ReadIndex), keeps
// this agent's, and takes each task's last: one still saying "submitted"
// and written at least StaleAfter ago is a task that has not moved since
// it was created (or given a new turn). A sweep costs the messages
// written since the last one, not the tasks kept. The first sweep looks
// back SweepLookback.
func (w *Worker) janitor(ctx context.Context) {
	jitter := time.Duration(rand.Int64N(int64(w.StaleAfter/4) + 1))
	t := time.NewTimer(w.StaleAfter + jitter)
	defer t.Stop()
	since := time.Now().Add(-SweepLookback)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		since = w.sweep(ctx, since)
		t.Reset(w.SweepEvery + jitter)
	}
}

// sweepMax bounds the tasks one sweep looks at (the rest wait for the
// next sweep, which starts where this one started).
const sweepMax = 1_000_000

// SweepLookback is how far back the first sweep of a worker looks for
// stranded tasks. A task stranded longer before the worker started stays
// submitted until its client retries the send (which re-enqueues it) or
// retention removes it.
var SweepLookback = time.Hour

// sweep re-enqueues this agent's tasks whose index entry was written at
// or after since and over StaleAfter ago, and still says submitted, when
// no work item is queued or held for them. It returns where the next
// sweep starts: the bound this one reached, or since again if it failed.
func (w *Worker) sweep(ctx context.Context, since time.Time) time.Time {
	cutoff := time.Now().Add(-w.StaleAfter)
	next := cutoff
	// Every message of the agent's tasks written since: a task's last
	// one says where it stands (a submitted task that a worker took
	// has a later message).
	last := map[string]taskstore.IndexEntry{}
	err := w.Store.ReadIndex(ctx, taskstore.IndexQuery{AnyOwner: true, Agent: w.Name}, since, func(e taskstore.IndexEntry) bool {
		last[e.TaskID] = e
		return len(last) < sweepMax
	})
	if len(last) >= sweepMax {
		next = since // the rest next time
	}
	var ids []string
	for id, e := range last {
		if e.State == a2a.StateSubmitted && !e.Written.After(cutoff) {
			ids = append(ids, id)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			w.Logger.Warn("sweep for stranded tasks failed", "err", err)
		}
		return since
	}
	lc := taskstore.NewLifecycle(w.Store, taskstore.LifecycleConfig{})
	for _, id := range ids {
		// The entry may be behind its task: Requeue confirms through
		// the leader that the task is still waiting with nothing queued.
		requeued, err := lc.Requeue(ctx, id)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.Logger.Warn("re-enqueue of a stranded task failed", "task_id", id, "err", err)
			}
		case requeued:
			w.Logger.Warn("re-enqueued a submitted task whose work item was lost", "task_id", id)
		}
	}
	return next
}
