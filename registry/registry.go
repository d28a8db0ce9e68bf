// Package registry keeps the fleet's agent cards: each worker publishes its
// agent's card under <agent>.<instance> in the registry bucket and renews it
// with heartbeats; edges watch the bucket and hold a routing table of live
// agents. It imports a2a and bus.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Entry is what a worker publishes about itself.
type Entry struct {
	Agent    string        `json:"agent"`
	Instance string        `json:"instance"`
	Card     a2a.AgentCard `json:"card"`
	// TTL is how long the entry is valid without a heartbeat.
	TTL time.Duration `json:"ttl"`
	// Beat is when the entry was last renewed.
	Beat time.Time `json:"beat"`
}

func key(agent, instance string) string { return agent + "." + instance }

// Publish registers e and renews it every TTL/3 until ctx ends, then
// deletes it so the agent disappears at once on a clean stop. When card is
// not nil each renewal registers the card it returns, so a card that
// changes reaches the edges within TTL/3.
func Publish(ctx context.Context, b *bus.Bus, e Entry, card func() a2a.AgentCard, log *slog.Logger) error {
	if e.TTL <= 0 {
		e.TTL = b.Config().RegistryTTL
	}
	kv := b.Registry()
	put := func(c context.Context) error {
		if card != nil {
			e.Card = card()
		}
		e.Beat = time.Now()
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = kv.Put(c, key(e.Agent, e.Instance), data)
		return err
	}
	if err := put(ctx); err != nil {
		return err
	}
	t := time.NewTicker(e.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = kv.Delete(c, key(e.Agent, e.Instance))
			cancel()
			return nil
		case <-t.C:
			if err := put(ctx); err != nil && ctx.Err() == nil {
				log.Warn("registry heartbeat failed", "agent", e.Agent, "err", err)
			}
		}
	}
}

// Table is an edge's view of the live fleet, fed by a bucket watcher.
type Table struct {
	mu      sync.RWMutex
	entries map[string]Entry // key -> entry
	ready   chan struct{}
}

// NewTable returns an empty table; Run fills it.
func NewTable() *Table {
	return &Table{entries: map[string]Entry{}, ready: make(chan struct{})}
}

// Run watches the registry bucket until ctx ends.
//
// Live workers renew their entries every TTL/3, so a watcher that has
// delivered nothing for TTL/2 while the table holds entries has most
// likely lost its server (a NATS node died; nats.go notices only after its
// own heartbeat timeout). Run then watches again, and prunes nothing until
// a watcher answers: a registry outage must not empty the routing table.
func (t *Table) Run(ctx context.Context, b *bus.Bus) error {
	w, err := b.Registry().WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	prune := time.NewTicker(500 * time.Millisecond)
	defer prune.Stop()
	readyOnce := sync.OnceFunc(func() { close(t.ready) })
	defer readyOnce()
	last := time.Now()      // when the watcher last delivered
	var restarted time.Time // when the watcher was last replaced
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-prune.C:
			quiet := t.quietLimit()
			if quiet == 0 || now.Sub(last) <= quiet {
				t.prune(now)
				continue
			}
			// Quiet too long: every worker died, or the watcher is lost.
			// A new watcher replays the bucket, which tells which; prune
			// once it has.
			if now.Sub(restarted) > 2*quiet {
				if nw, err := b.Registry().WatchAll(ctx); err == nil {
					_ = w.Stop()
					w, restarted = nw, now
				}
			}
		case u, ok := <-w.Updates():
			if !ok {
				return errors.New("registry: watcher closed")
			}
			last = time.Now()
			if u == nil {
				readyOnce()
				continue
			}
			t.apply(u)
		}
	}
}

// quietLimit is how long the watcher may deliver nothing before it is
// presumed lost: half the shortest TTL in the table, at least 2s (0 when
// the table is empty, since then nothing is expected).
func (t *Table) quietLimit() time.Duration {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var shortest time.Duration
	for _, e := range t.entries {
		if e.TTL > 0 && (shortest == 0 || e.TTL < shortest) {
			shortest = e.TTL
		}
	}
	if shortest == 0 {
		return 0
	}
	return max(shortest/2, 2*time.Second)
}

func (t *Table) apply(u jetstream.KeyValueEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if u.Operation() != jetstream.KeyValuePut {
		delete(t.entries, u.Key())
		return
	}
	var e Entry
	if json.Unmarshal(u.Value(), &e) != nil || !bus.ValidToken(e.Agent) {
		return
	}
	t.entries[u.Key()] = e
}

func (t *Table) prune(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.entries {
		if now.Sub(e.Beat) > e.TTL {
			delete(t.entries, k)
		}
	}
}

// Ready is closed once the table holds the bucket's initial contents.
func (t *Table) Ready() <-chan struct{} { return t.ready }

// Lookup returns the card of a live agent.
func (t *Table) Lookup(agent string) (a2a.AgentCard, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var best Entry
	found := false
	prefix := agent + "."
	for k, e := range t.entries {
		if strings.HasPrefix(k, prefix) && (!found || e.Beat.After(best.Beat)) {
			best, found = e, true
		}
	}
	return best.Card, found
}

// Agents returns the live agents' names and cards, sorted by name.
func (t *Table) Agents() []Entry {
	t.mu.RLock()
	byAgent := map[string]Entry{}
	for _, e := range t.entries {
		if cur, ok := byAgent[e.Agent]; !ok || e.Beat.After(cur.Beat) {
			byAgent[e.Agent] = e
		}
	}
	t.mu.RUnlock()
	out := make([]Entry, 0, len(byAgent))
	for _, e := range byAgent {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}
