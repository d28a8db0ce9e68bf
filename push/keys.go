package push

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// bucketKeys holds the push-signing key when no key file gives one.
const bucketKeys = "A2A_PUSH_KEYS"

// loadOrCreateKey returns the value stored under name in the A2A_PUSH_KEYS
// bucket, storing gen's value first if there is none; when several
// deliverers race, the first stored value wins for all of them.
func loadOrCreateKey(ctx context.Context, b *bus.Bus, name string, gen func() ([]byte, error)) ([]byte, error) {
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      bucketKeys,
		Description: "a2amesh: the key edges sign push notifications with",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.Config().Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("push: bucket %s: %w", bucketKeys, err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		e, err := kv.Get(ctx, name)
		if err == nil {
			return e.Value(), nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("push: read %s: %w", name, err)
		}
		v, err := gen()
		if err != nil {
			return nil, err
		}
		if _, err := kv.Create(ctx, name, v); err == nil {
			return v, nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("push: store %s: %w", name, err)
		}
		// Another deliverer stored one first: read it.
	}
	return nil, fmt.Errorf("push: %s: could not read or store it", name)
}
