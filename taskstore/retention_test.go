package taskstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
)

// streamMsgs is the number of messages a stream holds.
func streamMsgs(t *testing.T, b *Store, name string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.js.Stream(ctx, name)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	return info.State.Msgs
}

// logTasks is the number of tasks the log holds (its subjects).
func logTasks(t *testing.T, b *Store) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := b.log.Info(ctx)
	require.NoError(t, err)
	return uint64(info.State.NumSubjects)
}

func trim(t *testing.T, b *Store) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := b.Trim(ctx)
	require.NoError(t, err)
	return n
}

// With the trimmer keeping up, the least recently changed tasks are
// evicted whole and read as not found; the rest are intact; both the
// bucket and the events stream stay within their bounds.
func TestRetentionEvictsLeastRecentlyChanged(t *testing.T) {
	const maxTasks = 10 // trimming keeps 9
	b := openTestStore(t, bus.Config{MaxTasks: maxTasks, MaxTaskEvents: 8, MaxEvents: 100})
	ctx := context.Background()

	ec := b.log.CachedInfo().Config
	assert.Equal(t, jetstream.DiscardNew, ec.Discard)
	assert.True(t, ec.DiscardNewPerSubject)
	assert.Equal(t, int64(8), ec.MaxMsgsPerSubject)
	assert.Equal(t, int64(100), ec.MaxMsgs)

	id := func(i int) string { return fmt.Sprintf("r%02d", i) }
	create := func(i int) {
		t.Helper()
		_, err := b.CreateTask(ctx, newRecord(id(i)))
		require.NoError(t, err)
		trim(t, b)
		require.LessOrEqual(t, logTasks(t, b), uint64(maxTasks))
	}
	// Push configs (bucket A2A_PUSH, where push is on) go with their task.
	push, err := b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bus.BucketPush, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	_, err = push.Put(ctx, id(1)+".cfg1", []byte("{}"))
	require.NoError(t, err)
	_, err = push.Put(ctx, "other.cfg1", []byte("{}"))
	require.NoError(t, err)
	for i := 0; i < 6; i++ {
		create(i)
	}
	// r00 changes after r01..r05: it is now the more recent.
	_, _, err = b.UpdateTask(ctx, id(0), nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status(id(0), a2a.StateWorking), nil
	})
	require.NoError(t, err)
	for i := 6; i < 14; i++ {
		create(i)
	}
	// 9 kept: r00 and r06..r13.
	for i := 0; i < 6; i++ {
		_, err := b.LoadTask(ctx, id(i))
		if i == 0 {
			require.NoError(t, err, "r00 changed after r01..r05")
		} else {
			require.ErrorIs(t, err, ErrTaskNotFound, id(i))
		}
	}
	_, err = push.Get(ctx, id(1)+".cfg1")
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "r01's push config went with it")
	_, err = push.Get(ctx, "other.cfg1")
	assert.NoError(t, err)
	for i := 14; i < 30; i++ {
		create(i)
	}

	// The 9 most recently changed remain: r21..r29.
	for i := 0; i < 30; i++ {
		rec, err := b.LoadTask(ctx, id(i))
		if i >= 21 {
			require.NoError(t, err, id(i))
			assert.Equal(t, id(i), rec.Task.ID)
			assert.Equal(t, a2a.StateSubmitted, rec.Task.Status.State)
			continue
		}
		require.ErrorIs(t, err, ErrTaskNotFound, "%s was evicted", id(i))
		// An evicted task cannot be written to either.
		_, _, err = b.UpdateTask(ctx, id(i), nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return status(id(i), a2a.StateWorking), nil
		})
		require.ErrorIs(t, err, ErrTaskNotFound)
	}
	assert.Equal(t, uint64(maxTasks-1), logTasks(t, b))
	assert.Equal(t, uint64(maxTasks-1), streamMsgs(t, b, StreamLog), "one event per remaining task, no orphaned log")
	list, err := b.ListTasks(ctx, func(*TaskRecord) bool { return true })
	require.NoError(t, err)
	assert.Len(t, list, maxTasks-1)

	// The smallest bound: trimming leaves one below it.
	b2 := openTestStore(t, bus.Config{MaxTasks: 3})
	for _, i := range []int{0, 1, 2} {
		_, err := b2.CreateTask(ctx, newRecord(id(i)))
		require.NoError(t, err)
	}
	_, _, err = b2.UpdateTask(ctx, id(0), nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status(id(0), a2a.StateWorking), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, trim(t, b2), "3 tasks, bound 3: trimming to 90% keeps 2")
	_, err = b2.LoadTask(ctx, id(1))
	assert.ErrorIs(t, err, ErrTaskNotFound, "r01 changed least recently")
	for _, i := range []int{0, 2} {
		_, err = b2.LoadTask(ctx, id(i))
		assert.NoError(t, err, id(i))
	}
}

