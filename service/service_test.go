package service_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/taskstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agents is a registry with a fixed set of live agents.
type agents map[string]a2a.AgentCard

func (a agents) Lookup(name string) (a2a.AgentCard, bool) { c, ok := a[name]; return c, ok }
func (a agents) Loaded() bool                             { return true }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newService(t *testing.T) (*service.Service, *taskstore.Store) {
	t.Helper()
	b := bustest.OpenStore(t, bus.Config{})
	svc := service.New(service.Config{Store: b, Agents: agents{"echo": {}, "ask": {}}, DefaultAgent: "echo",
		KeepAlive: time.Hour})
	return svc, b
}

// as is a call by principal on the mesh endpoint (agent "") or an agent's.
func as(ctx context.Context, principal, agent string) context.Context {
	return service.WithCall(ctx, &service.Call{Principal: principal, Agent: agent})
}

func send(t *testing.T, svc *service.Service, ctx context.Context, text string) *a2a.Task {
	t.Helper()
	res, err := svc.SendMessage(ctx, &a2a.SendMessageRequest{
		Message:       &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}},
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
	})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	return res.Task
}

func requireCode(t *testing.T, err error, code int) {
	t.Helper()
	var ae *a2a.Error
	require.True(t, errors.As(err, &ae), "error %v is no *a2a.Error", err)
	require.Equal(t, code, ae.Code, "error %v", err)
}

