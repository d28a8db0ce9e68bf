package taskstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
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
	n, err := b.countFilter(ctx, alice)
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
	n, err = b.countFilter(ctx, alice)
	require.NoError(t, err)
	assert.Equal(t, len(want), n, "one entry per task")

	// Every owner, for the janitor, oldest first from a time: every
	// message since (t01 twice, its creation then its completion)...
	var all []string
	require.NoError(t, b.ReadIndex(ctx, IndexQuery{AnyOwner: true}, time.Now().Add(-time.Minute), func(e IndexEntry) bool { all = append(all, e.TaskID); return true }))
	assert.Len(t, all, 31)
	assert.Equal(t, "t01", all[30])
	// ...and from no time, each task's last message once.
	all = nil
	require.NoError(t, b.ReadIndex(ctx, IndexQuery{AnyOwner: true}, time.Time{}, func(e IndexEntry) bool { all = append(all, e.TaskID); return true }))
	assert.Len(t, all, 30)
	assert.Equal(t, "t01", all[29], "the last changed last")
}

// A task is listed once, at its last message, however many messages its
// log holds: within one scan by its id, and across pages by the reader's
// check (Current) of the task it reads.
func TestListShowsATaskAtItsLastMessage(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	id := MintTaskID("alice", "c", "echo", "k1")
	rec, err := b.CreateTask(ctx, &TaskRecord{Task: a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.StateSubmitted}},
		Agent: "echo", Owner: "alice"})
	require.NoError(t, err)
	other, err := b.CreateTask(ctx, newRecord("other"))
	require.NoError(t, err)
	for _, st := range []a2a.TaskState{a2a.StateWorking, a2a.StateInputRequired} {
		rec, _, err = b.UpdateTask(ctx, id, rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: "c", Status: a2a.TaskStatus{State: st}}}, nil
		})
		require.NoError(t, err)
	}
	got, seqs := indexIDs(t, b, IndexQuery{Owner: "alice"}, 0, 10)
	assert.Equal(t, []string{id, "other"}, got, "each task once, the most recently changed first")
	assert.Equal(t, SeqOf(rec.LastSeq), seqs[0], "at its last message")
	// A page below "other" meets the task's older messages: they are not
	// its last, as reading it shows.
	var older []IndexEntry
	require.NoError(t, b.ScanIndex(ctx, IndexQuery{Owner: "alice"}, seqs[1], 10, func(e IndexEntry) (bool, bool) {
		older = append(older, e)
		return true, true
	}))
	require.NotEmpty(t, older)
	for _, e := range older {
		require.Equal(t, id, e.TaskID)
		assert.False(t, e.Current(rec), "message %d is behind the task", e.Seq)
	}
	assert.True(t, IndexEntry{Seq: seqs[1]}.Current(other))
	// The entry says what the listing filters on.
	var first IndexEntry
	require.NoError(t, b.ScanIndex(ctx, IndexQuery{Owner: "alice", ContextID: "c"}, 0, 1, func(e IndexEntry) (bool, bool) { first = e; return true, false }))
	assert.Equal(t, IndexEntry{Seq: seqs[0], Written: first.Written, TaskID: id, Agent: "echo", Owner: hashToken("alice"), State: a2a.StateInputRequired}, first)
}

// A minted id says where its log is: the owner's and the context's
// hashes are its first tokens, so a read by id needs no lookup, and the
// same turn mints the same id.
func TestMintedIDsNameTheirSubject(t *testing.T) {
	id := MintTaskID("alice", "ctx-1", "echo", "m1\x00")
	assert.Equal(t, id, MintTaskID("alice", "ctx-1", "echo", "m1\x00"), "a retry mints the same id")
	assert.NotEqual(t, id, MintTaskID("alice", "ctx-1", "echo", "m2\x00"))
	assert.NotEqual(t, id, MintTaskID("alice", "ctx-1", "other", "m1\x00"))
	u, err := uuid.Parse(id)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(8), u.Version())
	assert.Equal(t, uuid.RFC4122, u.Variant())
	subj, ok := LogSubject(id)
	require.True(t, ok)
	assert.Equal(t, "a2a.task."+ownerToken("alice")+"."+contextTokens("ctx-1")+".", subj[:len(subj)-len("xxxx.xxxxxxxxxxxx")])
	back, ok := TaskIDOf(subj)
	require.True(t, ok)
	assert.Equal(t, id, back)
	assert.Equal(t, IndexQuery{Owner: "alice", ContextID: "ctx-1"}.filter(), subj[:len(subj)-len("xxxx.xxxxxxxxxxxx")]+">")
	// An owner known by its hash (the counters) filters the same.
	assert.Equal(t, IndexQuery{Owner: "alice"}.filter(), IndexQuery{ownerHash: hashToken("alice")}.filter())
	assert.Equal(t, IndexQuery{Owner: ""}.filter(), IndexQuery{ownerHash: hashToken("")}.filter())
	// Not minted: found through an alias.
	for _, other := range []string{"t1", uuid.NewString(), strings.ToUpper(id)} {
		_, ok := LogSubject(other)
		assert.False(t, ok, other)
	}
}

