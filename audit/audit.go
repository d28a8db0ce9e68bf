// Package audit keeps the mesh's audit log: one entry per state-changing
// call (send, cancel, push config set and delete, agent removal, key
// rotation) and per denial (a credential refused, a call the access policy
// does not allow), appended to the JetStream stream A2A_AUDIT.
//
// An entry says who (the principal), from where (the client's address),
// what (the method and the binding), to which agent and task, the outcome,
// the trace id and the time. It never holds a secret, a token, or message
// content.
//
// Appending never makes a call wait: Record queues the entry in memory and
// a publisher sends the queued entries of each agent together, as JSON
// lines in one message, every 100 ms, with an asynchronous JetStream
// publish. The queue is bounded (QueueSize); an entry that finds it full
// is dropped and counted (Dropped), and the publisher logs the drops.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Stream is the audit log's stream; its subjects are SubjectPrefix +
// <agent> ("_" for an entry of no agent).
const (
	Stream        = "A2A_AUDIT"
	SubjectPrefix = "a2a.audit."
	noAgent       = "_"
)

// DefaultRetention is how long entries are kept unless configured.
const DefaultRetention = 90 * 24 * time.Hour

// QueueSize bounds the entries waiting to be published.
const QueueSize = 16384

// Outcomes.
const (
	OK              = "ok"
	Denied          = "denied"          // the access policy did not allow it
	Unauthenticated = "unauthenticated" // no valid credential
	Failed          = "failed"          // an error answered it (Code says which)
)

// Entry is one audited call.
type Entry struct {
	Time      time.Time `json:"time"`
	Principal string    `json:"principal,omitempty"`
	// From is the client's address (the TCP peer; X-Forwarded-For is not
	// trusted).
	From    string `json:"from,omitempty"`
	Binding string `json:"binding"` // jsonrpc, rest, grpc, ops, cli
	Method  string `json:"method"`
	Agent   string `json:"agent,omitempty"`
	Task    string `json:"task,omitempty"`
	Outcome string `json:"outcome"`
	// Code is the JSON-RPC error code of a failed or denied call (the
	// HTTP status of an operator API call).
	Code    int    `json:"code,omitempty"`
	TraceID string `json:"traceId,omitempty"`
}

// Log appends entries to the audit stream.
type Log struct {
	b         *bus.Bus
	log       *slog.Logger
	retention time.Duration
	q         chan Entry
	dropped   atomic.Uint64
	written   atomic.Uint64
	failed    atomic.Uint64
}

// New returns a Log that keeps entries for retention (0: the default).
// It does no I/O: Run ensures the stream, then publishes what Record
// queues (meanwhile entries wait in the queue).
func New(b *bus.Bus, retention time.Duration, log *slog.Logger) *Log {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = slog.Default()
	}
	return &Log{b: b, log: log, retention: retention, q: make(chan Entry, QueueSize)}
}

func ensure(ctx context.Context, b *bus.Bus, retention time.Duration) error {
	_, err := b.EnsureStream(ctx, jetstream.StreamConfig{
		Name:        Stream,
		Description: "a2amesh: the audit log: state-changing calls and denials",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    b.Config().Replicas,
		MaxAge:      retention,
		Discard:     jetstream.DiscardOld,
	})
	if err != nil {
		return fmt.Errorf("audit: stream %s: %w", Stream, err)
	}
	return nil
}

// Record queues e; it never waits. A nil Log records nothing.
func (l *Log) Record(e Entry) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	select {
	case l.q <- e:
	default:
		l.dropped.Add(1)
	}
}

// Dropped counts the entries dropped because the queue was full.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// Written counts the entries the stream acknowledged.
func (l *Log) Written() uint64 { return l.written.Load() }

// subject is the entry's subject: by agent, so a reader can filter.
func subject(agent string) string {
	if agent == "" || !bus.ValidToken(agent) {
		agent = noAgent
	}
	return SubjectPrefix + agent
}

