package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Push's layout on JetStream (created by the first deliverer or config
// store, so meshes without push do not have it):
//
//	A2A_PUSH       KV                   <taskId>.<configId>   push configs (+ owner, version, first event)
//	A2A_PUSH_OUT   stream, WorkQueue    a2a.pushout.<taskId>  one delivery job per (event, config)
//	A2A_PUSH_KEYS  KV                   signing               the push-signing key, when not from a file (keys.go)
//	A2A_PUSH_LOG   stream, Limits       a2a.pushlog.<taskId>.<configId>  last delivery attempts (log.go)
//	push_dispatch  consumer on A2A_LOG (AckAll): turns events into jobs
//	push_deliver   consumer on A2A_PUSH_OUT (explicit ack): POSTs them
//
// The bucket's name and the dispatch consumer's are bus's (bus.BucketPush,
// bus.ConsumerPushDispatch): the task store purges a task's configs with
// the task, and makes the dispatch consumer on its events stream.
const (
	// StreamOut is the work queue of delivery jobs.
	StreamOut = "A2A_PUSH_OUT"
	// ConsumerDeliver is the consumer, shared by every deliverer, of the
	// delivery jobs.
	ConsumerDeliver = "push_deliver"

	subjOutPrefix = "a2a.pushout."
)

// errConfigNotFound means no push config has that task and id.
var errConfigNotFound = errors.New("push: config not found")

// Record is a stored push config.
type Record struct {
	Config a2a.TaskPushNotificationConfig `json:"config"`
	// Owner is the principal that set it (the task's owner).
	Owner string `json:"owner,omitempty"`
	// Version is the protocol version of the call that set it: deliveries
	// use its wire shapes.
	Version a2a.Version `json:"version"`
	// FromSeq is the task's last event when the config was set: events
	// after it are delivered.
	FromSeq uint64 `json:"fromSeq"`
	Created string `json:"created"`
}

// configKey is the A2A_PUSH key of a config.
func configKey(taskID, configID string) string { return taskID + "." + configID }

// jobSubject is where the delivery jobs of a task wait.
func jobSubject(taskID string) string { return subjOutPrefix + taskID }

// Job asks for one event of a task's log to be POSTed to one config.
type Job struct {
	TaskID   string `json:"taskId"`
	ConfigID string `json:"configId"`
	Seq      uint64 `json:"seq"`
}

// configs is push's layout on one bus: the config bucket, the delivery
// jobs' work queue and the delivery log.
type configs struct {
	b       *bus.Bus
	kv      jetstream.KeyValue
	kvState jetstream.Stream
	out     jetstream.Stream
	log     jetstream.Stream // the push delivery log (log.go)
}

// openConfigs ensures the push bucket, the delivery stream and the
// delivery log exist.
func openConfigs(ctx context.Context, b *bus.Bus) (*configs, error) {
	c := b.Config()
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      bus.BucketPush,
		Description: "a2amesh: push-notification configs by task",
		History:     1,
		TTL:         c.Retention,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("push: bucket %s: %w", bus.BucketPush, err)
	}
	kvState, err := b.JetStream().Stream(ctx, "KV_"+bus.BucketPush)
	if err != nil {
		return nil, fmt.Errorf("push: bucket %s stream: %w", bus.BucketPush, err)
	}
	out, err := b.EnsureStream(ctx, jetstream.StreamConfig{
		Name:        StreamOut,
		Description: "a2amesh: push-notification deliveries waiting for an edge",
		Subjects:    []string{subjOutPrefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     c.MaxQueued,
		MaxAge:      c.Retention,
		Duplicates:  c.DuplicateWindow,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("push: stream %s: %w", StreamOut, err)
	}
	log, err := b.EnsureStream(ctx, logConfig(c))
	if err != nil {
		return nil, fmt.Errorf("push: stream %s: %w", streamLog, err)
	}
	return &configs{b: b, kv: kv, kvState: kvState, out: out, log: log}, nil
}

// Put stores a config (creating or replacing it).
func (p *configs) Put(ctx context.Context, rec *Record) error {
	if !bus.ValidToken(rec.Config.TaskID) || !bus.ValidToken(rec.Config.ID) {
		return fmt.Errorf("push: invalid config key %q.%q", rec.Config.TaskID, rec.Config.ID)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := p.kv.Put(ctx, configKey(rec.Config.TaskID, rec.Config.ID), data); err != nil {
		return fmt.Errorf("push: store config: %w", err)
	}
	return nil
}

// Get reads one config.
func (p *configs) Get(ctx context.Context, taskID, configID string) (*Record, error) {
	if !bus.ValidToken(taskID) || !bus.ValidToken(configID) {
		return nil, errConfigNotFound
	}
	e, err := p.kv.Get(ctx, configKey(taskID, configID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errConfigNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("push: get config: %w", err)
	}
	return decodeRecord(e.Value())
}

func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("push: decode config: %w", err)
	}
	return &rec, nil
}

// maxListed bounds how many configs List reads for one task.
const maxListed = 1000

// List returns the configs of a task, oldest first.
func (p *configs) List(ctx context.Context, taskID string) ([]*Record, error) {
	if !bus.ValidToken(taskID) {
		return nil, nil
	}
	var keys []string
	err := bus.ScanBucket(ctx, "list push configs",
		func(ctx context.Context) (jetstream.KeyWatcher, error) {
			return p.kv.Watch(ctx, taskID+".*", jetstream.IgnoreDeletes(), jetstream.MetaOnly())
		},
		func() { keys = keys[:0] },
		func(e jetstream.KeyValueEntry) {
			if len(keys) < maxListed {
				keys = append(keys, e.Key())
			}
		})
	if err != nil {
		return nil, err
	}
	out := make([]*Record, 0, len(keys))
	for _, k := range keys {
		e, err := p.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("push: list configs: %w", err)
		}
		rec, err := decodeRecord(e.Value())
		if err != nil {
			continue
		}
		out = append(out, rec)
	}
	sortRecords(out)
	return out, nil
}

