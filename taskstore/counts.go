package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Task counts (stream A2A_COUNTS) answer ListTasks' totalSize without
// counting: the server counts the index subjects under a filter by
// walking them (0.2 s at 10^6 entries of one owner), so the index keeps
// a running count of each owner's tasks, and of each owner's tasks of
// each agent, in counters (JetStream counter CRDTs, "Nats-Incr"):
//
//	a2a.count.<owner>          every task of the owner
//	a2a.count.<owner>.<agent>  the owner's tasks of one agent
//
// A task counts +1 when CreateTask creates it and -1 when it goes
// (eviction) or answers its send with a message (a reply is not listed). Each process
// adds its changes up and flushes them every countFlushEvery, so a count
// costs no stored message per task.
//
// A count can drift: a process killed before its flush, an entry that
// aged out or was never written. The trimming lease's holder reconciles
// the counters with the server's own count of the index (reconcileCounts)
// while the index is quiet: under load the index is always ahead of the
// counters by the changes not flushed yet, which must not be taken for
// drift.

// countFlushEvery is how long a process holds its count changes before
// writing them.
const countFlushEvery = 100 * time.Millisecond

// countSubject is the counter of owner's (hashed) tasks, of agent's only
// when agent is not empty.
func countSubject(ownerHash, agent string) string {
	if agent == "" {
		return subjCountPrefix + ownerHash
	}
	return subjCountPrefix + ownerHash + "." + agent
}

// counts holds a process's count changes until they are flushed.
type counts struct {
	// flushMu is held by a flush from the moment it takes the pending
	// changes until they are written (or put back), and by a count read,
	// so that a read sees each change of this process once: pending, or
	// in its counter.
	flushMu   sync.Mutex
	mu        sync.Mutex
	pending   map[string]int64
	scheduled bool
	// next is where the next reconcile pass goes on from.
	next string
}

// countTask records that owner's task of agent came (+1) or went (-1).
func (b *Store) countTask(owner, agent string, d int64) {
	b.countHashed(hashToken(owner), agent, d)
}

// countHashed is countTask of an owner known by its hash.
func (b *Store) countHashed(h, agent string, d int64) {
	if !bus.ValidToken(agent) || !bus.ValidToken(h) {
		return
	}
	b.countDelta(countSubject(h, ""), d)
	b.countDelta(countSubject(h, agent), d)
}

// flushCounts writes the count changes held so far. Changes that could
// not be written for a passing fault are kept for the next flush (a
// connection that closed for good, or a refusal, loses them: the
// reconciliation repairs that).
func (b *Store) flushCounts(ctx context.Context) {
	c := &b.counts
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	pending := c.pending
	c.pending, c.scheduled = nil, false
	c.mu.Unlock()
	if len(pending) == 0 || b.nc.IsClosed() {
		return
	}
	// One publish after another (a flush holds a few counters): a
	// request ends as soon as the connection closes, so no flush outlives
	// its bus by more than the write in progress.
	var failed map[string]int64
	for subj, d := range pending {
		if d == 0 {
			continue
		}
		if _, err := b.js.PublishMsg(ctx, incrMsg(subj, d)); err != nil && bus.IsTransient(err) {
			// Kept for the next flush; a refusal (a full store) is left
			// to the reconciler.
			if failed == nil {
				failed = map[string]int64{}
			}
			failed[subj] = d
		}
	}
	if len(failed) > 0 && !b.nc.IsClosed() {
		for subj, d := range failed {
			b.countDelta(subj, d)
		}
	}
}

// countDelta adds a change to one counter, written by the next flush
// (countFlushEvery from the first change held).
func (b *Store) countDelta(subj string, d int64) {
	c := &b.counts
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[string]int64{}
	}
	c.pending[subj] += d
	start := !c.scheduled
	c.scheduled = true
	c.mu.Unlock()
	if start {
		time.AfterFunc(countFlushEvery, func() {
			ctx, cancel := context.WithTimeout(context.Background(), bus.AttemptTimeout)
			defer cancel()
			b.flushCounts(ctx)
		})
	}
}

func incrMsg(subj string, d int64) *nats.Msg {
	m := nats.NewMsg(subj)
	v := strconv.FormatInt(d, 10)
	if d >= 0 {
		v = "+" + v
	}
	m.Header.Set("Nats-Incr", v)
	return m
}

// counterValue reads one counter (ok false: it was never written).
func (b *Store) counterValue(ctx context.Context, subj string) (v int64, ok bool, err error) {
	m, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.countStream.GetLastMsgForSubject(c, subj)
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("bus: task counts: %w", err)
	}
	var cv struct {
		Val string `json:"val"`
	}
	if err := json.Unmarshal(m.Data, &cv); err != nil {
		return 0, false, fmt.Errorf("bus: task counts: counter %s: %w", subj, err)
	}
	v, err = strconv.ParseInt(cv.Val, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("bus: task counts: counter %s: %w", subj, err)
	}
	return v, true, nil
}

// countFilter counts the tasks q selects from their logs' last messages
// (headers only), leaving out replies: exact, at the cost of one header
// read per task (cheap for a context).
func (b *Store) countFilter(ctx context.Context, q IndexQuery) (int, error) {
	n := 0
	err := b.ReadIndex(ctx, q, time.Time{}, func(e IndexEntry) bool {
		if !e.Reply {
			n++
		}
		return true
	})
	return n, err
}

// Counting in ListTasks: TaskCount is the number of index entries q
// selects. A query of an owner, or of an owner's agent, is answered from
// its counter (cheap at any size, exact but for a drift the reconciler
// has not repaired yet); one of a context, or one whose counter was
// never written, by the server's count, cheap for a context.
func (b *Store) TaskCount(ctx context.Context, q IndexQuery) (int, error) {
	n, _, err := b.taskCount(ctx, q)
	return n, err
}

