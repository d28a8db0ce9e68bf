package agentrt

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// MetaParent is the metadata key under which a delegated task's work
// carries the task that delegated it: {"taskId", "contextId", "agent"}.
const MetaParent = taskstore.MetaParent

// Errors of Mesh calls.
var (
	// ErrUnknownAgent: the called agent is not known to the mesh (it
	// never registered, or was removed). A known agent with no live
	// worker is not an error: the call waits in its queue.
	ErrUnknownAgent = errors.New("agentrt: no agent of that name is registered with the mesh")
	// ErrNotContinuable: a message for an existing task that does not
	// wait for input.
	ErrNotContinuable = errors.New("agentrt: the task does not wait for input")
	// ErrWaitExpired: Send stopped waiting for a called task that had not
	// settled; the error is a *WaitError saying which task and how it
	// stood.
	ErrWaitExpired = errors.New("agentrt: the called agent's task did not settle in time")
)

// DefaultMaxWait is how long Mesh.Send waits for the called agent's task
// when Mesh.MaxWait is zero and the caller's deadline is further away.
// It is half a worker's default task timeout (120 s), so a caller whose
// delegate is stuck (queued for an agent whose only worker crashed, say)
// learns it with time left to fail its own task saying so; and it is
// longer than the registry's lost grace (30 s), so a delegate whose worker
// comes back within the grace still answers the same call.
const DefaultMaxWait = 60 * time.Second

// maxDeadlineReserve caps the share of the caller's remaining time that
// Send leaves it after giving up (see Mesh.MaxWait).
const maxDeadlineReserve = 5 * time.Second

// WaitError is the error of a Send that stopped waiting for the called
// agent's task before it settled. The task is left as it is: still queued
// (it runs when a worker of the agent takes it) or still working. The
// caller may fail its own task with the error's text, call Cancel on the
// task, or carry on.
type WaitError struct {
	Agent  string
	TaskID string
	// State is the task's state when Send gave up (submitted: no worker
	// has taken it; working: a worker has it and has not finished).
	State a2a.TaskState
	// Waited is how long Send ran, from its call.
	Waited time.Duration
	// Deadline is true when the caller's own deadline set the bound,
	// false when Mesh.MaxWait (or DefaultMaxWait) did.
	Deadline bool
}

func (e *WaitError) Error() string {
	why := "the mesh's bound on waiting for a called agent"
	if e.Deadline {
		why = "the calling task's own deadline"
	}
	msg := fmt.Sprintf("agent %q did not settle task %s within %s (%s): it is still %s",
		e.Agent, e.TaskID, e.Waited.Round(100*time.Millisecond), why, a2a.StateV03(e.State))
	switch e.State {
	case a2a.StateSubmitted:
		msg += ", queued with no worker taking it (are the agent's workers down?)"
	case a2a.StateWorking:
		msg += ", its worker has not finished"
	}
	return msg
}

// Unwrap makes a WaitError match ErrWaitExpired.
func (e *WaitError) Unwrap() error { return ErrWaitExpired }

// Mesh calls other agents of the mesh straight through the bus: no HTTP
// hop, no edge. Inside a run, use Request.Mesh: calls made with it carry
// the calling task along (its context id, its owner, and a MetaParent
// entry in the called task's metadata), get task ids that are the same on
// every run of the turn (so a turn re-run after a crash finds the task it
// delegated before instead of delegating twice), and cancel the called
// task when the calling task is canceled or times out.
type Mesh struct {
	store  *taskstore.Store
	lc     *taskstore.Lifecycle
	parent *Request // nil outside a run
	agent  string   // the calling agent
	calls  atomic.Int64
	// MaxWait bounds how long Send waits for the called agent's task to
	// settle (0: DefaultMaxWait; negative: only ctx bounds it). When
	// ctx's deadline comes sooner, Send gives up before it, leaving the
	// caller a tenth of its remaining time (at most 5 s) to settle its
	// own task. Set it before the first Send.
	MaxWait time.Duration
	// live tells whether an agent may be called (nil: ask the registry
	// each time, registry.Routable).
	live func(ctx context.Context, agent string) (bool, error)
}