// A task whose log reaches MaxTaskEvents gets a clean error on the next
// append; its recorded state stays readable and other tasks go on. (A cap
// this small leaves no reserve: the stream's own bound answers.)
func TestRetentionTaskLogCap(t *testing.T) {
	b := openTestStore(t, bus.Config{MaxTaskEvents: taskEventsReserve})
	ctx := context.Background()
	_, err := b.CreateTask(ctx, newRecord("big"))
	require.NoError(t, err)
	working := func(id string) Mutation {
		return func(*TaskRecord) (*a2a.StreamResponse, error) { return status(id, a2a.StateWorking), nil }
	}
	var last *TaskRecord
	for i := 0; i < taskEventsReserve-1; i++ {
		last, _, err = b.UpdateTask(ctx, "big", nil, working("big"))
		require.NoError(t, err, "event %d of %d", i+2, taskEventsReserve)
	}
	rec, ev, err := b.UpdateTask(ctx, "big", nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("big", a2a.StateCompleted), nil
	})
	require.Error(t, err, "the event past the cap is refused")
	assert.Nil(t, ev)
	assert.True(t, IsTaskLogFull(err), "error: %v", err)
	assert.ErrorIs(t, err, ErrTaskLogFull)
	assert.Equal(t, a2a.CodeServerBusy, a2a.AsError(err).Code, "a client sees a clear -32000")
	assert.False(t, errors.Is(err, ErrContention))
	require.NotNil(t, rec)

	got, err := b.LoadTask(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateWorking, got.Task.Status.State, "the task is as its last recorded event left it")
	assert.Equal(t, last.LastSeq, got.LastSeq)
	assert.Len(t, logStates(t, b, "big"), taskEventsReserve-1, "the log holds its events (the first is the task)")

	_, err = b.CreateTask(ctx, newRecord("small"))
	require.NoError(t, err)
	_, _, err = b.UpdateTask(ctx, "small", nil, working("small"))
	require.NoError(t, err, "another task is not affected")
	assert.False(t, IsTaskLogFull(ErrTaskNotFound))
}

// Near the cap, the last places of a task's log are kept for events that
// end a turn, so a task whose agent floods it can still be failed,
// answered or canceled.
func TestRetentionTaskLogReserve(t *testing.T) {
	const max = 10
	b := openTestStore(t, bus.Config{MaxTaskEvents: max})
	ctx := context.Background()
	_, err := b.CreateTask(ctx, newRecord("flood"))
	require.NoError(t, err)
	working := func(*TaskRecord) (*a2a.StreamResponse, error) { return status("flood", a2a.StateWorking), nil }
	var rec *TaskRecord
	for i := 1; i < max-taskEventsReserve; i++ {
		rec, _, err = b.UpdateTask(ctx, "flood", nil, working)
		require.NoError(t, err, "event %d", i+1)
	}
	assert.EqualValues(t, max-taskEventsReserve, rec.Events)

	_, _, err = b.UpdateTask(ctx, "flood", nil, working)
	require.ErrorIs(t, err, ErrTaskLogFull, "a working status past the reserve mark is refused")
	assert.Equal(t, a2a.CodeServerBusy, a2a.AsError(err).Code)

	_, _, err = b.UpdateTask(ctx, "flood", nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("flood", a2a.StateInputRequired), nil
	})
	require.NoError(t, err, "a status ending the turn takes a reserved place")
	got, _, err := b.UpdateTask(ctx, "flood", nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("flood", a2a.StateCanceled), nil
	})
	require.NoError(t, err, "so does a terminal one")
	assert.Equal(t, a2a.StateCanceled, got.Task.Status.State)

	// The count survives a snapshot rebuilt from the log alone.
	fresh, err := b.forward(ctx, "flood", nil)
	require.NoError(t, err)
	assert.EqualValues(t, max-taskEventsReserve+2, fresh.Events)
	loaded, err := b.LoadTask(ctx, "flood")
	require.NoError(t, err)
	assert.Equal(t, fresh.Events, loaded.Events)
}

