package taskstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Store is the mesh's task store on one bus connection: every task's log
// (read as the task, and paged through by ListTasks), the counts, the
// delegation record and the retention that bounds them all. It
// is safe for concurrent use. Its upkeep (retention) is Run, which the
// host runs for as long as it uses the store.
type Store struct {
	bus *bus.Bus
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg bus.Config

	// log holds every task's log (log.go), which is also what ListTasks
	// pages through (list.go).
	log jetstream.Stream
	// aliasStream holds, and aliases remembers, where the logs of tasks
	// whose ids were not minted are (ids.go).
	aliasStream jetstream.Stream
	aliases     aliasCache
	// delegStream records which tasks each task delegated (delegations.go).
	delegStream jetstream.Stream
	// countStream holds the task counters, and counts this process's
	// changes to them (counts.go).
	countStream jetstream.Stream
	counts      counts
	// stalls hands store-full notices to settle watches (stalls.go).
	stalls stalls
}

// Open ensures the task store's streams and bucket exist (creating or
// updating them) and returns the store on b's connection.
func Open(ctx context.Context, b *bus.Bus) (*Store, error) {
	s := &Store{bus: b, nc: b.Conn(), js: b.JetStream(), cfg: b.Config()}
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Bus is the bus the store was opened on.
func (b *Store) Bus() *bus.Bus { return b.bus }

// Config is the layout configuration in force.
func (b *Store) Config() bus.Config { return b.cfg }

func (b *Store) ensure(ctx context.Context) error {
	if err := b.refuseOldLayout(ctx); err != nil {
		return err
	}
	return b.ensureStreams(ctx)
}

func (b *Store) ensureStreams(ctx context.Context) error {
	c := b.cfg
	direct := b.bus.AllowDirect()
	streams := []struct {
		dst *jetstream.Stream
		cfg jetstream.StreamConfig
	}{{&b.log, jetstream.StreamConfig{
		Name:        StreamLog,
		Description: "a2amesh: each task's log, the only place the task is kept",
		Subjects:    []string{subjLogPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      c.Retention,
		Storage:     jetstream.FileStorage,
		// A task's messages repeat its ids and texts: S2 on the stored
		// blocks (not on the wire) roughly halves the disk a task takes.
		Compression: jetstream.S2Compression,
		Replicas:    c.Replicas,
		AllowDirect: direct, // leader reads on R3 (bus.AllowDirect)
		// Appends carry a message id only so that publish can repeat
		// them through a failover: the window need only outlast that
		// (the default, 2 min, kept four times the ids in memory).
		Duplicates: 2 * bus.FailoverBudget,
		// Refuse rather than drop (retention.go): a full log fails its
		// task's next append; Trim keeps the stream below MaxEvents.
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxMsgsPerSubject:    c.MaxTaskEvents,
		MaxMsgs:              c.MaxEvents,
	}}, {&b.aliasStream, jetstream.StreamConfig{
		Name:        StreamAliases,
		Description: "a2amesh: where the logs of tasks whose ids the mesh did not mint are",
		Subjects:    []string{subjAliasPrefix + "*"},
		Retention:   jetstream.LimitsPolicy,
		// An alias goes with its task (Trim); one whose task aged out
		// goes a retention later (a task that runs for longer than
		// twice the retention loses its alias).
		MaxAge:            2 * c.Retention,
		MaxMsgsPerSubject: 1,
		Storage:           jetstream.FileStorage,
		Replicas:          c.Replicas,
		AllowDirect:       direct,
	}}, {&b.delegStream, jetstream.StreamConfig{
		Name:        StreamDelegations,
		Description: "a2amesh: the tasks each task delegated, one entry each",
		Subjects:    []string{subjDelegPrefix + "*"},
		Retention:   jetstream.LimitsPolicy,
		// An entry lives as long as the tasks it names (Retention after
		// their last write, at most).
		MaxAge:            c.Retention,
		MaxMsgsPerSubject: MaxDelegations,
		MaxMsgs:           c.MaxTasks,
		Discard:           jetstream.DiscardOld,
		Duplicates:        2 * bus.FailoverBudget,
		Storage:           jetstream.FileStorage,
		Replicas:          c.Replicas,
	}}, {&b.countStream, jetstream.StreamConfig{
		Name:        StreamCounts,
		Description: "a2amesh: how many tasks each owner has, of each agent",
		Subjects:    []string{subjCountPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		// A counter's last message holds its value.
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		AllowMsgCounter:   true,
		Storage:           jetstream.FileStorage,
		Replicas:          c.Replicas,
		AllowDirect:       direct,
	}}}
	for _, s := range streams {
		st, err := b.bus.EnsureStream(ctx, s.cfg)
		if err != nil {
			return fmt.Errorf("taskstore: stream %s: %w", s.cfg.Name, err)
		}
		*s.dst = st
	}
	return nil
}
