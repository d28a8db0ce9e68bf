package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketUpstream maps mesh tasks and contexts to the task and context ids
// of the agent a proxy worker forwards them to. It is created by the first
// proxy worker, so meshes without proxies do not have it.
const BucketUpstream = "A2A_UPSTREAM"

// UpstreamBucket opens (creating on first use) the bucket proxy workers
// keep their id mappings in. Entries live as long as tasks do.
func (b *Bus) UpstreamBucket(ctx context.Context) (KV, error) {
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketUpstream,
		Description: "a2amesh: task and context ids at the agents proxy workers forward to",
		History:     1,
		TTL:         b.cfg.Retention,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", BucketUpstream, err)
	}
	return kvStore{kv}, nil
}
