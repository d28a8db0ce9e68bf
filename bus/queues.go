package bus

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// QueueStats are the figures of one agent's work: its work consumer's
// counts (ConsumerName) and its dead letters.
type QueueStats struct {
	// Pending counts work items not yet delivered to a worker: the
	// queue's depth.
	Pending uint64
	// AckPending counts items delivered to a worker and not yet
	// acknowledged: in flight.
	AckPending uint64
	// Redelivered counts in-flight items delivered more than once.
	Redelivered uint64
	// Dead counts the agent's items in StreamDead (kept for Retention,
	// at most 100,000 over all agents).
	Dead uint64
}

// Queues reads the work figures of every agent: of those with a work
// consumer, its counts; of those with dead letters, how many. It makes
// two JetStream API calls (and one more per 256 consumers or 100,000
// dead-letter subjects) whatever the number of items queued.
func (b *Bus) Queues(ctx context.Context) (map[string]QueueStats, error) {
	out := map[string]QueueStats{}
	cl := b.work.ListConsumers(ctx)
	for ci := range cl.Info() {
		agent, ok := strings.CutPrefix(ci.Name, ConsumerName(""))
		if !ok {
			continue
		}
		out[agent] = QueueStats{Pending: ci.NumPending, AckPending: uint64(ci.NumAckPending),
			Redelivered: uint64(ci.NumRedelivered)}
	}
	if err := cl.Err(); err != nil {
		return nil, fmt.Errorf("bus: list work consumers: %w", err)
	}
	dead, err := Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) {
		s, err := b.js.Stream(c, StreamDead)
		if err != nil {
			return nil, err
		}
		return s.Info(c, jetstream.WithSubjectFilter(subjDeadPrefix+"*"))
	})
	if err != nil {
		return nil, fmt.Errorf("bus: dead letters: %w", err)
	}
	for subj, n := range dead.State.Subjects {
		agent := strings.TrimPrefix(subj, subjDeadPrefix)
		q := out[agent]
		q.Dead = n
		out[agent] = q
	}
	return out, nil
}
