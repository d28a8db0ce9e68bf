package cardsig

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// BucketCardKeys holds the key set edges sign agent cards with (one entry,
// CardKeysEntry), unless the edges are given their keys by flag. The first
// edge to serve a card creates it; rotation rewrites it (a2amesh
// card-keys).
const BucketCardKeys = "A2A_CARD_KEYS"

// CardKeysEntry is the key of the card key set in BucketCardKeys.
const CardKeysEntry = "cards"

// ErrCardKeysChanged is returned by CardKeys.Update when the entry was
// written by someone else since it was read.
var ErrCardKeysChanged = errors.New("cardsig: the card key set changed meanwhile")

// CardKeys is the entry of BucketCardKeys.
type CardKeys struct{ kv jetstream.KeyValue }

// OpenKeyStore opens (creating on first use) the card key bucket on b.
func OpenKeyStore(ctx context.Context, b *bus.Bus) (*CardKeys, error) {
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketCardKeys,
		Description: "a2amesh: the keys edges sign agent cards with",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.Config().Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cardsig: bucket %s: %w", BucketCardKeys, err)
	}
	return &CardKeys{kv: kv}, nil
}

// OpenCardKeys opens (creating on first use, with replicas) the card key
// bucket on nc without opening the rest of the mesh's layout, whose
// settings it leaves alone: for tools that only manage the keys.
func OpenCardKeys(ctx context.Context, nc *nats.Conn, replicas int) (*CardKeys, error) {
	b, err := bus.Attach(nc, bus.Config{Replicas: replicas})
	if err != nil {
		return nil, err
	}
	return OpenKeyStore(ctx, b)
}

// Load returns the stored key set and its revision; bus.ErrKeyNotFound when
// there is none yet.
func (c *CardKeys) Load(ctx context.Context) ([]byte, uint64, error) {
	e, err := c.kv.Get(ctx, CardKeysEntry)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, bus.ErrKeyNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bus: read %s: %w", BucketCardKeys, err)
	}
	return e.Value(), e.Revision(), nil
}

// LoadOrCreate returns the stored key set, storing gen's value first if
// there is none; when several edges race, the first stored value wins for
// all of them.
func (c *CardKeys) LoadOrCreate(ctx context.Context, gen func() ([]byte, error)) ([]byte, uint64, error) {
	for attempt := 0; attempt < 3; attempt++ {
		v, rev, err := c.Load(ctx)
		if !errors.Is(err, bus.ErrKeyNotFound) {
			return v, rev, err
		}
		if v, err = gen(); err != nil {
			return nil, 0, err
		}
		rev, err = c.kv.Create(ctx, CardKeysEntry, v)
		if err == nil {
			return v, rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, 0, fmt.Errorf("bus: store %s: %w", BucketCardKeys, err)
		}
		// Another edge stored one first: read it.
	}
	return nil, 0, fmt.Errorf("bus: %s: could not read or store it", BucketCardKeys)
}

// Update replaces the key set read at revision rev; ErrCardKeysChanged
// when it was written since.
func (c *CardKeys) Update(ctx context.Context, value []byte, rev uint64) (uint64, error) {
	n, err := c.kv.Update(ctx, CardKeysEntry, value, rev)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, ErrCardKeysChanged
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, ErrCardKeysChanged
	}
	if err != nil {
		return 0, fmt.Errorf("bus: store %s: %w", BucketCardKeys, err)
	}
	return n, nil
}
