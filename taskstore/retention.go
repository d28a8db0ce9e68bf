package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"

	"github.com/nats-io/nats.go/jetstream"
)

// Retention: how long and how many tasks the mesh keeps, so its disk stays
// flat however long it runs.
//
// By age (Config.Retention): a snapshot lives that long after it was last
// stored (the bucket's TTL), an event that long after it was appended (the
// events stream's MaxAge). The last event and the last snapshot of a task
// are written together, so a task goes whole, Retention after its last
// change.
//
// By count: the mesh keeps at most Config.MaxTasks task snapshots and
// Config.MaxEvents events, and one task's log holds at most
// Config.MaxTaskEvents events.
//
//   - The snapshot bucket's stream holds at most MaxTasks messages (one
//     per task), dropping the oldest (DiscardOld). A snapshot is stored
//     again at every state change (and every few events while an agent
//     runs), so the oldest is the task changed least recently.
//   - Every process hosting the bus (edge, worker, mesh) runs its upkeep
//     (Run); the one holding the "trim" lease (lease.go) trims (Trim):
//     while the bucket is over 90% of MaxTasks or the events stream over
//     90% of MaxEvents, it evicts the least recently changed task whole —
//     first its log (and push configs, and index entry), then its
//     snapshot — so an evicted task is not found (-32001 at the edge):
//     counting never leaves a snapshot with a broken log, nor a log
//     without its beginning. Over the snapshots' mark it reads the oldest
//     snapshots a batch at a time through one consumer, evicts their
//     tasks' logs several at once, then purges the batch's snapshots with
//     one purge of the bucket's stream below the batch's last sequence.
//     A task that ended needs no check for events its snapshot misses.
//     Passes come every few seconds, sooner while the bucket grows
//     toward its mark (trimPace), and at once after a pass that evicted.
//   - The events stream refuses rather than drops (DiscardNew): an event is
//     never lost from the middle or the start of a live task's log. At
//     MaxTaskEvents a task's further appends would fail ("maximum messages
//     per subject exceeded"; IsTaskLogFull). So that the task can still
//     end, the last taskEventsReserve places are kept for events that end
//     a turn (a final or interrupted status): AppendTask refuses any other
//     event past MaxTaskEvents-taskEventsReserve with ErrTaskLogFull, and
//     the worker then fails the task saying why.
//     Should the trimmer fall behind and the stream reach MaxEvents, new
//     events are refused until it catches up.
//   - Should tasks be created faster than the trimmer evicts and the bucket
//     reach MaxTasks, the server drops the oldest snapshots itself, leaving
//     their logs: such a task still reads consistently (its whole log is
//     folded again) until the trimmer sweeps orphaned logs, which it does
//     whenever the events hold more logs than the bucket holds snapshots.
//
// Eviction takes the least recently changed task whatever its state: keep
// MaxTasks well above the tasks queued or running at once (the default is
// ten times the work queue's bound).

const (
	// trimEvery spaces the trimming passes of each process, and
	// trimSoon follows a pass that removed tasks.
	trimEvery = 5 * time.Second
	trimSoon  = 500 * time.Millisecond
	// trimBatch bounds the tasks one pass evicts.
	trimBatch = 10_000
	// orphanScan bounds the events one pass looks at for orphaned logs.
	orphanScan = 4_000
	// orphanSlack is how many more logs than snapshots the events may
	// hold before a pass looks for orphaned logs (logs whose snapshot is
	// being stored are counted too), at most 1% of MaxTasks.
	orphanSlack = 256
	// trimCheck bounds the evictions a pass makes between reads of the
	// levels.
	trimCheck = 1024
)

// orphanGrace is how old a log without a snapshot (and its index entry)
// must be before it is swept: a creator stores the snapshot right after
// the first event, retrying it through a failover for at most
// bus.FailoverBudget.
var orphanGrace atomic.Int64

func init() { orphanGrace.Store(int64(2 * bus.FailoverBudget)) }

// kvStreamName is the stream underlying the task bucket.
const kvStreamName = "KV_" + BucketTasks

