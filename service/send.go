package service

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/taskstore"
)

// sendPlan is a validated send whose user turn is recorded in the task's
// log and handed to the agent's workers (tasks.Service.Submit).
type sendPlan struct {
	req *a2a.SendMessageRequest
	rec *taskstore.TaskRecord // snapshot right after the user turn
	sub *taskstore.Submitted
}

func (p *sendPlan) historyLength() int {
	if p.req.Configuration == nil {
		return -1
	}
	return historyLen(p.req.Configuration.HistoryLength)
}

func (p *sendPlan) returnImmediately() bool {
	return p.req.Configuration != nil && p.req.Configuration.ReturnImmediately
}

// submit validates a send and submits its user turn: a new task, or a new
// turn of an interrupted one. With blocking (SendMessage), the task is
// watched from before its work is enqueued, for awaitSettle, unless the
// client asked to return at once.
func (s *Service) submit(ctx context.Context, c *Call, req *a2a.SendMessageRequest, blocking bool) (*sendPlan, error) {
	p := &sendPlan{req: req}
	msg := req.Message
	if msg != nil && msg.MessageID == "" && c.Legacy02 {
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
	card, _ := s.cfg.Agents.Lookup(c.agent)
	cfg := req.Configuration
	if cfg != nil && !a2a.ModesOverlap(cfg.AcceptedOutputModes, card.DefaultOutputModes) {
		return nil, a2a.ErrContentTypeNotSupported.With("Incompatible content types: acceptedOutputModes %v not supported by agent %s (it produces %v)",
			cfg.AcceptedOutputModes, c.agent, card.DefaultOutputModes)
	}
	turn := taskstore.Turn{Agent: c.agent, Owner: c.Principal, Message: *msg, Metadata: req.Metadata,
		Extensions: c.Extensions, Wait: blocking && !p.returnImmediately()}
	if cfg != nil {
		turn.AcceptedOutputModes = cfg.AcceptedOutputModes
	}
	if cfg != nil && cfg.TaskPushNotificationConfig != nil {
		// push: validated here, stored once the turn is recorded and
		// before it is enqueued (push.go)
		if err := s.checkSendPush(ctx, msg.TaskID, cfg.TaskPushNotificationConfig); err != nil {
			return nil, err
		}
		turn.Prepare = func(ctx context.Context, rec *taskstore.TaskRecord) error {
			p.rec = rec
			return s.storeSendPush(ctx, c, p)
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
		rec, err := s.loadTask(ctx, c, msg.TaskID)
		switch {
		case err == nil:
			turn.Task = rec
		case errors.Is(err, a2a.ErrTaskNotFound) && c.Legacy02:
			turn.TaskID = msg.TaskID // 0.2 clients name new tasks themselves
		default:
			return nil, err
		}
	}
	sub, err := s.tasks.Submit(ctx, turn)
	if err != nil {
		return nil, err
	}
	p.rec, p.sub = sub.Task, sub
	c.Log = c.Log.With("task_id", p.rec.Task.ID, "context_id", p.rec.Task.ContextID)
	c.noteTask(p.rec)
	return p, nil
}

func (s *Service) sendTarget(req *a2a.SendMessageRequest) string {
	if req.Message == nil {
		return ""
	}
	return req.Message.TaskID
}

// SendMessage records the user's turn (a new task, or a new turn of an
// interrupted one; a retry with the same messageId finds the turn it
// repeats) and, unless the request asks to return at once, waits until
// the task settles, for at most Config.BlockingTimeout. It returns the
// task, its history trimmed to the request's historyLength, or the
// agent's message when the agent answered with one (reply.go).
func (s *Service) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (_ *a2a.StreamResponse, err error) {
	c, err := s.resolve(ctx, "SendMessage", policy.Send, req.Tenant, s.sendTarget(req))
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	p, err := s.submit(ctx, c, req, true)
	if err != nil {
		return nil, err
	}
	defer p.sub.Close()
	rec := p.rec
	switch {
	case rec.Task.IsReply(): // a retry of a send answered with a message
	case p.returnImmediately() && s.awaitsReply(c, rec):
		p.sub.Close()
		if rec, err = s.awaitFirstOutput(ctx, c, rec); err != nil {
			return nil, err
		}
	case !p.returnImmediately():
		if rec, err = s.awaitSettle(ctx, c, p); err != nil {
			return nil, err
		}
	}
	if rec.Task.Status.State.Final() {
		c.activateRecorded(rec) // the turn ran: what its agent activated
	} else {
		s.activateDeclared(c) // not yet: what the agent may activate
	}
	if m := rec.Task.Reply(); m != nil {
		return &a2a.StreamResponse{Message: m}, nil
	}
	t := rec.Task.WithHistory(p.historyLength())
	return &a2a.StreamResponse{Task: &t}, nil
}

// awaitSettle waits until a blocking send's task settles, for at most
// Config.BlockingTimeout. Past that it returns the task as it stands
// (submitted when no worker took it, working when one is on it): a task
// that has not settled is a valid answer to a send, and the client polls
// it with GetTask or follows it with SubscribeToTask. The task is not
// touched: it stays queued and runs when a worker takes it. A task whose
// worker cannot record its steps for lack of storage is answered as soon
// as the worker says so. When the client goes away first, the wait ends
// with its context's error, as before.
func (s *Service) awaitSettle(ctx context.Context, c *Call, p *sendPlan) (*taskstore.TaskRecord, error) {
	var until time.Time
	bound := s.cfg.BlockingTimeout
	if bound >= 0 {
		until = time.Now().Add(bound)
	}
	start := time.Now()
	rec, err := s.tasks.Await(ctx, p.sub, until)
	var unsettled *taskstore.UnsettledError
	if !errors.As(err, &unsettled) {
		return rec, err
	}
	if unsettled.ReadErr != nil {
		// The task as last seen (its user turn recorded, not settled) is
		// still a true answer; the client's GetTask reads it afresh.
		c.Log.Warn("blocking send reached its bound and the task could not be read again; answering it as last seen",
			"err", unsettled.ReadErr)
	}
	if unsettled.StoreFull {
		c.Log.Warn("blocking send answered before its task settled: the task store is full, so its worker cannot record a step; the task stays queued and runs once space returns",
			"state", rec.Task.Status.State, "waited", time.Since(start).Round(time.Millisecond))
		return rec, nil
	}
	c.Log.Info("blocking send answered before its task settled; the task stays queued and runs when a worker takes it",
		"state", rec.Task.Status.State, "waited", time.Since(start).Round(time.Millisecond), "blocking_timeout", bound)
	return rec, nil
}
