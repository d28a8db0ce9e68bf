package push

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// index knows, from a watcher on the A2A_PUSH bucket, which tasks have
// configs and from which event each config applies.
type index struct {
	mu      sync.Mutex
	tasks   map[string]map[string]uint64 // task id → config id → fromSeq
	newest  map[string]time.Time         // task id → when its newest config was stored
	applied uint64                       // last bucket revision applied
	ready   bool                         // initial values applied
	changed chan struct{}                // closed and replaced on every change
	// replay holds the keys a new watcher has replayed so far (nil: none
	// is replaying): at its end, keys it did not replay were deleted
	// while no watcher was looking.
	replay map[string]struct{}
}

// beginReplay starts a new watcher's replay of the bucket.
func (x *index) beginReplay() {
	x.mu.Lock()
	x.replay = map[string]struct{}{}
	x.mu.Unlock()
}

func newIndex() *index {
	return &index{tasks: map[string]map[string]uint64{}, newest: map[string]time.Time{}, changed: make(chan struct{})}
}

// expire forgets tasks whose newest config was stored before cutoff: the
// bucket's TTL has removed their configs without a delete marker the
// watcher would see, so the index would otherwise only grow.
func (x *index) expire(cutoff time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, at := range x.newest {
		if at.Before(cutoff) {
			delete(x.newest, id)
			delete(x.tasks, id)
		}
	}
}

func (x *index) apply(e *bus.Entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer x.signal()
	if e == nil {
		x.ready = true
		if x.replay != nil {
			for taskID, m := range x.tasks {
				for configID := range m {
					if _, ok := x.replay[taskID+"."+configID]; !ok {
						delete(m, configID)
					}
				}
				if len(m) == 0 {
					delete(x.tasks, taskID)
					delete(x.newest, taskID)
				}
			}
			x.replay = nil
		}
		return
	}
	x.applied = max(x.applied, e.Revision)
	taskID, configID, ok := strings.Cut(e.Key, ".")
	if !ok {
		return
	}
	if x.replay != nil {
		x.replay[e.Key] = struct{}{}
	}
	if e.Deleted {
		if m := x.tasks[taskID]; m != nil {
			delete(m, configID)
			if len(m) == 0 {
				delete(x.tasks, taskID)
				delete(x.newest, taskID)
			}
		}
		return
	}
	var rec Record
	if json.Unmarshal(e.Value, &rec) != nil {
		return
	}
	m := x.tasks[taskID]
	if m == nil {
		m = map[string]uint64{}
		x.tasks[taskID] = m
	}
	m[configID] = rec.FromSeq
	if c := e.Created; c.After(x.newest[taskID]) {
		x.newest[taskID] = c
	}
}

// signal wakes waiters; x.mu is held.
func (x *index) signal() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// bump records that revision rev can never arrive (it expired).
func (x *index) bump(rev uint64) {
	x.mu.Lock()
	x.applied = max(x.applied, rev)
	x.signal()
	x.mu.Unlock()
}

// waitApplied waits until the index is ready and has applied revision rev.
func (x *index) waitApplied(ctx context.Context, rev uint64, limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		x.mu.Lock()
		ok, ch := x.ready && x.applied >= rev, x.changed
		x.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// configs returns the configs of a task (nil when it has none).
func (x *index) configs(taskID string) map[string]uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.tasks[taskID]
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
