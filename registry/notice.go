package registry

import (
	"encoding/json"
	"log/slog"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Registration notices, on core NATS: every heartbeat of an instance is
// also published, entry and all, on
//
//	a2a.registry.notice.<agent>.<instance>
//
// and a clean stop says so there. Edges' tables (those that probe: not the
// tables workers keep for their calls) hear them and apply each as a
// bucket update. The bucket stays what a table reads when it starts; the
// notices make a change reach every edge connected to NATS within a
// message's latency, however the bucket's watch fares: a watch whose
// consumer is being recreated after a node restart, or a registration
// whose bucket write fails while the bucket has no quorum (core NATS works
// meanwhile). With NATS authorization, workers need publish rights and
// edges subscribe rights on a2a.registry.notice.>.
const subjNoticePrefix = "a2a.registry.notice."

// notice is what an instance publishes: its entry, or that it stopped.
type notice struct {
	Entry *Entry `json:"entry,omitempty"`
	// Gone: the instance Agent.Instance stopped cleanly.
	Gone     bool   `json:"gone,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Instance string `json:"instance,omitempty"`
	// At is when it stopped, by its clock: heartbeats of it written
	// before then and delivered later are stale.
	At time.Time `json:"at,omitzero"`
}

// announce publishes e's heartbeat (gone: its clean stop) as a notice. It
// never waits on the network; a notice lost is made good by the next
// heartbeat, or by the bucket.
func announce(b *bus.Bus, e Entry, gone bool) {
	n := notice{Entry: &e}
	if gone {
		n = notice{Gone: true, Agent: e.Agent, Instance: e.Instance, At: time.Now()}
	}
	data, err := json.Marshal(n)
	if err != nil {
		return
	}
	_ = b.Gossip(subjNoticePrefix + e.Agent + "." + e.Instance).Publish(data)
}

// hearNotices applies every notice to t until the returned subscription
// is stopped.
func (t *Table) hearNotices(log *slog.Logger) *bus.Subscription {
	sub, err := t.bus.Gossip(subjNoticePrefix + ">").Listen(func(data []byte) {
		var n notice
		if json.Unmarshal(data, &n) != nil {
			return
		}
		switch {
		case n.Gone && bus.ValidToken(n.Agent) && bus.ValidToken(n.Instance):
			t.applyStop(n.Agent, n.Instance, n.At)
		case n.Entry != nil:
			raw, err := json.Marshal(n.Entry)
			if err == nil {
				t.apply(&bus.Entry{Key: key(n.Entry.Agent, n.Entry.Instance), Value: raw})
			}
		}
	})
	if err != nil {
		log.Warn("registry: cannot hear registration notices; the table follows the bucket alone", "err", err)
		return nil
	}
	return sub
}