// taskCount is TaskCount, and whether the server counted (exact).
func (b *Store) taskCount(ctx context.Context, q IndexQuery) (int, bool, error) {
	if q.ContextID == "" && !q.AnyOwner {
		subj := countSubject(hashToken(q.Owner), q.Agent)
		c := &b.counts
		c.flushMu.Lock()
		v, ok, err := b.counterValue(ctx, subj)
		if ok && err == nil {
			// This process's own changes count before they are written.
			c.mu.Lock()
			v += c.pending[subj]
			c.mu.Unlock()
		}
		c.flushMu.Unlock()
		if err != nil {
			return 0, false, err
		}
		if ok {
			return int(max(v, 0)), false, nil
		}
	}
	n, err := b.countFilter(ctx, q)
	return n, err == nil, err
}

// countCheckEvery spaces the reconciliation passes, and countCheckMax
// bounds the counters one pass checks (each costs the server a walk of
// the subjects it counts).
const (
	countCheckEvery = time.Minute
	countCheckMax   = 256
	// countCheckTasks is the largest counter a pass checks: counting
	// reads a header of every task it counts.
	countCheckTasks = 50_000
)

// countQuiet is how long the index must have had no write for a
// reconciliation pass to run: ten flush intervals, so that every live
// process has flushed what it counted (a variable for tests).
var countQuiet = 10 * countFlushEvery

// reconcileCounts compares counters with the server's count of the index
// entries they stand for, and corrects them, when the index has been
// quiet for countQuiet and stays so while a counter is checked: then the
// only changes not in the counters are lost ones. A mesh whose index
// holds entries and no counter at all (one upgraded from a release
// without counts) has them written from one read of the index. It returns
// how many counters it corrected (or wrote).
func (b *Store) reconcileCounts(ctx context.Context) (int, error) {
	// This process's own changes (the trimmer's evictions) first.
	b.flushCounts(ctx)
	quiet := func() (uint64, bool, error) {
		ii, err := b.log.Info(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("bus: task counts: %w", err)
		}
		return ii.State.LastSeq, ii.State.Msgs == 0 || time.Since(ii.State.LastTime) >= countQuiet, nil
	}
	if _, ok, err := quiet(); err != nil || !ok {
		return 0, err
	}
	si, err := b.countStream.Info(ctx, jetstream.WithSubjectFilter(subjCountPrefix+">"))
	if err != nil {
		return 0, fmt.Errorf("bus: task counts: %w", err)
	}
	if len(si.State.Subjects) == 0 {
		return b.seedCounts(ctx)
	}
	subjects := slices.Sorted(maps.Keys(si.State.Subjects))
	c := &b.counts
	c.mu.Lock()
	start, _ := slices.BinarySearch(subjects, c.next)
	c.mu.Unlock()
	fixed := 0
	for i := 0; i < min(countCheckMax, len(subjects)); i++ {
		subj := subjects[(start+i)%len(subjects)]
		c.mu.Lock()
		c.next = subj + "\x00"
		c.mu.Unlock()
		q, ok := countQueryOf(subj)
		if !ok {
			continue
		}
		seq1, _, err := quiet()
		if err != nil {
			return fixed, err
		}
		v1, _, err := b.counterValue(ctx, subj)
		if err != nil {
			return fixed, err
		}
		if v1 > countCheckTasks {
			continue // too many to count now; counted exactly as they came and went
		}
		n, err := b.countFilter(ctx, q)
		if err != nil {
			return fixed, err
		}
		v2, _, err := b.counterValue(ctx, subj)
		if err != nil {
			return fixed, err
		}
		seq2, ok, err := quiet()
		if err != nil || !ok || seq1 != seq2 {
			return fixed, err // the index moved: judge again when it rests
		}
		if v1 != v2 {
			continue // a flush landed meanwhile (a purge): judge it next time
		}
		if d := int64(n) - v1; d != 0 {
			if _, err := b.bus.Publish(ctx, incrMsg(subj, d)); err != nil {
				return fixed, fmt.Errorf("bus: task counts: %w", err)
			}
			fixed++
		}
	}
	return fixed, nil
}

// countQueryOf is the query a counter stands for.
func countQueryOf(subj string) (IndexQuery, bool) {
	rest, ok := strings.CutPrefix(subj, subjCountPrefix)
	if !ok {
		return IndexQuery{}, false
	}
	owner, agent, _ := strings.Cut(rest, ".")
	if owner == "" || strings.Contains(agent, ".") {
		return IndexQuery{}, false
	}
	return IndexQuery{ownerHash: owner, Agent: agent}, true
}

// seedCounts writes the counters of an index that has none, from one read
// of every entry.
func (b *Store) seedCounts(ctx context.Context) (int, error) {
	ii, err := b.log.Info(ctx)
	if err != nil || ii.State.Msgs == 0 {
		return 0, err
	}
	n := map[string]int64{}
	err = b.ReadIndex(ctx, IndexQuery{AnyOwner: true}, time.Time{}, func(e IndexEntry) bool {
		if e.Reply {
			return true
		}
		n[countSubject(e.Owner, "")]++
		n[countSubject(e.Owner, e.Agent)]++
		return true
	})
	if err != nil {
		return 0, err
	}
	for subj, v := range n {
		if _, err := b.bus.Publish(ctx, incrMsg(subj, v)); err != nil {
			return 0, fmt.Errorf("bus: task counts: %w", err)
		}
	}
	return len(n), nil
}
