package edge

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/google/uuid"
)

// sendPlan is a validated send whose user turn is recorded in the task's
// log; enqueue hands it to the agent's workers.
type sendPlan struct {
	params a2a.SendMessageRequest
	rec    *bus.TaskRecord // snapshot right after the user turn
	item   *bus.WorkItem   // nil when the turn was already enqueued
	msgID  string
	replay bool // a retried send (same messageId) of an earlier call
}

func (p *sendPlan) historyLength() int {
	if p.params.Configuration == nil {
		return -1
	}
	return historyLen(p.params.Configuration.HistoryLength)
}

func (p *sendPlan) returnImmediately() bool {
	return p.params.Configuration != nil && p.params.Configuration.ReturnImmediately
}

// plan validates a send and records its user turn: a new task, or a new
// turn of an interrupted one.
func (e *Edge) plan(ctx context.Context, c *call) (*sendPlan, error) {
	p := &sendPlan{}
	if rpcErr := a2a.DecodeParams(c.req.Params, &p.params); rpcErr != nil {
		return nil, rpcErr
	}
	msg := p.params.Message
	if msg != nil && msg.MessageID == "" && isLegacySend(c.req.Method) {
		// 0.2 messages have no messageId (the client names the task
		// instead): give the turn one.
		msg.MessageID = uuid.NewString()
	}
	switch {
	case msg == nil:
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: message is required")
	case msg.MessageID == "":
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: message.messageId is required")
	case len(msg.Parts) == 0:
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: message.parts must not be empty")
	case msg.Role == a2a.RoleAgent:
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: message.role must be user")
	}
	msg.Role = a2a.RoleUser
	card, _ := e.reg.Lookup(c.agent)
	if cfg := p.params.Configuration; cfg != nil && !a2a.ModesOverlap(cfg.AcceptedOutputModes, card.DefaultOutputModes) {
		return nil, a2a.ErrContentTypeNotSupported.With("Incompatible content types: acceptedOutputModes %v not supported by agent %s (it produces %v)",
			cfg.AcceptedOutputModes, c.agent, card.DefaultOutputModes)
	}
	if cfg := p.params.Configuration; cfg != nil && cfg.TaskPushNotificationConfig != nil {
		// push: validated here, stored by enqueue (push.go)
		if err := e.checkSendPush(ctx, c, msg.TaskID, cfg.TaskPushNotificationConfig); err != nil {
			return nil, err
		}
	}
	if msg.TaskID != "" && !bus.ValidToken(msg.TaskID) {
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(msg.TaskID, 64))
	}
	if msg.ContextID != "" && len(msg.ContextID) > 256 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: contextId is too long")
	}

	if msg.TaskID != "" {
		rec, err := e.continueTask(ctx, c, msg)
		switch {
		case errors.Is(err, errTurnRecorded):
			return e.replay(ctx, c, p, rec) // a retried turn
		case err == nil:
			p.rec = rec
			p.item, p.msgID = e.workItem(c, p, rec), e.workMsgID(rec.Task.ID, msg.MessageID)
			return p, nil
		case !errors.Is(err, a2a.ErrTaskNotFound) || !isLegacySend(c.req.Method):
			return nil, err
		}
		// 0.2 clients name new tasks themselves: create it under their id.
	}

	// A new task's id is derived from the client's messageId, so a retried
	// send (same messageId) finds the log its first attempt created: the
	// log's create-if-absent append is the idempotency check. A messageId
	// reused after the idempotency window starts a new task, whose id is
	// derived from the previous one, so its own retries find it in turn.
	clientNamed := msg.TaskID != ""
	taskID := msg.TaskID
	if !clientNamed {
		taskID = e.newTaskID(c, msg.MessageID, "")
	}
	for gen := 0; ; gen++ {
		rec, err := e.newTask(ctx, c, taskID, msg)
		if err == nil {
			p.rec = rec
			p.item, p.msgID = e.workItem(c, p, rec), e.workMsgID(rec.Task.ID, msg.MessageID)
			return p, nil
		}
		if !errors.Is(err, bus.ErrTaskExists) {
			return nil, err
		}
		existing, err := e.bus.LoadTask(ctx, taskID)
		if err != nil {
			return nil, err
		}
		if clientNamed || e.withinWindow(existing) {
			if !hasMessage(existing, msg.MessageID) {
				return nil, a2a.ErrInvalidParams.With("Invalid parameters: task %s already exists", taskID)
			}
			return e.replay(ctx, c, p, existing)
		}
		if gen < maxIDGenerations {
			taskID = e.newTaskID(c, msg.MessageID, existing.Task.ID)
		} else {
			taskID = uuid.NewString() // a messageId reused without end: no dedupe
		}
	}
}

