package bus

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Enqueue puts data, a work item of task taskID in its owner's encoding
// (package taskstore's WorkItem), on agent's work queue. msgID makes the
// publish idempotent within the duplicate window; hdr carries trace
// context. A full queue yields ErrQueueFull.
func (b *Bus) Enqueue(ctx context.Context, agent, taskID string, data []byte, msgID string, hdr map[string][]string) error {
	msg := &nats.Msg{Subject: WorkSubject(agent, taskID), Data: data, Header: hdr}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	var err error
	if msgID != "" {
		// The id makes a repeat harmless: publish rides out a failover.
		_, err = b.Publish(ctx, msg, jetstream.WithMsgID(msgID))
	} else {
		_, err = b.js.PublishMsg(ctx, msg)
	}
	if err != nil {
		if IsQueueFull(err) {
			return ErrQueueFull
		}
		return fmt.Errorf("bus: enqueue for %s: %w", agent, err)
	}
	return nil
}

// ErrQueueFull refuses a message for a work queue at its bound.
var ErrQueueFull = errors.New("bus: work queue is full")

// IsQueueFull reports whether err is JetStream refusing a publish to a
// stream at its bound (DiscardNew): a work queue that is full.
func IsQueueFull(err error) bool {
	s := err.Error()
	return strings.Contains(s, "maximum messages exceeded") || strings.Contains(s, "maximum bytes exceeded") ||
		strings.Contains(s, "resource limits exceeded")
}

// WorkConsumer returns the durable pull consumer shared by every worker of
// agent, creating it on first use.
func (b *Bus) WorkConsumer(ctx context.Context, agent string) (Consumer, error) {
	if !ValidToken(agent) {
		return nil, fmt.Errorf("bus: invalid agent name %q", agent)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       ConsumerName(agent),
		Description:   "a2amesh: workers of agent " + agent,
		FilterSubject: WorkFilter(agent),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.cfg.AckWait,
		// The worker bounds deliveries itself (Config.MaxDeliver): at the
		// bound it fails the task and dead-letters the item. A server-side
		// bound would instead stop delivering an item that the last
		// delivery had to hand back (a bus error), leaving its task
		// waiting for good.
		MaxDeliver:    -1,
		MaxAckPending: 10_000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	c, err := Read(ctx, func(c context.Context) (jetstream.Consumer, error) {
		return b.js.CreateOrUpdateConsumer(c, StreamWork, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer for %s: %w", agent, err)
	}
	return consumer{c}, nil
}

// WorkMsgID is the Nats-Msg-Id of the work item for the turn messageID of
// task taskID: every enqueue of the same turn carries it, so JetStream keeps
// one copy within the duplicate window.
func WorkMsgID(taskID, messageID string) string {
	h := sha256.Sum256([]byte(taskID + "\x00" + messageID))
	return fmt.Sprintf("w-%x", h[:16])
}

// Queued reports whether task taskID has a work item waiting for agent's
// workers or held by one (a work queue keeps an item until it is acked).
func (b *Bus) Queued(ctx context.Context, agent, taskID string) (bool, error) {
	_, err := Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.work.GetLastMsgForSubject(c, WorkSubject(agent, taskID))
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, err
}

// RecoveryMsgID is the Nats-Msg-Id of a work item enqueued again to
// recover a turn whose first item is gone (never published, or lost): it
// differs from WorkMsgID, so the duplicate window, which still remembers
// the first item, does not swallow it, and it is the same for every
// recovery of the task as it stands at log sequence lastSeq, so two
// janitors (or a janitor and a retried send) recovering the same turn
// still enqueue it once.
func RecoveryMsgID(taskID, messageID string, lastSeq uint64) string {
	return fmt.Sprintf("%s-r%d", WorkMsgID(taskID, messageID), lastSeq)
}

// WorkHeld reports whether the work item at stream sequence seq is still
// in the work queue: waiting, or held by a worker that has not acked it.
func (b *Bus) WorkHeld(ctx context.Context, seq uint64) (bool, error) {
	_, err := Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) { return b.work.GetMsg(c, seq) })
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, err
}

// Control messages.
const controlCancel = "cancel"

// PublishCancel tells whichever worker holds task id to stop it. Delivery
// is at most once; the task's terminal state in the log is what binds.
func (b *Bus) PublishCancel(id string) error {
	return b.nc.Publish(ControlSubject(id), []byte(controlCancel))
}

// OnCancels calls fn with the task id of every cancel sent on the mesh,
// from one subscription: a worker holds it for as long as it runs and
// looks the task up among its own, instead of subscribing for each task
// it runs (a subscription and its removal per task cost the server and
// the client more than the rare cancel it would carry). It returns once
// the server has the subscription.
func (b *Bus) OnCancels(ctx context.Context, fn func(taskID string)) (*Subscription, error) {
	sub, err := b.nc.Subscribe(ControlSubject("*"), func(m *nats.Msg) {
		if string(m.Data) == controlCancel {
			fn(strings.TrimPrefix(m.Subject, subjControlPrefix))
		}
	})
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return &Subscription{sub}, nil
}

// OnCancel calls fn when a cancel for task id arrives. Stop the
// subscription when the task is no longer held.
func (b *Bus) OnCancel(id string, fn func()) (*Subscription, error) {
	sub, err := b.nc.Subscribe(ControlSubject(id), func(m *nats.Msg) {
		if string(m.Data) == controlCancel {
			fn()
		}
	})
	if err != nil {
		return nil, err
	}
	return &Subscription{sub}, nil
}
