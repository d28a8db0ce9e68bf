package taskstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Listing tasks. The log is the index: a task's subject holds its owner's
// and its context's hashes (ids.go), and every message of a log says in
// its headers the task's agent, owner, state after it, and whether the
// task answered its send with a message (logHeader). So "this caller's
// tasks, most recently changed first" is the log read back from its end
// under the owner's subject filter, which the server applies itself: a
// task first appears at its last message, and its older messages further
// back are passed over (within one scan by the task's id; across the
// pages of a listing by the caller, who reads each listed task and keeps
// it only where the entry is the task's last message: Current).
//
// A page costs about its own size in reads however many tasks are
// retained, and the tasks it lists. An entry is a hint, never the truth:
// the caller reads each task it lists (an owner's hash shared with
// another, an evicted task, or an entry behind its task are all caught
// there).

// IndexEntry is one message of a task's log, as a listing sees it.
type IndexEntry struct {
	// Seq is the message's sequence in the log; entries with a higher
	// Seq changed later.
	Seq uint64
	// Written is when the message was stored.
	Written time.Time
	// TaskID and Agent of the task, and its owner's hash.
	TaskID, Agent, Owner string
	// State is the task's state after the message.
	State a2a.TaskState
	// Reply is true when the task answered its send with a message: it
	// is not listed.
	Reply bool
}

// Current reports whether e is the last message of the log rec was read
// from: a listing shows a task at its last message only.
func (e IndexEntry) Current(rec *TaskRecord) bool { return SeqOf(rec.LastSeq) == e.Seq }

// IndexQuery selects tasks.
type IndexQuery struct {
	// Owner is the principal whose tasks are listed ("" for the tasks of
	// no principal).
	Owner string
	// Agent, when set, keeps that agent's tasks only.
	Agent string
	// ContextID, when set, keeps the tasks of that context only.
	ContextID string
	// AnyOwner lists the tasks of every owner (Owner is ignored): for
	// the mesh's own upkeep, never for a caller.
	AnyOwner bool

	// ownerHash, when set, names the owner by its hash (hashToken) in
	// place of Owner: the counters know owners by it alone.
	ownerHash string
}

// owner is the hash of the query's owner.
func (q IndexQuery) owner() string {
	if q.ownerHash != "" {
		return q.ownerHash
	}
	return hashToken(q.Owner)
}

// ownerTok is the subject token of the query's owner.
func (q IndexQuery) ownerTok() string {
	if q.ownerHash == "" {
		return ownerToken(q.Owner)
	}
	if q.ownerHash == "_" {
		return ownerToken("")
	}
	// hashToken and ownerToken are two spellings of the same SHA-256:
	// its first 6 bytes are the first 8 characters of the former.
	raw, err := base64.RawURLEncoding.DecodeString(q.ownerHash[:8])
	if err != nil || len(raw) < 4 {
		return "*"
	}
	return hex.EncodeToString(raw[:4])
}

// filter is the subject filter the server applies.
func (q IndexQuery) filter() string {
	switch {
	case q.AnyOwner:
		return subjLogPrefix + ">"
	case q.ContextID != "":
		return subjLogPrefix + q.ownerTok() + "." + contextTokens(q.ContextID) + ".>"
	}
	return subjLogPrefix + q.ownerTok() + ".>"
}

// matcher keeps the entries of q that its subject filter lets through
// and it does not select: another owner sharing the hash, another agent.
func (q IndexQuery) matcher() func(IndexEntry) bool {
	owner := q.owner()
	return func(e IndexEntry) bool {
		return (q.AnyOwner || e.Owner == owner) && (q.Agent == "" || e.Agent == q.Agent)
	}
}