// A task is seen by its owner only, on the mesh endpoint whichever agent
// runs it, and through an agent's endpoint only when it is that agent's.
func TestTaskVisibility(t *testing.T) {
	svc, _ := newService(t)
	ctx := testCtx(t)
	task := send(t, svc, as(ctx, "alice", "ask"), "hi")

	got, err := svc.GetTask(as(ctx, "alice", ""), &a2a.GetTaskRequest{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, task.ID, got.ID)
	call := &service.Call{Principal: "alice"}
	_, err = svc.GetTask(service.WithCall(ctx, call), &a2a.GetTaskRequest{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, "ask", call.ResolvedAgent(), "the mesh endpoint routes by the task")

	_, err = svc.GetTask(as(ctx, "bob", ""), &a2a.GetTaskRequest{ID: task.ID})
	requireCode(t, err, a2a.CodeTaskNotFound)
	_, err = svc.GetTask(as(ctx, "alice", "echo"), &a2a.GetTaskRequest{ID: task.ID})
	requireCode(t, err, a2a.CodeTaskNotFound)
	_, err = svc.GetTask(as(ctx, "alice", ""), &a2a.GetTaskRequest{Tenant: "echo", ID: task.ID})
	requireCode(t, err, a2a.CodeTaskNotFound)

	list, err := svc.ListTasks(as(ctx, "alice", ""), &a2a.ListTasksRequest{})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	list, err = svc.ListTasks(as(ctx, "bob", ""), &a2a.ListTasksRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Tasks)

	canceled, err := svc.CancelTask(as(ctx, "alice", ""), &a2a.TaskIDRequest{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, a2a.StateCanceled, canceled.Status.State)
	_, err = svc.CancelTask(as(ctx, "alice", ""), &a2a.TaskIDRequest{ID: task.ID})
	requireCode(t, err, a2a.CodeTaskNotCancelable)
}

// Sends need a live agent; errors are *a2a.Error whatever failed.
func TestSendErrors(t *testing.T) {
	svc, _ := newService(t)
	ctx := testCtx(t)
	_, err := svc.SendMessage(as(ctx, "", "nobody"), &a2a.SendMessageRequest{
		Message: &a2a.Message{MessageID: "m", Parts: []a2a.Part{a2a.TextPart("x")}}})
	requireCode(t, err, a2a.CodeInvalidParams)
	_, err = svc.SendMessage(ctx, &a2a.SendMessageRequest{})
	requireCode(t, err, a2a.CodeInvalidParams)
	_, err = svc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
		Message: &a2a.Message{MessageID: "m", TaskID: "no-such-task", Parts: []a2a.Part{a2a.TextPart("x")}}}, "")
	requireCode(t, err, a2a.CodeTaskNotFound)
	_, err = svc.GetTaskPushNotificationConfig(ctx, &service.PushConfigRequest{TaskID: "t"})
	requireCode(t, err, a2a.CodePushNotificationNotSupported)
	_, err = svc.GetExtendedAgentCard(ctx, &service.GetExtendedAgentCardRequest{})
	requireCode(t, err, a2a.CodeUnsupportedOperation)
}

// collect reads a stream to its end.
func collect(t *testing.T, s service.Stream) (evs []service.Event, err error) {
	t.Helper()
	for ev, e := range s {
		if e != nil {
			return evs, e
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// A subscription resumes after a Last-Event-ID: a task that has ended
// replays what followed it, or, with nothing to replay, the task as it
// stands; an id that is not this task's event is refused before the
// stream starts. 1.0 refuses a subscription to an ended task; 0.3 gets
// the task.
func TestSubscribeResume(t *testing.T) {
	svc, b := newService(t)
	ctx := testCtx(t)
	task := send(t, svc, ctx, "hi")
	working, err := b.SetStatus(ctx, task.ID, nil, a2a.StateWorking, "")
	require.NoError(t, err)
	done, err := b.SetStatus(ctx, task.ID, nil, a2a.StateCompleted, "done")
	require.NoError(t, err)

	s, err := svc.SubscribeToTask(ctx, &a2a.TaskIDRequest{ID: task.ID}, strconv.FormatUint(working.LastSeq, 10))
	require.NoError(t, err)
	evs, err := collect(t, s)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, done.LastSeq, evs[0].Seq)
	require.NotNil(t, evs[0].Resp.StatusUpdate)
	require.Equal(t, a2a.StateCompleted, evs[0].Resp.StatusUpdate.Status.State)

	s, err = svc.SubscribeToTask(ctx, &a2a.TaskIDRequest{ID: task.ID}, strconv.FormatUint(done.LastSeq, 10))
	require.NoError(t, err)
	evs, err = collect(t, s)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.NotNil(t, evs[0].Resp.Task, "nothing to replay: the task as it stands")

	_, err = svc.SubscribeToTask(ctx, &a2a.TaskIDRequest{ID: task.ID}, "x")
	requireCode(t, err, a2a.CodeInvalidParams)
	other := send(t, svc, ctx, "other")
	otherRec, err := b.SetStatus(ctx, other.ID, nil, a2a.StateWorking, "")
	require.NoError(t, err)
	_, err = svc.SubscribeToTask(ctx, &a2a.TaskIDRequest{ID: task.ID}, strconv.FormatUint(otherRec.LastSeq, 10))
	requireCode(t, err, a2a.CodeInvalidParams)

	_, err = svc.SubscribeToTask(ctx, &a2a.TaskIDRequest{ID: task.ID}, "")
	requireCode(t, err, a2a.CodeUnsupportedOperation)
	s, err = svc.SubscribeToTask(service.WithCall(ctx, &service.Call{Version: a2a.V03}), &a2a.TaskIDRequest{ID: task.ID}, "")
	require.NoError(t, err)
	evs, err = collect(t, s)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, a2a.StateCompleted, evs[0].Resp.Task.Status.State)
}

// A stream opens with the task and follows it to its final state; its
// events carry their log positions.
func TestStreamFollows(t *testing.T) {
	svc, b := newService(t)
	ctx := testCtx(t)
	s, err := svc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
		Message: &a2a.Message{MessageID: uuid.NewString(), Parts: []a2a.Part{a2a.TextPart("hi")}}}, "")
	require.NoError(t, err)
	var (
		taskID string
		seqs   []uint64
	)
	for ev, err := range s {
		require.NoError(t, err)
		seqs = append(seqs, ev.Seq)
		if ev.Resp.Task != nil {
			taskID = ev.Resp.Task.ID
			_, err := b.SetStatus(ctx, taskID, nil, a2a.StateWorking, "")
			require.NoError(t, err)
			_, err = b.SetStatus(ctx, taskID, nil, a2a.StateCompleted, "")
			require.NoError(t, err)
		}
	}
	require.Len(t, seqs, 3)
	require.Less(t, seqs[0], seqs[1])
	require.Less(t, seqs[1], seqs[2])
}

