package service

import (
	"context"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Message replies. An agent whose card lists a2a.MessageRepliesExtension
// may answer the send that created a task with a Message instead of the
// task (agentrt.Reply). The worker records the reply as the task's final
// event (a completed status whose message carries a2a.ReplyKey), so the
// answer is as durable as any task: a retried send with the same
// messageId finds the task through its derived id, on any edge, and gets
// the same message from the log. Such a task is hidden from the client
// (loadTask, ListTasks): it never learned its id.
//
// A blocking send waits for the task to settle as always and answers the
// reply when the task ended as one. A stream, or a send that asked to
// return at once, cannot answer before the agent decided: for such an
// agent, while its turn is undecided (nothing but a bare working status
// recorded since the send), the answer is held back until the agent's
// first output. A reply is then the answer (a stream's one event);
// anything else makes the answer the task, as for any agent.

// awaitsReply reports whether a send's first answer must wait for the
// agent's first output: the agent may answer with a message and the task
// rec (as the send left it) is still undecided.
func (s *Service) awaitsReply(c *Call, rec *taskstore.TaskRecord) bool {
	card, ok := s.cfg.Agents.Lookup(c.agent)
	return ok && card.RepliesWithMessage() && undecided(&rec.Task)
}

// undecided reports whether t is a task whose first turn has no output
// yet: the one user message, no artifact, and submitted or working
// without a status message.
func undecided(t *a2a.Task) bool {
	if len(t.History) != 1 || len(t.Artifacts) > 0 || t.Status.Message != nil {
		return false
	}
	return t.Status.State == a2a.StateSubmitted || t.Status.State == a2a.StateWorking
}

// decides reports whether ev, an event of the log after the send, decides
// how the send is answered: anything but a worker's claim of the turn
// (a2a.ClaimKey).
func decides(ev *a2a.StreamResponse) bool { return !a2a.IsClaimEvent(ev) }

// replyEvent is the message a task's reply event carries, as the client
// gets it, at the event's position.
func replyEvent(contextID string, seq uint64, su *a2a.TaskStatusUpdateEvent) Event {
	t := a2a.Task{ContextID: contextID, Status: su.Status}
	return Event{Seq: seq, Resp: &a2a.StreamResponse{Message: t.Reply()}}
}

// replyOnly is the stream of a send answered with a message: the message,
// then the end.
func replyOnly(rec *taskstore.TaskRecord) Stream {
	return func(yield func(Event, error) bool) {
		yield(Event{Seq: rec.LastSeq, Resp: &a2a.StreamResponse{Message: rec.Task.Reply()}}, nil)
	}
}

// firstOutput reads task rec's log after the send until the event that
// decides the answer (see decides), passing keep-alives and a stream
// error to yield, and returns that event (the reply event, or the task's
// first output). ok is false when no event decided: the stream ended (an
// error, yield refusing a keep-alive, ctx ending).
func (s *Service) firstOutput(ctx context.Context, c *Call, rec *taskstore.TaskRecord, yield func(Event, error) bool) (first Event, ok bool) {
	s.pumpClaims(ctx, c, rec.Task.ID, rec.LastSeq, func(ev Event, err error) bool {
		if err != nil || ev.Resp == nil {
			return yield(ev, err)
		}
		if !decides(ev.Resp) {
			return true // a claim: not for the client
		}
		first, ok = ev, true
		return false
	})
	return first, ok
}

// replyStream is the stream of a send to an agent that may answer with a
// message, while its turn is undecided: keep-alives until the agent's
// first output; then the reply as the stream's one event, or the task as
// the send left it, that first output, and the task's events until it
// settles, as for any stream. (The worker's claim is not sent: it is
// only the mark of an undecided turn.)
func (s *Service) replyStream(ctx context.Context, c *Call, p *sendPlan) Stream {
	rec := p.rec
	t := rec.Task.WithHistory(p.historyLength())
	return func(yield func(Event, error) bool) {
		first, ok := s.firstOutput(ctx, c, rec, yield)
		if !ok {
			return
		}
		if a2a.IsReplyEvent(first.Resp) {
			yield(replyEvent(rec.Task.ContextID, first.Seq, first.Resp.StatusUpdate), nil)
			return
		}
		if !yield(Event{Seq: rec.LastSeq, Resp: &a2a.StreamResponse{Task: &t}}, nil) || !yield(first, nil) {
			return
		}
		if su := first.Resp.StatusUpdate; su != nil && su.Status.State.Final() {
			return
		}
		_, _ = s.pump(ctx, c, rec.Task.ID, first.Seq, 0, yield)
	}
}

// awaitFirstOutput is a send that asked to return at once to an agent
// that may answer with a message: it waits, at most the blocking bound,
// for the agent's first output and returns the task as it then stands
// (ended as a reply, or the task to answer).
func (s *Service) awaitFirstOutput(ctx context.Context, c *Call, rec *taskstore.TaskRecord) (*taskstore.TaskRecord, error) {
	wctx := ctx
	if bound := s.cfg.BlockingTimeout; bound >= 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	start := time.Now()
	var streamErr error
	_, ok := s.firstOutput(wctx, c, rec, func(ev Event, err error) bool {
		streamErr = err
		return err == nil
	})
	switch {
	case streamErr != nil:
		return nil, streamErr
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case !ok:
		c.Log.Info("non-blocking send to an agent that may answer with a message answered with the task: the agent had no output within the bound",
			"waited", time.Since(start).Round(time.Millisecond))
	}
	return s.readTask(ctx, rec.Task.ID)
}
