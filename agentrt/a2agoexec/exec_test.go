package a2agoexec_test

// Unit tests of Run against a recording EventWriter: no mesh.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/a2agoexec"
)

// recorder is an agentrt.EventWriter keeping what it was given. After
// closeAfter events (when > 0) it answers ErrTaskClosed.
type recorder struct {
	mu         sync.Mutex
	events     []*a2a.StreamResponse
	closeAfter int
}

func (r *recorder) record(ev *a2a.StreamResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closeAfter > 0 && len(r.events) >= r.closeAfter {
		return agentrt.ErrTaskClosed
	}
	// Keep a deep copy, as the bus would have stored it.
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var c a2a.StreamResponse
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	r.events = append(r.events, &c)
	return nil
}

func (r *recorder) status(s a2a.TaskState, text string) error {
	st := a2a.TaskStatus{State: s}
	if text != "" {
		st.Message = &a2a.Message{MessageID: "x", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
	}
	return r.record(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: st}})
}

func (r *recorder) Working(text string) error       { return r.status(a2a.StateWorking, text) }
func (r *recorder) InputRequired(text string) error { return r.status(a2a.StateInputRequired, text) }
func (r *recorder) Complete(text string) error      { return r.status(a2a.StateCompleted, text) }
func (r *recorder) Fail(text string) error          { return r.status(a2a.StateFailed, text) }
func (r *recorder) Reject(text string) error        { return r.status(a2a.StateRejected, text) }
func (r *recorder) Artifact(a a2a.Artifact, appendChunk, lastChunk bool) error {
	return r.record(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{Artifact: a, Append: appendChunk, LastChunk: lastChunk}})
}
func (r *recorder) Event(ev *a2a.StreamResponse) error { return r.record(ev) }

func (r *recorder) got() []*a2a.StreamResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*a2a.StreamResponse(nil), r.events...)
}

// funcExec is an executor made of functions; it records Cancel and
// Cleanup calls.
type funcExec struct {
	exec   func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool)
	cancel func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool)

	mu       sync.Mutex
	cancels  []*a2asrv.ExecutorContext
	cleanups []cleanupCall
}

type cleanupCall struct {
	ec     *a2asrv.ExecutorContext
	result a2ago.SendMessageResult
	err    error
}

func (e *funcExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) { e.exec(ctx, ec, yield) }
}

func (e *funcExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	e.mu.Lock()
	e.cancels = append(e.cancels, ec)
	e.mu.Unlock()
	if e.cancel == nil {
		return cancelAsSDK(ctx, ec)
	}
	return func(yield func(a2ago.Event, error) bool) { e.cancel(ctx, ec, yield) }
}

func (e *funcExec) Cleanup(ctx context.Context, ec *a2asrv.ExecutorContext, result a2ago.SendMessageResult, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, cleanupCall{ec, result, err})
}

func (e *funcExec) calls() ([]*a2asrv.ExecutorContext, []cleanupCall) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*a2asrv.ExecutorContext(nil), e.cancels...), append([]cleanupCall(nil), e.cleanups...)
}

var quiet = a2agoexec.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func newReq() *agentrt.Request {
	return &agentrt.Request{
		TaskID: "task-1", ContextID: "ctx-1", Attempt: 1,
		Message: a2a.Message{MessageID: "msg-1", TaskID: "task-1", ContextID: "ctx-1", Role: a2a.RoleUser,
			Parts: []a2a.Part{a2a.TextPart("hello")}},
		Metadata: a2a.Metadata{"k": "v"},
	}
}

func run(t *testing.T, exec a2asrv.AgentExecutor, ctx context.Context, req *agentrt.Request, w agentrt.EventWriter, opts ...a2agoexec.Option) error {
	t.Helper()
	a := a2agoexec.New(exec, a2a.AgentCard{Name: "x"}, append([]a2agoexec.Option{quiet}, opts...)...)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, req, w) }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s")
		return nil
	}
}

