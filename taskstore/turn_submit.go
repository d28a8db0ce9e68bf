package taskstore

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Turn is one user turn for Submit.
type Turn struct {
	// Agent runs a new task. A continued task keeps its own.
	Agent string
	// Owner is the principal a new task belongs to ("" for none). A
	// continued task keeps its own.
	Owner string
	// Message is the user's turn; its MessageID is required. Submit
	// records it with the user role and the task's ids.
	Message a2a.Message
	// Task is the task the message continues, as the caller read it
	// (having decided that the caller may see it); nil starts a task.
	Task *TaskRecord
	// TaskKey, when set, is what a new task's id is derived from in
	// place of the messageId (MintTaskID, with Agent, Owner and the
	// context). A task already under that id is an earlier attempt of
	// this turn (a retry) when it holds the message, and refused (-32602)
	// otherwise. Empty: the id is derived from the messageId while the
	// idempotency window is on (so a retry finds it), at random when it
	// is off.
	TaskKey string
	// TaskID, when set, names a new task itself (a client of protocol
	// 0.2 names its own tasks): its log is kept under an alias (ids.go).
	// A task already under that id is treated as with TaskKey.
	TaskID string
	// TaskMetadata is a new task's metadata.
	TaskMetadata a2a.Metadata
	// Metadata and AcceptedOutputModes ride on the work item to the
	// agent: the request's metadata, the client's accepted media types.
	Metadata            a2a.Metadata
	AcceptedOutputModes []string
	// Extensions are the extension URIs the client requested (the
	// A2A-Extensions service parameter); they ride on the work item too.
	Extensions []string
	// TraceMetadata adds the enqueue span's context to the work item's
	// metadata (tracing.MetadataKey), beside its traceparent header.
	TraceMetadata bool
	// Admit, when set, is asked before the turn is recorded on a task
	// that can take it (a new one, or one waiting for input; not for a
	// retry of a recorded turn) with the agent that will run it; its
	// error refuses the turn.
	Admit func(ctx context.Context, agent string) error
	// Prepare, when set, runs once the turn is recorded and before its
	// work item is enqueued (the edge stores a send's push config
	// there). If it fails, the task fails with PrepareFailure as its
	// status text and Submit returns Prepare's error.
	Prepare        func(ctx context.Context, rec *TaskRecord) error
	PrepareFailure string
	// Wait watches the task from before its work item is enqueued, so
	// that Await misses no change however fast the worker is. Await or
	// Close the Submitted.
	Wait bool

	// derivedCtx is the context newTaskID derived for the turn ("": the
	// message named its own).
	derivedCtx string
}

// Submitted is a turn that Submit recorded and enqueued.
type Submitted struct {
	// Task is the task as the turn left it: just created or continued,
	// or, for a replay, as it stood when the retry found it.
	Task *TaskRecord
	// Replay is true when the turn was recorded before, by an earlier
	// attempt with the same messageId: nothing new was recorded (its
	// work item was enqueued again only if it was lost).
	Replay bool

	item  *WorkItem // nil: nothing to enqueue
	msgID string
	watch *SettleWatch // nil unless Turn.Wait
}

// Close ends the watch of a Submitted that will not be awaited. It may be
// called more than once.
func (s *Submitted) Close() {
	if s.watch != nil {
		s.watch.Stop()
		s.watch = nil
	}
}

