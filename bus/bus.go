package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the count bounds.
const (
	DefaultMaxTasks      = 1_000_000
	DefaultMaxTaskEvents = 10_000
	// EventsPerTask sizes the default MaxEvents: an average task's log
	// (submitted, working, a few artifacts, final) is well under it.
	EventsPerTask = 32
	// DefaultAgentRetention keeps an agent known for 30 days without a
	// worker: longer than any planned pause (a holiday, an agent scaled
	// to zero until month end), so scaling to zero never makes an agent
	// unknown; an operator removes a retired agent at once.
	DefaultAgentRetention = 30 * 24 * time.Hour
)

// Config sets the JetStream layout's limits. Zero values take the defaults
// from DefaultConfig.
type Config struct {
	// Replicas for every stream and bucket: 1 on a single node, 3 on a cluster.
	Replicas int
	// Retention is how long a task (snapshot and events) is kept after its
	// last change.
	Retention time.Duration
	// MaxQueued bounds tasks waiting in the work queue; past it, sends are
	// refused (DiscardNew) rather than dropping queued tasks.
	MaxQueued int64
	// MaxQueueBytes bounds the work queue's size in bytes.
	MaxQueueBytes int64
	// DuplicateWindow is how long a retried send with the same messageId is
	// recognised.
	DuplicateWindow time.Duration
	// AckWait is how long a worker may hold a task without a heartbeat
	// before it is redelivered to another worker. Workers heartbeat every
	// AckWait/4, so a short AckWait costs little and a crashed worker's
	// tasks move on quickly; a run that stalls past it is fenced off by the
	// run that replaces it (AppendOptions).
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one work item; the last one fails the
	// task and dead-letters it.
	MaxDeliver int
	// RegistryTTL is how long an agent card stays without a heartbeat.
	RegistryTTL time.Duration
	// AgentRetention is how long an agent stays known (its card served,
	// its sends queued) after its last worker was seen (package registry).
	AgentRetention time.Duration
	// MaxTasks bounds the tasks kept: past it the least recently changed
	// are evicted whole and read as not found (retention.go).
	MaxTasks int64
	// MaxTaskEvents bounds one task's log; further appends fail.
	MaxTaskEvents int64
	// MaxEvents bounds the events of all tasks (default 32×MaxTasks).
	MaxEvents int64
}

// DefaultConfig is the layout used when a field is left zero.
var DefaultConfig = Config{
	Replicas:        1,
	Retention:       24 * time.Hour,
	MaxQueued:       100_000,
	MaxQueueBytes:   1 << 30,
	DuplicateWindow: 2 * time.Minute,
	AckWait:         2 * time.Second,
	MaxDeliver:      10,
	RegistryTTL:     10 * time.Second,
	AgentRetention:  DefaultAgentRetention,
	MaxTasks:        DefaultMaxTasks,
	MaxTaskEvents:   DefaultMaxTaskEvents,
}

func (c Config) withDefaults() Config {
	d := DefaultConfig
	if c.Replicas > 0 {
		d.Replicas = c.Replicas
	}
	if c.Retention > 0 {
		d.Retention = c.Retention
	}
	if c.MaxQueued > 0 {
		d.MaxQueued = c.MaxQueued
	}
	if c.MaxQueueBytes > 0 {
		d.MaxQueueBytes = c.MaxQueueBytes
	}
	if c.DuplicateWindow > 0 {
		d.DuplicateWindow = c.DuplicateWindow
	}
	if c.AckWait > 0 {
		d.AckWait = c.AckWait
	}
	if c.MaxDeliver > 0 {
		d.MaxDeliver = c.MaxDeliver
	}
	if c.RegistryTTL > 0 {
		d.RegistryTTL = c.RegistryTTL
	}
	if c.AgentRetention > 0 {
		d.AgentRetention = c.AgentRetention
	}
	if c.MaxTasks > 0 {
		d.MaxTasks = c.MaxTasks
	}
	if c.MaxTaskEvents > 0 {
		d.MaxTaskEvents = c.MaxTaskEvents
	}
	d.MaxEvents = c.MaxEvents
	if d.MaxEvents <= 0 {
		d.MaxEvents = d.MaxTasks * EventsPerTask
	}
	return d
}

