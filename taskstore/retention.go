package taskstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"

	"github.com/nats-io/nats.go"
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

// lowWater is the level trimming brings a bound down to: 90%, and at
// least one below the bound.
func lowWater(limit int64) uint64 { return uint64(max(0, limit-max(1, limit/10))) }

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

// IsTooLarge reports an append refused for its size (the log's
// max_msg_size, or the server's max_payload).
func IsTooLarge(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum
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

// Trim enforces the count bounds once: while the log holds more than 90%
// of MaxTasks tasks or of MaxEvents messages, it evicts the least recently
// changed tasks whole. It returns how many tasks it removed. Every process
// opening the store runs it every few seconds (Run); running it from
// several at once is safe.
func (b *Store) Trim(ctx context.Context) (int, error) {
	st, err := b.trim(ctx, nil)
	return st.removed, err
}

// trim is Trim; renew, when not nil, is called between batches and ends
// the pass when it reports the lease lost.
//
// The log's front is where the least recently changed tasks are: a
// message there that is its task's last one (one get of its subject's
// last message) marks a task nothing has changed since, which goes whole
// (one purge of its subject, below that message, so an append racing the
// eviction fails its compare-and-set and finds the task gone). A message
// of a task that changed later is passed over. The front is read a batch
// at a time through one consumer, and a batch's messages are judged
// several at once.
func (b *Store) trim(ctx context.Context, renew func() bool) (trimState, error) {
	var st trimState
	taskLow, eventLow := lowWater(b.cfg.MaxTasks), lowWater(b.cfg.MaxEvents)
	// need reads the levels: how many tasks (or messages) are over the
	// marks, and where the log starts.
	need := func() (int, uint64, error) {
		ei, err := b.log.Info(ctx)
		if err != nil {
			return 0, 0, err
		}
		st.snaps = uint64(ei.State.NumSubjects)
		n := 0
		if tasks := uint64(ei.State.NumSubjects); tasks > taskLow {
			n = int(tasks - taskLow)
		}
		if ei.State.Msgs > eventLow {
			n = max(n, int(ei.State.Msgs-eventLow))
		}
		return n, ei.State.FirstSeq, nil
	}
	n, first, err := need()
	if err != nil || n == 0 {
		return st, err
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
	for read := 0; read < trimBatch; {
		// A task is a message or two of the front: read twice what is
		// needed, at most trimCheck, before looking at the levels again.
		batch, err := b.readFront(ctx, StreamLog, first, min(trimCheck, 2*n+16))
		if err != nil || len(batch) == 0 {
			return st, err
		}
		read += len(batch)
		// Which of them are their task's last message is read several at
		// once; the first n of those, in the log's order, go.
		last := make([]bool, len(batch))
		if _, err := inParallel(indexed(batch), func(i int) (bool, error) {
			ok, err := b.isLast(ctx, batch[i])
			last[i] = ok
			return ok, err
		}); err != nil {
			return st, err
		}
		// The next batch starts at the first task this one kept that was
		// among the least recent (more of them than were needed now), so
		// that a pass under load goes on in order and never walks up to
		// the tasks in flight; else after this batch.
		var victims []int
		first = batch[len(batch)-1].Sequence + 1
		for i := range batch {
			switch {
			case !last[i]:
			case len(victims) < n:
				victims = append(victims, i)
			default:
				first = min(first, batch[i].Sequence)
			}
		}
		removed, err := inParallel(victims, func(i int) (bool, error) { return b.evict(ctx, push, batch[i]) })
		st.removed += removed
		if err != nil {
			return st, err
		}
		if renew != nil && !renew() {
			return st, nil // another process trims now
		}
		if n, _, err = need(); err != nil || n == 0 {
			return st, err
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

// isLast reports whether log message m is its task's last message.
func (b *Store) isLast(ctx context.Context, m *jetstream.RawStreamMsg) (bool, error) {
	if _, ok := TaskIDOf(m.Subject); !ok {
		return false, nil
	}
	last, err := b.log.GetLastMsgForSubject(ctx, m.Subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil // evicted meanwhile
	}
	if err != nil {
		return false, err
	}
	return last.Sequence == m.Sequence, nil
}

// evict removes the task whose last log message is m: its log (below m's
// successor, so an append racing the eviction fails its compare-and-set
// and finds the task gone), its alias, its push configs, and its count
// (m's headers name its owner and agent). Of trimmers evicting the same
// task at once, the one whose purge removed it counts it.
func (b *Store) evict(ctx context.Context, push jetstream.Stream, m *jetstream.RawStreamMsg) (bool, error) {
	id, ok := TaskIDOf(m.Subject)
	if !ok {
		return false, nil
	}
	n, err := b.purgeSubject(ctx, StreamLog, m.Subject, m.Sequence+1)
	if err != nil {
		return false, err
	}
	if n > 0 && m.Header.Get(hdrReply) == "" {
		b.countHashed(m.Header.Get(hdrOwner), m.Header.Get(hdrAgent), -1)
	}
	if _, minted := mintedSubject(id); !minted {
		if _, err := b.purgeSubject(ctx, StreamAliases, aliasSubject(id), 0); err != nil {
			return true, err
		}
		b.aliases.m.Delete(id)
	}
	if push != nil {
		if err := push.Purge(ctx, jetstream.WithPurgeSubject("$KV."+bus.BucketPush+"."+id+".>")); err != nil {
			return true, err
		}
	}
	return n > 0, nil
}

// indexed is 0..len(batch)-1.
func indexed(batch []*jetstream.RawStreamMsg) []int {
	out := make([]int, len(batch))
	for i := range out {
		out[i] = i
	}
	return out
}

// inParallel runs fn on each of msgs, evictParallel at a time, and returns
// how many it reported done and the first error.
func inParallel[T any](msgs []T, fn func(T) (bool, error)) (int, error) {
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