func TestExecutorContext(t *testing.T) {
	var first, second *a2asrv.ExecutorContext
	var hadCallCtx bool
	exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
		if ec.StoredTask == nil {
			first = ec
			_, hadCallCtx = a2asrv.CallContextFrom(ctx)
		} else {
			second = ec
		}
		ec.Metadata["k"] = "changed by the executor"
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
	}}
	req := newReq()
	if err := run(t, exec, context.Background(), req, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if first == nil || first.TaskID != "task-1" || first.ContextID != "ctx-1" || first.Message == nil ||
		first.Message.ID != "msg-1" || first.Message.Role != a2ago.MessageRoleUser || first.Message.Parts[0].Text() != "hello" {
		t.Fatalf("first turn context %+v", first)
	}
	if first.User == nil || first.User.Authenticated || first.ServiceParams == nil || !hadCallCtx {
		t.Errorf("user %+v, service params %v, call context %v: want an unauthenticated user, params and a call context", first.User, first.ServiceParams, hadCallCtx)
	}
	if req.Metadata["k"] != "v" {
		t.Error("the executor changed the request's metadata through the ExecutorContext")
	}

	// A later turn of the task.
	req = newReq()
	req.Message.MessageID, req.Message.Parts = "msg-3", []a2a.Part{a2a.TextPart("Ada")}
	req.History = []a2a.Message{
		{MessageID: "msg-1", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hello")}},
		{MessageID: "msg-2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("name?")}},
	}
	req.Artifacts = []a2a.Artifact{{ArtifactID: "art-1", Parts: []a2a.Part{a2a.TextPart("draft")}}}
	if err := run(t, exec, context.Background(), req, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if second == nil {
		t.Fatal("the second turn had no StoredTask")
	}
	st := second.StoredTask
	if st.ID != "task-1" || st.ContextID != "ctx-1" || st.Status.State != a2ago.TaskStateInputRequired ||
		st.Status.Message == nil || st.Status.Message.ID != "msg-2" {
		t.Errorf("stored task %+v", st)
	}
	if len(st.History) != 3 || st.History[2] != second.Message || st.History[0].ID != "msg-1" {
		t.Errorf("stored history %+v, want the two earlier messages then this turn's", st.History)
	}
	if len(st.Artifacts) != 1 || st.Artifacts[0].ID != "art-1" || st.Artifacts[0].Parts[0].Text() != "draft" {
		t.Errorf("stored artifacts %+v", st.Artifacts)
	}
}

func TestOddEventsAreSkipped(t *testing.T) {
	exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
		for _, ev := range []a2ago.Event{nil, (*a2ago.Task)(nil), (*a2ago.Message)(nil), (*a2ago.TaskStatusUpdateEvent)(nil),
			(*a2ago.TaskArtifactUpdateEvent)(nil), &a2ago.TaskArtifactUpdateEvent{},
			&a2ago.TaskArtifactUpdateEvent{Artifact: &a2ago.Artifact{Parts: a2ago.ContentParts{nil, {}, a2ago.NewTextPart("ok")}}},
			&a2ago.TaskStatusUpdateEvent{}, // unspecified state
			a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil),
		} {
			if !yield(ev, nil) {
				return
			}
		}
	}}
	w := &recorder{}
	if err := run(t, exec, context.Background(), newReq(), w); err != nil {
		t.Fatal(err)
	}
	got := w.got()
	if len(got) != 3 || got[0].ArtifactUpdate == nil || len(got[0].ArtifactUpdate.Artifact.Parts) != 1 ||
		got[1].StatusUpdate == nil || got[2].StatusUpdate == nil || got[2].StatusUpdate.Status.State != a2a.StateCompleted {
		b, _ := json.Marshal(got)
		t.Fatalf("recorded %s; want the artifact with its one part, the unspecified status (the writer skips it) and completed", b)
	}
}

func TestStopsAtFinalOrInterruptedState(t *testing.T) {
	for _, state := range []a2ago.TaskState{a2ago.TaskStateCompleted, a2ago.TaskStateInputRequired, a2ago.TaskStateAuthRequired, a2ago.TaskStateRejected} {
		stopped := false
		exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			if !yield(a2ago.NewStatusUpdateEvent(ec, state, nil), nil) {
				stopped = true
				return
			}
			yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil)
		}}
		w := &recorder{}
		if err := run(t, exec, context.Background(), newReq(), w); err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		if !stopped || len(w.got()) != 1 {
			t.Errorf("%s: executor told to stop %v, %d events recorded; want stop after 1", state, stopped, len(w.got()))
		}
		if cancels, _ := exec.calls(); len(cancels) != 0 {
			t.Errorf("%s: Cancel called after a settled turn", state)
		}
	}
}

func TestExecutorErrorIsReturned(t *testing.T) {
	boom := errors.New("boom")
	exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
		if yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
			yield(nil, boom)
		}
	}}
	if err := run(t, exec, context.Background(), newReq(), &recorder{}); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the executor's error", err)
	}
	cancels, cleanups := exec.calls()
	if len(cancels) != 0 || len(cleanups) != 1 || !errors.Is(cleanups[0].err, boom) {
		t.Errorf("cancels %d, cleanups %+v; want no cancel and one cleanup with the error", len(cancels), cleanups)
	}
}