// A task whose id was not minted (a 0.2 client names its own) is kept
// under its owner and context behind an alias: read, listed, appended to
// and evicted like any other, and created once.
func TestAliasedTaskReadsListsAndGoes(t *testing.T) {
	b := openTestStore(t, bus.Config{MaxTasks: 20})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("client-named"))
	require.NoError(t, err)
	_, err = b.CreateTask(ctx, newRecord("client-named"))
	require.ErrorIs(t, err, ErrTaskExists)
	b.aliases.m.Clear() // as another process finds it
	got, err := b.LoadTask(ctx, "client-named")
	require.NoError(t, err)
	assert.Equal(t, rec.LastSeq, got.LastSeq)
	ids, _ := indexIDs(t, b, IndexQuery{Owner: "alice", ContextID: "ctx-client-named"}, 0, 10)
	assert.Equal(t, []string{"client-named"}, ids)
	_, _, err = b.UpdateTask(ctx, "client-named", nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("client-named", a2a.StateCompleted), nil
	})
	require.NoError(t, err)
	for i := 0; i < 25; i++ {
		_, err := b.CreateTask(ctx, &TaskRecord{Task: a2a.Task{ID: MintTaskID("alice", "c", "echo", fmt.Sprint(i)), ContextID: "c",
			Status: a2a.TaskStatus{State: a2a.StateSubmitted}}, Agent: "echo", Owner: "alice"})
		require.NoError(t, err)
	}
	_, err = b.Trim(ctx)
	require.NoError(t, err)
	_, err = b.LoadTask(ctx, "client-named")
	require.ErrorIs(t, err, ErrTaskNotFound, "the oldest went")
	_, err = b.aliasStream.GetLastMsgForSubject(ctx, aliasSubject("client-named"))
	require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "and its alias with it")
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

// Eviction removes a task whole: it is no longer listed or counted.
func TestTrimRemovesListedTasks(t *testing.T) {
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
	n, err := b.countFilter(ctx, IndexQuery{Owner: "alice"})
	require.NoError(t, err)
	assert.Equal(t, int(info.State.NumSubjects), n, "one log per task kept")
	assert.Equal(t, 18, n, "trimmed to 90%% of MaxTasks")
	assert.Less(t, n, 25)
}

// BenchmarkIndexPage times the first page (51 entries, as ListTasks reads
// for a page of 50) and the count of one owner's tasks, with 10⁴ and 10⁵
// tasks in the index:
//
//	go test -run '^$' -bench IndexPage ./taskstore
func BenchmarkIndexPage(bb *testing.B) {
	levels := []int{10_000, 100_000}
	if os.Getenv("A2AMESH_BENCH_MILLION") != "" {
		levels = append(levels, 1_000_000)
	}
	for _, n := range levels {
		bb.Run(fmt.Sprintf("tasks=%d", n), func(bb *testing.B) {
			b := openTestStore(bb, bus.Config{MaxTasks: int64(2 * n)})
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("t%07d", i)
				rec := newRecord(MintTaskID("alice", "ctx-"+key, "echo", key))
				data, err := json.Marshal(rec)
				require.NoError(bb, err)
				subj, _ := LogSubject(rec.Task.ID)
				_, err = b.js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data, Header: logHeader(formCreate, 1, "", true, 0, rec)})
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
					got, err := b.countFilter(ctx, q)
					require.NoError(bb, err)
					require.Equal(bb, n, got)
				}
			})
		})
	}
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
	n, err := b.countFilter(ctx, IndexQuery{Owner: "alice"})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one entry for the one task")
	n, err = b.countFilter(ctx, IndexQuery{Owner: "alice", ContextID: "another context"})
	require.NoError(t, err)
	assert.Zero(t, n, "none under the losing attempt's context")
}
