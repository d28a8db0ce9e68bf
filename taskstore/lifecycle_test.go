package taskstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/taskstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openBus(t *testing.T, cfg bus.Config) *taskstore.Store { return bustest.OpenStore(t, cfg) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func userTurn(text string) a2a.Message {
	return a2a.Message{MessageID: uuid.NewString(), Parts: []a2a.Part{a2a.TextPart(text)}}
}

func queued(t *testing.T, b *taskstore.Store, rec *taskstore.TaskRecord) bool {
	t.Helper()
	q, err := b.Bus().Queued(testCtx(t), rec.Agent, rec.Task.ID)
	require.NoError(t, err)
	return q
}

// purge drops the task's work item, as if it had been lost.
func purge(t *testing.T, b *taskstore.Store, rec *taskstore.TaskRecord) {
	t.Helper()
	ctx := testCtx(t)
	work, err := b.Bus().JetStream().Stream(ctx, bus.StreamWork)
	require.NoError(t, err)
	require.NoError(t, work.Purge(ctx, jetstream.WithPurgeSubject(bus.WorkSubject(rec.Agent, rec.Task.ID))))
	require.False(t, queued(t, b, rec))
}

// settle moves a task the way a worker would: working, then state.
func settle(t *testing.T, b *taskstore.Store, id string, state a2a.TaskState) *taskstore.TaskRecord {
	t.Helper()
	ctx := testCtx(t)
	_, err := b.SetStatus(ctx, id, nil, a2a.StateWorking, "")
	require.NoError(t, err)
	rec, err := b.SetStatus(ctx, id, nil, state, "")
	require.NoError(t, err)
	return rec
}

// started is a task just started on a fresh bus.
func started(t *testing.T) (*taskstore.Store, *taskstore.Lifecycle, *taskstore.Submitted) {
	t.Helper()
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	sub, err := lc.Submit(testCtx(t), taskstore.Turn{Agent: "echo", Message: userTurn("hi")})
	require.NoError(t, err)
	return b, lc, sub
}

func requireA2A(t *testing.T, err error, want *a2a.Error) *a2a.Error {
	t.Helper()
	require.Error(t, err)
	var ae *a2a.Error
	require.True(t, errors.As(err, &ae), "error %v is no *a2a.Error", err)
	require.Equal(t, want.Code, ae.Code, "error %v", err)
	return ae
}

func TestSubmitStartsTaskAndEnqueuesItsTurn(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	msg := userTurn("hi")
	sub, err := lc.Submit(testCtx(t), taskstore.Turn{Agent: "echo", Owner: "alice", Message: msg,
		Metadata: a2a.Metadata{"k": "v"}, TaskMetadata: a2a.Metadata{"t": "m"}})
	require.NoError(t, err)
	rec := sub.Task
	assert.False(t, sub.Replay)
	assert.Equal(t, taskstore.DeriveTaskID("echo", "alice", "", msg.MessageID), rec.Task.ID, "the id derives from the messageId")
	assert.NotEmpty(t, rec.Task.ContextID)
	assert.Equal(t, a2a.StateSubmitted, rec.Task.Status.State)
	assert.Equal(t, "alice", rec.Owner)
	assert.Equal(t, "echo", rec.Agent)
	assert.Equal(t, a2a.Metadata{"t": "m"}, rec.Task.Metadata)
	require.Len(t, rec.Task.History, 1)
	assert.Equal(t, a2a.RoleUser, rec.Task.History[0].Role)
	assert.Equal(t, rec.Task.ID, rec.Task.History[0].TaskID)
	assert.True(t, queued(t, b, rec), "the turn's work item is queued")
}

// twice submits one turn twice, pause apart, on a fresh bus.
func twice(t *testing.T, cfg taskstore.LifecycleConfig, pause time.Duration) (b *taskstore.Store, lc *taskstore.Lifecycle, turn taskstore.Turn, first, second *taskstore.Submitted) {
	t.Helper()
	b = openBus(t, bus.Config{})
	lc = taskstore.NewLifecycle(b, cfg)
	turn = taskstore.Turn{Agent: "echo", Owner: "alice", Message: userTurn("hi")}
	var err error
	first, err = lc.Submit(testCtx(t), turn)
	require.NoError(t, err)
	time.Sleep(pause)
	second, err = lc.Submit(testCtx(t), turn)
	require.NoError(t, err)
	return b, lc, turn, first, second
}

func TestRetryWithinWindowIsAReplay(t *testing.T) {
	b, lc, turn, first, again := twice(t, taskstore.LifecycleConfig{}, 0)
	ctx := testCtx(t)
	assert.True(t, again.Replay)
	assert.Equal(t, first.Task.Task.ID, again.Task.Task.ID)
	assert.Len(t, again.Task.Task.History, 1, "nothing new recorded")

	// The retry of a turn whose work item was lost enqueues it again.
	purge(t, b, first.Task)
	again, err := lc.Submit(ctx, turn)
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.True(t, queued(t, b, again.Task), "the lost work item is enqueued again")

	// Another caller's send with the same messageId does not see the task.
	other := turn
	other.Owner = "bob"
	theirs, err := lc.Submit(ctx, other)
	require.NoError(t, err)
	assert.False(t, theirs.Replay)
	assert.NotEqual(t, first.Task.Task.ID, theirs.Task.Task.ID)
}

func TestMessageIDReusedAfterWindowStartsNewTask(t *testing.T) {
	_, lc, turn, first, second := twice(t, taskstore.LifecycleConfig{IdempotencyWindow: 100 * time.Millisecond}, 200*time.Millisecond)
	assert.False(t, second.Replay)
	assert.NotEqual(t, first.Task.Task.ID, second.Task.Task.ID)
	// ...whose own retry, at once, finds it.
	again, err := lc.Submit(testCtx(t), turn)
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.Equal(t, second.Task.Task.ID, again.Task.Task.ID)
}

func TestIdempotencyOffMakesEveryTurnNew(t *testing.T) {
	_, _, _, first, second := twice(t, taskstore.LifecycleConfig{IdempotencyWindow: -1}, 0)
	assert.False(t, second.Replay)
	assert.NotEqual(t, first.Task.Task.ID, second.Task.Task.ID)
}

func TestNamedTaskIDRefusesAnotherMessage(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)
	id := uuid.NewString()
	turn := taskstore.Turn{Agent: "echo", Owner: "alice", Message: userTurn("hi"), TaskID: id}
	first, err := lc.Submit(ctx, turn)
	require.NoError(t, err)
	assert.Equal(t, id, first.Task.Task.ID)

	again, err := lc.Submit(ctx, turn)
	require.NoError(t, err)
	assert.True(t, again.Replay, "the same message under the same id is a retry")

	turn.Message = userTurn("other")
	_, err = lc.Submit(ctx, turn)
	ae := requireA2A(t, err, a2a.ErrInvalidParams)
	assert.Contains(t, ae.Message, "already exists")

	stranger := taskstore.Turn{Agent: "echo", Owner: "bob", Message: first.Task.Task.History[0], TaskID: id}
	stranger.Message.TaskID, stranger.Message.ContextID = "", ""
	_, err = lc.Submit(ctx, stranger)
	ae = requireA2A(t, err, a2a.ErrInvalidParams)
	assert.Contains(t, ae.Message, "messageId was already used")
}

