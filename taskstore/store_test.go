package taskstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
)

func newRecord(id string) *TaskRecord {
	return &TaskRecord{
		Task:  a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: a2a.StateSubmitted}},
		Agent: "echo", Owner: "alice",
	}
}

func status(id string, st a2a.TaskState) *a2a.StreamResponse {
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: st},
	}}
}

// logStates reads the task's whole log and returns its status states.
func logStates(t *testing.T, b *Store, id string) []a2a.TaskState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, more, err := b.TaskLog(ctx, id, 0, 10_000)
	require.NoError(t, err)
	require.False(t, more)
	var states []a2a.TaskState
	for _, ev := range events {
		if ev.Resp.StatusUpdate != nil {
			states = append(states, ev.Resp.StatusUpdate.Status.State)
		}
	}
	return states
}

func TestTerminalStaysTerminalUnderRace(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	_, err := b.CreateTask(ctx, newRecord("t1"))
	require.NoError(t, err)

	finals := []a2a.TaskState{a2a.StateCompleted, a2a.StateCanceled, a2a.StateFailed}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := finals[i%len(finals)]
			if i%4 == 0 {
				st = a2a.StateWorking
			}
			_, _, err := b.UpdateTask(ctx, "t1", nil, func(*TaskRecord) (*a2a.StreamResponse, error) {
				return status("t1", st), nil
			})
			if err == nil && st.Terminal() {
				mu.Lock()
				won++
				mu.Unlock()
			}
			if err != nil {
				assert.ErrorIs(t, err, ErrTerminal)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, won, "exactly one terminal transition wins")

	states := logStates(t, b, "t1")
	terminal := 0
	for i, st := range states {
		if st.Terminal() {
			terminal++
			assert.Equal(t, len(states)-1, i, "the terminal state is the log's last status")
		}
	}
	assert.Equal(t, 1, terminal, "log %v", states)

	rec, err := b.LoadTask(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, states[len(states)-1], rec.Task.Status.State, "snapshot agrees with the log")
}

// A writer holding a stale view of the task loses its compare-and-set,
// folds what it missed, and appends after it.
func TestStaleWriterFoldsWhatItMissed(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("t2"))
	require.NoError(t, err)
	mid, _, err := b.UpdateTask(ctx, "t2", rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("t2", a2a.StateWorking), nil
	})
	require.NoError(t, err)
	got, err := b.LoadTask(ctx, "t2")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateWorking, got.Task.Status.State)
	assert.Equal(t, mid.LastSeq, got.LastSeq)

	var seen []a2a.TaskState
	next, _, err := b.UpdateTask(ctx, "t2", rec, func(cur *TaskRecord) (*a2a.StreamResponse, error) {
		seen = append(seen, cur.Task.Status.State)
		return status("t2", a2a.StateCompleted), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking}, seen,
		"the stale attempt loses the compare-and-set; the retry sees the log")
	assert.Equal(t, a2a.StateCompleted, next.Task.Status.State)
	assert.Equal(t, []a2a.TaskState{a2a.StateWorking, a2a.StateCompleted}, logStates(t, b, "t2"))
}

// A NATS holding the earlier layout (logs on a2a.events.<id>, one event a
// message, an index stream beside them) is refused, and Migrate moves its
// tasks: each reads as it did, under its old id, listed for its owner; a
// second run finds nothing to do.
func TestMigrateMovesTheEarlierLayout(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	for _, st := range []jetstream.StreamConfig{{Name: oldStreamEvents, Subjects: []string{oldEventsPrefix + "*"}},
		{Name: oldStreamIndex, Subjects: []string{"a2a.index.>"}}} {
		_, err := b.js.CreateStream(ctx, st)
		require.NoError(t, err)
	}
	rec := newRecord("old1")
	task := rec.Task
	raw := func(id string, ev *a2a.StreamResponse, hdr nats.Header) {
		t.Helper()
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: oldEventsPrefix + id, Data: data, Header: hdr})
		require.NoError(t, err)
	}
	raw("old1", &a2a.StreamResponse{Task: &task}, nats.Header{hdrAgent: {"slow"}, hdrOwner: {"bob"}})
	raw("old1", status("old1", a2a.StateWorking), nats.Header{hdrRun: {"4.1"}})
	raw("old1", status("old1", a2a.StateCompleted), nats.Header{hdrRun: {"4.1"}})
	other := newRecord("old2").Task
	raw("old2", &a2a.StreamResponse{Task: &other}, nats.Header{hdrAgent: {"echo"}, hdrOwner: {"bob"}})

	_, err := Open(ctx, b.bus)
	require.ErrorIs(t, err, ErrOldLayout, "a store does not open on the earlier layout")
	assert.Contains(t, err.Error(), "a2amesh migrate")

	rep, err := Migrate(ctx, b.bus, nil)
	require.NoError(t, err)
	assert.Equal(t, MigrateReport{Moved: 2}, rep)
	s, err := Open(ctx, b.bus)
	require.NoError(t, err, "migrated: the store opens")
	got, err := s.LoadTask(ctx, "old1")
	require.NoError(t, err)
	assert.Equal(t, "slow", got.Agent)
	assert.Equal(t, "bob", got.Owner)
	assert.Equal(t, "4.1", got.Run)
	assert.Equal(t, a2a.StateCompleted, got.Task.Status.State)
	var listed []string
	require.NoError(t, s.ScanIndex(ctx, IndexQuery{Owner: "bob"}, 0, 10, func(e IndexEntry) (bool, bool) {
		listed = append(listed, e.TaskID)
		return true, true
	}))
	assert.ElementsMatch(t, []string{"old1", "old2"}, listed, "listed for their owner")
	for _, name := range []string{oldStreamEvents, oldStreamIndex} {
		_, err := b.js.Stream(ctx, name)
		assert.ErrorIs(t, err, jetstream.ErrStreamNotFound, "%s removed", name)
	}
	rep, err = Migrate(ctx, b.bus, nil)
	require.NoError(t, err)
	assert.Equal(t, MigrateReport{}, rep, "nothing left to move")
}