// lowWater is the level trimming brings a bound down to: 90%, and at
// least one below the bound.
func lowWater(limit int64) uint64 { return uint64(max(0, limit-max(1, limit/10))) }

// applyTaskLimits sets the count bound on the snapshot bucket's stream,
// which the KV API does not expose.
func (b *Store) applyTaskLimits(ctx context.Context) error {
	s, err := b.js.Stream(ctx, kvStreamName)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	if cfg.MaxMsgs == b.cfg.MaxTasks && cfg.Discard == jetstream.DiscardOld {
		return nil
	}
	cfg.MaxMsgs, cfg.Discard = b.cfg.MaxTasks, jetstream.DiscardOld
	_, err = b.js.UpdateStream(ctx, cfg)
	return err
}

// taskEventsReserve is how many places at the end of a task's log only
// events ending a turn may take: enough for an interrupted status, then a
// terminal one (a turn's end, a cancel).
const taskEventsReserve = 4

// logNearlyFull reports whether rec's log has reached the reserve at its
// end. Snapshots that do not count their events are not checked (the
// stream's own bound still holds).
func (b *Store) logNearlyFull(rec *TaskRecord) bool {
	max := b.cfg.MaxTaskEvents
	return max > taskEventsReserve && rec.Events >= max-taskEventsReserve
}

// endsTurn reports whether ev is a status that ends a turn: terminal, or
// waiting on the client.
func endsTurn(ev *a2a.StreamResponse) bool {
	return ev.StatusUpdate != nil && ev.StatusUpdate.Status.State.Final()
}

// Errors of an append refused by the retention bounds (see Config) or for
// lack of storage. Each is an *a2a.Error (-32000, with its message) that
// errors.Is tells apart from the others: a2a.Error's Is compares codes
// only, so a failover past its budget (ErrUnavailable) or a full store
// would otherwise match ErrTaskLogFull, and a worker would take a
// transient refusal for a log that can take no more (and settle the turn
// for good instead of running it again).
var (
	ErrTaskLogFull error = &limitError{a2a.ErrServerBusy.With("the task has reached the mesh's limit of events per task")}
	ErrStoreFull   error = &limitError{a2a.ErrServerBusy.With("the mesh's task store is full; retry later")}
)

// limitError is an *a2a.Error that only errors.Is(err, itself) matches.
type limitError struct{ e *a2a.Error }

func (l *limitError) Error() string { return l.e.Error() }
func (l *limitError) Unwrap() error { return l.e }

// isStoreFull reports an append refused because the events stream is at
// its bound (DiscardNew), or because JetStream's storage is full.
func isStoreFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (strings.Contains(apiErr.Description, "maximum messages exceeded") ||
		strings.Contains(apiErr.Description, "maximum bytes exceeded")) || IsStorageFull(err)
}

// IsStorageFull reports a write JetStream refused for lack of storage: the
// server's file (or memory) store is at its limit (max_file_store, the
// nats role's --max-store; by default 75% of the disk space free when the
// server started), or the account's. Such a refusal is JetStream's answer
// (no timeout) and lasts until space is freed: retention ages tasks out,
// or an operator raises the limit or frees the disk. It is not a failover:
// a client is told the store is full (ErrStoreFull, -32000) and to retry
// later.
//
// A disk that fills before that limit (other files on it) is another
// matter: nats-server stops writing to the streams concerned, or stops
// JetStream on a clustered node, and their writes go unanswered (a
// timeout, ErrUnavailable) until space returns (server.go).
func IsStorageFull(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10023, // insufficient resources: on a write, the server's store is at its limit
		10047, // insufficient storage resources available
		10028, // insufficient memory resources available
		10002: // resource limits exceeded for account
		return true
	}
	return false
}

// IsTaskLogFull reports an append refused because the task's log holds
// Config.MaxTaskEvents events.
func IsTaskLogFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum messages per subject")
}

