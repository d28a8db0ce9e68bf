package edge

import (
	"context"
	"errors"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/tasks"
	"github.com/google/uuid"
)

// sendPlan is a validated send whose user turn is recorded in the task's
// log and handed to the agent's workers (tasks.Service.Submit).
type sendPlan struct {
	params a2a.SendMessageRequest
	rec    *bus.TaskRecord // snapshot right after the user turn
	sub    *tasks.Submitted
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

// taskIDSpace namespaces the ids the edge derives from a client's ids
// (push config ids, push.go).
var taskIDSpace = tasks.IDSpace

// submit validates a send and submits its user turn: a new task, or a new
// turn of an interrupted one. With blocking (SendMessage), the task is
// watched from before its work is enqueued, for awaitSettle, unless the
// client asked to return at once.
func (e *Edge) submit(ctx context.Context, c *call, blocking bool) (*sendPlan, error) {
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
	card, _ := e.reg.Lookup(c.agent)
	cfg := p.params.Configuration
	if cfg != nil && !a2a.ModesOverlap(cfg.AcceptedOutputModes, card.DefaultOutputModes) {
		return nil, a2a.ErrContentTypeNotSupported.With("Incompatible content types: acceptedOutputModes %v not supported by agent %s (it produces %v)",
			cfg.AcceptedOutputModes, c.agent, card.DefaultOutputModes)
	}
	turn := tasks.Turn{Agent: c.agent, Owner: c.owner, Message: *msg, Metadata: p.params.Metadata,
		Wait: blocking && !p.returnImmediately()}
	if cfg != nil {
		turn.AcceptedOutputModes = cfg.AcceptedOutputModes
	}
	if cfg != nil && cfg.TaskPushNotificationConfig != nil {
		// push: validated here, stored once the turn is recorded and
		// before it is enqueued (push.go)
		if err := e.checkSendPush(ctx, c, msg.TaskID, cfg.TaskPushNotificationConfig); err != nil {
			return nil, err
		}
		turn.Prepare = func(ctx context.Context, rec *bus.TaskRecord) error {
			p.rec = rec
			return e.storeSendPush(ctx, c, p)
		}
		turn.PrepareFailure = "the push notification config could not be stored"
	}
	if msg.TaskID != "" && !bus.ValidToken(msg.TaskID) {
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(msg.TaskID, 64))
	}
	if msg.ContextID != "" && len(msg.ContextID) > 256 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: contextId is too long")
	}
	if msg.TaskID != "" {
		rec, err := e.loadTask(ctx, c, msg.TaskID)
		switch {
		case err == nil:
			turn.Task = rec
		case errors.Is(err, a2a.ErrTaskNotFound) && isLegacySend(c.req.Method):
			turn.TaskID = msg.TaskID // 0.2 clients name new tasks themselves
		default:
			return nil, err
		}
	}
	sub, err := e.tasks.Submit(ctx, turn)
	if err != nil {
		return nil, err
	}
	p.rec, p.sub, p.replay = sub.Task, sub, sub.Replay
	return p, nil
}

func isLegacySend(method string) bool {
	return method == "tasks/send" || method == "tasks/sendSubscribe"
}

// send serves SendMessage / message/send.
func (e *Edge) send(c *call) (any, error) {
	ctx := c.r.Context()
	p, err := e.submit(ctx, c, true)
	if err != nil {
		return nil, err
	}
	defer p.sub.Close()
	c.log = c.log.With("task_id", p.rec.Task.ID, "context_id", p.rec.Task.ContextID)
	c.taskTraced(p.rec)
	rec := p.rec
	if !p.returnImmediately() {
		if rec, err = e.awaitSettle(ctx, c, p); err != nil {
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

// awaitSettle waits until a blocking send's task settles, for at most
// Config.BlockingTimeout. Past that it returns the task as it stands
// (submitted when no worker took it, working when one is on it): a task
// that has not settled is a valid answer to a send, and the client polls
// it with GetTask or follows it with SubscribeToTask. The task is not
// touched: it stays queued and runs when a worker takes it. When the
// client goes away first, the wait ends with its context's error, as
// before.
func (e *Edge) awaitSettle(ctx context.Context, c *call, p *sendPlan) (*bus.TaskRecord, error) {
	var until time.Time
	bound := e.cfg.BlockingTimeout
	if bound >= 0 {
		until = time.Now().Add(bound)
	}
	start := time.Now()
	rec, err := e.tasks.Await(ctx, p.sub, until)
	var unsettled *tasks.UnsettledError
	if !errors.As(err, &unsettled) {
		return rec, err
	}
	if unsettled.ReadErr != nil {
		// The task as last seen (its user turn recorded, not settled) is
		// still a true answer; the client's GetTask reads it afresh.
		c.log.Warn("blocking send reached its bound and the task could not be read again; answering it as last seen",
			"err", unsettled.ReadErr)
	}
	c.log.Info("blocking send answered before its task settled; the task stays queued and runs when a worker takes it",
		"state", rec.Task.Status.State, "waited", time.Since(start).Round(time.Millisecond), "blocking_timeout", bound)
	return rec, nil
}
