package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// An agent's identity outlives its workers. The registry bucket holds one
// entry per running instance, gone within seconds of a crash; the agents
// bucket holds one record per agent, kept from its first registration
// until an operator removes it (Remove) or bus.Config.AgentRetention
// passes without any of its workers writing it:
//
//	A2A_AGENTS  KV, TTL AgentRetention  <agent>  card, extended card, when a worker last wrote it
//
// Edges route by it: a send to a known agent with no live worker is
// queued in the agent's work queue (a durable consumer that outlives its
// workers too) for the next worker to take, whether the last one crashed,
// is restarting, or was scaled to zero. Only a name that never registered,
// or was removed or forgotten, is an unknown agent.
//
// Workers write their agent's record when they start, when its card
// changes, and every knownRefresh while they run, so the bucket's TTL
// counts from the last worker seen.
const BucketAgents = "A2A_AGENTS"

// Known is what the mesh keeps of an agent between its workers.
type Known struct {
	Agent        string         `json:"agent"`
	Card         a2a.AgentCard  `json:"card"`
	ExtendedCard *a2a.AgentCard `json:"extendedCard,omitempty"`
	CardCheck    *CardCheck     `json:"cardCheck,omitempty"`
	// Seen is when a worker of the agent last wrote the record.
	Seen time.Time `json:"seen"`
}

// knownRefresh is how often a running worker writes its agent's record
// again although nothing changed: a tenth of the retention, at most an
// hour, so the record outlives the last worker by the retention, give or
// take that.
func knownRefresh(retention time.Duration) time.Duration {
	return min(max(retention/10, 100*time.Millisecond), time.Hour)
}

// openAgents opens the agents bucket, creating it on first use; once per
// Bus.
func openAgents(ctx context.Context, b *bus.Bus) (bus.KV, error) {
	c := b.Config()
	kv, err := b.OpenKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketAgents,
		Description: "a2amesh: agents known to the mesh and their cards, kept while their workers come and go",
		History:     1,
		TTL:         c.AgentRetention,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("registry: bucket %s: %w", BucketAgents, err)
	}
	return kv, nil
}

// IsKnown reports whether agent has a record in the agents bucket: it
// registered once and was neither removed nor forgotten.
func IsKnown(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	if !bus.ValidToken(agent) {
		return false, nil
	}
	kv, err := openAgents(ctx, b)
	if err != nil {
		return false, err
	}
	_, err = kv.Get(ctx, agent)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bus.ErrKeyNotFound):
		return false, nil
	}
	return false, err
}

// Remove forgets agent: from now on a send to it is refused as unknown,
// and its card is no longer served. It reports whether the agent was
// known. A worker of the agent that still runs registers it again when it
// next writes its record (within knownRefresh), so stop its workers first;
// work already queued for it stays queued until a worker comes back.
func Remove(ctx context.Context, b *bus.Bus, agent string) (bool, error) {
	known, err := IsKnown(ctx, b, agent)
	if err != nil || !known {
		return false, err
	}
	kv, err := openAgents(ctx, b) // opened by IsKnown: no round trip
	if err != nil {
		return false, err
	}
	if err := kv.Delete(ctx, agent); err != nil {
		return false, fmt.Errorf("registry: remove %s: %w", agent, err)
	}
	return true, nil
}

// recorder writes an instance's agent record (Known) when it changes, and
// every knownRefresh otherwise. It is used by one goroutine (Publish's).
type recorder struct {
	b    *bus.Bus
	kv   bus.KV
	last []byte // the record last written, without Seen
	at   time.Time
}

// record writes e's agent record unless the one last written says the same
// and is recent.
func (r *recorder) record(ctx context.Context, e Entry) error {
	k := Known{Agent: e.Agent, Card: e.Card, ExtendedCard: e.ExtendedCard, CardCheck: e.CardCheck}
	same, err := json.Marshal(k)
	if err != nil {
		return err
	}
	now := time.Now()
	if bytes.Equal(same, r.last) && now.Sub(r.at) < knownRefresh(r.b.Config().AgentRetention) {
		return nil
	}
	if r.kv == nil {
		if r.kv, err = openAgents(ctx, r.b); err != nil {
			return err
		}
	}
	k.Seen = now.UTC()
	data, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if _, err := r.kv.Put(ctx, e.Agent, data); err != nil {
		return fmt.Errorf("registry: record agent %s: %w", e.Agent, err)
	}
	r.last, r.at = same, now
	return nil
}

// written reports whether a record was written.
func (r *recorder) written() bool { return r.last != nil }

// decodeKnown reads an agents-bucket update; ok is false for one that is
// not a valid record.
func decodeKnown(u *bus.Entry) (Known, bool) {
	var k Known
	if json.Unmarshal(u.Value, &k) != nil || k.Agent != u.Key || !bus.ValidToken(k.Agent) {
		return Known{}, false
	}
	return k, true
}

// keptLocked reports whether k is within its retention. The bucket drops
// an expired record without telling its watchers, so a table checks the
// age itself rather than keep it until its next full read. t.mu is held.
func (t *Table) keptLocked(k Known, now time.Time) bool {
	keep := bus.DefaultConfig.AgentRetention
	if t.bus != nil {
		keep = t.bus.Config().AgentRetention
	}
	return now.Sub(k.Seen) < keep
}

// knownReread is how long a table follows the agents bucket's changes
// before it reads the bucket whole again: whatever a watch missed (a
// change made while its server was failing over) is set right by then.
const knownReread = time.Minute

// watchKnown keeps t.known equal to the agents bucket until ctx ends.
func (t *Table) watchKnown(ctx context.Context, log *slog.Logger) {
	wait := 250 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := t.readKnown(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			attempt, wait = 0, 250*time.Millisecond
			continue
		}
		d := bus.Jitter(wait)
		wait = min(2*wait, 5*time.Second)
		log.Warn("registry: waiting for a read of the agents bucket", "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond))
		bus.Sleep(ctx, d)
	}
}

// readKnown reads the agents bucket whole, replaces t.known with it, and
// applies its changes for knownReread. It returns nil when that time is
// up, and an error when the bucket cannot be read or its watch stops.
func (t *Table) readKnown(ctx context.Context) error {
	kv, err := openAgents(ctx, t.bus)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, bus.Jitter(knownReread))
	defer cancel()
	w, err := kv.Watch(wctx, ">", false)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	fresh := map[string]Known{}
	for {
		var u *bus.Entry
		var ok bool
		select {
		case <-wctx.Done():
			return nil
		case u, ok = <-w.Updates():
		}
		switch {
		case !ok:
			if wctx.Err() != nil {
				return nil
			}
			return errors.New("registry: the agents bucket's watcher stopped")
		case u == nil && fresh != nil: // caught up: the bucket as it is
			t.mu.Lock()
			t.known, t.knownLoaded = fresh, true
			t.mu.Unlock()
			fresh = nil
			t.markLoaded()
		case u == nil:
		case fresh != nil:
			if k, ok := decodeKnown(u); ok {
				fresh[k.Agent] = k
			} else if u.Deleted {
				delete(fresh, u.Key)
			}
		default:
			k, ok := decodeKnown(u)
			t.mu.Lock()
			if ok {
				t.known[k.Agent] = k
			} else if u.Deleted {
				delete(t.known, u.Key)
			}
			t.mu.Unlock()
		}
	}
}