func TestNilSequenceAndNilExecutor(t *testing.T) {
	if err := run(t, nilSeqExec{}, context.Background(), newReq(), &recorder{}); err == nil {
		t.Error("Execute returning a nil sequence: want an error")
	}
	if err := run(t, nil, context.Background(), newReq(), &recorder{}); err == nil {
		t.Error("nil executor: want an error")
	}
}

type nilSeqExec struct{}

func (nilSeqExec) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return nil
}
func (nilSeqExec) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return nil
}

func TestTaskClosedUnderTheRun(t *testing.T) {
	exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
		for i := 0; i < 10; i++ {
			if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
				return
			}
		}
	}}
	w := &recorder{closeAfter: 2}
	if err := run(t, exec, context.Background(), newReq(), w); !errors.Is(err, agentrt.ErrTaskClosed) {
		t.Fatalf("Run = %v, want ErrTaskClosed", err)
	}
	if cancels, _ := exec.calls(); len(cancels) != 1 {
		t.Errorf("Cancel called %d times, want once", len(cancels))
	}
}

func TestCancelIsBoundedAndNotRecorded(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	exec := &funcExec{
		exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
				return
			}
			<-ctx.Done()
		},
		cancel: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
				return
			}
			<-release // ignores its context
			yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCanceled, nil), nil)
		},
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(agentrt.ErrCanceled) })
	w := &recorder{}
	start := time.Now()
	err := run(t, exec, ctx, newReq(), w, a2agoexec.WithCancelTimeout(200*time.Millisecond))
	if !errors.Is(err, agentrt.ErrCanceled) {
		t.Errorf("Run = %v, want the cancel cause", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("Run took %s with a Cancel that never ends, want about the cancel timeout", d)
	}
	if got := w.got(); len(got) != 1 {
		t.Errorf("%d events recorded, want only the working status (Cancel's are drained)", len(got))
	}
	cancels, _ := exec.calls()
	if len(cancels) != 1 || cancels[0].Message != nil || cancels[0].StoredTask == nil ||
		cancels[0].StoredTask.Status.State != a2ago.TaskStateWorking || cancels[0].TaskID != "task-1" {
		t.Errorf("Cancel contexts %+v (stored %+v), want one for task-1 without a message, its stored task working", cancels, cancels[0].StoredTask)
	}
}

func TestCancelOnTimeoutButNotOnShutdown(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cause      error
		wantCancel bool
	}{
		{"timeout", agentrt.ErrTimedOut, true},
		{"shutdown", context.Canceled, false},
	} {
		exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			<-ctx.Done()
		}}
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(tc.cause)
		err := run(t, exec, ctx, newReq(), &recorder{})
		if !errors.Is(err, tc.cause) {
			t.Errorf("%s: Run = %v, want %v", tc.name, err, tc.cause)
		}
		if cancels, _ := exec.calls(); (len(cancels) == 1) != tc.wantCancel {
			t.Errorf("%s: Cancel called %d times, want it called: %v", tc.name, len(cancels), tc.wantCancel)
		}
	}
}

func TestCancelPanicIsContained(t *testing.T) {
	exec := &funcExec{
		exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {},
		cancel: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			panic("cancel exploded")
		},
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(agentrt.ErrCanceled)
	if err := run(t, exec, ctx, newReq(), &recorder{}); !errors.Is(err, agentrt.ErrCanceled) {
		t.Errorf("Run = %v", err)
	}
	_, cleanups := exec.calls()
	if len(cleanups) != 2 || cleanups[0].ec.Message != nil || cleanups[0].err == nil || cleanups[1].ec.Message == nil {
		t.Errorf("cleanups %+v, want the cancel's (with the panic as error) then the execution's", cleanups)
	}
}

func TestCleanupResults(t *testing.T) {
	t.Run("task", func(t *testing.T) {
		exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			ev := a2ago.NewArtifactEvent(ec, a2ago.NewTextPart("a"))
			_ = yield(ev, nil) && yield(a2ago.NewArtifactUpdateEvent(ec, ev.Artifact.ID, a2ago.NewTextPart("b")), nil) &&
				yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
		}}
		if err := run(t, exec, context.Background(), newReq(), &recorder{}); err != nil {
			t.Fatal(err)
		}
		_, cleanups := exec.calls()
		if len(cleanups) != 1 {
			t.Fatalf("%d cleanups", len(cleanups))
		}
		task, ok := cleanups[0].result.(*a2ago.Task)
		if !ok || task.Status.State != a2ago.TaskStateCompleted || len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 2 || cleanups[0].err != nil {
			t.Errorf("cleanup result %#v, err %v; want the completed task with one two-part artifact", cleanups[0].result, cleanups[0].err)
		}
	})
	t.Run("message", func(t *testing.T) {
		reply := a2ago.NewMessage(a2ago.MessageRoleAgent, a2ago.NewTextPart("hi"))
		exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
			yield(reply, nil)
		}}
		w := &recorder{}
		if err := run(t, exec, context.Background(), newReq(), w); err != nil {
			t.Fatal(err)
		}
		_, cleanups := exec.calls()
		if len(cleanups) != 1 || cleanups[0].result != reply {
			t.Errorf("cleanups %+v, want the reply as result", cleanups)
		}
		if got := w.got(); len(got) != 1 || got[0].Message == nil || got[0].Message.Text() != "hi" {
			t.Errorf("recorded %+v, want the message", got)
		}
	})
}