// hashToken turns any string into a subject token: "_" for the empty
// string, else 22 characters of a SHA-256 (132 bits). It names an owner
// in the counters and in the log's headers.
func hashToken(s string) string {
	if s == "" {
		return "_"
	}
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

// parseEntry reads a log message's headers as an entry.
func parseEntry(subject string, seq uint64, at time.Time, hdr nats.Header) (IndexEntry, bool) {
	id, ok := TaskIDOf(subject)
	if !ok {
		return IndexEntry{}, false
	}
	return IndexEntry{Seq: seq, Written: at, TaskID: id, Agent: hdr.Get(hdrAgent), Owner: hdr.Get(hdrOwner),
		State: a2a.TaskState(hdr.Get(hdrState)), Reply: hdr.Get(hdrReply) != ""}, true
}

// purgeSubject purges subj in stream below sequence keep (0: whole) and
// returns how many messages went (the client's Purge does not say).
func (b *Store) purgeSubject(ctx context.Context, stream, subj string, keep uint64) (uint64, error) {
	req, err := json.Marshal(struct {
		Filter string `json:"filter"`
		Below  uint64 `json:"seq,omitempty"`
	}{subj, keep})
	if err != nil {
		return 0, err
	}
	return bus.Read(ctx, func(c context.Context) (uint64, error) {
		m, err := b.nc.RequestWithContext(c, "$JS.API.STREAM.PURGE."+stream, req)
		if err != nil {
			return 0, err
		}
		var resp struct {
			Success bool   `json:"success"`
			Purged  uint64 `json:"purged"`
			Error   *struct {
				Code        int    `json:"code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return 0, err
		}
		if resp.Error != nil || !resp.Success {
			if resp.Error != nil {
				return 0, fmt.Errorf("taskstore: purge %s: %s (%d)", subj, resp.Error.Description, resp.Error.Code)
			}
			return 0, fmt.Errorf("taskstore: purge %s refused", subj)
		}
		return resp.Purged, nil
	})
}

// indexEntriesRead counts the entries ScanIndex fetched (for tests).
var indexEntriesRead atomic.Int64

// scanWindowMin and scanWindowMax bound the span of index sequences one
// step of ScanIndex reads.
const (
	scanWindowMin     = 32
	scanWindowMax     = 1 << 20
	scanWindowEntries = 4096
)

// ScanIndex calls fn with the entries q selects, newest first, starting
// below sequence before (0: from the newest), until fn says no more or
// the entries run out; fn also says whether it took the entry (a caller
// filtering further skips some). want is how many entries the caller
// expects to take (a page), which sizes its reads: it reads back from the
// end of the stream in windows of sequences, each read forward by the
// server's subject filter, sized by how densely the last window gave
// entries the caller took, so a page costs about its size in reads
// however many tasks the stream holds.
//
// fn sees each task once, at the newest of its messages the scan meets,
// and never a task that answered its send with a message. A task that
// changes while the scan runs leaves the stretch already read for a
// place past where it started: IndexSince from IndexTop taken before the
// scan finds such entries.
func (b *Store) ScanIndex(ctx context.Context, q IndexQuery, before uint64, want int, fn func(IndexEntry) (took, more bool)) error {
	filter, match := q.filter(), q.matcher()
	seen := map[string]bool{}
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.log.Info(c) })
	if err != nil {
		return fmt.Errorf("taskstore: list: %w", err)
	}
	first, hi := info.State.FirstSeq, info.State.LastSeq+1
	if before > 0 && before < hi {
		hi = before
	}
	// How many entries the filter selects decides how its windows are
	// read (indexRange); none, as the server counts, is the answer.
	n, exact, err := b.taskCount(ctx, q)
	if err != nil {
		return err
	}
	if exact && n == 0 {
		return nil
	}
	narrow := n <= consumerScanMax
	want = max(want, 1)
	w := uint64(max(2*want, scanWindowMin))
	for hi > first && hi > 1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		lo := max(first, hi-min(w, hi-1))
		span := hi - lo
		batch, err := b.indexRange(ctx, filter, lo, hi, narrow)
		if err != nil {
			return err
		}
		took := 0
		for i := len(batch) - 1; i >= 0; i-- {
			e := batch[i]
			if seen[e.TaskID] || !match(e) {
				continue
			}
			seen[e.TaskID] = true
			if e.Reply {
				continue
			}
			t, more := fn(e)
			if t {
				took++
			}
			if !more {
				return nil
			}
		}
		want -= took
		hi = lo
		// Size the next window for what is still wanted at the density
		// of taken entries just seen, growing at most fourfold.
		switch {
		case took == 0:
			w *= 4
		default:
			per := float64(w) / float64(took) // sequences per taken entry
			w = min(4*w, uint64(per*float64(max(want, 1)))+scanWindowMin)
		}
		// ...and read at most scanWindowEntries entries at the density
		// of entries (taken or not) just seen: a filter most entries pass
		// and few are taken by (a status) does not read far past what the
		// caller looks at.
		if n := len(batch); n > 0 {
			w = min(w, uint64(float64(scanWindowEntries)*float64(span)/float64(n))+1)
		}
		w = min(max(w, scanWindowMin), scanWindowMax)
	}
	return nil
}

// IndexTop is the sequence past the index's newest entry: ScanIndex
// from it reads every entry there is now.
func (b *Store) IndexTop(ctx context.Context) (uint64, error) {
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.log.Info(c) })
	if err != nil {
		return 0, fmt.Errorf("taskstore: list: %w", err)
	}
	return info.State.LastSeq + 1, nil
}

// IndexSince returns the entries q selects at sequence from or later,
// oldest first, at most max of them (the newest ones when there are
// more). A task may be there more than once (each message of it).
func (b *Store) IndexSince(ctx context.Context, q IndexQuery, from uint64, max int) ([]IndexEntry, error) {
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.log.Info(c) })
	if err != nil {
		return nil, fmt.Errorf("taskstore: list: %w", err)
	}
	end := info.State.LastSeq + 1
	if from >= end {
		return nil, nil
	}
	got, err := b.indexRange(ctx, q.filter(), from, end, false)
	got = slices.DeleteFunc(got, func(e IndexEntry) bool { return !q.matcher()(e) || e.Reply })
	if len(got) > max {
		got = got[len(got)-max:]
	}
	return got, err
}

// How indexRange reads a window. A consumer reads it in few requests
// (about 5 µs an entry), but the server counts what the consumer has
// pending when it makes one, walking every subject under its filter:
// cheap for a filter of at most consumerScanMax entries, 0.36 s for one
// of 10^6. Past that, the window is cut into chunks of at least walkChunk
// sequences, read by at most walkParallel walks at once, each a get of
// the next entry under the filter at a time (about 20 µs an entry).
const (
	consumerWindow  = 1024
	consumerScanMax = 50_000
	walkChunk       = 256
	walkParallel    = 16
)

// indexRange returns the entries under filter with sequences in [lo, hi),
// oldest first; narrow says the filter selects at most consumerScanMax.
func (b *Store) indexRange(ctx context.Context, filter string, lo, hi uint64, narrow bool) ([]IndexEntry, error) {
	if hi <= lo {
		return nil, nil
	}
	if narrow && hi-lo >= consumerWindow {
		var batch []IndexEntry
		err := b.indexConsumer(ctx, filter, lo, time.Time{}, func(c jetstream.Consumer) error {
			return readEntries(c, hi, func(e IndexEntry) bool {
				indexEntriesRead.Add(1)
				batch = append(batch, e)
				return true
			})
		})
		return batch, err
	}
	n := min(uint64(walkParallel), max(1, (hi-lo)/walkChunk))
	if n == 1 {
		return b.indexWalk(ctx, filter, lo, hi)
	}
	step := (hi - lo + n - 1) / n
	parts := make([][]IndexEntry, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		from, to := lo+i*step, min(hi, lo+(i+1)*step)
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i], errs[i] = b.indexWalk(ctx, filter, from, to)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []IndexEntry
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// indexWalk reads the entries under filter in [lo, hi) one get each.
func (b *Store) indexWalk(ctx context.Context, filter string, lo, hi uint64) ([]IndexEntry, error) {
	var batch []IndexEntry
	for seq := lo; seq < hi; {
		m, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
			return b.log.GetMsg(c, seq, jetstream.WithGetMsgSubject(filter))
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("taskstore: list: %w", err)
		}
		if m.Sequence >= hi {
			break
		}
		indexEntriesRead.Add(1)
		if e, ok := parseEntry(m.Subject, m.Sequence, m.Time, m.Header); ok {
			batch = append(batch, e)
		}
		seq = m.Sequence + 1
	}
	return batch, nil
}

// ReadIndex calls fn with the entries q selects, oldest first, until fn
// returns false: with since zero, each task's last message (one entry a
// task, replies included); else every message written at or after since
// (a task once for each). It streams the entries' headers through one
// consumer: its cost is the entries read.
func (b *Store) ReadIndex(ctx context.Context, q IndexQuery, since time.Time, fn func(IndexEntry) bool) error {
	match := q.matcher()
	keep := func(e IndexEntry) bool { return !match(e) || fn(e) }
	if since.IsZero() {
		return b.indexConsumer(ctx, q.filter(), lastPerTask, time.Time{}, func(c jetstream.Consumer) error {
			return readEntries(c, 0, keep)
		})
	}
	return b.indexConsumer(ctx, q.filter(), 0, since, func(c jetstream.Consumer) error {
		return readEntries(c, 0, keep)
	})
}

// lastPerTask, as indexConsumer's start, reads each task's last message.
const lastPerTask = ^uint64(0)

// readEntries hands fn the entries c had pending when it was made, up to
// sequence end (exclusive; 0: no bound), until fn returns false. Entries
// written after c was made are newer than any caller asked for.
func readEntries(c jetstream.Consumer, end uint64, fn func(IndexEntry) bool) error {
	left := int(c.CachedInfo().NumPending)
	for left > 0 {
		batch, err := c.Fetch(min(left, 1000), jetstream.FetchMaxWait(bus.AttemptTimeout))
		if err != nil {
			return err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			left--
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			if end > 0 && meta.Sequence.Stream >= end {
				return nil
			}
			e, ok := parseEntry(m.Subject(), meta.Sequence.Stream, meta.Timestamp, m.Headers())
			if ok && !fn(e) {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return err
		}
		if got == 0 {
			return errors.New("index read stalled")
		}
	}
	return nil
}

// indexConsumer runs fn with a short-lived consumer of the headers of the
// log messages the filter selects, from sequence start (lastPerTask: the
// last message of each subject), or time since, or the beginning, and
// deletes it after. It is served by the stream's leader, so it sees
// every message already acknowledged.
func (b *Store) indexConsumer(ctx context.Context, filter string, start uint64, since time.Time, fn func(jetstream.Consumer) error) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     filter,
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
		HeadersOnly:       true,
	}
	switch {
	case start == lastPerTask:
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	case start > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	case !since.IsZero():
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	c, err := bus.Read(ctx, func(c context.Context) (jetstream.Consumer, error) {
		return b.js.CreateConsumer(c, StreamLog, cfg)
	})
	if err != nil {
		return fmt.Errorf("taskstore: list: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bus.AttemptTimeout)
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, StreamLog, c.CachedInfo().Name)
	}()
	if err := fn(c); err != nil {
		return fmt.Errorf("taskstore: list: %w", err)
	}
	return nil
}

// ListTasks returns every task of the log that keep accepts, read whole:
// for the mesh's upkeep and tests, never a caller's page (which ScanIndex
// serves).
func (b *Store) ListTasks(ctx context.Context, keep func(*TaskRecord) bool) ([]*TaskRecord, error) {
	var out []*TaskRecord
	seen := map[string]bool{}
	var ferr error
	err := b.ReadIndex(ctx, IndexQuery{AnyOwner: true}, time.Time{}, func(e IndexEntry) bool {
		if seen[e.TaskID] {
			return true
		}
		seen[e.TaskID] = true
		r, err := b.LoadTask(ctx, e.TaskID)
		if errors.Is(err, ErrTaskNotFound) {
			return true
		}
		if err != nil {
			ferr = err
			return false
		}
		if keep(r) {
			out = append(out, r)
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	return out, err
}