// Run ensures the audit stream (retrying while NATS refuses), then
// publishes queued entries until ctx ends, and what is left (for up to
// 2 s).
func (l *Log) Run(ctx context.Context) error {
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ensure(ectx, l.b, l.retention)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if attempt%8 == 1 {
			l.log.Warn("audit: waiting for the audit stream; entries queue meanwhile", "err", err, "attempt", attempt)
		}
		bus.Sleep(ctx, bus.Jitter(wait))
		wait = min(2*wait, 5*time.Second)
	}
	js := l.b.JetStream()
	warn := time.NewTicker(10 * time.Second)
	defer warn.Stop()
	flush := time.NewTicker(batchEvery)
	defer flush.Stop()
	var lastDropped, lastFailed uint64
	batches := map[string]*batch{} // by subject
	send := func(subj string, b *batch) {
		f, err := js.PublishAsync(subj, b.data.Bytes())
		n := uint64(b.n)
		b.data.Reset()
		b.n = 0
		if err != nil {
			l.failed.Add(n)
			return
		}
		go func() {
			select {
			case <-f.Ok():
				l.written.Add(n)
			case <-f.Err():
				l.failed.Add(n)
			}
		}()
	}
	add := func(e Entry) {
		line, err := json.Marshal(e)
		if err != nil {
			return
		}
		subj := subject(e.Agent)
		b := batches[subj]
		if b == nil {
			b = &batch{}
			batches[subj] = b
		}
		b.data.Write(line)
		b.data.WriteByte('\n')
		if b.n++; b.n >= batchMax || b.data.Len() >= batchBytes {
			send(subj, b)
		}
	}
	flushAll := func() {
		for subj, b := range batches {
			if b.n > 0 {
				send(subj, b)
			}
		}
	}
	for {
		select {
		case e := <-l.q:
			add(e)
		case <-flush.C:
			flushAll()
		case <-warn.C:
			if d, f := l.dropped.Load(), l.failed.Load(); d != lastDropped || f != lastFailed {
				l.log.Warn("audit: entries lost", "dropped_queue_full", d-lastDropped, "failed_publish", f-lastFailed)
				lastDropped, lastFailed = d, f
			}
		case <-ctx.Done():
			deadline := time.After(2 * time.Second)
		drain:
			for {
				select {
				case e := <-l.q:
					add(e)
				case <-deadline:
					break drain
				default:
					break drain
				}
			}
			flushAll()
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(2 * time.Second):
			}
			return nil
		}
	}
}

// Batching: the entries of one agent are published together, as JSON
// lines in one message, every batchEvery or once batchMax entries (or
// batchBytes) are waiting: one stored message per batch, not per call.
const (
	batchEvery = 100 * time.Millisecond
	batchMax   = 256
	batchBytes = 256 << 10
)

type batch struct {
	data bytes.Buffer
	n    int
}

// Filter selects entries to read.
type Filter struct {
	Since     time.Time // entries at or after (zero: the oldest kept)
	Agent     string    // one agent's entries ("": all)
	Principal string
	Outcome   string // ok, denied, failed, unauthenticated (with or without its reason)
	Method    string
	// Limit bounds the entries returned (default 100, at most MaxLimit).
	Limit int
}

// ParseSince reads a since value: a duration back from now ("1h", "30m")
// or an RFC 3339 time; "" is the zero time (the oldest kept).
func ParseSince(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("since %q: want a duration (1h, 30m) or an RFC 3339 time", v)
	}
	return t, nil
}

// MaxLimit bounds one read.
const MaxLimit = 1000

// Read returns the entries f selects in the order they were stored, and
// whether more matched past Limit. Entries are stored in batches, one
// agent's per batch, so entries of different agents within the same
// 100 ms may come in either order; each page is sorted by time. keep, when not nil, filters further (the caller's
// rights). It reads with an ordered consumer, bounded by ctx.
func Read(ctx context.Context, b *bus.Bus, f Filter, keep func(Entry) bool) ([]Entry, bool, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, MaxLimit)
	s, err := b.JetStream().Stream(ctx, Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{SubjectPrefix + ">"}}
	if f.Agent != "" {
		cfg.FilterSubjects = []string{subject(f.Agent)}
	}
	if !f.Since.IsZero() {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		since := f.Since
		cfg.OptStartTime = &since
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, false, err
	}
	last := info.State.LastSeq
	if last == 0 {
		return nil, false, nil
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	var out []Entry
	for i := 0; i < 10_000_000; i++ {
		batch, err := c.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return out, false, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				continue
			}
			for _, line := range bytes.Split(m.Data(), []byte("\n")) {
				var e Entry
				if len(line) == 0 || json.Unmarshal(line, &e) != nil || !f.matches(e) || (keep != nil && !keep(e)) ||
					(!f.Since.IsZero() && e.Time.Before(f.Since)) {
					continue
				}
				if len(out) == f.Limit {
					return byTime(out), true, nil
				}
				out = append(out, e)
			}
			if md.Sequence.Stream >= last {
				return byTime(out), false, nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return out, false, err
		}
		if n == 0 {
			return byTime(out), false, nil // nothing newer than the filter's start
		}
		if ctx.Err() != nil {
			return out, false, ctx.Err()
		}
	}
	return out, false, nil
}

// byTime sorts a page of entries by time, keeping stored order on ties.
func byTime(es []Entry) []Entry {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
	return es
}

func (f Filter) matches(e Entry) bool {
	switch {
	case f.Principal != "" && e.Principal != f.Principal:
	case f.Outcome != "" && !strings.EqualFold(e.Outcome, f.Outcome) && !strings.HasPrefix(e.Outcome, f.Outcome+":"):
	case f.Method != "" && !strings.EqualFold(e.Method, f.Method):
	default:
		return true
	}
	return false
}

// Append writes e at once and waits for the stream's acknowledgement: for
// commands that change the mesh from outside an edge (key rotation,
// a2amesh agents remove), where nothing waits on them.
func Append(ctx context.Context, b *bus.Bus, e Entry) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if err := ensure(ctx, b, 0); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = b.JetStream().Publish(ctx, subject(e.Agent), data)
	return err
}