// A batch is one message: its events get positions Pos(seq, i), every
// read agrees on them, and the task reads as the fold of them all.
func TestBatchIsOneMessageWithPositions(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("b1"))
	require.NoError(t, err)
	before := streamMsgs(t, b, StreamLog)
	art := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "b1", ContextID: "ctx-b1",
		Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("hi")}}}}
	next, _, err := b.AppendEvents(ctx, "b1", rec, func(*TaskRecord) ([]*a2a.StreamResponse, error) {
		return []*a2a.StreamResponse{status("b1", a2a.StateWorking), art, status("b1", a2a.StateCompleted)}, nil
	}, AppendOptions{Run: "9.1", Claim: true})
	require.NoError(t, err)
	assert.Equal(t, before+1, streamMsgs(t, b, StreamLog), "three events, one message")
	seq := SeqOf(next.LastSeq)
	assert.Equal(t, Pos(seq, 2), next.LastSeq)
	assert.Equal(t, 4, int(next.Events))

	got, err := b.LoadTask(ctx, "b1")
	require.NoError(t, err)
	assert.Equal(t, next.LastSeq, got.LastSeq)
	assert.Equal(t, a2a.StateCompleted, got.Task.Status.State)
	require.Len(t, got.Task.Artifacts, 1)
	assert.Equal(t, "9.1", got.Run)

	events, more, err := b.TaskLog(ctx, "b1", 0, 10)
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, events, 4)
	assert.Equal(t, []uint64{rec.LastSeq, Pos(seq, 0), Pos(seq, 1), Pos(seq, 2)},
		[]uint64{events[0].Seq, events[1].Seq, events[2].Seq, events[3].Seq})
	ev, err := b.EventAt(ctx, "b1", Pos(seq, 1))
	require.NoError(t, err)
	require.NotNil(t, ev.ArtifactUpdate)
	assert.Equal(t, "b1", ev.ArtifactUpdate.TaskID, "ids stored once a message are put back")
	assert.Equal(t, "ctx-b1", ev.ArtifactUpdate.ContextID)
	assert.Equal(t, "ctx-b1", events[3].Resp.StatusUpdate.ContextID)
	last, err := b.LastEventSeq(ctx, "b1")
	require.NoError(t, err)
	assert.Equal(t, next.LastSeq, last)
	after, err := b.EventSeqsAfter(ctx, "b1", Pos(seq, 0), 10)
	require.NoError(t, err)
	assert.Equal(t, []uint64{Pos(seq, 1), Pos(seq, 2)}, after)

	// A tail from inside the message hands out the rest of it.
	tail, err := b.TailEvents(ctx, "b1", Pos(seq, 0))
	require.NoError(t, err)
	defer tail.Close()
	var got2 []uint64
	for range 2 {
		e, ok, err := tail.Next(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		got2 = append(got2, e.Seq)
	}
	assert.Equal(t, []uint64{Pos(seq, 1), Pos(seq, 2)}, got2)
}

// Every snapshotEvery events a message holds the task, so a reader of a
// running task folds at most that many events; a message without one
// names its base.
func TestSnapshotEveryFewEvents(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("s1"))
	require.NoError(t, err)
	snaps := 0
	for i := 0; i < 2*snapshotEvery+3; i++ {
		rec, _, err = b.UpdateTask(ctx, "s1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "s1", ContextID: "ctx-s1",
				Artifact: a2a.Artifact{ArtifactID: fmt.Sprint(i), Parts: []a2a.Part{a2a.TextPart("x")}}}}, nil
		})
		require.NoError(t, err)
		m, err := b.lastMsg(ctx, "s1")
		require.NoError(t, err)
		if m.snap != nil {
			snaps++
			assert.Equal(t, 0, (i+1)%snapshotEvery, "a snapshot every %d events", snapshotEvery)
		} else {
			assert.Equal(t, rec.base, m.base)
		}
		got, err := b.LoadTask(ctx, "s1")
		require.NoError(t, err)
		assert.Len(t, got.Task.Artifacts, i+1)
		assert.Equal(t, rec.LastSeq, got.LastSeq)
	}
	assert.Equal(t, 2, snaps)
}

