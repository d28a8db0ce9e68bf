package taskstore

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
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

func TestSnapshotRepairedAfterWriterDiesBeforeStore(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("t2"))
	require.NoError(t, err)

	// A writer appends to the log and dies before storing the snapshot.
	seq, err := b.appendEvent(ctx, "t2", status("t2", a2a.StateWorking), rec.LastSeq, nil)
	require.NoError(t, err)
	stored, err := b.getStored(ctx, "t2")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateSubmitted, stored.Task.Status.State, "precondition: snapshot is behind")

	got, err := b.LoadTask(ctx, "t2")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateWorking, got.Task.Status.State)
	assert.Equal(t, seq, got.LastSeq)

	// A writer holding the stale snapshot still appends after the missed event.
	var seen []a2a.TaskState
	next, _, err := b.UpdateTask(ctx, "t2", rec, func(cur *TaskRecord) (*a2a.StreamResponse, error) {
		seen = append(seen, cur.Task.Status.State)
		return status("t2", a2a.StateCompleted), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking}, seen,
		"the stale attempt loses the compare-and-set; the retry sees the repaired state")
	assert.Equal(t, a2a.StateCompleted, next.Task.Status.State)
	assert.Equal(t, []a2a.TaskState{a2a.StateWorking, a2a.StateCompleted}, logStates(t, b, "t2"))
}

func TestSnapshotRebuiltFromLogWhenNeverStored(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec := newRecord("t3")
	task := rec.Task
	// The creator appended the task and died before writing the snapshot.
	_, err := b.appendEvent(ctx, "t3", &a2a.StreamResponse{Task: &task}, 0, map[string][]string{hdrAgent: {"slow"}, hdrOwner: {"bob"}})
	require.NoError(t, err)
	got, err := b.LoadTask(ctx, "t3")
	require.NoError(t, err)
	assert.Equal(t, "slow", got.Agent)
	assert.Equal(t, "bob", got.Owner)
	assert.Equal(t, a2a.StateSubmitted, got.Task.Status.State)
	_, err = b.getStored(ctx, "t3")
	assert.NoError(t, err, "the rebuilt snapshot is stored")
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

func TestLazyStoreIsFoldedByReaders(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx := context.Background()
	rec, err := b.CreateTask(ctx, newRecord("l1"))
	require.NoError(t, err)
	rec, _, err = b.AppendTask(ctx, "l1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("l1", a2a.StateWorking), nil
	}, AppendOptions{})
	require.NoError(t, err)
	stored, err := b.getStored(ctx, "l1")
	require.NoError(t, err)
	require.Equal(t, a2a.StateSubmitted, stored.Task.Status.State, "precondition: the store was skipped")

	list, err := b.ListTasks(ctx, func(r *TaskRecord) bool { return r.Task.Status.State == a2a.StateWorking })
	require.NoError(t, err)
	require.Len(t, list, 1, "ListTasks folds the log of unfinished tasks")

	// The writer's next store uses the revision of its last store.
	rec, _, err = b.AppendTask(ctx, "l1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
		return status("l1", a2a.StateCompleted), nil
	}, AppendOptions{Store: true})
	require.NoError(t, err)
	stored, err = b.getStored(ctx, "l1")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, stored.Task.Status.State)
	assert.Equal(t, rec.LastSeq, stored.LastSeq)
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
	_, _, err = b.AppendTask(ctx, "f1", old, ev(a2a.StateCompleted), AppendOptions{Run: "7.1", Store: true})
	assert.ErrorIs(t, err, ErrSuperseded)

	got, err := b.LoadTask(ctx, "f1")
	require.NoError(t, err)
	assert.Equal(t, "7.2", got.Run, "the claim is folded from the log")
	assert.Equal(t, a2a.StateWorking, got.Task.Status.State)
	_, _, err = b.AppendTask(ctx, "f1", got, ev(a2a.StateCompleted), AppendOptions{Run: "7.2", Store: true})
	assert.NoError(t, err)
}

// openTestStore opens a task store on a bus of its own, on an embedded
// server in the test's temp dir.
func openTestStore(t testing.TB, cfg bus.Config) *Store {
	t.Helper()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), DontListen: true})
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
