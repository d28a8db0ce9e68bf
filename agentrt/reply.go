package agentrt

import (
	"errors"
	"slices"

	"github.com/a2amesh/a2amesh/a2a"
)

// MessageReplier is implemented by an agent that may answer a send with a
// Message instead of a task (A2A: SendMessage returns a Task or a
// Message). The worker lists a2a.MessageRepliesExtension in the agent's
// card while RepliesWithMessage is true, and edges then hold back the
// first answer of a stream or a non-blocking send until the agent's first
// output: a reply, or the task. The agent replies with Reply.
type MessageReplier interface {
	Agent
	RepliesWithMessage() bool
}

// ErrCannotReply is returned by Reply when the turn cannot be answered
// with a message: the agent does not declare message replies
// (MessageReplier), the turn is not the one that created the task (the
// client already knows the task), or the turn already has output (a
// status, an artifact; also of an earlier run of the turn whose worker
// died), which a stream has shown the client as a task. Nothing was
// recorded; the agent may still complete the task (Complete, or Event
// with a Message).
var ErrCannotReply = errors.New("agentrt: this turn cannot be answered with a message")

// Reply answers the send that created the task with m instead of the task
// and ends the turn. The client gets m (role agent, its context id the
// task's, no task id, a message id made when it has none), and the task
// stays hidden from it: GetTask, ListTasks and SubscribeToTask do not find
// it. The reply is recorded in the task's log as its final event, so a
// retried send with the same messageId, through any edge, gets the same
// message, also after this worker is gone. Reply fails with
// ErrCannotReply (nothing recorded) when the turn cannot be answered with
// a message, and with ErrTaskClosed when the task was canceled.
//
// A writer that is not the worker's (a test's, say) gets m as Event.
func Reply(w EventWriter, m a2a.Message) error {
	if wr, ok := w.(*writer); ok {
		return wr.reply(&m)
	}
	return w.Event(&a2a.StreamResponse{Message: &m})
}

// ReplyText is Reply with a message of one text part.
func ReplyText(w EventWriter, text string) error {
	return Reply(w, a2a.Message{Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}})
}

// replies reports whether agent declares message replies.
func replies(agent Agent) bool {
	r, ok := agent.(MessageReplier)
	return ok && r.RepliesWithMessage()
}

// withRepliesExtension returns card listing a2a.MessageRepliesExtension.
func withRepliesExtension(card a2a.AgentCard) a2a.AgentCard {
	if card.RepliesWithMessage() {
		return card
	}
	card.Capabilities.Extensions = append(slices.Clip(card.Capabilities.Extensions), a2a.AgentExtension{
		URI:         a2a.MessageRepliesExtension,
		Description: "The agent may answer a send with a Message instead of a Task.",
	})
	return card
}

// reply records m as the agent's message reply (see Reply).
func (w *writer) reply(m *a2a.Message) error {
	if !w.mayReply() {
		return ErrCannotReply
	}
	return w.update(w.replyEvent(m))
}

// replyEvent is the event that records m as the turn's message reply: a
// completed status whose message carries a2a.ReplyKey.
func (w *writer) replyEvent(m *a2a.Message) *a2a.StreamResponse {
	own := w.ownMessage(m)
	md := make(a2a.Metadata, len(own.Metadata)+1)
	for k, v := range own.Metadata {
		md[k] = v
	}
	md[a2a.ReplyKey] = true
	own.Metadata = md
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: w.taskID, ContextID: w.ctxID,
		Status: a2a.TaskStatus{State: a2a.StateCompleted, Message: own, Timestamp: a2a.Now()},
	}}
}

// mayReply reports whether the turn can still be answered with a message:
// the agent declares replies, the turn created the task (its history is
// the one user message), and nothing but claims was recorded since. A
// run after a crash may reply only if the run before it decided nothing
// (the task's last event is that run's claim): a stream may have shown
// the client the task otherwise.
func (w *writer) mayReply() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mayReplyLocked()
}

func (w *writer) mayReplyLocked() bool {
	if !w.replies || w.decided || w.rec == nil {
		return false
	}
	if w.claimed {
		if !w.undecided {
			return false // the run's claim decided the turn already
		}
	} else if !w.rec.Undecided && w.rec.TurnRuns > 0 {
		return false // an earlier run decided it
	}
	t := &w.rec.Task
	return len(t.History) == 1 && t.History[0].MessageID == w.turn && len(t.Artifacts) == 0 &&
		t.Status.Message == nil && !t.Status.State.Final()
}

// claim starts the run with a working status. While the turn may still be
// answered with a message, the status carries a2a.ClaimKey: edges holding
// back a stream's first event for the agent's decision skip it.
func (w *writer) claim() error {
	w.mu.Lock()
	undecided := w.mayReplyLocked()
	w.mu.Unlock()
	if !undecided {
		return w.Working("")
	}
	ev := w.statusEvent(a2a.StateWorking, "")
	ev.StatusUpdate.Metadata = a2a.Metadata{a2a.ClaimKey: true}
	w.mu.Lock()
	w.undecided = true
	w.mu.Unlock()
	return w.update(ev)
}

// decide records that an agent that may answer with a message answers
// with the task (its first event was a task or a status without a
// message, which Event would otherwise skip): a working status without
// the claim's mark, which tells waiting edges to answer with the task.
func (w *writer) decide() error {
	if !w.mayReply() {
		return nil
	}
	return w.Working("")
}