// Run is the bus's upkeep: it trims (Trim) every few seconds until ctx
// ends, or the connection is closed, and returns nil then, with nothing of
// it left running. The process hosting the bus runs it beside its other
// components; running it in several processes at once is safe, and only
// one of them trims at a time (the "trim" lease).
func (b *Store) Run(ctx context.Context) error {
	// A failed backfill is not fatal: the tasks are whole, ListTasks
	// misses the older ones until they change, and the next start tries
	// again.
	_, _ = b.backfillIndex(ctx)
	t := time.NewTimer(trimEvery)
	defer t.Stop()
	var (
		pace    trimPace
		checked time.Time
	)
	defer func() {
		// Count changes not flushed yet would be left to the reconciler.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bus.AttemptTimeout)
		defer cancel()
		b.flushCounts(fctx)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if b.nc.IsClosed() {
			return nil
		}
		// One process trims at a time (lease.go): the others would evict
		// the same oldest tasks. The same process checks the task counts.
		next := trimEvery
		if b.bus.HoldLease(ctx, leaseTrim) {
			tctx, cancel := context.WithTimeout(ctx, trimPassTimeout)
			st, _ := b.trim(tctx, func() bool { return b.bus.HoldLease(tctx, leaseTrim) })
			if time.Since(checked) >= countCheckEvery {
				checked = time.Now()
				_, _ = b.reconcileCounts(tctx)
			}
			cancel()
			next = pace.next(st, b.cfg.MaxTasks)
		}
		t.Reset(next)
	}
}

// trimPassTimeout bounds one trimming pass.
const trimPassTimeout = 30 * time.Second

// trimState is what a trimming pass did and found.
type trimState struct {
	removed int
	snaps   uint64 // snapshots held when the pass ended (0: unknown)
	at      time.Time
}

// trimPace spaces the passes: every trimEvery while the bucket is far from
// its mark, sooner while tasks arrive fast enough to reach it before the
// next pass (the bucket's own bound would then drop the oldest snapshots
// and leave their logs), and trimSoon after a pass that removed tasks.
type trimPace struct{ last trimState }

func (p *trimPace) next(st trimState, maxTasks int64) time.Duration {
	st.at = time.Now()
	prev := p.last
	p.last = st
	if st.removed > 0 {
		return trimSoon
	}
	if prev.at.IsZero() || st.snaps <= prev.snaps || maxTasks <= 0 {
		return trimEvery
	}
	// At the rate the bucket grew since the last pass, how long until it
	// reaches its mark? Come back within a quarter of that.
	rate := float64(st.snaps-prev.snaps) / st.at.Sub(prev.at).Seconds()
	room := float64(lowWater(maxTasks)) - float64(st.snaps)
	if room <= 0 {
		return trimSoon
	}
	return min(trimEvery, max(trimSoon, time.Duration(room/rate/4*float64(time.Second))))
}

// Trim enforces the count bounds once: while the snapshots or the events
// are over 90% of their bound, it evicts the least recently changed tasks
// whole; it sweeps orphaned logs when there are any. It returns how many
// tasks (and orphaned logs) it removed. Every process opening the bus runs
// it every few seconds (Run); running it from several at once is safe.
func (b *Store) Trim(ctx context.Context) (int, error) {
	st, err := b.trim(ctx, nil)
	return st.removed, err
}

