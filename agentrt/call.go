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
	"github.com/a2amesh/a2amesh/tracing"
	"go.opentelemetry.io/otel/trace"
)

// MetaParent is the metadata key under which a delegated task's work
// carries the task that delegated it: {"taskId", "contextId", "agent"}.
const MetaParent = "a2amesh.parent"

// Errors of Mesh calls.
var (
	// ErrUnknownAgent: no live worker serves the called agent.
	ErrUnknownAgent = errors.New("agentrt: no live worker serves this agent")
	// ErrNotContinuable: a message for an existing task that does not
	// wait for input.
	ErrNotContinuable = errors.New("agentrt: the task does not wait for input")
)

// Mesh calls other agents of the mesh straight through the bus: no HTTP
// hop, no edge. Inside a run, use Request.Mesh: calls made with it carry
// the calling task along (its context id, its owner, and a MetaParent
// entry in the called task's metadata), get task ids that are the same on
// every run of the turn (so a turn re-run after a crash finds the task it
// delegated before instead of delegating twice), and cancel the called
// task when the calling task is canceled or times out.
type Mesh struct {
	b      *bus.Bus
	parent *Request // nil outside a run
	agent  string   // the calling agent
	calls  atomic.Int64
	// live tells whether an agent has a live worker (nil: read the
	// registry bucket each time).
	live func(ctx context.Context, agent string) (bool, error)
}

// NewMesh returns a Mesh for code outside a run (a root caller).
func NewMesh(b *bus.Bus) *Mesh { return &Mesh{b: b} }

// Mesh returns the client for calling other agents on behalf of this task.
// It is nil for a Request not made by a Worker.
func (r *Request) Mesh() *Mesh { return r.mesh }

// Send sends msg to agent and waits until the task it starts (or
// continues, when msg.TaskID names a task that waits for input) settles:
// completed, failed, canceled, rejected, or waiting for input. The
// returned task holds the called agent's artifacts and final status. When
// ctx ends first, Send returns ctx's error; if the calling task was
// canceled or timed out, the called task is canceled too.
//
// The call is traced: a client span under ctx's span, whose context rides
// to the called agent's workers in the work item's traceparent header and
// its a2a.trace metadata.
func (m *Mesh) Send(ctx context.Context, agent string, msg a2a.Message) (task *a2a.Task, err error) {
	ctx, span := startDelegate(ctx, agent)
	defer func() { endDelegate(span, task, err) }()
	if !bus.ValidToken(agent) {
		return nil, fmt.Errorf("agentrt: agent name %q is not valid", agent)
	}
	if len(msg.Parts) == 0 {
		return nil, errors.New("agentrt: a message needs at least one part")
	}
	msg.Role = a2a.RoleUser
	n := m.calls.Add(1)
	if msg.MessageID == "" {
		msg.MessageID = m.callID("msg", agent, n)
	}
	var rec *bus.TaskRecord
	if msg.TaskID != "" {
		rec, err = m.continueTask(ctx, &msg)
	} else {
		rec, err = m.newTask(ctx, agent, &msg)
	}
	if err != nil {
		return nil, err
	}
	id := rec.Task.ID
	if rec.Task.Status.State.Final() {
		return &rec.Task, nil // a re-run found the delegated task settled
	}
	watch, err := m.b.WatchSettle(id)
	if err != nil {
		return nil, err
	}
	defer watch.Stop()
	item := &bus.WorkItem{
		TaskID: id, ContextID: rec.Task.ContextID, Agent: rec.Agent, Message: msg,
		Owner: rec.Owner, Enqueued: a2a.Now(),
	}
	// A task found from an earlier run is queued again only if it never
	// left the queue's hands (the message id dedupes the work item); one
	// that is working has a worker.
	if rec.Task.Status.State == a2a.StateSubmitted {
		msgID := bus.WorkMsgID(id, msg.MessageID)
		pctx, pspan, hdr := tracing.StartPublish(ctx, tracing.Tracer(scope), bus.WorkSubject(item.Agent, id), bus.WorkFilter(item.Agent), msgID, nil)
		item.Metadata = tracing.ToMetadata(pctx, m.metadata())
		err := m.b.Enqueue(pctx, item, msgID, hdr)
		endSpan(pspan, err)
		if err != nil {
			if errors.Is(err, bus.ErrQueueFull) {
				m.fail(id, "the mesh's queue for agent "+rec.Agent+" is full")
			}
			return nil, err
		}
	}
	settled, err := watch.Wait(ctx, rec)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrTimedOut) {
			m.cancel(id)
		}
		return nil, err
	}
	return &settled.Task, nil
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

