package taskstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// The task index (stream A2A_INDEX) answers "which tasks of this caller,
// newest first" without reading every snapshot. Each task has one entry,
// on a subject naming who and what it belongs to:
//
//	a2a.index.<owner>.<agent>.<context>.<taskId>
//
// <owner> and <context> are hashes of the principal and the context id
// (subject tokens cannot hold every string); <agent> and <taskId> are
// tokens already. The stream keeps one message per subject, so a task's
// entry moves to the end of the stream each time it is written: the
// stream's order is the order in which tasks last changed status. An entry
// is written when a task is created and whenever its snapshot is stored
// with a status (state or timestamp) the index has not seen: every final
// or interrupted state, a new user turn, and, while an agent runs, at most
// as often as the worker stores snapshots.
//
// A filter by owner, agent and context is a subject filter the server
// applies itself, so a page of ListTasks costs about its own size: a few
// reads of entries going back from the end of the stream, then the page's
// snapshots. An entry is a hint, never the truth: the caller reads each
// task it lists (a hash collision, an entry of an evicted task, or an
// entry behind its task are all caught there).

// IndexEntry is one task's entry in the index.
type IndexEntry struct {
	// Seq is the entry's position in the index; entries with a higher
	// Seq changed later.
	Seq uint64
	// Written is when the entry was stored.
	Written time.Time
	// TaskID and Agent of the task, and its owner's hash.
	TaskID, Agent, Owner string
	// State and StatusTime are the task's status when the entry was
	// written.
	State      a2a.TaskState
	StatusTime string
}

// indexValue is an entry's payload.
type indexValue struct {
	State a2a.TaskState `json:"s"`
	At    string        `json:"t,omitempty"`
}

// IndexQuery selects index entries.
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
}

func (q IndexQuery) filter() string {
	owner := "*"
	if !q.AnyOwner {
		owner = hashToken(q.Owner)
	}
	agent, ctx := "*", "*"
	if q.Agent != "" {
		agent = q.Agent
	}
	if q.ContextID != "" {
		ctx = hashToken(q.ContextID)
	}
	if ctx == "*" {
		return subjIndexPrefix + owner + "." + agent + ".>"
	}
	return subjIndexPrefix + owner + "." + agent + "." + ctx + ".*"
}

// hashToken turns any string into a subject token: "_" for the empty
// string, else 22 characters of a SHA-256 (132 bits; a collision only
// costs a read, since every listed task is checked).
func hashToken(s string) string {
	if s == "" {
		return "_"
	}
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

// indexSubject is the subject of rec's entry.
func indexSubject(rec *TaskRecord) string {
	return subjIndexPrefix + hashToken(rec.Owner) + "." + rec.Agent + "." + hashToken(rec.Task.ContextID) + "." + rec.Task.ID
}

// indexKey is what an entry says of rec: its status.
func indexKey(rec *TaskRecord) string {
	return string(rec.Task.Status.State) + "|" + rec.Task.Status.Timestamp
}

func indexMsg(rec *TaskRecord) (*nats.Msg, error) {
	if !bus.ValidToken(rec.Agent) || !bus.ValidToken(rec.Task.ID) {
		return nil, fmt.Errorf("bus: task %q of agent %q cannot be indexed", rec.Task.ID, rec.Agent)
	}
	data, err := json.Marshal(indexValue{State: rec.Task.Status.State, At: rec.Task.Status.Timestamp})
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: indexSubject(rec), Data: data}, nil
}

// indexAsync starts writing rec's entry when its status is not indexed
// yet; the returned wait (never nil) finishes the write, retrying it
// through a failover. Started before the snapshot's own store, the entry
// costs no extra round trip. A failed entry is logged by nobody: the task
// stays whole (its log and snapshot do not depend on it) and its next
// status change writes the entry again.
func (b *Store) indexAsync(rec *TaskRecord) func(ctx context.Context) {
	return b.writeIndex(rec, false)
}

// indexFirst writes a new task's first entry, only if the task has none
// yet: a writer that overtook the creation (a fast worker) has written a
// newer one.
func (b *Store) indexFirst(rec *TaskRecord) func(ctx context.Context) {
	return b.writeIndex(rec, true)
}

