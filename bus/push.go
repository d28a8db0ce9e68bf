package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
)

// Push-notification layout (created by the first edge that delivers push
// notifications, so meshes without push do not have it):
//
//	A2A_PUSH       KV                   <taskId>.<configId>   push configs (+ owner, version, first event)
//	A2A_PUSH_OUT   stream, WorkQueue    a2a.pushout.<taskId>  one delivery job per (event, config)
//	A2A_PUSH_KEYS  KV                   signing               the push-signing key, when not from a file
//	A2A_PUSH_LOG   stream, Limits       a2a.pushlog.<taskId>.<configId>  last delivery attempts (pushlog.go)
//	push_dispatch  consumer on A2A_EVENTS (AckAll): turns events into jobs
//	push_deliver   consumer on A2A_PUSH_OUT (explicit ack): POSTs them
const (
	BucketPush     = "A2A_PUSH"
	BucketPushKeys = "A2A_PUSH_KEYS"
	StreamPushOut  = "A2A_PUSH_OUT"

	ConsumerPushDispatch = "push_dispatch"
	ConsumerPushDeliver  = "push_deliver"

	subjPushOutPrefix = "a2a.pushout."
)

// ErrPushConfigNotFound means no push config has that task and id.
var ErrPushConfigNotFound = errors.New("bus: push config not found")

// PushRecord is a stored push config.
type PushRecord struct {
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

// PushKey is the A2A_PUSH key of a config.
func PushKey(taskID, configID string) string { return taskID + "." + configID }

// PushOutSubject is where the delivery jobs of a task wait.
func PushOutSubject(taskID string) string { return subjPushOutPrefix + taskID }

// PushJob asks for one event of a task's log to be POSTed to one config.
type PushJob struct {
	TaskID   string `json:"taskId"`
	ConfigID string `json:"configId"`
	Seq      uint64 `json:"seq"`
}

// PushStore is the push-notification part of the bus.
type PushStore struct {
	b       *Bus
	kv      jetstream.KeyValue
	kvState jetstream.Stream
	out     jetstream.Stream
	log     jetstream.Stream // the push delivery log (pushlog.go)
}

// OpenPush ensures the push bucket and the delivery stream exist.
func (b *Bus) OpenPush(ctx context.Context) (*PushStore, error) {
	c := b.cfg
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketPush,
		Description: "a2amesh: push-notification configs by task",
		History:     1,
		TTL:         c.Retention,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", BucketPush, err)
	}
	kvState, err := b.js.Stream(ctx, "KV_"+BucketPush)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s stream: %w", BucketPush, err)
	}
	out, err := b.EnsureStream(ctx, jetstream.StreamConfig{
		Name:        StreamPushOut,
		Description: "a2amesh: push-notification deliveries waiting for an edge",
		Subjects:    []string{subjPushOutPrefix + "*"},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     c.MaxQueued,
		MaxAge:      c.Retention,
		Duplicates:  c.DuplicateWindow,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", StreamPushOut, err)
	}
	log, err := b.EnsureStream(ctx, b.pushLogConfig())
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", StreamPushLog, err)
	}
	return &PushStore{b: b, kv: kv, kvState: kvState, out: out, log: log}, nil
}