func TestContinueTask(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)
	first, err := lc.Submit(ctx, taskstore.Turn{Agent: "ask", Owner: "alice", Message: userTurn("hi")})
	require.NoError(t, err)
	id := first.Task.Task.ID

	// A message to a task that is not waiting for input is refused.
	working, err := b.SetStatus(ctx, id, nil, a2a.StateWorking, "")
	require.NoError(t, err)
	_, err = lc.Submit(ctx, taskstore.Turn{Agent: "ask", Owner: "alice", Message: userTurn("too soon"), Task: working})
	requireA2A(t, err, a2a.ErrUnsupportedOperation)
	assert.ErrorIs(t, err, taskstore.ErrNotContinuable)

	asking, err := b.SetStatus(ctx, id, nil, a2a.StateInputRequired, "name?")
	require.NoError(t, err)

	// A contextId that is not the task's is refused.
	wrong := userTurn("Ann")
	wrong.ContextID = "not-its-context"
	_, err = lc.Submit(ctx, taskstore.Turn{Agent: "ask", Owner: "alice", Message: wrong, Task: asking})
	ae := requireA2A(t, err, a2a.ErrInvalidParams)
	assert.Contains(t, ae.Message, "does not match")

	var admitted []string
	answer := taskstore.Turn{Agent: "ask", Owner: "alice", Message: userTurn("Ann"), Task: asking,
		Admit: func(_ context.Context, agent string) error { admitted = append(admitted, agent); return nil }}
	next, err := lc.Submit(ctx, answer)
	require.NoError(t, err)
	assert.False(t, next.Replay)
	assert.Equal(t, []string{"ask"}, admitted)
	h := next.Task.Task.History
	require.Len(t, h, len(asking.Task.History)+1)
	turn := h[len(h)-1]
	assert.Equal(t, id, turn.TaskID)
	assert.Equal(t, asking.Task.ContextID, turn.ContextID)
	assert.Equal(t, a2a.RoleUser, turn.Role)
	assert.Equal(t, "Ann", turn.Text())

	// A retry of the turn is a replay, whether the task it was read as
	// holds the turn or not yet.
	again, err := lc.Submit(ctx, answer)
	require.NoError(t, err)
	assert.True(t, again.Replay)
	admitted = nil
	answer.Task, err = lc.Get(ctx, id)
	require.NoError(t, err)
	again, err = lc.Submit(ctx, answer)
	require.NoError(t, err)
	assert.True(t, again.Replay)
	assert.Empty(t, admitted, "a turn found recorded is not admitted again")

	// A new message to an ended task is refused.
	done := settle(t, b, id, a2a.StateCompleted)
	_, err = lc.Submit(ctx, taskstore.Turn{Agent: "ask", Owner: "alice", Message: userTurn("more"), Task: done})
	ae = requireA2A(t, err, a2a.ErrUnsupportedOperation)
	assert.Contains(t, ae.Message, "terminal state")
	assert.ErrorIs(t, err, taskstore.ErrNotContinuable)
}