// trim is Trim; renew, when not nil, is called between batches and ends
// the pass when it reports the lease lost.
func (b *Store) trim(ctx context.Context, renew func() bool) (trimState, error) {
	var st trimState
	kvs, err := b.js.Stream(ctx, kvStreamName)
	if err != nil {
		return st, err
	}
	taskLow, eventLow := lowWater(b.cfg.MaxTasks), lowWater(b.cfg.MaxEvents)
	// over reads both levels; snaps is the number of snapshots held and
	// first the sequence of the oldest; logs is the number of logs.
	over := func() (tasks, events bool, snaps, first, logs uint64, err error) {
		ki, err := kvs.Info(ctx)
		if err != nil {
			return false, false, 0, 0, 0, err
		}
		ei, err := b.events.Info(ctx)
		if err != nil {
			return false, false, 0, 0, 0, err
		}
		st.snaps = ki.State.Msgs
		return ki.State.Msgs > taskLow, ei.State.Msgs > eventLow, ki.State.Msgs, ki.State.FirstSeq, uint64(ei.State.NumSubjects), nil
	}
	tasksOver, eventsOver, snaps, _, logs, err := over()
	if err != nil {
		return st, err
	}
	// Logs the bucket's own bound orphaned (it drops the oldest snapshots
	// when tasks come faster than passes), or whose creator died before
	// storing the snapshot, go too, a bounded number a pass, whenever
	// there are more logs than snapshots.
	slack := uint64(max(1, min(orphanSlack, b.cfg.MaxTasks/100)))
	if eventsOver || logs > snaps+slack {
		n, err := b.sweepOrphans(ctx)
		st.removed += n
		if err != nil {
			return st, err
		}
	}
	if !tasksOver && !eventsOver {
		return st, nil
	}
	// Push configs of an evicted task go with it (the bucket exists only
	// where push is on).
	push, err := b.js.Stream(ctx, "KV_"+bus.BucketPush)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		push = nil
	case err != nil:
		return st, err
	case push.CachedInfo().State.Msgs == 0:
		// No task has a push config: nothing to purge with each. (One
		// set during the pass on a task it evicts stays until it ages
		// out; an evicted task's config is never read.)
		push = nil
	}
	repaired := map[string]bool{}
	// The levels are read again once the tasks over the snapshots'
	// low-water mark are evicted (or after trimCheck evictions, or when
	// the oldest snapshots run out), not before each eviction, which is
	// several requests already; over the events' mark, whose tasks hold
	// any number of events, before each.
	var first uint64
	left := 0
	for i := 0; i < trimBatch; i++ {
		if left <= 0 {
			tasksOver, eventsOver, snaps, oldest, logs, err := over()
			if err != nil || !tasksOver && !eventsOver || snaps == 0 {
				// (No snapshot left: the events are live or young orphans.)
				return st, err
			}
			if i > 0 && renew != nil && !renew() {
				return st, nil // another process trims now
			}
			// Still over the mark after a batch: the bucket's bound may
			// be dropping snapshots under this pass, so their logs go
			// too as they come of age, not only at the next pass.
			if i > 0 && logs > snaps+slack {
				n, err := b.sweepOrphans(ctx)
				st.removed += n
				if err != nil {
					return st, err
				}
			}
			first, left = max(first, oldest), 1
			if tasksOver && !eventsOver {
				left = int(min(snaps-taskLow, trimCheck))
			}
		}
		if left > 1 {
			// Over the snapshots' mark only: the next left oldest
			// snapshots go, several at once (each eviction is a few
			// requests; one after another they fell far behind the
			// tasks a loaded mesh creates).
			batch, err := b.readFront(ctx, kvStreamName, first, left)
			if err != nil {
				return st, err
			}
			if len(batch) > 0 {
				first = batch[len(batch)-1].Sequence + 1
			}
			n, err := b.evictAll(ctx, kvs, push, batch, repaired)
			st.removed += n
			if err != nil {
				return st, err
			}
			i += len(batch)
			left = 0
			continue
		}
		// The stream holds snapshots only: the first message at or after
		// first under ">" (nats-server answers ">" without walking the
		// stream's subjects, which any narrower filter makes it do for
		// each read: O(retained tasks) per eviction).
		m, err := kvs.GetMsg(ctx, first, jetstream.WithGetMsgSubject(">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			first, left = 0, 0 // evicted by another process meanwhile: look again
			continue
		}
		if err != nil {
			return st, err
		}
		first = m.Sequence + 1
		id := strings.TrimPrefix(m.Subject, snapshotSubject(""))
		evicted, err := b.evict(ctx, kvs, push, id, m, repaired)
		if err != nil {
			return st, err
		}
		if evicted {
			st.removed++
			left--
		}
	}
	return st, nil
}