// maxIDGenerations bounds the chain of tasks one reused messageId may name.
const maxIDGenerations = 16

// newTaskID names the task a client's message creates: derived from the
// message when idempotency is on, else random.
func (e *Edge) newTaskID(c *call, messageID, previous string) string {
	if e.cfg.IdempotencyWindow < 0 {
		return uuid.NewString()
	}
	return deriveTaskID(c.agent, c.owner, messageID+"\x00"+previous)
}

// withinWindow reports whether a send repeating the message that created
// rec is a retry of it (rather than a new use of the same messageId).
func (e *Edge) withinWindow(rec *bus.TaskRecord) bool {
	created, err := a2a.ParseTime(rec.Created)
	return err == nil && time.Since(created) <= e.cfg.IdempotencyWindow
}

// taskIDSpace namespaces task ids derived from message ids.
var taskIDSpace = uuid.MustParse("5f0c7a2e-6d1b-4c3e-9a8f-a2a0e5a1c0de")

// deriveTaskID is a name-based UUID of agent, owner and key (the messageId,
// plus the previous task's id for a messageId reused after the window):
// unguessable without the messageId, and the same for every retry.
func deriveTaskID(agent, owner, key string) string {
	return uuid.NewSHA1(taskIDSpace, []byte(agent+"\x00"+owner+"\x00"+key)).String()
}

// replay makes p a retry of the earlier call that recorded its message in rec.
func (e *Edge) replay(ctx context.Context, c *call, p *sendPlan, rec *bus.TaskRecord) (*sendPlan, error) {
	if rec.Owner != c.owner || rec.Agent != c.agent {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: messageId was already used")
	}
	p.rec, p.replay = rec, true
	if rec.Task.Status.State == a2a.StateSubmitted {
		// The earlier call may have died before enqueueing, or its item
		// may be gone: enqueue again unless the turn is waiting in the
		// queue. Not under the turn's own message id, which the duplicate
		// window may still hold for an item published and then lost; a
		// copy racing the earlier call's is harmless (the worker runs one
		// item per turn, agentrt.Worker).
		queued, err := e.bus.Queued(ctx, rec.Agent, rec.Task.ID)
		if err != nil {
			return nil, err
		}
		if !queued {
			p.item = e.workItem(c, p, rec)
			p.msgID = bus.RecoveryMsgID(rec.Task.ID, p.params.Message.MessageID, rec.LastSeq)
		}
	}
	return p, nil
}

func hasMessage(rec *bus.TaskRecord, messageID string) bool {
	for _, m := range rec.Task.History {
		if m.MessageID == messageID {
			return true
		}
	}
	return false
}

func isLegacySend(method string) bool {
	return method == "tasks/send" || method == "tasks/sendSubscribe"
}

func (e *Edge) newTask(ctx context.Context, c *call, taskID string, msg *a2a.Message) (*bus.TaskRecord, error) {
	contextID := msg.ContextID
	if contextID == "" {
		contextID = uuid.NewString()
	}
	msg.TaskID, msg.ContextID = taskID, contextID
	rec := &bus.TaskRecord{
		Task: a2a.Task{
			ID: taskID, ContextID: contextID,
			Status:  a2a.TaskStatus{State: a2a.StateSubmitted, Timestamp: a2a.Now()},
			History: []a2a.Message{*msg},
		},
		Agent: c.agent, Owner: c.owner, Trace: traceparent(ctx),
	}
	return e.bus.CreateTask(ctx, rec)
}