// An artifact gets the same id on every run of a turn, whatever random id
// the executor gave it; artifacts of earlier turns and ids that are not
// UUIDs are kept.
func TestArtifactIDsAreStablePerTurn(t *testing.T) {
	exec := &funcExec{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2ago.Event, error) bool) {
		ev := a2ago.NewArtifactEvent(ec, a2ago.NewTextPart("new"))
		_ = yield(ev, nil) &&
			yield(a2ago.NewArtifactUpdateEvent(ec, ev.Artifact.ID, a2ago.NewTextPart("more")), nil) &&
			yield(a2ago.NewArtifactUpdateEvent(ec, "old", a2ago.NewTextPart("old more")), nil) &&
			yield(&a2ago.TaskArtifactUpdateEvent{Artifact: &a2ago.Artifact{ID: "report", Parts: a2ago.ContentParts{a2ago.NewTextPart("r")}}}, nil) &&
			yield(&a2ago.Task{ID: ec.TaskID, ContextID: ec.ContextID, Artifacts: []*a2ago.Artifact{{ID: a2ago.NewArtifactID(), Parts: a2ago.ContentParts{a2ago.NewTextPart("t")}}}}, nil)
	}}
	req := newReq()
	req.Artifacts = []a2a.Artifact{{ArtifactID: "old", Parts: []a2a.Part{a2a.TextPart("old")}}}
	ids := func() []string {
		w := &recorder{}
		if err := run(t, exec, context.Background(), req, w); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range w.got() {
			switch {
			case ev.ArtifactUpdate != nil:
				out = append(out, ev.ArtifactUpdate.Artifact.ArtifactID)
			case ev.Task != nil:
				for _, a := range ev.Task.Artifacts {
					out = append(out, a.ArtifactID)
				}
			}
		}
		return out
	}
	first, second := ids(), ids()
	if len(first) != 5 || first[0] != first[1] || first[2] != "old" || first[3] != "report" || first[4] == first[0] || first[4] == "" {
		t.Fatalf("artifact ids %q: want one id for both chunks, old and report kept, a distinct id for the task's artifact", first)
	}
	for i := range first {
		if first[i] != second[i] {
			t.Errorf("artifact ids differ between runs of the turn: %q vs %q", first, second)
			break
		}
	}
}

func TestNewFromCard(t *testing.T) {
	card := &a2ago.AgentCard{
		Name: "sdk", Description: "from a2a-go", Version: "2.0.0",
		SupportedInterfaces: []*a2ago.AgentInterface{{URL: "http://127.0.0.1:1", ProtocolBinding: a2ago.TransportProtocolJSONRPC, ProtocolVersion: a2ago.Version}},
		Capabilities:        a2ago.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"application/json"},
		Skills:          []a2ago.AgentSkill{{ID: "s", Name: "S", Description: "d", Tags: []string{"t"}, Examples: []string{"e"}}},
		SecuritySchemes: a2ago.NamedSecuritySchemes{"key": a2ago.APIKeySecurityScheme{Name: "X-Key", Location: a2ago.APIKeySecuritySchemeLocationHeader}},
	}
	a, err := a2agoexec.NewFromCard(echoExec{}, card)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Card()
	if c.Name != "sdk" || c.Version != "2.0.0" || c.Capabilities.Streaming == nil || !*c.Capabilities.Streaming ||
		len(c.Skills) != 1 || c.Skills[0].Examples[0] != "e" || c.DefaultOutputModes[0] != "application/json" ||
		len(c.SupportedInterfaces) != 1 || c.SecuritySchemes["key"] == nil {
		t.Errorf("converted card %+v", c)
	}
	if _, err := a2agoexec.NewFromCard(echoExec{}, nil); err == nil {
		t.Error("nil card accepted")
	}
}
