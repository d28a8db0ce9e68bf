package registry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Live reports whether agent has at least one live worker: a registry
// entry renewed within its TTL. It reads the bucket once (no watcher is
// kept), for callers that route rarely, such as agents calling agents.
func Live(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	w, err := b.Registry().Watch(ctx, agent+".*", jetstream.IgnoreDeletes())
	if err != nil {
		return false, err
	}
	defer func() { _ = w.Stop() }()
	now := time.Now()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case u, ok := <-w.Updates():
			if !ok {
				return false, errors.New("registry: watcher closed")
			}
			if u == nil {
				return false, nil // caught up: no live entry
			}
			var e Entry
			if json.Unmarshal(u.Value(), &e) == nil && e.Agent == agent && (e.TTL <= 0 || now.Sub(e.Beat) < e.TTL) {
				return true, nil
			}
		}
	}
}
