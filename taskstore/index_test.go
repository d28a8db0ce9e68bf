package taskstore

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

func indexIDs(t *testing.T, b *Store, q IndexQuery, before uint64, n int) ([]string, []uint64) {
	t.Helper()
	var ids []string
	var seqs []uint64
	require.NoError(t, b.ScanIndex(context.Background(), q, before, n, func(e IndexEntry) (bool, bool) {
		if len(ids) == n {
			return false, false
		}
		ids, seqs = append(ids, e.TaskID), append(seqs, e.Seq)
		return true, true
	}))
	return ids, seqs
}

// The index lists a caller's tasks newest change first, pages back from
// any entry, filters by owner, agent and context on the server, and moves
// a task to the front when its status changes.
func TestIndexListsNewestChangeFirst(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	recs := map[string]*TaskRecord{}
	for i := 0; i < 30; i++ {
		r := newRecord(fmt.Sprintf("t%02d", i))
		if i%3 == 0 {
			r.Owner = "bob"
		}
		if i%5 == 0 {
			r.Agent = "other"
		}
		r.Task.ContextID = fmt.Sprintf("ctx-%d", i%2)
		rec, err := b.CreateTask(ctx, r)
		require.NoError(t, err)
		recs[rec.Task.ID] = rec
	}
	alice := IndexQuery{Owner: "alice"}
	var want []string
	for i := 29; i >= 0; i-- {
		if i%3 != 0 {
			want = append(want, fmt.Sprintf("t%02d", i))
		}
	}
	got, seqs := indexIDs(t, b, alice, 0, 100)
	require.Equal(t, want, got, "alice's tasks, newest first")
	n, err := b.countFilter(ctx, alice.filter())
	require.NoError(t, err)
	assert.Equal(t, len(want), n)

	// Paging: below the 7th entry come the rest, in order.
	rest, _ := indexIDs(t, b, alice, seqs[6], 100)
	assert.Equal(t, want[7:], rest)

	// Agent and context filters.
	got, _ = indexIDs(t, b, IndexQuery{Owner: "alice", Agent: "other"}, 0, 100)
	assert.Equal(t, []string{"t25", "t20", "t10", "t05"}, got)
	got, _ = indexIDs(t, b, IndexQuery{Owner: "alice", ContextID: "ctx-1"}, 0, 100)
	for _, id := range got {
		assert.Equal(t, "ctx-1", recs[id].Task.ContextID)
	}
	assert.Len(t, got, 10)

	// A status change moves the task to the front, with its new state.
	_, _, err = b.UpdateTask(ctx, "t01", recs["t01"], func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("t01", a2a.StateCompleted), nil
	})
	require.NoError(t, err)
	var first IndexEntry
	require.NoError(t, b.ScanIndex(ctx, alice, 0, 1, func(e IndexEntry) (bool, bool) { first = e; return true, false }))
	assert.Equal(t, "t01", first.TaskID)
	assert.Equal(t, a2a.StateCompleted, first.State)
	n, err = b.countFilter(ctx, alice.filter())
	require.NoError(t, err)
	assert.Equal(t, len(want), n, "one entry per task")

	// Every owner, for the janitor, oldest first from a time.
	var all int
	require.NoError(t, b.ReadIndex(ctx, IndexQuery{AnyOwner: true}, time.Now().Add(-time.Minute), func(IndexEntry) bool { all++; return true }))
	assert.Equal(t, 30, all)
}

