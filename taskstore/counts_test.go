package taskstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// counter reads a counter as stored (not this process's pending changes).
func counter(t *testing.T, b *Store, owner, agent string) int64 {
	t.Helper()
	v, ok, err := b.counterValue(context.Background(), countSubject(hashToken(owner), agent))
	require.NoError(t, err)
	require.True(t, ok, "counter of %q/%q written", owner, agent)
	return v
}

// A task counts for its owner, and its owner's agent, from its creation
// until its index entry goes; TaskCount answers from the counters, which
// are flushed, not written per task.
func TestTaskCountsFollowTasks(t *testing.T) {
	const maxTasks = 100 // trimming keeps 90
	b := openTestStore(t, bus.Config{MaxTasks: maxTasks, MaxEvents: 10_000})
	ctx := context.Background()
	for i := 0; i < maxTasks; i++ {
		rec := newRecord(fmt.Sprintf("a%03d", i))
		if i%4 == 0 {
			rec.Owner, rec.Agent = "bob", "ask"
		}
		_, err := b.CreateTask(ctx, rec)
		require.NoError(t, err)
	}
	// A retried creation of an existing task does not count again.
	_, err := b.CreateTask(ctx, newRecord("a001"))
	require.ErrorIs(t, err, ErrTaskExists)
	b.flushCounts(ctx)
	assert.EqualValues(t, 75, counter(t, b, "alice", ""))
	assert.EqualValues(t, 75, counter(t, b, "alice", "echo"))
	assert.EqualValues(t, 25, counter(t, b, "bob", ""))
	assert.EqualValues(t, 25, counter(t, b, "bob", "ask"))
	n, err := b.TaskCount(ctx, IndexQuery{Owner: "bob", Agent: "ask"})
	require.NoError(t, err)
	assert.Equal(t, 25, n)
	n, err = b.TaskCount(ctx, IndexQuery{Owner: "bob", Agent: "echo"})
	require.NoError(t, err)
	assert.Zero(t, n, "no counter: the server counts, and finds none")

	// Eviction takes tasks off the counts: 10 of the oldest, 3 of them bob's.
	removed := trim(t, b)
	require.Equal(t, 10, removed)
	b.flushCounts(ctx)
	assert.EqualValues(t, 68, counter(t, b, "alice", ""))
	assert.EqualValues(t, 22, counter(t, b, "bob", "ask"))
	for _, q := range []IndexQuery{{Owner: "alice"}, {Owner: "alice", Agent: "echo"}, {Owner: "bob"}} {
		want, err := b.countFilter(ctx, q)
		require.NoError(t, err)
		got, err := b.TaskCount(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%+v: the counter agrees with the server's count", q)
	}
	// Evicting a task another trimmer evicted already counts nothing.
	last, err := b.log.GetLastMsgForSubject(ctx, homeSubject("alice", "ctx-a050", "a050")) // alice's, still retained
	require.NoError(t, err)
	for range 2 {
		_, err := b.evict(ctx, nil, last)
		require.NoError(t, err)
	}
	b.flushCounts(ctx)
	assert.EqualValues(t, 67, counter(t, b, "alice", ""))
}

// A task that answered its send with a message is not listed: it goes
// off the counts when it replies, and not again when it is evicted.
func TestReplyLeavesTheCounts(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("r1"))
	require.NoError(t, err)
	_, err = b.CreateTask(ctx, newRecord("r2"))
	require.NoError(t, err)
	reply := &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Metadata: a2a.Metadata{a2a.ReplyKey: true}}
	_, _, err = b.UpdateTask(ctx, "r1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "r1", ContextID: "ctx-r1",
			Status: a2a.TaskStatus{State: a2a.StateCompleted, Message: reply}}}, nil
	})
	require.NoError(t, err)
	b.flushCounts(ctx)
	assert.EqualValues(t, 1, counter(t, b, "alice", ""))
	ids, _ := indexIDs(t, b, IndexQuery{Owner: "alice"}, 0, 10)
	assert.Equal(t, []string{"r2"}, ids, "the reply is not listed")
	n, err := b.countFilter(ctx, IndexQuery{Owner: "alice"})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "nor counted by the server's count")
	last, err := b.log.GetLastMsgForSubject(ctx, homeSubject("alice", "ctx-r1", "r1"))
	require.NoError(t, err)
	evicted, err := b.evict(ctx, nil, last)
	require.NoError(t, err)
	require.True(t, evicted)
	b.flushCounts(ctx)
	assert.EqualValues(t, 1, counter(t, b, "alice", ""), "an evicted reply was off the counts already")
}