func (b *Store) writeIndex(rec *TaskRecord, first bool) func(ctx context.Context) {
	key := indexKey(rec)
	if rec.indexed == key {
		return func(context.Context) {}
	}
	if rec.Task.IsReply() {
		// A task that answered its send with a message is not listed (the
		// client never saw it), and its janitor has nothing to recover:
		// its entry is removed, not rewritten. A failed removal leaves an
		// entry that ListTasks reads and skips.
		return func(ctx context.Context) {
			if b.removeIndex(ctx, rec) == nil {
				rec.indexed = key
			}
		}
	}
	msg, err := indexMsg(rec)
	if err != nil {
		return func(context.Context) {}
	}
	var opts []jetstream.PublishOpt
	if first {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(0))
	}
	fut, err := b.js.PublishMsgAsync(msg, opts...)
	return func(ctx context.Context) {
		if err == nil {
			t := time.NewTimer(bus.AttemptTimeout)
			defer t.Stop()
			select {
			case <-fut.Ok():
				rec.indexed = key
				return
			case err := <-fut.Err():
				if first && bus.IsWrongLastSeq(err) {
					return // overtaken: a newer entry stands
				}
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		// Repeating an entry is harmless: the stream keeps the last (a
		// first entry that was stored after all is refused as overtaken).
		_, err := b.bus.Publish(ctx, msg, opts...)
		if err == nil || first && bus.IsWrongLastSeq(err) {
			rec.indexed = key
		}
	}
}

// index writes rec's entry now (see indexAsync).
func (b *Store) index(ctx context.Context, rec *TaskRecord) { b.indexAsync(rec)(ctx) }

// removeIndex deletes rec's entry (eviction), and takes the task off its
// owner's counts when there was one.
func (b *Store) removeIndex(ctx context.Context, rec *TaskRecord) error {
	if !bus.ValidToken(rec.Agent) || !bus.ValidToken(rec.Task.ID) {
		return nil
	}
	n, err := b.purgeIndexSubject(ctx, indexSubject(rec))
	if err == nil && n > 0 {
		b.countTask(rec.Owner, rec.Agent, -1)
	}
	return err
}

// purgeIndexSubject purges one subject of the index and returns how many
// entries went (the client's Purge does not say).
func (b *Store) purgeIndexSubject(ctx context.Context, subj string) (uint64, error) {
	req, err := json.Marshal(struct {
		Filter string `json:"filter"`
	}{subj})
	if err != nil {
		return 0, err
	}
	return bus.Read(ctx, func(c context.Context) (uint64, error) {
		m, err := b.nc.RequestWithContext(c, "$JS.API.STREAM.PURGE."+StreamIndex, req)
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
				return 0, fmt.Errorf("bus: task index: purge: %s (%d)", resp.Error.Description, resp.Error.Code)
			}
			return 0, errors.New("bus: task index: purge refused")
		}
		return resp.Purged, nil
	})
}

func parseIndexMsg(m *jetstream.RawStreamMsg) (IndexEntry, bool) {
	rest, ok := strings.CutPrefix(m.Subject, subjIndexPrefix)
	if !ok {
		return IndexEntry{}, false
	}
	tok := strings.Split(rest, ".")
	if len(tok) != 4 {
		return IndexEntry{}, false
	}
	var v indexValue
	if json.Unmarshal(m.Data, &v) != nil {
		return IndexEntry{}, false
	}
	return IndexEntry{Seq: m.Sequence, Written: m.Time, Owner: tok[0], Agent: tok[1], TaskID: tok[3], State: v.State, StatusTime: v.At}, true
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
// A task whose entry moves while the scan runs (its status changed)
// leaves the stretch already read for a place past where it started:
// IndexSince from IndexTop taken before the scan finds such entries.
func (b *Store) ScanIndex(ctx context.Context, q IndexQuery, before uint64, want int, fn func(IndexEntry) (took, more bool)) error {
	filter := q.filter()
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.indexStream.Info(c) })
	if err != nil {
		return fmt.Errorf("bus: task index: %w", err)
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
			t, more := fn(batch[i])
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
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.indexStream.Info(c) })
	if err != nil {
		return 0, fmt.Errorf("bus: task index: %w", err)
	}
	return info.State.LastSeq + 1, nil
}

// IndexSince returns the entries q selects at sequence from or later,
// oldest first, at most max of them (the newest ones when there are
// more).
func (b *Store) IndexSince(ctx context.Context, q IndexQuery, from uint64, max int) ([]IndexEntry, error) {
	info, err := bus.Read(ctx, func(c context.Context) (*jetstream.StreamInfo, error) { return b.indexStream.Info(c) })
	if err != nil {
		return nil, fmt.Errorf("bus: task index: %w", err)
	}
	end := info.State.LastSeq + 1
	if from >= end {
		return nil, nil
	}
	got, err := b.indexRange(ctx, q.filter(), from, end, false)
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
			return b.indexStream.GetMsg(c, seq, jetstream.WithGetMsgSubject(filter))
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("bus: task index: %w", err)
		}
		if m.Sequence >= hi {
			break
		}
		indexEntriesRead.Add(1)
		if e, ok := parseIndexMsg(m); ok {
			batch = append(batch, e)
		}
		seq = m.Sequence + 1
	}
	return batch, nil
}

// ReadIndex calls fn with every entry q selects that was written at or
// after since, oldest first, until fn returns false. It streams the
// entries through one consumer: its cost is the entries read.
func (b *Store) ReadIndex(ctx context.Context, q IndexQuery, since time.Time, fn func(IndexEntry) bool) error {
	return b.indexConsumer(ctx, q.filter(), 0, since, func(c jetstream.Consumer) error {
		return readEntries(c, 0, fn)
	})
}

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
			e, ok := parseIndexMsg(&jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: meta.Sequence.Stream, Data: m.Data(), Time: meta.Timestamp})
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

// indexConsumer runs fn with a short-lived consumer of the entries the
// filter selects, from sequence start, or time since, or the beginning,
// and deletes it after. It is served by the stream's leader, so it sees
// every entry already acknowledged.
func (b *Store) indexConsumer(ctx context.Context, filter string, start uint64, since time.Time, fn func(jetstream.Consumer) error) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     filter,
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
	}
	switch {
	case start > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	case !since.IsZero():
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	c, err := bus.Read(ctx, func(c context.Context) (jetstream.Consumer, error) {
		return b.js.CreateConsumer(c, StreamIndex, cfg)
	})
	if err != nil {
		return fmt.Errorf("bus: task index: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bus.AttemptTimeout)
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, StreamIndex, c.CachedInfo().Name)
	}()
	if err := fn(c); err != nil {
		return fmt.Errorf("bus: task index: %w", err)
	}
	return nil
}

// ListTasks returns every task the index names that keep accepts, read
// whole: for the mesh's upkeep and tests, never a caller's page (which
// ScanIndex serves).
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