// readFront reads up to n messages of stream from sequence first on, in
// order, through one short-lived consumer: three requests, where one get
// each made reading a batch take longer than evicting it on a loaded
// server.
func (b *Store) readFront(ctx context.Context, stream string, first uint64, n int) ([]*jetstream.RawStreamMsg, error) {
	c, err := b.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       max(first, 1),
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bus.AttemptTimeout)
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, stream, c.CachedInfo().Name)
	}()
	n = min(n, int(c.CachedInfo().NumPending))
	batch := make([]*jetstream.RawStreamMsg, 0, n)
	for len(batch) < n {
		msgs, err := c.Fetch(n-len(batch), jetstream.FetchMaxWait(bus.AttemptTimeout))
		if err != nil {
			return batch, err
		}
		got := 0
		for m := range msgs.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			got++
			batch = append(batch, &jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: meta.Sequence.Stream, Header: m.Headers(), Data: m.Data(), Time: meta.Timestamp})
		}
		if err := msgs.Error(); err != nil {
			return batch, err
		}
		if got == 0 {
			break
		}
	}
	return batch, nil
}

// evictParallel bounds the evictions Trim runs at once.
const evictParallel = 32

// evictAll evicts the tasks of the oldest snapshots batch, evictParallel
// at a time, and returns how many it removed and the first error.
func (b *Store) evictAll(ctx context.Context, kvs, push jetstream.Stream, batch []*jetstream.RawStreamMsg, repaired map[string]bool) (int, error) {
	var mu sync.Mutex // guards repaired
	removed, firstErr := inParallel(batch, func(m *jetstream.RawStreamMsg) (bool, error) {
		id := strings.TrimPrefix(m.Subject, snapshotSubject(""))
		mu.Lock()
		seen := map[string]bool{id: repaired[id]}
		mu.Unlock()
		evicted, err := b.evictLog(ctx, push, id, m, seen)
		mu.Lock()
		repaired[id] = repaired[id] || seen[id]
		mu.Unlock()
		return evicted, err
	})
	if firstErr != nil || len(batch) == 0 {
		return removed, firstErr
	}
	// The batch is every snapshot from the first one read up to the last,
	// and their logs are gone: one purge of the bucket's stream below the
	// last takes all their snapshots. A snapshot stored since (a writer
	// racing the eviction, a repair) has a later sequence and stays.
	err := kvs.Purge(ctx, jetstream.WithPurgeSequence(batch[len(batch)-1].Sequence+1))
	return removed, err
}

// evict removes task id, whose snapshot m is the oldest, log first. A
// snapshot behind its log (a writer died between the two) is brought up to
// date instead, which moves it to the back; evict takes it if it comes
// round again in the same pass.
func (b *Store) evict(ctx context.Context, kvs, push jetstream.Stream, id string, m *jetstream.RawStreamMsg, repaired map[string]bool) (bool, error) {
	evicted, err := b.evictLog(ctx, push, id, m, repaired)
	if !evicted || err != nil {
		return false, err
	}
	// Only the snapshot judged here: one stored since (a writer racing the
	// eviction) stays, and reads consistently without the log.
	err = kvs.Purge(ctx, jetstream.WithPurgeSubject(m.Subject), jetstream.WithPurgeSequence(m.Sequence+1))
	return err == nil, err
}

// evictLog is evict up to the snapshot: the log, push configs and index
// entry of task id go, or its snapshot is repaired (false).
func (b *Store) evictLog(ctx context.Context, push jetstream.Stream, id string, m *jetstream.RawStreamMsg, repaired map[string]bool) (bool, error) {
	var rec TaskRecord
	_ = json.Unmarshal(m.Data, &rec) // undecodable: LastSeq 0, evicted
	// A task that ended takes no more events: its snapshot is its log's
	// last word, and there is nothing to repair.
	if !repaired[id] && bus.ValidToken(id) && !rec.Task.Status.State.Terminal() {
		last, err := b.events.GetLastMsgForSubject(ctx, EventsSubject(id))
		if err == nil && last.Sequence > rec.LastSeq {
			repaired[id] = true
			if _, err := b.LoadTask(ctx, id); err == nil {
				return false, nil
			}
		}
	}
	if bus.ValidToken(id) {
		if err := b.events.Purge(ctx, jetstream.WithPurgeSubject(EventsSubject(id))); err != nil {
			return false, err
		}
		if push != nil {
			if err := push.Purge(ctx, jetstream.WithPurgeSubject("$KV."+bus.BucketPush+"."+id+".>")); err != nil {
				return false, err
			}
		}
	}
	if err := b.removeIndex(ctx, &rec); err != nil {
		return false, err
	}
	return true, nil
}