// Bus is a connection to the mesh's JetStream layout. It is safe for
// concurrent use.
type Bus struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	cfg      Config
	work     jetstream.Stream
	registry jetstream.KeyValue
	// deadStream holds the dead letters (dead.go).
	deadStream jetstream.Stream
	// leases holds the work one process does at a time (lease.go), and
	// instance names this bus as their holder.
	leases   jetstream.KeyValue
	instance string

	// kvs are the buckets OpenKV opened, by name.
	kvMu sync.Mutex
	kvs  map[string]KV
}

// Open ensures the streams and buckets exist (creating or updating them)
// and returns a Bus using nc. The caller keeps ownership of nc, and runs
// the bus's upkeep (Run) for as long as it uses the bus.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Bus, error) {
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	b := &Bus{nc: nc, js: js, cfg: cfg, instance: newInstance()}
	if err := b.ensure(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Attach returns a Bus on nc that creates nothing and leaves the layout's
// settings alone: for tools that manage one resource of the mesh (the card
// keys) without opening the rest.
func Attach(nc *nats.Conn, cfg Config) (*Bus, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, cfg: cfg.withDefaults(), instance: newInstance()}, nil
}

func (b *Bus) ensure(ctx context.Context) error {
	c := b.cfg
	streams := []jetstream.StreamConfig{{
		Name:        StreamWork,
		Description: "a2amesh: tasks waiting for a worker, one subject per agent",
		Subjects:    []string{subjWorkPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     c.MaxQueued,
		MaxBytes:    c.MaxQueueBytes,
		Duplicates:  c.DuplicateWindow,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	}, {
		Name:        StreamDead,
		Description: "a2amesh: work items that exhausted their deliveries",
		Subjects:    []string{subjDeadPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      c.Retention,
		MaxMsgs:     100_000,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	}}
	for _, sc := range streams {
		if _, err := b.EnsureStream(ctx, sc); err != nil {
			return fmt.Errorf("bus: stream %s: %w", sc.Name, err)
		}
	}
	var err error
	if b.work, err = b.js.Stream(ctx, StreamWork); err != nil {
		return fmt.Errorf("bus: stream %s: %w", StreamWork, err)
	}
	if b.deadStream, err = b.js.Stream(ctx, StreamDead); err != nil {
		return fmt.Errorf("bus: stream %s: %w", StreamDead, err)
	}
	kvs := []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&b.registry, jetstream.KeyValueConfig{Bucket: BucketRegistry, Description: "a2amesh: agent cards of live workers",
			History: 1, TTL: c.RegistryTTL * 3, Storage: jetstream.FileStorage, Replicas: c.Replicas}},
		// An entry outlives its lease's TTL only to be taken over by
		// compare-and-set; the bucket's TTL clears leases nobody renews.
		{&b.leases, jetstream.KeyValueConfig{Bucket: BucketLeases, Description: "a2amesh: work one process does at a time",
			History: 1, TTL: leaseBucketTTL, Storage: jetstream.FileStorage, Replicas: c.Replicas}},
	}
	for _, k := range kvs {
		kv, err := b.EnsureKV(ctx, k.cfg)
		if err != nil {
			return fmt.Errorf("bus: bucket %s: %w", k.cfg.Bucket, err)
		}
		*k.dst = kv
	}
	return nil
}

// JetStream is the underlying JetStream context, for tests and tools
// that inspect the layout itself. No component of the mesh uses it: each
// gets the role it needs (roles.go).
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Config is the layout configuration in force.
func (b *Bus) Config() Config { return b.cfg }

// Conn is the NATS connection the bus uses.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// IsWrongLastSeq reports a failed compare-and-set (expected last sequence).
func IsWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