// Put stores a config (creating or replacing it).
func (p *PushStore) Put(ctx context.Context, rec *PushRecord) error {
	if !ValidToken(rec.Config.TaskID) || !ValidToken(rec.Config.ID) {
		return fmt.Errorf("bus: invalid push config key %q.%q", rec.Config.TaskID, rec.Config.ID)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := p.kv.Put(ctx, PushKey(rec.Config.TaskID, rec.Config.ID), data); err != nil {
		return fmt.Errorf("bus: store push config: %w", err)
	}
	return nil
}

// Get reads one config.
func (p *PushStore) Get(ctx context.Context, taskID, configID string) (*PushRecord, error) {
	if !ValidToken(taskID) || !ValidToken(configID) {
		return nil, ErrPushConfigNotFound
	}
	e, err := p.kv.Get(ctx, PushKey(taskID, configID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrPushConfigNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("bus: get push config: %w", err)
	}
	return decodePushRecord(e.Value())
}

func decodePushRecord(b []byte) (*PushRecord, error) {
	var rec PushRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("bus: decode push config: %w", err)
	}
	return &rec, nil
}

// maxListed bounds how many configs List reads for one task.
const maxListed = 1000

// List returns the configs of a task, oldest first.
func (p *PushStore) List(ctx context.Context, taskID string) ([]*PushRecord, error) {
	if !ValidToken(taskID) {
		return nil, nil
	}
	var keys []string
	err := ScanBucket(ctx, "list push configs",
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
	out := make([]*PushRecord, 0, len(keys))
	for _, k := range keys {
		e, err := p.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("bus: list push configs: %w", err)
		}
		rec, err := decodePushRecord(e.Value())
		if err != nil {
			continue
		}
		out = append(out, rec)
	}
	sortPushRecords(out)
	return out, nil
}

func sortPushRecords(recs []*PushRecord) {
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && pushBefore(recs[j], recs[j-1]); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

func pushBefore(a, b *PushRecord) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	return a.Config.ID < b.Config.ID
}

// Delete removes a config; deleting one that does not exist is no error.
func (p *PushStore) Delete(ctx context.Context, taskID, configID string) error {
	if !ValidToken(taskID) || !ValidToken(configID) {
		return nil
	}
	if err := p.kv.Delete(ctx, PushKey(taskID, configID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("bus: delete push config: %w", err)
	}
	return nil
}

// Watch watches every config: current ones first (then a nil entry), then
// each change, deletes included.
func (p *PushStore) Watch(ctx context.Context) (*Watcher, error) {
	w, err := kvStore{p.kv}.Watch(ctx, ">", false)
	if err != nil {
		return nil, fmt.Errorf("bus: watch push configs: %w", err)
	}
	return w, nil
}

// LastRevision is the bucket's last revision: a watcher that has applied
// it has seen every config stored before the call.
func (p *PushStore) LastRevision(ctx context.Context) (uint64, error) {
	info, err := p.kvState.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: push bucket info: %w", err)
	}
	return info.State.LastSeq, nil
}

// RevisionGone reports whether the bucket no longer holds revision rev (it
// expired): nobody will ever see it.
func (p *PushStore) RevisionGone(ctx context.Context, rev uint64) bool {
	_, err := p.kvState.GetMsg(ctx, rev)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// PublishJob queues a delivery job. Its message id (event seq + config id)
// makes a repeated dispatch of the same event within the duplicate window
// a no-op.
func (p *PushStore) PublishJob(ctx context.Context, job PushJob) error {
	data, err := json.Marshal(job)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: PushOutSubject(job.TaskID), Data: data, Header: nats.Header{}}
	_, err = p.b.Publish(ctx, msg, jetstream.WithMsgID(fmt.Sprintf("p-%d-%s", job.Seq, job.ConfigID)))
	if err != nil {
		if isQueueFull(err) {
			return ErrQueueFull
		}
		return fmt.Errorf("bus: queue push delivery: %w", err)
	}
	return nil
}

// DeliverConsumer is the durable consumer, shared by all edges, of the
// delivery jobs: explicit acks, at most maxDeliver deliveries of a job
// (retry delays are the deliverer's NakWithDelay), redelivery after ackWait
// when the edge holding a job dies.
func (p *PushStore) DeliverConsumer(ctx context.Context, maxDeliver int, ackWait time.Duration) (Consumer, error) {
	c, err := p.b.js.CreateOrUpdateConsumer(ctx, StreamPushOut, jetstream.ConsumerConfig{
		Durable:       ConsumerPushDeliver,
		Description:   "a2amesh: edges POSTing push notifications",
		FilterSubject: subjPushOutPrefix + "*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    maxDeliver,
		MaxAckPending: 10_000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", ConsumerPushDeliver, err)
	}
	return consumer{c}, nil
}

// LoadOrCreateSecret returns the value stored under name in the
// A2A_PUSH_KEYS bucket, storing gen's value first if there is none; when
// several edges race, the first stored value wins for all of them.
func (b *Bus) LoadOrCreateSecret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error) {
	kv, err := b.EnsureKV(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketPushKeys,
		Description: "a2amesh: the key edges sign push notifications with",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    b.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", BucketPushKeys, err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		e, err := kv.Get(ctx, name)
		if err == nil {
			return e.Value(), nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("bus: read %s: %w", name, err)
		}
		v, err := gen()
		if err != nil {
			return nil, err
		}
		if _, err := kv.Create(ctx, name, v); err == nil {
			return v, nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("bus: store %s: %w", name, err)
		}
		// Another edge stored one first: read it.
	}
	return nil, fmt.Errorf("bus: %s: could not read or store it", name)
}