// NewMesh returns a Mesh for code outside a run (a root caller).
func NewMesh(s *taskstore.Store) *Mesh {
	return &Mesh{store: s, lc: taskstore.NewLifecycle(s, taskstore.LifecycleConfig{})}
}

// Mesh returns the client for calling other agents on behalf of this task.
// It is nil for a Request not made by a Worker.
func (r *Request) Mesh() *Mesh { return r.mesh }

// Send sends msg to agent and waits until the task it starts (or
// continues, when msg.TaskID names a task that waits for input) settles:
// completed, failed, canceled, rejected, or waiting for input. The
// returned task holds the called agent's artifacts and final status.
//
// The wait is bounded (see MaxWait): past the bound Send returns a
// *WaitError (errors.Is ErrWaitExpired) naming the agent, the task, its
// state and the time waited, and leaves the task as it is. An agent with
// that is not known to the mesh (registry.IsKnown) fails at once with
// ErrUnknownAgent; one known but with no live worker now waits in its
// queue, within the bound, for the next worker. When ctx ends first, Send returns ctx's
// error; if the calling task was canceled or timed out, the called task
// is canceled too.
//
// The call is traced: a client span under ctx's span, whose context rides
// to the called agent's workers in the work item's traceparent header and
// its a2a.trace metadata.
func (m *Mesh) Send(ctx context.Context, agent string, msg a2a.Message) (task *a2a.Task, err error) {
	start := time.Now()
	ctx, span := startDelegate(ctx, agent)
	defer func() { endDelegate(span, task, err) }()
	if !bus.ValidToken(agent) {
		return nil, fmt.Errorf("agentrt: agent name %q is not valid", agent)
	}
	if len(msg.Parts) == 0 {
		return nil, errors.New("agentrt: a message needs at least one part")
	}
	n := m.calls.Add(1)
	if msg.MessageID == "" {
		msg.MessageID = m.callID("msg", agent, n)
	}
	turn := taskstore.Turn{Agent: agent, Message: msg, Metadata: m.metadata(), TraceMetadata: true,
		Admit: m.requireLive, Wait: true}
	if msg.TaskID != "" {
		if turn.Task, err = m.visible(ctx, msg.TaskID); err != nil {
			return nil, err
		}
	} else {
		turn.TaskKey, turn.TaskMetadata = uuid.NewString(), m.metadata()
		if p := m.parent; p != nil {
			// The task id follows from the calling turn and the message,
			// so a re-run of the turn meets the task it created before; it
			// is minted as every task id is (taskstore.MintTaskID), keyed
			// by the calling task where a client's key is its messageId.
			turn.Owner = p.owner
			turn.TaskKey = "delegated\x00" + p.TaskID + "\x00" + msg.MessageID
			if turn.Message.ContextID == "" {
				turn.Message.ContextID = p.ContextID
			}
		}
	}
	lc := m.tasks()
	sub, err := lc.Submit(ctx, turn)
	if errors.Is(err, taskstore.ErrNotContinuable) {
		return nil, fmt.Errorf("%w: %w", ErrNotContinuable, err)
	}
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if p := m.parent; p != nil && msg.TaskID == "" {
		m.recordDelegation(ctx, p.TaskID, agent, sub.Task.Task.ID)
	}
	if sub.Task.Task.Status.State.Final() {
		return &sub.Task.Task, nil // a re-run found the delegated task settled
	}
	until, byDeadline := m.waitBound(ctx, start)
	settled, err := lc.Await(ctx, sub, until)
	var unsettled *taskstore.UnsettledError
	switch {
	case errors.As(err, &unsettled):
		return nil, &WaitError{Agent: settled.Agent, TaskID: settled.Task.ID, State: unsettled.State,
			Waited: time.Since(start), Deadline: byDeadline}
	case err != nil:
		if cause := context.Cause(ctx); errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrTimedOut) {
			m.cancel(sub.Task.Task.ID)
		}
		return nil, err
	}
	return &settled.Task, nil
}