func TestAdmitRefusesTurn(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)
	refused := errors.New("no worker")
	turn := taskstore.Turn{Agent: "gone", Message: userTurn("hi"), TaskID: uuid.NewString(),
		Admit: func(context.Context, string) error { return refused }}
	_, err := lc.Submit(ctx, turn)
	require.ErrorIs(t, err, refused)
	_, err = lc.Get(ctx, turn.TaskID)
	assert.ErrorIs(t, err, taskstore.ErrTaskNotFound, "nothing recorded")
}

func TestQueueFullFailsTheTask(t *testing.T) {
	b := openBus(t, bus.Config{MaxQueued: 1})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)
	_, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Owner: "alice", Message: userTurn("one")})
	require.NoError(t, err)
	turn := taskstore.Turn{Agent: "echo", Owner: "alice", Message: userTurn("two")}
	_, err = lc.Submit(ctx, turn)
	ae := requireA2A(t, err, a2a.ErrServerBusy)
	assert.Contains(t, ae.Message, "at capacity")
	assert.ErrorIs(t, err, bus.ErrQueueFull)

	rec, err := lc.Get(ctx, taskstore.DeriveTaskID("echo", "alice", "", turn.Message.MessageID))
	require.NoError(t, err)
	assert.Equal(t, a2a.StateFailed, rec.Task.Status.State, "the task is not left waiting")
	assert.Contains(t, rec.Task.Status.Message.Text(), "queue for agent echo is full")
}

func TestPrepareFailureFailsTheTask(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)
	broken := errors.New("store down")
	var prepared *taskstore.TaskRecord
	turn := taskstore.Turn{Agent: "echo", Owner: "alice", Message: userTurn("hi"),
		Prepare:        func(_ context.Context, rec *taskstore.TaskRecord) error { prepared = rec; return broken },
		PrepareFailure: "could not prepare"}
	_, err := lc.Submit(ctx, turn)
	require.ErrorIs(t, err, broken)
	require.NotNil(t, prepared)
	rec, err := lc.Get(ctx, prepared.Task.ID)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateFailed, rec.Task.Status.State)
	assert.Equal(t, "could not prepare", rec.Task.Status.Message.Text())
	assert.False(t, queued(t, b, rec), "nothing enqueued")
}