// continueTask records a new user turn on an existing, interrupted task.
func (e *Edge) continueTask(ctx context.Context, c *call, msg *a2a.Message) (*bus.TaskRecord, error) {
	rec, err := e.loadTask(ctx, c, msg.TaskID)
	if err != nil {
		return nil, err
	}
	if msg.ContextID != "" && msg.ContextID != rec.Task.ContextID {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: contextId %q does not match task %s (its contextId is %q)",
			trunc(msg.ContextID, 64), rec.Task.ID, rec.Task.ContextID)
	}
	msg.ContextID = rec.Task.ContextID
	dedupe := e.cfg.IdempotencyWindow >= 0
	if dedupe && hasMessage(rec, msg.MessageID) {
		return rec, errTurnRecorded
	}
	next, _, err := e.bus.UpdateTask(ctx, msg.TaskID, rec, func(cur *bus.TaskRecord) (*a2a.StreamResponse, error) {
		if dedupe && hasMessage(cur, msg.MessageID) {
			return nil, errTurnRecorded // a concurrent retry recorded it first
		}
		if st := cur.Task.Status.State; !st.Interrupted() {
			return nil, a2a.ErrUnsupportedOperation.With("Task %s is %s: it takes a new message only when it asks for input",
				cur.Task.ID, a2a.StateV03(st))
		}
		m := *msg
		return &a2a.StreamResponse{Message: &m}, nil
	})
	if errors.Is(err, bus.ErrTerminal) {
		if dedupe && hasMessage(next, msg.MessageID) {
			return next, errTurnRecorded
		}
		return nil, a2a.ErrUnsupportedOperation.With("Task %s is in terminal state %s and accepts no more messages",
			rec.Task.ID, a2a.StateV03(next.Task.Status.State))
	}
	return next, err
}

// errTurnRecorded means the turn's messageId is already in the task's
// history: the call is a retry of one that recorded it.
var errTurnRecorded = errors.New("turn already recorded")

func (e *Edge) workItem(c *call, p *sendPlan, rec *bus.TaskRecord) *bus.WorkItem {
	item := &bus.WorkItem{
		TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Agent: rec.Agent,
		Message: *p.params.Message, Metadata: p.params.Metadata, Owner: rec.Owner, Enqueued: a2a.Now(),
	}
	item.Message.TaskID, item.Message.ContextID = rec.Task.ID, rec.Task.ContextID
	if cfg := p.params.Configuration; cfg != nil {
		item.AcceptedOutputModes = cfg.AcceptedOutputModes
	}
	return item
}

// enqueue hands the turn to the agent's workers. A full queue fails the
// task (so it is not left waiting forever) and tells the client to retry.
func (e *Edge) enqueue(ctx context.Context, c *call, p *sendPlan) error {
	if p.item == nil {
		return nil
	}
	// push: the send's push config, stored before the agent runs (push.go);
	// if that fails the turn must not stay recorded but never run
	if err := e.storeSendPush(ctx, c, p); err != nil {
		_, _ = e.bus.SetStatus(ctx, p.rec.Task.ID, nil, a2a.StateFailed, "the push notification config could not be stored")
		return err
	}
	pctx, span, hdr := startPublish(ctx, p.item, p.msgID)
	err := e.bus.Enqueue(pctx, p.item, p.msgID, hdr)
	endSpan(span, err)
	if errors.Is(err, bus.ErrQueueFull) {
		_, _ = e.bus.SetStatus(ctx, p.rec.Task.ID, nil, a2a.StateFailed, "the mesh's queue for agent "+c.agent+" is full; retry later")
		return a2a.ErrServerBusy.With("agent %s is at capacity (work queue full); retry later", c.agent)
	}
	return err
}

