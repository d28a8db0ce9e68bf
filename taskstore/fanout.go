package taskstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// The event feed: one reader of the whole event log per Bus (per edge),
// fanned out to the streams of each task in the process, instead of a
// JetStream consumer per stream (nats-server allows 1,000 consumers on a
// stream by default, and each costs the server a subscription, a
// goroutine and heartbeats).
//
// The feed is one ephemeral consumer on every task's subject, read from
// a known position: at start, the log's last sequence (a leader read);
// after any failure (a delivery gap, a lost heartbeat, a reconnect of the
// connection, a consumer lost with its server) a new consumer from the
// position after the last event it handed out. So the feed itself never
// skips an event of the log past its start, and never hands one out
// twice in a row.
//
// A stream reads its task with an EventTail. The tail registers with the
// feed (which from then on queues every event of its task for it), then
// catches up from the log, one leader read per event, from the stream's
// position to the log's end, and only then takes the queue, skipping what
// the catch-up already gave. Every event after the stream's position is
// therefore handed out, in order, once: an event the feed dispatched
// before the tail registered was stored before it, so the catch-up (which
// starts later) reads it; one dispatched after is in the queue; one the
// feed never dispatches is at or before the feed's start, which the tail
// waits for before it reads. A tail whose queue overflows (a stream that
// does not read) drops the queue and catches up from the log again.

// Feed and tail tuning.
const (
	// feedBatch is how many events the feed's consumer pulls at once.
	feedBatch = 1024
	// feedWake is how often a quiet feed checks its connection for a
	// reconnect (after which it re-reads the log from its position).
	feedWake = time.Second
	// feedAttempt bounds one request of the feed (stream info, consumer
	// creation).
	feedAttempt = 3 * time.Second
	// feedRetryFirst is the pause before the feed retries; it doubles up
	// to feedRetryMax.
	feedRetryFirst = 100 * time.Millisecond
	feedRetryMax   = time.Second
	// feedMaxRestarts bounds the consumers one feed creates.
	feedMaxRestarts = 1_000_000
	// tailReadyWait bounds how long a new tail waits for the feed to know
	// its start (a JetStream that does not answer).
	tailReadyWait = 3 * time.Second
	// tailRead bounds one catch-up read.
	tailRead = 3 * time.Second
	// tailMaxQueued and tailMaxBytes bound a tail's queue; past either
	// the tail drops it and catches up from the log.
	tailMaxQueued = 1024
	tailMaxBytes  = 8 << 20
)

// feed is the event feed of one Bus.
type feed struct {
	b      *Store
	refs   int // open tails (feedsMu)
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once pos is the feed's start
	// following is whether a consumer of the feed reads the log now.
	following atomic.Bool

	mu      sync.Mutex
	tails   map[string]map[*EventTail]struct{} // by task id
	pos     uint64                             // the last event dispatched, or the start
	lastErr error                              // what last failed, if anything
}

var (
	feedsMu sync.Mutex
	feeds   = map[*Store]*feed{}
)

// feedDrop, when a test sets it, is asked about every event the feed
// receives: true loses it in transit (as a dropped connection would).
var feedDrop func(seq uint64) bool

// feedStarted, when a test sets it, is called with the position after
// which each consumer of the feed starts.
var feedStarted func(after uint64)

// errFeedReconnected ends a feed consumer after its connection
// reconnected: messages in flight may have been lost.
var errFeedReconnected = errors.New("the connection reconnected")

// acquireFeed returns b's feed, starting it if no tail uses it.
func (b *Store) acquireFeed() *feed {
	feedsMu.Lock()
	defer feedsMu.Unlock()
	f := feeds[b]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{b: b, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}),
			tails: map[string]map[*EventTail]struct{}{}}
		feeds[b] = f
		go f.run(ctx)
	}
	f.refs++
	return f
}

// release drops a tail's reference; the last one stops the feed and
// waits for its goroutine (which returns at once).
func (f *feed) release() {
	feedsMu.Lock()
	f.refs--
	stop := f.refs == 0
	if stop {
		delete(feeds, f.b)
	}
	feedsMu.Unlock()
	if stop {
		f.cancel()
		<-f.done
	}
}