// Submit records one user turn and hands it to the agent's workers: it
// starts a task (Turn.Task nil) or continues one that waits for input.
// A retry of a turn already recorded is recognised by its messageId and
// returned as a replay. A full work queue fails the task and returns
// a2a.ErrServerBusy (and bus.ErrQueueFull). Errors a client may see are
// *a2a.Error: -32602 for a contextId that is not the continued task's or
// a messageId used for another task, -32004 (and ErrNotContinuable) for a
// task that takes no message now.
func (s *Lifecycle) Submit(ctx context.Context, t Turn) (*Submitted, error) {
	msg := t.Message
	msg.Role = a2a.RoleUser
	var (
		sub *Submitted
		err error
	)
	if t.Task != nil {
		sub, err = s.continueTask(ctx, &t, &msg)
	} else {
		sub, err = s.startTask(ctx, &t, &msg)
	}
	if err != nil {
		return nil, err
	}
	if t.Wait {
		if sub.watch, err = s.store.WatchSettle(sub.Task.Task.ID); err != nil {
			return nil, err
		}
	}
	err = s.enqueue(ctx, &t, sub)
	if err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// maxIDGenerations bounds the chain of tasks one reused messageId may name.
const maxIDGenerations = 16

// startTask records a turn that starts a task. A new task's id is derived
// from the messageId, so a retried turn finds the task its first attempt
// created: the log's create-if-absent append is the idempotency check. A
// messageId reused after the idempotency window starts a new task, whose
// id is derived from the previous one, so its own retries find it in turn.
func (s *Lifecycle) startTask(ctx context.Context, t *Turn, msg *a2a.Message) (*Submitted, error) {
	named := t.TaskKey != "" || t.TaskID != ""
	key := t.TaskKey
	if key == "" {
		key = msg.MessageID
	}
	id := s.newTaskID(t, msg, key, "")
	if t.TaskID != "" {
		id = t.TaskID
	}
	if t.Admit != nil {
		if err := t.Admit(ctx, t.Agent); err != nil {
			return nil, err
		}
	}
	for gen := 0; ; gen++ {
		rec, err := s.create(ctx, t, id, msg)
		if err == nil {
			return s.recorded(t, msg, rec), nil
		}
		if !errors.Is(err, ErrTaskExists) {
			return nil, err
		}
		existing, err := s.store.LoadTask(ctx, id)
		if err != nil {
			return nil, err
		}
		if named || s.withinWindow(existing) {
			if !hasMessage(existing, msg.MessageID) {
				return nil, a2a.ErrInvalidParams.With("Invalid parameters: task %s already exists", id)
			}
			if existing.Owner != t.Owner || existing.Agent != t.Agent {
				return nil, a2a.ErrInvalidParams.With("Invalid parameters: messageId was already used")
			}
			return s.replay(ctx, t, msg, existing)
		}
		if gen < maxIDGenerations {
			id = s.newTaskID(t, msg, key, existing.Task.ID)
		} else {
			id = s.newTaskID(t, msg, uuid.NewString(), "") // a messageId reused without end: no dedupe
		}
	}
}

// IDSpace namespaces the name-based ids the mesh derives from a client's
// ids: new tasks' ids from message ids here, push config ids in the edge.
var IDSpace = uuid.MustParse("5f0c7a2e-6d1b-4c3e-9a8f-a2a0e5a1c0de")

// newTaskID names the task a turn starts (MintTaskID): derived from key
// when idempotency is on, else random. previous is the task the same key
// named before the window passed ("" for the first). A turn that names no
// context starts one, derived the same way, so that a retry derives the
// same task id.
func (s *Lifecycle) newTaskID(t *Turn, msg *a2a.Message, key, previous string) string {
	if s.window < 0 {
		key, previous = uuid.NewString(), ""
	}
	key += "\x00" + previous
	if msg.ContextID == "" || previous != "" && msg.ContextID == t.derivedCtx {
		msg.ContextID = DeriveContextID(t.Agent, t.Owner, key)
		t.derivedCtx = msg.ContextID
	}
	return MintTaskID(t.Owner, msg.ContextID, t.Agent, key)
}

// DeriveTaskID is the id Submit gives the task that the first send of
// messageID to agent by owner starts (idempotency on), in context
// contextID, or in the context Submit derives when it is empty.
func DeriveTaskID(agent, owner, contextID, messageID string) string {
	key := messageID + "\x00"
	if contextID == "" {
		contextID = DeriveContextID(agent, owner, key)
	}
	return MintTaskID(owner, contextID, agent, key)
}

// withinWindow reports whether a turn repeating the message that created
// rec is a retry of it (rather than a new use of the same messageId).
func (s *Lifecycle) withinWindow(rec *TaskRecord) bool {
	created, err := a2a.ParseTime(rec.Created)
	return err == nil && time.Since(created) <= s.window
}

func (s *Lifecycle) create(ctx context.Context, t *Turn, id string, msg *a2a.Message) (*TaskRecord, error) {
	msg.TaskID = id
	return s.store.CreateTask(ctx, &TaskRecord{
		Task: a2a.Task{
			ID: id, ContextID: msg.ContextID,
			Status:   a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()},
			History:  []a2a.Message{*msg},
			Metadata: t.TaskMetadata,
		},
		Agent: t.Agent, Owner: t.Owner, Trace: traceparent(ctx),
	})
}

