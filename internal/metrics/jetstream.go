package metrics

import (
	"context"

	"github.com/a2amesh/a2amesh/bus"
)

// ConsumerReader reads consumer statistics (bus.Bus does).
type ConsumerReader interface {
	ConsumerStats(ctx context.Context, stream string, names ...string) []bus.ConsumerStats
}

// StreamConsumers is a ConsumerSource reading the named consumers of a
// stream, or all of its consumers when none are named. Missing consumers
// (and a missing stream) are left out.
func StreamConsumers(r ConsumerReader, stream string, names ...string) ConsumerSource {
	return func(ctx context.Context) []ConsumerStats {
		return r.ConsumerStats(ctx, stream, names...)
	}
}