// Tasks created faster than the trimmer runs push the bucket to its bound:
// the server drops the oldest snapshots and leaves their logs. Every task
// then still reads consistently or not at all, never broken, and a trim
// sweeps the orphaned logs and brings both streams under their bounds.
func TestRetentionBurstPastTheBound(t *testing.T) {
	const maxTasks, maxEvents, n = 10, 26, 25
	b := openTestStore(t, bus.Config{MaxTasks: maxTasks, MaxEvents: maxEvents})
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprintf("b%02d", i) }
	for i := 0; i < n; i++ {
		_, err := b.CreateTask(ctx, newRecord(id(i)))
		require.NoError(t, err)
	}
	require.Equal(t, uint64(n), logTasks(t, b), "past MaxTasks until the trimmer comes")
	require.Equal(t, uint64(n), streamMsgs(t, b, StreamLog))

	consistent := func() int {
		found := 0
		for i := 0; i < n; i++ {
			rec, err := b.LoadTask(ctx, id(i))
			if errors.Is(err, ErrTaskNotFound) {
				continue
			}
			require.NoError(t, err, id(i))
			found++
			assert.Equal(t, id(i), rec.Task.ID)
			assert.Equal(t, "ctx-"+id(i), rec.Task.ContextID)
			assert.Equal(t, a2a.StateSubmitted, rec.Task.Status.State)
			assert.Equal(t, "echo", rec.Agent)
			assert.Equal(t, "alice", rec.Owner)
		}
		return found
	}
	assert.Equal(t, n, consistent(), "every task reads whole")

	removed := trim(t, b)
	assert.Positive(t, removed)
	assert.LessOrEqual(t, logTasks(t, b), uint64(maxTasks-1))
	assert.LessOrEqual(t, streamMsgs(t, b, StreamLog), lowWater(maxEvents))
	found := consistent()
	assert.LessOrEqual(t, found, maxTasks)
	assert.Positive(t, found)
	// The newest task is among those kept.
	_, err := b.LoadTask(ctx, id(n-1))
	assert.NoError(t, err)
}

// Reopening the bus with other bounds updates the streams in place.
func TestRetentionReopenUpdatesBounds(t *testing.T) {
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("retention-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, cfg := range []bus.Config{{}, {MaxTasks: 50, MaxTaskEvents: 7}, {}} {
		b, err := openOn(ctx, nc, cfg)
		require.NoError(t, err)
		want := b.Config()
		ei, err := b.log.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, want.MaxTaskEvents, ei.Config.MaxMsgsPerSubject)
		assert.Equal(t, want.MaxTasks*bus.EventsPerTask, ei.Config.MaxMsgs)
	}
	assert.Equal(t, int64(bus.DefaultMaxTasks), bus.DefaultConfig.MaxTasks)
}

// Past the snapshots' mark by many tasks, a pass evicts them in batches:
// each evicted task goes whole (log, index entry, push configs, snapshot),
// ended or not, and every task kept reads whole, including an old one
// that changed since and so is no longer among the least recently changed.
func TestTrimEvictsABatchWhole(t *testing.T) {
	const maxTasks, n = 200, 200 // trimming keeps 180
	b := openTestStore(t, bus.Config{MaxTasks: maxTasks, MaxEvents: 10_000})
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprintf("t%03d", i) }
	push, err := b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bus.BucketPush, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		_, err := b.CreateTask(ctx, newRecord(id(i)))
		require.NoError(t, err)
		if i%2 == 0 { // half of them ended, half still submitted
			_, _, err = b.UpdateTask(ctx, id(i), nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
				return status(id(i), a2a.StateCompleted), nil
			})
			require.NoError(t, err)
		}
	}
	_, err = push.Put(ctx, id(3)+".cfg1", []byte("{}"))
	require.NoError(t, err)
	_, err = push.Put(ctx, id(n-1)+".cfg1", []byte("{}"))
	require.NoError(t, err)
	// t001 changes last: it is now the most recently changed.
	_, _, err = b.UpdateTask(ctx, id(1), nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status(id(1), a2a.StateWorking), nil
	})
	require.NoError(t, err)

	removed := trim(t, b)
	assert.Equal(t, n-int(lowWater(maxTasks)), removed)
	assert.Equal(t, lowWater(maxTasks), logTasks(t, b))
	kept := 0
	for i := 0; i < n; i++ {
		rec, err := b.LoadTask(ctx, id(i))
		if errors.Is(err, ErrTaskNotFound) {
			home := homeSubject("alice", "ctx-"+id(i), id(i))
			subj, err := b.log.Info(ctx, jetstream.WithSubjectFilter(home))
			require.NoError(t, err)
			assert.Zero(t, subj.State.Subjects[home], "%s evicted: its log goes too", id(i))
			_, err = b.aliasStream.GetLastMsgForSubject(ctx, aliasSubject(id(i)))
			assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "%s evicted: its alias goes too", id(i))
			continue
		}
		require.NoError(t, err, id(i))
		kept++
		assert.Equal(t, id(i), rec.Task.ID)
		want := a2a.StateSubmitted
		if i%2 == 0 {
			want = a2a.StateCompleted
		}
		if i == 1 {
			want = a2a.StateWorking
		}
		assert.Equal(t, want, rec.Task.Status.State, id(i))
		home := homeSubject("alice", "ctx-"+id(i), id(i))
		subj, err := b.log.Info(ctx, jetstream.WithSubjectFilter(home))
		require.NoError(t, err)
		assert.Equal(t, subj.State.Subjects[home], uint64(rec.Events), "%s kept whole", id(i))
	}
	assert.Equal(t, int(lowWater(maxTasks)), kept)
	_, err = b.LoadTask(ctx, id(1))
	assert.NoError(t, err, "the task changed last is kept")
	_, err = b.LoadTask(ctx, id(n-1))
	assert.NoError(t, err, "the newest task is kept")
	_, err = push.Get(ctx, id(3)+".cfg1")
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "an evicted task's push config goes too")
	_, err = push.Get(ctx, id(n-1)+".cfg1")
	assert.NoError(t, err, "a kept task's push config stays")
}