func sortRecords(recs []*Record) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && recordBefore(recs[j], recs[j-1]); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

func recordBefore(a, b *Record) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	return a.Config.ID < b.Config.ID
}

// Delete removes a config; deleting one that does not exist is no error.
func (p *configs) Delete(ctx context.Context, taskID, configID string) error {
	if !bus.ValidToken(taskID) || !bus.ValidToken(configID) {
		return nil
	}
	if err := p.kv.Delete(ctx, configKey(taskID, configID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("push: delete config: %w", err)
	}
	return nil
}

// Watch watches every config: current ones first (then a nil entry), then
// each change, deletes included.
func (p *configs) Watch(ctx context.Context) (*bus.Watcher, error) {
	w, err := bus.WrapKV(p.kv).Watch(ctx, ">", false)
	if err != nil {
		return nil, fmt.Errorf("push: watch configs: %w", err)
	}
	return w, nil
}

// LastRevision is the bucket's last revision: a watcher that has applied
// it has seen every config stored before the call.
func (p *configs) LastRevision(ctx context.Context) (uint64, error) {
	info, err := p.kvState.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("push: config bucket info: %w", err)
	}
	return info.State.LastSeq, nil
}

// RevisionGone reports whether the bucket no longer holds revision rev (it
// expired): nobody will ever see it.
func (p *configs) RevisionGone(ctx context.Context, rev uint64) bool {
	_, err := p.kvState.GetMsg(ctx, rev)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// PublishJob queues a delivery job. Its message id (event seq + config id)
// makes a repeated dispatch of the same event within the duplicate window
// a no-op.
func (p *configs) PublishJob(ctx context.Context, job Job) error {
	data, err := json.Marshal(job)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: jobSubject(job.TaskID), Data: data, Header: nats.Header{}}
	_, err = p.b.Publish(ctx, msg, jetstream.WithMsgID(fmt.Sprintf("p-%d-%s", job.Seq, job.ConfigID)))
	if err != nil {
		if bus.IsQueueFull(err) {
			return bus.ErrQueueFull
		}
		return fmt.Errorf("push: queue delivery: %w", err)
	}
	return nil
}

// DeliverConsumer is the durable consumer, shared by all edges, of the
// delivery jobs: explicit acks, at most maxDeliver deliveries of a job
// (retry delays are the deliverer's NakWithDelay), redelivery after ackWait
// when the edge holding a job dies.
func (p *configs) DeliverConsumer(ctx context.Context, maxDeliver int, ackWait time.Duration) (bus.Consumer, error) {
	c, err := p.b.JetStream().CreateOrUpdateConsumer(ctx, StreamOut, jetstream.ConsumerConfig{
		Durable:       ConsumerDeliver,
		Description:   "a2amesh: edges POSTing push notifications",
		FilterSubject: subjOutPrefix + "*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    maxDeliver,
		MaxAckPending: 10_000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("push: consumer %s: %w", ConsumerDeliver, err)
	}
	return bus.WrapConsumer(c), nil
}
