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

// The roles the bus hands out: each user gets the narrow interface it needs
// (a worker a Consumer of its work queue, the registry a KV of cards, the
// push deliverer its consumers and its config KV, metrics ConsumerStats),
// and no NATS type leaves this package.

// Msg is one message delivered by a pull consumer, to settle with one of
// Ack, Nak, NakWithDelay or Term (InProgress restarts its ack timer).
type Msg struct{ m jetstream.Msg }

// MsgInfo is where a delivered message stands.
type MsgInfo struct {
	Seq          uint64    // its sequence in the stream
	NumDelivered uint64    // deliveries so far, this one included
	Timestamp    time.Time // when the stream stored it
}

// Subject is the message's subject.
func (m *Msg) Subject() string { return m.m.Subject() }

// Data is the message's payload.
func (m *Msg) Data() []byte { return m.m.Data() }

// Header is the message's headers (trace context among them).
func (m *Msg) Header() map[string][]string { return m.m.Headers() }

// MsgID is the message's deduplication id (Nats-Msg-Id), if any.
func (m *Msg) MsgID() string { return m.m.Headers().Get(jetstream.MsgIDHeader) }

// Info reads the message's delivery metadata.
func (m *Msg) Info() (MsgInfo, error) {
	meta, err := m.m.Metadata()
	if err != nil {
		return MsgInfo{}, err
	}
	return MsgInfo{Seq: meta.Sequence.Stream, NumDelivered: meta.NumDelivered, Timestamp: meta.Timestamp}, nil
}

// Ack settles the message as done.
func (m *Msg) Ack() error { return m.m.Ack() }

// AckSync settles the message as done and waits until the server confirms
// it, until ctx ends.
func (m *Msg) AckSync(ctx context.Context) error { return m.m.DoubleAck(ctx) }

// Nak hands the message back for redelivery at once.
func (m *Msg) Nak() error { return m.m.Nak() }

// NakWithDelay hands the message back for redelivery after d.
func (m *Msg) NakWithDelay(d time.Duration) error { return m.m.NakWithDelay(d) }

// InProgress restarts the message's ack timer.
func (m *Msg) InProgress() error { return m.m.InProgress() }

// Term settles the message as never to be delivered again.
func (m *Msg) Term() error { return m.m.Term() }

// Consumer is a durable pull consumer.
type Consumer interface {
	// Fetch asks for up to max messages and returns them as they arrive;
	// the channel closes when max arrived or ctx ended.
	Fetch(ctx context.Context, max int) (<-chan *Msg, error)
	// FetchWait is Fetch bounded by wait rather than by a context.
	FetchWait(max int, wait time.Duration) (<-chan *Msg, error)
	// Messages opens a continuous pull of at most max messages in hand.
	Messages(max int) (*MsgStream, error)
}

// ErrStreamClosed is MsgStream.Next's error once the pull ended under it.
var ErrStreamClosed = jetstream.ErrMsgIteratorClosed

type consumer struct{ c jetstream.Consumer }

// WrapConsumer hands c out as a Consumer role.
func WrapConsumer(c jetstream.Consumer) Consumer { return consumer{c} }

func (c consumer) Fetch(ctx context.Context, max int) (<-chan *Msg, error) {
	b, err := c.c.Fetch(max, jetstream.FetchContext(ctx))
	if err != nil {
		return nil, err
	}
	return relay(b, max), nil
}

func (c consumer) FetchWait(max int, wait time.Duration) (<-chan *Msg, error) {
	b, err := c.c.Fetch(max, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, err
	}
	return relay(b, max), nil
}

// relay hands a batch's messages on; the channel has room for the whole
// batch, so the goroutine never waits on the reader and ends with the fetch.
func relay(b jetstream.MessageBatch, max int) <-chan *Msg {
	out := make(chan *Msg, max)
	go func() {
		defer close(out)
		for m := range b.Messages() {
			out <- &Msg{m}
		}
	}()
	return out
}

func (c consumer) Messages(max int) (*MsgStream, error) {
	it, err := c.c.Messages(jetstream.PullMaxMessages(max))
	if err != nil {
		return nil, err
	}
	return &MsgStream{it: it}, nil
}

// MsgStream is a continuous pull of a consumer's messages.
type MsgStream struct{ it jetstream.MessagesContext }

// Next waits for the next message until ctx ends.
func (s *MsgStream) Next(ctx context.Context) (*Msg, error) {
	m, err := s.it.Next(jetstream.NextContext(ctx))
	if err != nil {
		return nil, err
	}
	return &Msg{m}, nil
}

// NextWait waits for the next message at most d.
func (s *MsgStream) NextWait(d time.Duration) (*Msg, error) {
	m, err := s.it.Next(jetstream.NextMaxWait(d))
	if err != nil {
		return nil, err
	}
	return &Msg{m}, nil
}

// Drain stops pulling more; the messages already pulled can still be read.
func (s *MsgStream) Drain() { s.it.Drain() }

// ConsumerStats are the counts of one consumer.
type ConsumerStats struct {
	Consumer    string
	Pending     uint64 // messages not yet delivered
	AckPending  uint64 // delivered, not yet acknowledged
	Redelivered uint64 // delivered more than once, not yet acknowledged
}