// Passes come every trimEvery while the bucket is far from its mark or
// still; sooner while it grows fast enough to reach the mark before then;
// trimSoon after a pass that removed tasks.
func TestTrimPace(t *testing.T) {
	var p trimPace
	const maxTasks = 100_000 // mark: 90,000
	assert.Equal(t, trimEvery, p.next(trimState{snaps: 1000}, maxTasks), "first pass: no rate yet")
	p.last.at = time.Now().Add(-time.Second)
	assert.Equal(t, trimEvery, p.next(trimState{snaps: 1100}, maxTasks), "100 tasks/s, 89,000 from the mark")
	p.last.at = time.Now().Add(-time.Second)
	got := p.next(trimState{snaps: 81_100}, maxTasks) // 80,000 tasks/s: the mark in 0.11 s
	assert.Equal(t, trimSoon, got)
	p.last.at = time.Now().Add(-time.Second)
	got = p.next(trimState{snaps: 83_100}, maxTasks) // 2,000/s, 6,900 left: 3.45 s, a quarter of it
	assert.InDelta(t, float64(860*time.Millisecond), float64(got), float64(50*time.Millisecond))
	assert.Equal(t, trimSoon, p.next(trimState{snaps: 90_000, removed: 5}, maxTasks))
	p.last.at = time.Now().Add(-time.Second)
	assert.Equal(t, trimEvery, p.next(trimState{snaps: 90_000}, maxTasks), "still: no hurry")
}

// A pass under load (tasks arriving between its batches) goes on from
// the least recently changed tasks it kept, in order: it evicts the
// oldest, never the tasks that just arrived (in flight, their creation
// their last message).
func TestTrimUnderArrivalsEvictsTheOldest(t *testing.T) {
	const maxTasks = 50 // trimming keeps 45
	b := openTestStore(t, bus.Config{MaxTasks: maxTasks})
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		_, err := b.CreateTask(ctx, newRecord(fmt.Sprintf("t%03d", i)))
		require.NoError(t, err)
	}
	arrived := 0
	st, err := b.trim(ctx, func() bool {
		for range 5 { // arrivals between two batches
			_, err := b.CreateTask(ctx, newRecord(fmt.Sprintf("n%03d", arrived)))
			require.NoError(t, err)
			arrived++
		}
		return arrived < 30
	})
	require.NoError(t, err)
	require.Positive(t, st.removed)
	for i := 0; i < arrived; i++ {
		_, err := b.LoadTask(ctx, fmt.Sprintf("n%03d", i))
		require.NoError(t, err, "n%03d arrived during the pass and was evicted", i)
	}
	gone := 0
	for i := 0; i < 60; i++ {
		_, err := b.LoadTask(ctx, fmt.Sprintf("t%03d", i))
		if errors.Is(err, ErrTaskNotFound) {
			require.Equal(t, gone, i, "the evicted are the oldest, in order")
			gone++
			continue
		}
		require.NoError(t, err)
	}
	assert.Equal(t, st.removed, gone)
}
