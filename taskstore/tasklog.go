package taskstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// LoggedEvent is one event of a task's log as it was recorded.
type LoggedEvent struct {
	Seq  uint64    // its position in the task's log (Pos; the SSE id)
	Time time.Time // when the log stored it
	Resp *a2a.StreamResponse
}

// TaskLog reads the log of task id after position after: at most max events
// (max > 0), in order, up to the last one the log holds when it is
// called. more reports whether the log held more than were read (read
// again after the last one's Seq). An empty or expired log reads as none.
func (b *Store) TaskLog(ctx context.Context, id string, after uint64, max int) (events []LoggedEvent, more bool, err error) {
	if !bus.ValidToken(id) || max <= 0 {
		return nil, false, nil
	}
	last, err := b.LastEventSeq(ctx, id)
	if err != nil || last <= after {
		return nil, false, err
	}
	// Leader reads of one message at a time (each retried through a
	// failover, bus.Read): a consumer, which this read used before, could
	// not be made while a node of a cluster was down, and a page of a log
	// is a few messages (a worker sends up to MaxBatch events in one).
	next := SeqOf(after) // the message holding event after may hold later ones
	if next == 0 {
		next = 1
	}
	for len(events) < max && next <= SeqOf(last) {
		m, err := b.msgFrom(ctx, id, next)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("bus: read log of %s: %w", id, err)
		}
		if m.seq > SeqOf(last) {
			break // appended since the call began: the next read has it
		}
		for i, ev := range m.events {
			if p := Pos(m.seq, i); p > after && p <= last && len(events) < max {
				events = append(events, LoggedEvent{Seq: p, Time: m.at, Resp: ev})
			}
		}
		next = m.seq + 1
	}
	more = len(events) > 0 && events[len(events)-1].Seq < last
	return events, more, nil
}