// continueTask records a new user turn on an existing, interrupted task.
func (s *Lifecycle) continueTask(ctx context.Context, t *Turn, msg *a2a.Message) (*Submitted, error) {
	rec := t.Task
	if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: contextId %q does not match task %s (its contextId is %q)",
			trunc(msg.ContextID, 64), rec.Task.ID, rec.Task.ContextID)
	}
	msg.TaskID, msg.ContextID = rec.Task.ID, rec.Task.ContextID
	dedupe := s.window >= 0
	if dedupe && hasMessage(rec, msg.MessageID) {
		return s.replay(ctx, t, msg, rec)
	}
	if t.Admit != nil && rec.Task.Status.State.Interrupted() {
		if err := t.Admit(ctx, rec.Agent); err != nil {
			return nil, err
		}
	}
	next, _, err := s.store.UpdateTask(ctx, rec.Task.ID, rec, func(cur *TaskRecord) (*a2a.StreamResponse, error) {
		if dedupe && hasMessage(cur, msg.MessageID) {
			return nil, errTurnRecorded // a concurrent retry recorded it first
		}
		if Check(cur, Step{Change: ChangeTurn}) != nil {
			return nil, &failure{a2a.ErrUnsupportedOperation.With("Task %s is %s: it takes a new message only when it asks for input",
				cur.Task.ID, a2a.StateV03(cur.Task.Status.State)), ErrNotContinuable}
		}
		m := *msg
		return &a2a.StreamResponse{Message: &m}, nil
	})
	switch {
	case errors.Is(err, errTurnRecorded):
		return s.replay(ctx, t, msg, next)
	case errors.Is(err, ErrTerminal):
		if dedupe && hasMessage(next, msg.MessageID) {
			return s.replay(ctx, t, msg, next)
		}
		return nil, &failure{a2a.ErrUnsupportedOperation.With("Task %s is in terminal state %s and accepts no more messages",
			rec.Task.ID, a2a.StateV03(next.Task.Status.State)), ErrNotContinuable}
	case errors.Is(err, ErrTaskNotFound):
		return nil, notFound(rec.Task.ID)
	case err != nil:
		return nil, err
	}
	return s.recorded(t, msg, next), nil
}

// errTurnRecorded means the turn's messageId is already in the task's
// history: the call is a retry of one that recorded it.
var errTurnRecorded = errors.New("tasks: turn already recorded")

// recorded is a turn just recorded in rec, with its work item to enqueue.
func (s *Lifecycle) recorded(t *Turn, msg *a2a.Message, rec *TaskRecord) *Submitted {
	return &Submitted{Task: rec, item: workItem(rec, msg, t), msgID: s.workMsgID(rec.Task.ID, msg.MessageID)}
}

// replay is a retry of the turn that recorded msg in rec. If the task
// still waits for its first worker, the earlier attempt may have died
// before enqueueing, or its item may be gone: it is enqueued again unless
// the turn is waiting in the queue (see recovery).
func (s *Lifecycle) replay(ctx context.Context, t *Turn, msg *a2a.Message, rec *TaskRecord) (*Submitted, error) {
	sub := &Submitted{Task: rec, Replay: true}
	var err error
	sub.item, sub.msgID, err = s.recovery(ctx, rec, msg, t)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

func hasMessage(rec *TaskRecord, messageID string) bool {
	for _, m := range rec.Task.History {
		if m.MessageID == messageID {
			return true
		}
	}
	return false
}

// workMsgID is the Nats-Msg-Id of a turn's work item: the same for every
// retry of the turn while idempotency is on, unique when it is off (a
// repeated messageId is then a new turn, not a duplicate to drop).
func (s *Lifecycle) workMsgID(taskID, messageID string) string {
	if s.window < 0 {
		return "w-" + uuid.NewString()
	}
	return bus.WorkMsgID(taskID, messageID)
}
