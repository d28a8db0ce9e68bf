package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// The harness reads the task store raw (its admin never opens a store):
// its reads of task logs and of every task must agree with the store's
// own, whatever form the log's messages take (creation, batches with and
// without a snapshot).
func TestAdminReadsTaskLogs(t *testing.T) {
	s := bustest.OpenStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(s.Bus().Conn())
	require.NoError(t, err)
	a := &admin{nc: s.Bus().Conn(), js: js}

	status := func(id string, st a2a.TaskState) *a2a.StreamResponse {
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: st}}}
	}
	chunk := func(id string, i int) *a2a.StreamResponse {
		return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: "ctx-" + id, Append: i > 0,
			Artifact: a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprint(i))}}}}
	}
	create := func(id, agent string) *taskstore.TaskRecord {
		rec, err := s.CreateTask(ctx, &taskstore.TaskRecord{Agent: agent, Owner: "alice",
			Task: a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: a2a.StateSubmitted},
				History: []a2a.Message{{MessageID: "m-" + id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}}})
		require.NoError(t, err)
		return rec
	}
	appendN := func(id string, rec *taskstore.TaskRecord, evs ...*a2a.StreamResponse) *taskstore.TaskRecord {
		next, _, err := s.AppendEvents(ctx, id, rec, func(*taskstore.TaskRecord) ([]*a2a.StreamResponse, error) { return evs, nil },
			taskstore.AppendOptions{Run: "run-" + id, Claim: true})
		require.NoError(t, err)
		return next
	}

	// done: completed in one batch. running: past a snapshot, then batches
	// without one (its last message names its base). fresh: the creation.
	done := create("done", "echo")
	appendN("done", done, status("done", a2a.StateWorking), chunk("done", 0), status("done", a2a.StateCompleted))
	running := appendN("running", create("running", "slow"), status("running", a2a.StateWorking))
	for i := 0; i < 5; i++ {
		evs := make([]*a2a.StreamResponse, 9)
		for j := range evs {
			evs[j] = chunk("running", i*9+j)
		}
		running = appendN("running", running, evs...)
	}
	create("fresh", "echo")
	events, err := js.Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	runningSubj, err := a.logSubject(ctx, "running")
	require.NoError(t, err)
	last, err := events.GetLastMsgForSubject(ctx, runningSubj)
	require.NoError(t, err)
	require.NotEmpty(t, last.Header.Get(baseHeader), "the running task's last message holds no snapshot: the scan folds it")
	snap, err := snapshotOf(last.Header, last.Data)
	require.NoError(t, err)
	require.Nil(t, snap)

	recs, err := a.scanTasks(ctx, 30*time.Second)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	for _, r := range recs {
		want, err := s.LoadTask(ctx, r.Task.ID)
		require.NoError(t, err)
		assert.Equal(t, want.Agent, r.Agent, r.Task.ID)
		assert.Equal(t, want.Task.Status.State, r.Task.Status.State, r.Task.ID)
		assert.Equal(t, want.Task.History, r.Task.History, r.Task.ID)
		assert.Equal(t, want.Task.Artifacts, r.Task.Artifacts, r.Task.ID)
	}

	for _, id := range []string{"done", "running", "fresh"} {
		entries, err := a.taskLog(ctx, id)
		require.NoError(t, err)
		want, more, err := s.TaskLog(ctx, id, 0, 1000)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, entries, len(want), id)
		for i, e := range entries {
			assert.Equal(t, want[i].Seq, e.Seq, "%s: event %d's position", id, i)
			assert.Equal(t, *want[i].Resp, e.Resp, "%s: event %d", id, i)
			if i > 0 {
				assert.Equal(t, "run-"+id, e.Run, "%s: event %d's run", id, i)
			}
		}
		last, err := s.LastEventSeq(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, last, entries[len(entries)-1].Seq, id)
	}
	assert.Equal(t, running.LastSeq, taskstore.Pos(last.Sequence, 8))
}
