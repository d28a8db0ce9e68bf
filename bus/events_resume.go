package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/nats-io/nats.go/jetstream"
)

// LastEventSeq returns the sequence of the last event in task id's log (0
// when the log is empty or gone). A stream uses it to tell a quiet task
// from a reader stalled by a failover (events in the log beyond the last
// one read mean the reader is stuck, and a new one resumes after it), and
// from a JetStream that does not answer at all.
//
// It is a leader read (the stream's message-get API, not a direct get
// that any replica may answer): it fails while the events stream has no
// leader, which is what the caller wants to know, and it never answers
// from a replica that is behind.
func (b *Bus) LastEventSeq(ctx context.Context, id string) (uint64, error) {
	if !ValidToken(id) {
		return 0, nil
	}
	req, err := json.Marshal(map[string]string{"last_by_subj": EventsSubject(id)})
	if err != nil {
		return 0, err
	}
	msg, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+StreamEvents, req)
	if err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", id, err)
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", id, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return 0, nil // no message: an empty or expired log
	case resp.Error != nil:
		return 0, fmt.Errorf("bus: last event of %s: %s (%d)", id, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return 0, fmt.Errorf("bus: last event of %s: empty answer", id)
	}
	return resp.Message.Seq, nil
}

// EventFollower reads a task's log in order from a starting point, waiting
// for new events, like EventReader; but it never retries on its own. Its
// consumer is a plain ephemeral one (not nats.go's ordered consumer, which
// recreates itself in a loop that can neither be stopped nor bounded while
// JetStream is away): any failure (a lost heartbeat, a deleted consumer, a
// gap in delivery) ends it with Err set, and the caller follows again
// after the last event it read. Close it when done.
type EventFollower struct {
	C    <-chan Event // closed when the follower stops
	err  error
	stop context.CancelFunc
	done chan struct{}
}

// Follower tuning.
const (
	// followHeartbeat is the pull heartbeat: two missed ones end the
	// follower (its consumer's server is gone).
	followHeartbeat = time.Second
	// followInactive lets the server remove a consumer its follower left
	// without deleting it.
	followInactive = time.Minute
)

// FollowEvents starts following the log of task id from the first event
// after afterSeq. Events arrive on C until ctx ends, Close is called, or
// the follower fails (Err says why).
func (b *Bus) FollowEvents(ctx context.Context, id string, afterSeq uint64) (*EventFollower, error) {
	cons, err := b.js.CreateConsumer(ctx, StreamEvents, jetstream.ConsumerConfig{
		FilterSubject:     EventsSubject(id),
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       afterSeq + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: followInactive,
		Replicas:          1,
		MemoryStorage:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: follow log of %s: %w", id, err)
	}
	name := cons.CachedInfo().Name
	if followCreated != nil {
		followCreated(name)
	}
	drop := func() { // best effort: the inactive threshold removes it otherwise
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, StreamEvents, name)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(64), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		go drop()
		return nil, fmt.Errorf("bus: follow log of %s: %w", id, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan Event, 16)
	f := &EventFollower{C: ch, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(ch)
		defer func() { go drop() }() // bounded (2s); Close need not wait for it
		defer it.Stop()
		var delivered uint64 // the consumer's delivery sequence: 1, 2, ... or a message was lost
		last := afterSeq
		for {
			m, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				if ctx.Err() == nil {
					f.err = fmt.Errorf("bus: follow log of %s: %w", id, err)
				}
				return
			}
			meta, err := m.Metadata()
			if err != nil {
				f.err = fmt.Errorf("bus: follow log of %s: %w", id, err)
				return
			}
			// The consumer is new: its first delivery is number 1. A first
			// message lost in transit (the edge's NATS connection dropped
			// as the server sent it; AckNone counts it delivered) must end
			// the follower like any later gap: it was seen skipping the
			// first event after the snapshot in a 30-minute chaos run.
			if meta.Sequence.Consumer != delivered+1 {
				f.err = fmt.Errorf("bus: follow log of %s: delivery %d after %d: %w", id, meta.Sequence.Consumer, delivered, errFollowGap)
				return
			}
			delivered = meta.Sequence.Consumer
			if meta.Sequence.Stream <= last {
				continue // never twice
			}
			last = meta.Sequence.Stream
			var ev a2a.StreamResponse
			if err := json.Unmarshal(m.Data(), &ev); err != nil {
				f.err = fmt.Errorf("bus: decode event %d: %w", meta.Sequence.Stream, err)
				return
			}
			select {
			case ch <- Event{Seq: meta.Sequence.Stream, Resp: &ev}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return f, nil
}

// followCreated, when a test sets it, is called with the name of each
// follower's consumer before the follower pulls from it.
var followCreated func(consumer string)

// errFollowGap: a message of the follower's consumer did not arrive.
var errFollowGap = errors.New("a delivery was lost")

// Close stops the follower and waits for its goroutine (which returns at
// once: nothing it does waits for JetStream without a bound).
func (f *EventFollower) Close() {
	f.stop()
	<-f.done
}

// Err is the error that stopped the follower, if any (valid after C
// closes).
func (f *EventFollower) Err() error { return f.err }
