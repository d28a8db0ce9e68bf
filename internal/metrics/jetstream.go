package metrics

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamConsumers is a ConsumerSource reading the named consumers of a
// JetStream stream, or all of its consumers when none are named. Missing
// consumers (and a missing stream) are left out.
func StreamConsumers(js jetstream.JetStream, stream string, names ...string) ConsumerSource {
	return func(ctx context.Context) []ConsumerStats {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return nil
		}
		var out []ConsumerStats
		if len(names) == 0 {
			l := s.ListConsumers(ctx)
			for ci := range l.Info() {
				out = append(out, stats(ci))
			}
			return out
		}
		for _, n := range names {
			c, err := s.Consumer(ctx, n)
			if err != nil {
				continue
			}
			out = append(out, stats(c.CachedInfo()))
		}
		return out
	}
}

func stats(ci *jetstream.ConsumerInfo) ConsumerStats {
	return ConsumerStats{Consumer: ci.Name, Pending: ci.NumPending,
		AckPending: uint64(ci.NumAckPending), Redelivered: uint64(ci.NumRedelivered)}
}