// send serves SendMessage / message/send.
func (e *Edge) send(c *call) (any, error) {
	ctx := c.r.Context()
	p, err := e.plan(ctx, c)
	if err != nil {
		return nil, err
	}
	c.log = c.log.With("task_id", p.rec.Task.ID, "context_id", p.rec.Task.ContextID)
	c.taskTraced(p.rec)
	rec := p.rec
	if p.returnImmediately() {
		if err := e.enqueue(ctx, c, p); err != nil {
			return nil, err
		}
	} else {
		watch, err := e.bus.WatchSettle(rec.Task.ID)
		if err != nil {
			return nil, err
		}
		defer watch.Stop()
		if err := e.enqueue(ctx, c, p); err != nil {
			return nil, err
		}
		if rec, err = e.awaitSettle(ctx, c, watch, rec); err != nil {
			return nil, err
		}
	}
	t := rec.Task.WithHistory(p.historyLength())
	if c.version == a2a.V03 {
		return t.ToV03(), nil
	}
	return &a2a.StreamResponse{Task: &t}, nil
}

// DefaultBlockingTimeout is how long a blocking send waits for its task
// to settle unless Config.BlockingTimeout says otherwise. It is longer
// than the registry's lost grace (30 s), so a send to an agent whose only
// worker crashed and comes back within the grace still gets its answer in
// the same call; and half the worker's default task timeout (120 s), so a
// client learns well before that that its task is still queued or
// working, instead of holding a connection for as long as the task might
// take (or, for an agent with no worker left, for ever).
const DefaultBlockingTimeout = 60 * time.Second

// errBlockingBound is the cause of a blocking wait that reached
// Config.BlockingTimeout.
var errBlockingBound = errors.New("edge: blocking send reached its bound")

// standsTimeout bounds the read of a task whose blocking wait ended.
const standsTimeout = 5 * time.Second

// awaitSettle waits until a blocking send's task settles, for at most
// Config.BlockingTimeout. Past that it returns the task as it stands
// (submitted when no worker took it, working when one is on it): a task
// that has not settled is a valid answer to a send, and the client polls
// it with GetTask or follows it with SubscribeToTask. The task is not
// touched: it stays queued and runs when a worker takes it. When the
// client goes away first, the wait ends with its context's error, as
// before.
func (e *Edge) awaitSettle(ctx context.Context, c *call, watch *bus.SettleWatch, rec *bus.TaskRecord) (*bus.TaskRecord, error) {
	bound := e.cfg.BlockingTimeout
	if bound < 0 {
		return watch.Wait(ctx, rec)
	}
	start := time.Now()
	wctx, cancel := context.WithTimeoutCause(ctx, bound, errBlockingBound)
	defer cancel()
	settled, err := watch.Wait(wctx, rec)
	if err == nil || ctx.Err() != nil || !errors.Is(context.Cause(wctx), errBlockingBound) {
		return settled, err
	}
	lctx, lcancel := context.WithTimeout(ctx, standsTimeout)
	defer lcancel()
	cur, lerr := e.bus.LoadTask(lctx, rec.Task.ID)
	if lerr != nil {
		// The task as last seen (its user turn recorded, not settled) is
		// still a true answer; the client's GetTask reads it afresh.
		c.log.Warn("blocking send reached its bound and the task could not be read again; answering it as last seen",
			"err", lerr)
		cur = rec
	}
	c.log.Info("blocking send answered before its task settled; the task stays queued and runs when a worker takes it",
		"state", cur.Task.Status.State, "waited", time.Since(start).Round(time.Millisecond), "blocking_timeout", bound)
	return cur, nil
}

// workMsgID is the Nats-Msg-Id of a turn's work item: the same for every
// retry of the turn while idempotency is on, unique when it is off (a
// repeated messageId is then a new turn, not a duplicate to drop).
func (e *Edge) workMsgID(taskID, messageID string) string {
	if e.cfg.IdempotencyWindow < 0 {
		return "w-" + uuid.NewString()
	}
	return bus.WorkMsgID(taskID, messageID)
}
