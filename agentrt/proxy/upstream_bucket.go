package proxy

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// BucketUpstream maps mesh tasks and contexts to the task and context ids
// of the agent a proxy worker forwards them to. It is created by the first
// proxy worker, so meshes without proxies do not have it.
const BucketUpstream = "A2A_UPSTREAM"

// upstreamBucket opens (creating on first use) the bucket proxy workers
// keep their id mappings in. Entries live as long as tasks do.
func upstreamBucket(ctx context.Context, b *bus.Bus) (bus.KV, error) {
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketUpstream,
		Description: "a2amesh: task and context ids at the agents proxy workers forward to",
		History:     1,
		TTL:         b.Config().Retention,
		Storage:     jetstream.FileStorage,
		Replicas:    b.Config().Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("proxy: bucket %s: %w", BucketUpstream, err)
	}
	return bus.WrapKV(kv), nil
}