func (f *feed) fail(err error) {
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
}

func (f *feed) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr == nil {
		return errors.New("no answer yet")
	}
	return f.lastErr
}

func (f *feed) run(ctx context.Context) {
	defer close(f.done)
	wait := feedRetryFirst
	pause := func() bool {
		ok := bus.Sleep(ctx, bus.Jitter(wait))
		wait = min(2*wait, feedRetryMax)
		return ok
	}
	// Where the feed starts: the log's last event now. A tail waits for
	// this before it reads the log (see above).
	for attempt := 0; ; attempt++ {
		if attempt >= feedMaxRestarts {
			return
		}
		actx, cancel := context.WithTimeout(ctx, feedAttempt)
		info, err := f.b.log.Info(actx)
		cancel()
		if err == nil {
			f.mu.Lock()
			f.pos = info.State.LastSeq
			f.mu.Unlock()
			close(f.ready)
			break
		}
		if ctx.Err() != nil {
			return
		}
		f.fail(fmt.Errorf("bus: event feed: stream info: %w", err))
		if !pause() {
			return
		}
	}
	wait = feedRetryFirst
	for restarts := 0; restarts < feedMaxRestarts; restarts++ {
		start := time.Now()
		err := f.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		f.fail(err)
		if time.Since(start) > 10*feedRetryMax {
			wait = feedRetryFirst // it ran a while: the failure is new
		}
		if !pause() {
			return
		}
	}
}