// ConsumerStats reads the named consumers of stream, or all of its
// consumers when none are named. Missing consumers (and a missing stream)
// are left out.
func (b *Bus) ConsumerStats(ctx context.Context, stream string, names ...string) []ConsumerStats {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return nil
	}
	stats := func(ci *jetstream.ConsumerInfo) ConsumerStats {
		return ConsumerStats{Consumer: ci.Name, Pending: ci.NumPending,
			AckPending: uint64(ci.NumAckPending), Redelivered: uint64(ci.NumRedelivered)}
	}
	var out []ConsumerStats
	if len(names) == 0 {
		l := s.ListConsumers(ctx)
		for ci := range l.Info() {
			out = append(out, stats(ci))
		}
		return out
	}
	for _, n := range names {
		c, err := s.Consumer(ctx, n)
		if err != nil {
			continue
		}
		out = append(out, stats(c.CachedInfo()))
	}
	return out
}

// ErrKeyNotFound is a KV read of a key that is not there.
var ErrKeyNotFound = errors.New("bus: key not found")

// KV is a key-value bucket.
type KV interface {
	// Get reads key's value; ErrKeyNotFound when it has none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key and returns its revision.
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	// Delete removes key.
	Delete(ctx context.Context, key string) error
	// Watch follows the keys matching pattern (">" for all): current
	// entries first, then a nil entry, then each change. With puts only,
	// deletes are left out.
	Watch(ctx context.Context, pattern string, putsOnly bool) (*Watcher, error)
}

type kvStore struct{ kv jetstream.KeyValue }

// WrapKV hands kv out as a KV role.
func WrapKV(kv jetstream.KeyValue) KV { return kvStore{kv} }

func (k kvStore) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (k kvStore) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return k.kv.Put(ctx, key, value)
}

func (k kvStore) Delete(ctx context.Context, key string) error { return k.kv.Delete(ctx, key) }

func (k kvStore) Watch(ctx context.Context, pattern string, putsOnly bool) (*Watcher, error) {
	var opts []jetstream.WatchOpt
	if putsOnly {
		opts = append(opts, jetstream.IgnoreDeletes())
	}
	w, err := k.kv.Watch(ctx, pattern, opts...)
	if err != nil {
		return nil, err
	}
	return newWatcher(w), nil
}

// Entry is one update of a watched KV bucket.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
	Created  time.Time // when this revision was stored
	Deleted  bool      // deleted or purged; Value is empty
}

// Watcher follows a KV bucket until Stop or its context ends.
type Watcher struct {
	w       jetstream.KeyWatcher
	updates chan *Entry
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
}

func newWatcher(w jetstream.KeyWatcher) *Watcher {
	x := &Watcher{w: w, updates: make(chan *Entry), stop: make(chan struct{}), done: make(chan struct{})}
	go x.relay()
	return x
}

func (x *Watcher) relay() {
	defer close(x.done)
	defer close(x.updates)
	for {
		var u jetstream.KeyValueEntry
		select {
		case <-x.stop:
			return
		case e, ok := <-x.w.Updates():
			if !ok {
				return
			}
			u = e
		}
		var e *Entry
		if u != nil {
			e = &Entry{Key: u.Key(), Value: u.Value(), Revision: u.Revision(), Created: u.Created(), Deleted: u.Operation() != jetstream.KeyValuePut}
		}
		select {
		case <-x.stop:
			return
		case x.updates <- e:
		}
	}
}

// Updates delivers the entries: the current ones, a nil entry once they
// are all delivered, then each change. It closes when the watch ends.
func (x *Watcher) Updates() <-chan *Entry { return x.updates }

// Stop ends the watch; it returns once nothing of it runs any more.
func (x *Watcher) Stop() error {
	var err error
	x.once.Do(func() {
		close(x.stop)
		err = x.w.Stop()
	})
	<-x.done
	return err
}

// Registry is the bucket of agent cards (registry entries by agent.instance).
func (b *Bus) Registry() KV { return kvStore{b.registry} }

// ErrNoResponders is a Request nobody subscribes to.
var ErrNoResponders = nats.ErrNoResponders

// Request sends an empty request to subject and waits for one reply until
// ctx ends; ErrNoResponders when nothing listens there.
func (b *Bus) Request(ctx context.Context, subject string) ([]byte, error) {
	m, err := b.nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return nil, err
	}
	return m.Data, nil
}

// Respond answers every request on subject with reply until stop is
// called; with a queue, one responder of the queue group answers each.
func (b *Bus) Respond(subject, queue string, reply []byte) (stop func(), err error) {
	answer := func(m *nats.Msg) { _ = m.Respond(reply) }
	var sub *nats.Subscription
	if queue == "" {
		sub, err = b.nc.Subscribe(subject, answer)
	} else {
		sub, err = b.nc.QueueSubscribe(subject, queue, answer)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Flush waits until the server has processed what this connection sent,
// until ctx ends.
func (b *Bus) Flush(ctx context.Context) error { return b.nc.FlushWithContext(ctx) }

// Connected reports whether the connection is up (not reconnecting).
func (b *Bus) Connected() bool { return b.nc.Status() == nats.CONNECTED }

// Subscription is a subscription to stop when its holder is done.
type Subscription struct{ sub *nats.Subscription }

// Stop ends the subscription.
func (s *Subscription) Stop() {
	if s != nil && s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
}

// Reconnects counts the connection's reconnects so far.
func (b *Bus) Reconnects() uint64 { return b.nc.Stats().Reconnects }