func (m *Mesh) newTask(ctx context.Context, agent string, msg *a2a.Message) (*bus.TaskRecord, error) {
	isLive := m.live
	if isLive == nil {
		isLive = func(ctx context.Context, agent string) (bool, error) { return registry.Live(ctx, m.b, agent) }
	}
	live, err := isLive(ctx, agent)
	if err != nil {
		return nil, err
	}
	if !live {
		return nil, fmt.Errorf("%w: %s", ErrUnknownAgent, agent)
	}
	id := uuid.NewString()
	owner := ""
	if p := m.parent; p != nil {
		// The task id follows from the calling turn and the message, so
		// a re-run of the turn meets the task it created before.
		id = uuid.NewSHA1(callNS, []byte("task\x00"+agent+"\x00"+p.TaskID+"\x00"+msg.MessageID)).String()
		if msg.ContextID == "" {
			msg.ContextID = p.ContextID
		}
		owner = p.owner
	}
	if msg.ContextID == "" {
		msg.ContextID = uuid.NewString()
	}
	msg.TaskID = id
	rec, err := m.b.CreateTask(ctx, &bus.TaskRecord{
		Task: a2a.Task{
			ID: id, ContextID: msg.ContextID,
			Status:   a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()},
			History:  []a2a.Message{*msg},
			Metadata: m.metadata(),
		},
		Agent: agent, Owner: owner, Trace: tracing.Traceparent(trace.SpanContextFromContext(ctx)),
	})
	if errors.Is(err, bus.ErrTaskExists) {
		return m.b.LoadTask(ctx, id)
	}
	return rec, err
}

// continueTask records msg as a new turn of the task it names, which must
// wait for input (or already hold msg: a re-run).
func (m *Mesh) continueTask(ctx context.Context, msg *a2a.Message) (*bus.TaskRecord, error) {
	rec, err := m.b.LoadTask(ctx, msg.TaskID)
	if err != nil {
		return nil, err
	}
	if m.parent != nil && rec.Owner != m.parent.owner {
		return nil, bus.ErrTaskNotFound
	}
	msg.ContextID = rec.Task.ContextID
	for _, h := range rec.Task.History {
		if h.MessageID == msg.MessageID {
			// Recorded by an earlier run: settled since, or still running.
			return rec, nil
		}
	}
	next, _, err := m.b.UpdateTask(ctx, msg.TaskID, rec, func(cur *bus.TaskRecord) (*a2a.StreamResponse, error) {
		if !cur.Task.Status.State.Interrupted() {
			return nil, fmt.Errorf("%w: task %s is %s", ErrNotContinuable, cur.Task.ID, a2a.StateV03(cur.Task.Status.State))
		}
		c := *msg
		return &a2a.StreamResponse{Message: &c}, nil
	})
	if errors.Is(err, bus.ErrTerminal) {
		return nil, fmt.Errorf("%w: task %s is %s", ErrNotContinuable, msg.TaskID, a2a.StateV03(next.Task.Status.State))
	}
	return next, err
}

// cancel cancels a called task whose caller gave up.
func (m *Mesh) cancel(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = m.b.CancelTask(ctx, id, nil, "canceled: the calling task ended")
}

// fail fails a called task that could not be queued.
func (m *Mesh) fail(id, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = m.b.SetStatus(ctx, id, nil, a2a.StateFailed, text)
}