// A page costs about its size: with many tasks of other owners in the
// way, reading the newest page of one owner stops early, and a sparse
// owner's tasks far back are still found.
func TestIndexScanReadsAboutAPage(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	mk := func(id, owner string) {
		r := newRecord(id)
		r.Owner = owner
		_, err := b.CreateTask(ctx, r)
		require.NoError(t, err)
	}
	mk("rare-old", "carol")
	for i := 0; i < 400; i++ {
		mk(fmt.Sprintf("n%03d", i), "alice")
	}
	got, _ := indexIDs(t, b, IndexQuery{Owner: "carol"}, 0, 10)
	assert.Equal(t, []string{"rare-old"}, got)

	calls := 0
	before := indexEntriesRead.Load()
	require.NoError(t, b.ScanIndex(ctx, IndexQuery{Owner: "alice"}, 0, 10, func(IndexEntry) (bool, bool) {
		calls++
		return true, calls < 10
	}))
	assert.Equal(t, 10, calls)
	assert.LessOrEqual(t, indexEntriesRead.Load()-before, int64(40), "a page of 10 reads a window near its size, not the 400 entries")
}

// Eviction removes a task's entry with the task.
func TestTrimRemovesIndexEntries(t *testing.T) {
	b := openTestStore(t, bus.Config{MaxTasks: 20})
	ctx := context.Background()
	for i := 0; i < 25; i++ {
		_, err := b.CreateTask(ctx, newRecord(fmt.Sprintf("e%02d", i)))
		require.NoError(t, err)
	}
	_, err := b.Trim(ctx)
	require.NoError(t, err)
	info, err := b.log.Info(ctx)
	require.NoError(t, err)
	n, err := b.countFilter(ctx, IndexQuery{Owner: "alice"}.filter())
	require.NoError(t, err)
	assert.Equal(t, int(info.State.NumSubjects), n, "one entry per task kept")
	assert.Equal(t, 18, n, "trimmed to 90%% of MaxTasks")
	assert.Less(t, n, 25)
}

// BenchmarkIndexPage times the first page (51 entries, as ListTasks reads
// for a page of 50) and the count of one owner's tasks, with 10⁴ and 10⁵
// tasks in the index:
//
//	go test -run '^$' -bench IndexPage ./bus
func BenchmarkIndexPage(bb *testing.B) {
	levels := []int{10_000, 100_000}
	if os.Getenv("A2AMESH_BENCH_MILLION") != "" {
		levels = append(levels, 1_000_000)
	}
	for _, n := range levels {
		bb.Run(fmt.Sprintf("tasks=%d", n), func(bb *testing.B) {
			b := openTestStore(bb, bus.Config{MaxTasks: int64(2 * n)})
			for i := 0; i < n; i++ {
				rec := newRecord(fmt.Sprintf("t%07d", i))
				msg, err := indexMsg(rec)
				require.NoError(bb, err)
				_, err = b.js.PublishMsgAsync(msg)
				require.NoError(bb, err)
				b.countTask(rec.Owner, rec.Agent, +1)
			}
			<-b.js.PublishAsyncComplete()
			ctx := context.Background()
			b.flushCounts(ctx)
			q := IndexQuery{Owner: "alice", Agent: "echo"}
			bb.Run("page", func(bb *testing.B) {
				for bb.Loop() {
					k := 0
					require.NoError(bb, b.ScanIndex(ctx, q, 0, 51, func(IndexEntry) (bool, bool) { k++; return true, k < 51 }))
				}
			})
			// A filter no entry passes, looking at 20,000 entries (the
			// bound of one ListTasks call).
			bb.Run("look-20000", func(bb *testing.B) {
				for bb.Loop() {
					k := 0
					require.NoError(bb, b.ScanIndex(ctx, q, 0, 51, func(IndexEntry) (bool, bool) { k++; return false, k < 20_000 }))
				}
			})
			bb.Run("unknown-context", func(bb *testing.B) {
				for bb.Loop() {
					require.NoError(bb, b.ScanIndex(ctx, IndexQuery{Owner: "alice", ContextID: "none"}, 0, 51, func(IndexEntry) (bool, bool) {
						bb.Fatal("an entry of no context")
						return false, false
					}))
				}
			})
			bb.Run("count", func(bb *testing.B) {
				for bb.Loop() {
					got, err := b.TaskCount(ctx, q)
					require.NoError(bb, err)
					require.Equal(bb, n, got)
				}
			})
			bb.Run("server-count", func(bb *testing.B) {
				for bb.Loop() {
					got, err := b.countFilter(ctx, q.filter())
					require.NoError(bb, err)
					require.Equal(bb, n, got)
				}
			})
		})
	}
}