// recordDelegation notes that the calling task delegated childID, so that
// its view lists its children (bus.Delegations). It is best effort: the
// child names its parent in its own metadata whatever happens here.
func (m *Mesh) recordDelegation(ctx context.Context, parentID, agent, childID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = m.store.RecordDelegation(ctx, parentID, taskstore.Delegation{TaskID: childID, Agent: agent, Time: time.Now().UTC()})
}

// tasks is the task lifecycle Mesh calls go through.
func (m *Mesh) tasks() *taskstore.Lifecycle {
	return m.lc
}

// visible reads a task this caller may address: inside a run, only the
// calling task's owner's tasks.
func (m *Mesh) visible(ctx context.Context, taskID string) (*taskstore.TaskRecord, error) {
	rec, err := m.tasks().Get(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if m.parent != nil && rec.Owner != m.parent.owner {
		return nil, taskstore.ErrTaskNotFound
	}
	return rec, nil
}

// waitBound bounds Send's wait for the called task: MaxWait after start,
// or earlier when ctx's deadline leaves less (byDeadline). Zero: no bound.
func (m *Mesh) waitBound(ctx context.Context, start time.Time) (at time.Time, byDeadline bool) {
	limit := m.MaxWait
	if limit == 0 {
		limit = DefaultMaxWait
	}
	if limit > 0 {
		at = start.Add(limit)
	}
	if dl, ok := ctx.Deadline(); ok {
		reserve := max(0, min(time.Until(dl)/10, maxDeadlineReserve))
		if early := dl.Add(-reserve); at.IsZero() || early.Before(at) {
			at, byDeadline = early, true
		}
	}
	return at, byDeadline
}

// callID derives an id for the n-th call of this run to agent: the same on
// every run of the calling turn. Outside a run it is random.
func (m *Mesh) callID(kind, agent string, n int64) string {
	if m.parent == nil {
		return uuid.NewString()
	}
	p := m.parent
	return uuid.NewSHA1(callNS, []byte(kind+"\x00"+p.TaskID+"\x00"+p.Message.MessageID+"\x00"+agent+"\x00"+strconv.FormatInt(n, 10))).String()
}

var callNS = uuid.MustParse("0c7c1a52-9d64-4f8e-8f3b-5a2e6d0b9c11")

func (m *Mesh) metadata() a2a.Metadata {
	if m.parent == nil {
		return nil
	}
	return a2a.Metadata{MetaParent: map[string]any{
		"taskId": m.parent.TaskID, "contextId": m.parent.ContextID, "agent": m.agent,
	}}
}

// requireLive fails with ErrUnknownAgent when agent is not known to the
// mesh: a call to it would only wait for its bound.
func (m *Mesh) requireLive(ctx context.Context, agent string) error {
	isLive := m.live
	if isLive == nil {
		isLive = func(ctx context.Context, agent string) (bool, error) {
			return registry.Routable(ctx, m.store.Bus(), agent)
		}
	}
	live, err := isLive(ctx, agent)
	if err != nil {
		return err
	}
	if !live {
		return fmt.Errorf("%w: %s", ErrUnknownAgent, agent)
	}
	return nil
}

// Cancel cancels a task this caller started (one a WaitError named, say),
// saying why in reason; a task already ended is left as it is (no error).
// Inside a run only the calling task's owner's tasks can be canceled.
func (m *Mesh) Cancel(ctx context.Context, taskID, reason string) error {
	rec, err := m.visible(ctx, taskID)
	if err != nil {
		return err
	}
	if _, err := m.tasks().Cancel(ctx, taskID, rec, reason); err != nil && !errors.Is(err, taskstore.ErrTerminal) {
		return err
	}
	return nil
}

// cancel cancels a called task whose caller gave up.
func (m *Mesh) cancel(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = m.tasks().Cancel(ctx, id, nil, "canceled: the calling task ended")
}
