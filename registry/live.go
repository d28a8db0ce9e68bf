package registry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// liveTimeout bounds Live's ping of an agent.
const liveTimeout = time.Second

// Live reports whether agent has at least one live worker, for callers
// that route rarely, such as agents calling agents (no watcher is kept).
//
// It first pings the agent on core NATS (ping.go): any running instance
// answers, JetStream failover or not. Without an answer it reads the
// registry bucket once: an entry renewed within its TTL (a worker that
// does not answer pings, such as one of an older release) counts. When
// that read fails too, a ping that found no responder at all means no
// live worker (false, nil); a ping that was not answered in time leaves
// the question open, and the read's error is returned.
func Live(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	if !bus.ValidToken(agent) {
		return false, nil
	}
	perr := ping(ctx, b, AgentSubject(agent), liveTimeout)
	if perr == nil {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	live, err := liveInBucket(ctx, b, agent)
	if err != nil && errors.Is(perr, bus.ErrNoResponders) {
		return false, nil
	}
	return live, err
}

// Routable reports whether agent may be sent to: it is known to the mesh
// (the agents bucket holds it), or a worker of it is live (one of a
// release that does not write the agents bucket). A known agent with no
// live worker is routable: its sends wait in its queue.
func Routable(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	known, kerr := IsKnown(ctx, b, agent)
	if known {
		return true, nil
	}
	live, err := Live(ctx, b, agent)
	if live || err != nil {
		return live, err
	}
	return false, kerr
}

// Answering reports whether a running instance of agent answers a
// liveness ping now (ping.go). Unlike Live it does not fall back to the
// registry bucket, whose entry of a worker killed a moment ago still
// looks fresh for up to its TTL.
func Answering(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	if !bus.ValidToken(agent) {
		return false, nil
	}
	err := ping(ctx, b, AgentSubject(agent), liveTimeout)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bus.ErrNoResponders):
		return false, nil
	}
	return false, err
}

// liveInBucket reads agent's entries from the registry bucket.
func liveInBucket(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	w, err := b.Registry().Watch(ctx, agent+".*", true)
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
			if json.Unmarshal(u.Value, &e) == nil && e.Agent == agent && (e.TTL <= 0 || now.Sub(e.Beat) < e.TTL) {
				return true, nil
			}
		}
	}
}