// A writer that overtakes a creation still in flight (a fast worker)
// keeps its entry: the creation's entry is written only where none is.
func TestIndexCreationEntryNeverOverwritesANewerOne(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec := newRecord("fast")
	msg, err := indexMsg(rec)
	require.NoError(t, err)
	// The worker's entry lands first...
	done := *rec
	done.Task.Status = a2a.TaskStatus{State: a2a.StateCompleted, Timestamp: a2a.Now()}
	b.index(ctx, &done)
	// ...then the creation's.
	_, err = b.bus.Publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
	require.Error(t, err, "a first entry where one is")
	started, finish, err := b.StartTask(ctx, rec)
	require.NoError(t, err)
	require.NoError(t, finish(ctx))
	require.NotZero(t, started.LastSeq)
	var got IndexEntry
	require.NoError(t, b.ScanIndex(ctx, IndexQuery{Owner: "alice"}, 0, 1, func(e IndexEntry) (bool, bool) { got = e; return true, false }))
	assert.Equal(t, "fast", got.TaskID)
	assert.Equal(t, a2a.StateCompleted, got.State, "the creation did not overwrite the newer entry")
}

// The index answers for one owner only, in the entries a scan hands out
// and in the counts, whatever filter narrows it: two owners share a
// context and an agent, and neither sees the other's tasks. (A later
// filter on the tasks read would hide an owner missing from the query;
// this test sees the query itself.)
func TestIndexKeepsOwnersApart(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	owned := map[string][]string{"alice": {"a1", "a2", "a3"}, "bob": {"b1", "b2"}}
	for owner, ids := range owned {
		for _, id := range ids {
			rec := &TaskRecord{Task: a2a.Task{ID: id, ContextID: "shared", Status: a2a.TaskStatus{State: a2a.StateSubmitted}},
				Agent: "echo", Owner: owner}
			_, err := b.CreateTask(ctx, rec)
			require.NoError(t, err)
		}
	}
	for owner, ids := range owned {
		for _, q := range []IndexQuery{{Owner: owner}, {Owner: owner, Agent: "echo"}, {Owner: owner, ContextID: "shared"},
			{Owner: owner, Agent: "echo", ContextID: "shared"}} {
			var got []string
			require.NoError(t, b.ScanIndex(ctx, q, 0, 10, func(e IndexEntry) (bool, bool) {
				assert.Equal(t, hashToken(owner), e.Owner, "%+v: entry %s", q, e.TaskID)
				got = append(got, e.TaskID)
				return true, true
			}))
			assert.ElementsMatch(t, ids, got, "%+v: the owner's tasks, and only those", q)
			n, err := b.TaskCount(ctx, q)
			require.NoError(t, err)
			assert.Equal(t, len(ids), n, "%+v: totalSize counts the owner's tasks only", q)
		}
	}
}

// A creation that loses its compare-and-set (a retried send whose first
// attempt created the task, under a context of its own) writes no index
// entry: an entry under the losing attempt's context would list the task
// twice.
func TestLostCreationWritesNoIndexEntry(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	_, err := b.CreateTask(ctx, newRecord("c1"))
	require.NoError(t, err)
	again := newRecord("c1")
	again.Task.ContextID = "another context"
	_, err = b.CreateTask(ctx, again)
	require.ErrorIs(t, err, ErrTaskExists)
	time.Sleep(50 * time.Millisecond) // an asynchronous entry would have landed
	n, err := b.countFilter(ctx, IndexQuery{Owner: "alice"}.filter())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one entry for the one task")
	n, err = b.countFilter(ctx, IndexQuery{Owner: "alice", ContextID: "another context"}.filter())
	require.NoError(t, err)
	assert.Zero(t, n, "none under the losing attempt's context")
}
