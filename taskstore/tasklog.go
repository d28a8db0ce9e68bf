package taskstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// LoggedEvent is one event of a task's log as it was recorded.
type LoggedEvent struct {
	Seq  uint64    // its position in the mesh's event log (the SSE id)
	Time time.Time // when the log stored it
	Resp *a2a.StreamResponse
}

// TaskLog reads the log of task id after seq after: at most max events
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
	cons, err := b.js.OrderedConsumer(ctx, StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{EventsSubject(id)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    after + 1,
	})
	if err != nil {
		return nil, false, fmt.Errorf("bus: read log of %s: %w", id, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(min(max, 256)))
	if err != nil {
		return nil, false, fmt.Errorf("bus: read log of %s: %w", id, err)
	}
	defer it.Stop()
	for len(events) < max {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, false, fmt.Errorf("bus: read log of %s: %w", id, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, false, fmt.Errorf("bus: read log of %s: %w", id, err)
		}
		if meta.Sequence.Stream > last {
			break // appended since the call began: the next read has it
		}
		var resp a2a.StreamResponse
		if err := json.Unmarshal(m.Data(), &resp); err != nil {
			return nil, false, fmt.Errorf("bus: decode event %d: %w", meta.Sequence.Stream, err)
		}
		events = append(events, LoggedEvent{Seq: meta.Sequence.Stream, Time: meta.Timestamp, Resp: &resp})
		if meta.Sequence.Stream == last {
			break
		}
	}
	more = len(events) > 0 && events[len(events)-1].Seq < last
	return events, more, nil
}