func TestAwait(t *testing.T) {
	b := openBus(t, bus.Config{})
	lc := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{})
	ctx := testCtx(t)

	t.Run("settles", func(t *testing.T) {
		sub, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Message: userTurn("hi"), Wait: true})
		require.NoError(t, err)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_, _ = b.SetStatus(context.Background(), sub.Task.Task.ID, nil, a2a.StateInputRequired, "more?")
		}()
		rec, err := lc.Await(ctx, sub, time.Now().Add(10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, a2a.StateInputRequired, rec.Task.Status.State)
	})

	t.Run("bound", func(t *testing.T) {
		sub, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Message: userTurn("hi"), Wait: true})
		require.NoError(t, err)
		start := time.Now()
		rec, err := lc.Await(ctx, sub, start.Add(300*time.Millisecond))
		require.ErrorIs(t, err, taskstore.ErrUnsettled)
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
		assert.Less(t, time.Since(start), 5*time.Second)
		var u *taskstore.UnsettledError
		require.ErrorAs(t, err, &u)
		assert.Equal(t, sub.Task.Task.ID, u.TaskID)
		assert.Equal(t, a2a.StateSubmitted, u.State)
		assert.NoError(t, u.ReadErr)
		require.NotNil(t, rec)
		assert.Equal(t, a2a.StateSubmitted, rec.Task.Status.State, "the task as it stands")
		assert.True(t, queued(t, b, rec), "the task stays queued")
	})

	t.Run("caller gone", func(t *testing.T) {
		sub, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Message: userTurn("hi"), Wait: true})
		require.NoError(t, err)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err = lc.Await(cctx, sub, time.Now().Add(10*time.Second))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("not watched", func(t *testing.T) {
		sub, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Message: userTurn("hi")})
		require.NoError(t, err)
		_, err = lc.Await(ctx, sub, time.Time{})
		assert.Error(t, err)
	})
}

func TestCancel(t *testing.T) {
	_, lc, sub := started(t)
	ctx := testCtx(t)
	id := sub.Task.Task.ID

	rec, err := lc.Cancel(ctx, id, nil, "no longer needed")
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, rec.Task.Status.State)
	assert.Equal(t, "no longer needed", rec.Task.Status.Message.Text())

	rec, err = lc.Cancel(ctx, id, sub.Task, "")
	requireA2A(t, err, a2a.ErrTaskNotCancelable)
	assert.ErrorIs(t, err, taskstore.ErrTerminal)
	require.NotNil(t, rec)
	assert.Equal(t, a2a.StateCanceled, rec.Task.Status.State, "the task as it is")

	_, err = lc.Cancel(ctx, uuid.NewString(), nil, "")
	requireA2A(t, err, a2a.ErrTaskNotFound)
	assert.ErrorIs(t, err, taskstore.ErrTaskNotFound)
}

func TestGetMissingTask(t *testing.T) {
	b := openBus(t, bus.Config{})
	_, err := taskstore.NewLifecycle(b, taskstore.LifecycleConfig{}).Get(testCtx(t), uuid.NewString())
	requireA2A(t, err, a2a.ErrTaskNotFound)
	assert.ErrorIs(t, err, taskstore.ErrTaskNotFound)
}

func TestRequeueRecoversALostWorkItem(t *testing.T) {
	b, lc, sub := started(t)
	ctx := testCtx(t)
	id := sub.Task.Task.ID

	requeued, err := lc.Requeue(ctx, id)
	require.NoError(t, err)
	assert.False(t, requeued, "its item is still queued")

	purge(t, b, sub.Task)
	requeued, err = lc.Requeue(ctx, id)
	require.NoError(t, err)
	assert.True(t, requeued)
	assert.True(t, queued(t, b, sub.Task))

	purge(t, b, sub.Task)
	settle(t, b, id, a2a.StateCompleted)
	requeued, err = lc.Requeue(ctx, id)
	require.NoError(t, err)
	assert.False(t, requeued, "a task that left submitted needs nothing")

	requeued, err = lc.Requeue(ctx, uuid.NewString())
	require.NoError(t, err)
	assert.False(t, requeued, "nor does one that does not exist")
}