// follow reads the log with one consumer from the event after the feed's
// position, dispatching every event, until ctx ends or it fails.
func (f *feed) follow(ctx context.Context) error {
	f.mu.Lock()
	after := f.pos
	f.mu.Unlock()
	reconnects := f.b.nc.Stats().Reconnects
	cctx, cancel := context.WithTimeout(ctx, feedAttempt)
	cons, err := f.b.js.CreateConsumer(cctx, StreamLog, jetstream.ConsumerConfig{
		FilterSubject:     subjLogPrefix + ">",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       after + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: followInactive,
		Replicas:          1,
		MemoryStorage:     true,
	})
	cancel()
	if err != nil {
		return fmt.Errorf("bus: event feed: %w", err)
	}
	if feedStarted != nil {
		feedStarted(after)
	}
	name := cons.CachedInfo().Name
	defer func() {
		go func() { // best effort, bounded: the inactive threshold removes it otherwise
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = f.b.js.DeleteConsumer(dctx, StreamLog, name)
		}()
	}()
	it, err := cons.Messages(jetstream.PullMaxMessages(feedBatch), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return fmt.Errorf("bus: event feed: %w", err)
	}
	defer it.Stop()
	f.following.Store(true)
	defer f.following.Store(false)
	var delivered uint64 // the consumer's delivery sequence: 1, 2, ... or one was lost
	var behindAt uint64  // 1 + the feed's position at the last quiet ask that found it behind (0: not behind)
	for {
		nctx, cancel := context.WithTimeout(ctx, feedWake)
		m, err := it.Next(jetstream.NextContext(nctx))
		woke := nctx.Err() != nil && ctx.Err() == nil
		cancel()
		if f.b.nc.Stats().Reconnects != reconnects {
			return fmt.Errorf("bus: event feed: %w", errFeedReconnected)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if woke && errors.Is(err, context.DeadlineExceeded) {
				// Quiet: ask the consumer whether it is behind.
				if f.stalled(ctx, cons, &behindAt) {
					return fmt.Errorf("bus: event feed: %w", errFeedStalled)
				}
				continue
			}
			return fmt.Errorf("bus: event feed: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("bus: event feed: %w", err)
		}
		if feedDrop != nil && feedDrop(meta.Sequence.Stream) {
			continue
		}
		if meta.Sequence.Consumer != delivered+1 {
			return fmt.Errorf("bus: event feed: delivery %d after %d: %w", meta.Sequence.Consumer, delivered, errFollowGap)
		}
		delivered = meta.Sequence.Consumer
		f.dispatch(meta.Sequence.Stream, m.Subject(), m.Headers(), m.Data())
	}
}

// stalled asks a quiet feed's consumer whether it has events the feed has
// not received: ones it has not sent (pending), or ones it sent that never
// arrived (the last of a burst lost in transit shows no gap: nothing
// follows it). Behind at two asks in a row, with no progress between
// them, the feed is stalled. A consumer that does not answer is left to
// its heartbeats.
func (f *feed) stalled(ctx context.Context, cons jetstream.Consumer, behindAt *uint64) bool {
	actx, cancel := context.WithTimeout(ctx, feedAttempt)
	info, err := cons.Info(actx)
	cancel()
	if err != nil {
		return false
	}
	f.mu.Lock()
	pos := f.pos
	f.mu.Unlock()
	behind := info.NumPending > 0 || info.Delivered.Stream > pos
	switch {
	case !behind:
		*behindAt = 0
	case *behindAt == pos+1:
		return true
	default:
		*behindAt = pos + 1
	}
	return false
}

// errFeedStalled ends a feed consumer that stays behind while quiet.
var errFeedStalled = errors.New("the consumer is behind and delivers nothing")

// dispatch queues one event for the tails of its task.
func (f *feed) dispatch(seq uint64, subject string, hdr nats.Header, data []byte) {
	id, ok := TaskIDOf(subject)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq <= f.pos {
		return // never twice (a consumer starts after pos)
	}
	f.pos = seq
	for t := range f.tails[id] {
		t.push(seq, hdr, data)
	}
}

// EventTail reads one task's log in order from a starting point, waiting
// for new events, through the Bus's event feed (see above). It is driven
// by its reader: Ready says when to call Next. It never retries on its
// own: a failed catch-up read is Next's error, and the caller tails again
// after the last event it read. Close it when done.
type EventTail struct {
	f        *feed
	b        *Store
	id       string
	subj     string // the task's log ("": it has none)
	last     uint64 // the position of the last event handed out (or the start)
	catching bool   // reading the log before the queue
	notify   chan struct{}
	pend     []Event // events of a message read, not handed out yet

	mu     sync.Mutex // guards what follows (taken under f.mu by dispatch)
	q      []rawEvent
	qBytes int
	lost   bool // the queue overflowed
	closed bool
}

// rawEvent is one message of the log, as the feed received it.
type rawEvent struct {
	seq  uint64
	hdr  nats.Header
	data []byte
}

// closedChan is always ready.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// TailEvents starts tailing the log of task id after the event at
// position afterSeq (Pos). It
// fails when the event feed cannot start (JetStream does not answer).
func (b *Store) TailEvents(ctx context.Context, id string, afterSeq uint64) (*EventTail, error) {
	subj, err := b.subject(ctx, id)
	if err != nil && !errors.Is(err, ErrTaskNotFound) {
		return nil, err
	}
	f := b.acquireFeed()
	t := &EventTail{f: f, b: b, id: id, subj: subj, last: afterSeq, catching: true, notify: make(chan struct{}, 1)}
	f.mu.Lock()
	ts := f.tails[id]
	if ts == nil {
		ts = map[*EventTail]struct{}{}
		f.tails[id] = ts
	}
	ts[t] = struct{}{}
	f.mu.Unlock()
	timer := time.NewTimer(tailReadyWait)
	defer timer.Stop()
	select {
	case <-f.ready:
		return t, nil
	case <-ctx.Done():
		t.Close()
		return nil, ctx.Err()
	case <-timer.C:
		err := f.err()
		t.Close()
		return nil, fmt.Errorf("bus: tail log of %s: the event feed has not started: %w", id, err)
	}
}

// push queues one event.
func (t *EventTail) push(seq uint64, hdr nats.Header, data []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.lost {
		return
	}
	if len(t.q) >= tailMaxQueued || t.qBytes+len(data) > tailMaxBytes {
		t.lost, t.q, t.qBytes = true, nil, 0
	} else {
		t.q = append(t.q, rawEvent{seq: seq, hdr: hdr, data: data})
		t.qBytes += len(data)
	}
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Following reports whether the event feed reads the log now (false
// while it starts, or after a failure until its next consumer reads).
func (t *EventTail) Following() bool { return t.f.following.Load() }

// Ready is ready when Next may have an event: call Next then. Ask again
// after every Next.
func (t *EventTail) Ready() <-chan struct{} {
	if t.catching || len(t.pend) > 0 {
		return closedChan
	}
	t.mu.Lock()
	more := len(t.q) > 0 || t.lost
	t.mu.Unlock()
	if more {
		return closedChan
	}
	return t.notify
}

// Next returns the next event, if there is one now (ok false: none
// yet). An error ends the tail: a catch-up read failed, or an event
// cannot be decoded.
func (t *EventTail) Next(ctx context.Context) (ev Event, ok bool, err error) {
	if ev, ok := t.pop(); ok {
		return ev, true, nil
	}
	for range 3 { // catch up, then the queue; once more if it overflowed meanwhile
		if t.catching {
			ev, ok, err := t.readLog(ctx)
			if err != nil || ok {
				return ev, ok, err
			}
			t.catching = false
		}
		t.mu.Lock()
		if t.lost {
			t.lost, t.q, t.qBytes = false, nil, 0
			t.catching = true
			t.mu.Unlock()
			continue
		}
		for len(t.q) > 0 {
			r := t.q[0]
			t.q[0] = rawEvent{}
			t.q = t.q[1:]
			t.qBytes -= len(r.data)
			if Pos(r.seq, MaxBatch-1) <= t.last {
				continue // the catch-up gave it
			}
			t.mu.Unlock()
			if err := t.fill(r.seq, r.hdr, r.data); err != nil {
				return Event{}, false, err
			}
			if ev, ok := t.pop(); ok {
				return ev, true, nil
			}
			t.mu.Lock()
		}
		t.q = nil // let the array go
		t.mu.Unlock()
		return Event{}, false, nil
	}
	return Event{}, false, nil
}

// readLog reads the task's first event after the last one handed out
// (a leader read on a replicated layout): from the message holding the
// last one, or the next.
func (t *EventTail) readLog(ctx context.Context) (Event, bool, error) {
	from := max(SeqOf(t.last), 1)
	if t.subj == "" {
		return Event{}, false, nil
	}
	for range 2 {
		rctx, cancel := context.WithTimeout(ctx, tailRead)
		m, err := t.b.log.GetMsg(rctx, from, jetstream.WithGetMsgSubject(t.subj))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return Event{}, false, nil
		}
		if err != nil {
			return Event{}, false, fmt.Errorf("bus: read log of %s: %w", t.id, err)
		}
		if err := t.fill(m.Sequence, m.Header, m.Data); err != nil {
			return Event{}, false, err
		}
		if ev, ok := t.pop(); ok {
			return ev, true, nil
		}
		from = m.Sequence + 1
	}
	return Event{}, false, nil
}

// fill decodes a message of the log into the events after the last one
// handed out.
func (t *EventTail) fill(seq uint64, hdr nats.Header, data []byte) error {
	evs, err := EventsOf(seq, hdr, data)
	if err != nil {
		return fmt.Errorf("bus: decode events of message %d: %w", seq, err)
	}
	for _, ev := range evs {
		if ev.Seq > t.last {
			t.pend = append(t.pend, ev)
		}
	}
	return nil
}

// pop hands out the next decoded event.
func (t *EventTail) pop() (Event, bool) {
	if len(t.pend) == 0 {
		return Event{}, false
	}
	ev := t.pend[0]
	t.pend = t.pend[1:]
	if len(t.pend) == 0 {
		t.pend = nil
	}
	t.last = ev.Seq
	return ev, true
}

// Close stops the tail (at once).
func (t *EventTail) Close() {
	f := t.f
	f.mu.Lock()
	t.mu.Lock()
	closed := t.closed
	t.closed, t.q = true, nil
	t.mu.Unlock()
	if closed {
		f.mu.Unlock()
		return
	}
	if ts := f.tails[t.id]; ts != nil {
		delete(ts, t)
		if len(ts) == 0 {
			delete(f.tails, t.id)
		}
	}
	f.mu.Unlock()
	f.release()
}