// sweepOrphans removes logs at the front of the events stream whose task
// has no snapshot (the bucket dropped it at its bound, or its creator died
// before storing it) and that nobody has written to for orphanGrace, with
// their index entries. A log whose index entry is younger than that (its
// snapshot is being stored), or whose task has not ended and has its work
// queued (its snapshot was refused for lack of storage), is kept.
func (b *Store) sweepOrphans(ctx context.Context) (int, error) {
	ei, err := b.events.Info(ctx)
	if err != nil {
		return 0, err
	}
	grace := time.Duration(orphanGrace.Load())
	// The logs at the front whose first event is older than the grace:
	// read in order through one consumer, then judged several at once.
	if ei.State.Msgs == 0 {
		return 0, nil
	}
	msgs, err := b.readFront(ctx, StreamEvents, ei.State.FirstSeq, orphanScan)
	if err != nil {
		return 0, err
	}
	var front []*jetstream.RawStreamMsg
	seen := map[string]bool{}
	for _, m := range msgs {
		if time.Since(m.Time) < grace {
			break // the rest is younger still
		}
		if !seen[m.Subject] {
			seen[m.Subject] = true
			front = append(front, m)
		}
	}
	return inParallel(front, func(m *jetstream.RawStreamMsg) (bool, error) { return b.sweepOrphan(ctx, m, grace) })
}

// inParallel runs fn on each of msgs, evictParallel at a time, and returns
// how many it reported done and the first error.
func inParallel(msgs []*jetstream.RawStreamMsg, fn func(*jetstream.RawStreamMsg) (bool, error)) (int, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		done     int
		firstErr error
	)
	sem := make(chan struct{}, evictParallel)
	for _, m := range msgs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok, err := fn(m)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				done++
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return done, firstErr
}

// sweepOrphan removes the log whose first event is m, with its index
// entry, if it is an orphan (see sweepOrphans).
func (b *Store) sweepOrphan(ctx context.Context, m *jetstream.RawStreamMsg, grace time.Duration) (bool, error) {
	id := strings.TrimPrefix(m.Subject, subjEventsPrefix)
	if _, err := b.tasks.Get(ctx, id); err == nil {
		return false, nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, err
	}
	last, err := b.events.GetLastMsgForSubject(ctx, m.Subject)
	if err != nil || time.Since(last.Time) < grace {
		return false, nil
	}
	rec := creationRecord(m)
	if rec != nil && !endedLog(last) {
		// A task whose snapshot is not stored yet (StartTask stores it
		// while the send enqueues) has a fresh index entry; one whose
		// snapshot was refused (the store was full) after its work was
		// enqueued runs once space returns. Neither is an orphan. (A
		// task that ended is neither; a log that does not start with a
		// task's creation has no entry or work to look for.)
		written, err := b.indexEntryTime(ctx, rec)
		if err != nil || !written.IsZero() && time.Since(written) < grace {
			return false, err
		}
		if queued, err := b.bus.Queued(ctx, rec.Agent, id); err != nil || queued {
			return false, nil
		}
	}
	if err := b.events.Purge(ctx, jetstream.WithPurgeSubject(m.Subject)); err != nil {
		return false, err
	}
	// Its index entry, if the bucket's bound left one.
	if rec != nil {
		if err := b.removeIndex(ctx, rec); err != nil {
			return true, err
		}
	}
	return true, nil
}

// endedLog reports whether last, a log's last event, is a terminal status.
func endedLog(last *jetstream.RawStreamMsg) bool {
	var ev a2a.StreamResponse
	if json.Unmarshal(last.Data, &ev) != nil {
		return false
	}
	switch {
	case ev.StatusUpdate != nil:
		return ev.StatusUpdate.Status.State.Terminal()
	case ev.Task != nil:
		return ev.Task.Status.State.Terminal()
	}
	return false
}
