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

// DispatchConsumer is the durable consumer, shared by all edges, that reads
// every task event to find those with push configs. It acks cumulatively
// (AckAll: one ack per batch) and lets at most maxPending events be
// unacked, so with maxPending equal to the batch size only one batch is out
// at a time across the mesh: an edge's cumulative ack can never cover
// events another edge still holds, and jobs are queued in log order. A
// new consumer starts at new events: nothing before push was enabled has
// a config.
func (b *Store) DispatchConsumer(ctx context.Context, maxPending int, ackWait time.Duration) (bus.Consumer, error) {
	c, err := b.js.CreateOrUpdateConsumer(ctx, StreamLog, jetstream.ConsumerConfig{
		Durable:       bus.ConsumerPushDispatch,
		Description:   "a2amesh: edges turning task events into push deliveries",
		FilterSubject: subjLogPrefix + ">",
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       ackWait,
		MaxAckPending: maxPending,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", bus.ConsumerPushDispatch, err)
	}
	return bus.WrapConsumer(c), nil
}

// EventAt reads the event of a task's log at position pos (Pos).
func (b *Store) EventAt(ctx context.Context, taskID string, pos uint64) (*a2a.StreamResponse, error) {
	m, err := b.log.GetMsg(ctx, SeqOf(pos))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, ErrTaskNotFound
		}
		return nil, fmt.Errorf("bus: read event %d: %w", pos, err)
	}
	if id, ok := TaskIDOf(m.Subject); !ok || id != taskID {
		return nil, ErrTaskNotFound
	}
	evs, err := EventsOf(m.Sequence, m.Header, m.Data)
	if err != nil {
		return nil, err
	}
	if i := indexOf(pos); i < len(evs) {
		return evs[i].Resp, nil
	}
	return nil, ErrTaskNotFound
}

// EventSeqsAfter returns the positions of a task's events after position
// after, at most max of them, in order.
func (b *Store) EventSeqsAfter(ctx context.Context, taskID string, after uint64, max int) ([]uint64, error) {
	subj, err := b.subject(ctx, taskID)
	if errors.Is(err, ErrTaskNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	next := SeqOf(after)
	for len(out) < max {
		m, err := b.log.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("bus: read log of %s: %w", taskID, err)
		}
		for i := range countOf(m.Header) {
			if p := Pos(m.Sequence, i); p > after && len(out) < max {
				out = append(out, p)
			}
		}
		next = m.Sequence + 1
	}
	return out, nil
}