func TestCreateTaskTwiceFails(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	_, err := b.CreateTask(ctx, newRecord("t4"))
	require.NoError(t, err)
	_, err = b.CreateTask(ctx, newRecord("t4"))
	assert.Error(t, err)
	_, err = b.LoadTask(ctx, "missing")
	assert.ErrorIs(t, err, ErrTaskNotFound)
	_, err = b.LoadTask(ctx, "bad.id")
	assert.ErrorIs(t, err, ErrTaskNotFound)
}

func TestPeekStateReadsTheTaskStatus(t *testing.T) {
	rec := newRecord("p1")
	rec.Task.ContextID = `tricky "status":{"state":"TASK_STATE_COMPLETED"}`
	rec.Task.Status.State = a2a.StateWorking
	rec.Task.History = []a2a.Message{{MessageID: "m", Role: a2a.RoleUser,
		Parts: []a2a.Part{a2a.TextPart(`"status":{"state":"TASK_STATE_FAILED"`)}}}
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	st, ok := peekState(data)
	require.True(t, ok)
	assert.Equal(t, a2a.StateWorking, st)
}

func TestNewerRunFencesStalledRun(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("f1"))
	require.NoError(t, err)
	ev := func(st a2a.TaskState) Mutation {
		return func(*TaskRecord) (*a2a.StreamResponse, error) { return status("f1", st), nil }
	}
	old, _, err := b.AppendTask(ctx, "f1", rec, ev(a2a.StateWorking), AppendOptions{Run: "7.1", Claim: true})
	require.NoError(t, err)
	_, _, err = b.AppendTask(ctx, "f1", old, ev(a2a.StateWorking), AppendOptions{Run: "7.1"})
	require.NoError(t, err, "the current run may write")

	// The work is redelivered; the new run claims the task.
	_, _, err = b.AppendTask(ctx, "f1", nil, ev(a2a.StateWorking), AppendOptions{Run: "7.2", Claim: true})
	require.NoError(t, err)
	// The stalled run wakes up with its stale snapshot: refused.
	_, _, err = b.AppendTask(ctx, "f1", old, ev(a2a.StateCompleted), AppendOptions{Run: "7.1"})
	assert.ErrorIs(t, err, ErrSuperseded)

	got, err := b.LoadTask(ctx, "f1")
	require.NoError(t, err)
	assert.Equal(t, "7.2", got.Run, "the claim is folded from the log")
	assert.Equal(t, a2a.StateWorking, got.Task.Status.State)
	_, _, err = b.AppendTask(ctx, "f1", got, ev(a2a.StateCompleted), AppendOptions{Run: "7.2"})
	assert.NoError(t, err)
}

// openTestStore opens a task store on a bus of its own, on an embedded
// server in the test's temp dir.
func openTestStore(t testing.TB, cfg bus.Config) *Store {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("taskstore-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, nc, cfg)
	require.NoError(t, err)
	s, err := Open(ctx, b)
	require.NoError(t, err)
	return s
}

// openOn opens a bus on nc with cfg, and the task store on it.
func openOn(ctx context.Context, nc *nats.Conn, cfg bus.Config) (*Store, error) {
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	return Open(ctx, b)
}

// An append whose ack was lost and which another writer's append then
// followed is recognised by its A2a-Try further back in the log, not only
// as the log's last message.
func TestStoredFindsAnAppendBehindAnother(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("try1"))
	require.NoError(t, err)
	subj, err := b.subject(ctx, "try1")
	require.NoError(t, err)
	mine := nats.Header{hdrTry: {"mine"}}
	_, err = b.publishLog(ctx, subj, []byte("{}"), mine, SeqOf(rec.LastSeq))
	require.NoError(t, err)
	last, err := b.log.GetLastMsgForSubject(ctx, subj)
	require.NoError(t, err)
	_, err = b.publishLog(ctx, subj, []byte("{}"), nats.Header{}, last.Sequence)
	require.NoError(t, err)
	assert.True(t, b.stored(ctx, subj, SeqOf(rec.LastSeq)+1, "mine"))
	assert.False(t, b.stored(ctx, subj, SeqOf(rec.LastSeq)+1, "another"))
	// Its repeat fails the compare-and-set and is not taken for stored.
	_, err = b.publishLog(ctx, subj, []byte("{}"), nats.Header{hdrTry: {"mine"}}, SeqOf(rec.LastSeq))
	assert.True(t, bus.IsWrongLastSeq(err), "%v", err)
}