// A task whose status changes while a first page is read moves past where
// the read started; the page still lists it, first, as it now stands, and
// lists every other task once, newest first, with paging over the rest.
func TestListTasksSeesATaskThatMovesDuringTheScan(t *testing.T) {
	svc, b := newService(t)
	ctx := testCtx(t)
	alice := as(ctx, "alice", "")
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, send(t, svc, alice, "task "+strconv.Itoa(i)).ID)
	}
	oldest := ids[0]
	restore := service.SetListScanStarts(func() {
		_, err := b.CancelTask(ctx, oldest, nil, "")
		require.NoError(t, err)
	})
	list, err := svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(3)})
	restore()
	require.NoError(t, err)
	var got []string
	for _, tk := range list.Tasks {
		got = append(got, tk.ID)
	}
	require.Equal(t, []string{oldest, ids[4], ids[3]}, got, "the moved task first, then the newest")
	require.Equal(t, a2a.StateCanceled, list.Tasks[0].Status.State)
	require.Equal(t, 5, list.TotalSize)
	require.NotEmpty(t, list.NextPageToken)
	next, err := svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(3), PageToken: list.NextPageToken})
	require.NoError(t, err)
	got = got[:0]
	for _, tk := range next.Tasks {
		got = append(got, tk.ID)
	}
	require.Equal(t, []string{ids[2], ids[1]}, got, "the rest, once each")
	require.Empty(t, next.NextPageToken)
}

func ptr[T any](v T) *T { return &v }

// A task that goes from under a call (evicted over --max-tasks) is a
// -32000 to retry, never an internal error.
func TestTaskGoneMidCallIsBusyNotInternal(t *testing.T) {
	ae := service.ToError(fmt.Errorf("await: %w", taskstore.ErrTaskNotFound))
	require.Equal(t, a2a.CodeServerBusy, ae.Code)
	require.Contains(t, ae.Message, "--max-tasks")
}

// A filter few tasks pass costs a bounded read per call: a page that has
// looked at listScanBound entries ends there, short, with a token from
// which the next goes on, and following the tokens lists every match
// once, newest first. Past listCountBound entries totalSize is an
// estimate at the rate seen.
func TestListTasksBoundsAFilteredScan(t *testing.T) {
	svc, b := newService(t)
	ctx := testCtx(t)
	alice := as(ctx, "alice", "")
	var canceled []string
	for i := 0; i < 3; i++ {
		id := send(t, svc, alice, "old "+strconv.Itoa(i)).ID
		_, err := b.CancelTask(ctx, id, nil, "")
		require.NoError(t, err)
		canceled = append([]string{id}, canceled...) // newest first
	}
	for i := 0; i < 9; i++ {
		send(t, svc, alice, "new "+strconv.Itoa(i))
	}
	restore := service.SetListBounds(4, 100)
	defer restore()
	var (
		got   []string
		token string
		calls int
	)
	for {
		calls++
		require.LessOrEqual(t, calls, 5, "bounded calls")
		list, err := svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(10), Status: a2a.StateCanceled, PageToken: token})
		require.NoError(t, err)
		require.Equal(t, 3, list.TotalSize, "counted exactly within the count bound")
		for _, tk := range list.Tasks {
			got = append(got, tk.ID)
		}
		if token = list.NextPageToken; token == "" {
			break
		}
	}
	require.Equal(t, canceled, got)
	require.Equal(t, 3, calls, "9 newer tasks looked at 4 a call, then the 3 canceled")

	// A page that looked at every entry counts what it saw.
	restore2 := service.SetListBounds(100, 6)
	defer restore2()
	list, err := svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(10), Status: a2a.StateCanceled})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 3)
	require.Equal(t, 3, list.TotalSize)
	// One that did not, of more entries than the count bound, estimates:
	// it looked at the 9 newer tasks and 2 canceled ones, so alice's 12
	// tasks at that rate are 12·2/11; the next page says the same.
	list, err = svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(1), Status: a2a.StateCanceled})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	require.Equal(t, 2, list.TotalSize)
	require.NotEmpty(t, list.NextPageToken)
	list, err = svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(1), Status: a2a.StateCanceled, PageToken: list.NextPageToken})
	require.NoError(t, err)
	require.Equal(t, canceled[1:2], []string{list.Tasks[0].ID})
	require.Equal(t, 2, list.TotalSize, "the listing's estimate, carried")
	// Within the count bound, every entry is read to count.
	restore3 := service.SetListBounds(100, 12)
	defer restore3()
	list, err = svc.ListTasks(alice, &a2a.ListTasksRequest{PageSize: ptr(1), Status: a2a.StateCanceled})
	require.NoError(t, err)
	require.Equal(t, 3, list.TotalSize)
}