// A counter that drifted (a process killed before its flush) is repaired
// by the reconciler once the index is quiet; while tasks are being
// written it is left alone (changes not flushed yet are no drift).
func TestReconcileRepairsADriftWhenQuiet(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	defer func(q time.Duration) { countQuiet = q }(countQuiet)
	countQuiet = time.Hour
	for i := 0; i < 20; i++ {
		_, err := b.CreateTask(ctx, newRecord(fmt.Sprintf("r%02d", i)))
		require.NoError(t, err)
	}
	b.flushCounts(ctx)
	// The counter lost 5 creations.
	_, err := b.bus.Publish(ctx, incrMsg(countSubject(hashToken("alice"), "echo"), -5))
	require.NoError(t, err)
	fixed, err := b.reconcileCounts(ctx)
	require.NoError(t, err)
	assert.Zero(t, fixed, "the index was written to within countQuiet")
	assert.EqualValues(t, 15, counter(t, b, "alice", "echo"))

	countQuiet = 50 * time.Millisecond
	time.Sleep(2 * countQuiet)
	fixed, err = b.reconcileCounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, fixed)
	assert.EqualValues(t, 20, counter(t, b, "alice", "echo"))
	assert.EqualValues(t, 20, counter(t, b, "alice", ""), "the owner's counter had not drifted")
	fixed, err = b.reconcileCounts(ctx)
	require.NoError(t, err)
	assert.Zero(t, fixed)
}

// An index without counters (a mesh from before them) gets them from one
// read of the index.
func TestReconcileSeedsMissingCounters(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	defer func(q time.Duration) { countQuiet = q }(countQuiet)
	countQuiet = 0
	for i := 0; i < 7; i++ {
		rec := newRecord(fmt.Sprintf("s%02d", i))
		if i < 2 {
			rec.Owner = ""
		}
		_, err := b.CreateTask(ctx, rec)
		require.NoError(t, err)
	}
	b.flushCounts(ctx)
	require.NoError(t, b.countStream.Purge(ctx))
	n, err := b.TaskCount(ctx, IndexQuery{Owner: "alice"})
	require.NoError(t, err)
	assert.Equal(t, 5, n, "no counter: the server's count")
	seeded, err := b.reconcileCounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, seeded, "two owners, each with one agent")
	assert.EqualValues(t, 5, counter(t, b, "alice", ""))
	assert.EqualValues(t, 2, counter(t, b, "", "echo"))
}

// On an R3 cluster (no direct gets: the server's count goes through a
// consumer) every node reads the same counts, and the reconciler repairs
// a drift there too.
func TestTaskCountsOnCluster(t *testing.T) {
	buses := startTestCluster(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 30; i++ {
		_, err := buses[i%3].CreateTask(ctx, newRecord(fmt.Sprintf("c%02d", i)))
		require.NoError(t, err)
	}
	for _, b := range buses {
		b.flushCounts(ctx)
	}
	for j, b := range buses {
		n, err := b.TaskCount(ctx, IndexQuery{Owner: "alice"})
		require.NoError(t, err)
		assert.Equal(t, 30, n, "via n%d", j)
		n, err = b.countFilter(ctx, IndexQuery{Owner: "alice", Agent: "echo"})
		require.NoError(t, err)
		assert.Equal(t, 30, n, "the server's count via n%d", j)
	}
	defer func(q time.Duration) { countQuiet = q }(countQuiet)
	countQuiet = 0
	_, err := buses[0].bus.Publish(ctx, incrMsg(countSubject(hashToken("alice"), ""), +4))
	require.NoError(t, err)
	fixed, err := buses[1].reconcileCounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, fixed)
	n, err := buses[2].TaskCount(ctx, IndexQuery{Owner: "alice"})
	require.NoError(t, err)
	assert.Equal(t, 30, n)
}
