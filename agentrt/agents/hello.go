package agents

import (
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Hello answers a send with a message, not a task: "hello, <text>". It
// shows agentrt.Reply; a turn that cannot be answered with a message (a
// later turn of a task) completes its task with the greeting instead.
type Hello struct{}

// Card describes hello.
func (Hello) Card() a2a.AgentCard {
	return card("hello", "Answers with a greeting as a message, without a task.",
		a2a.AgentSkill{ID: "hello", Name: "Hello", Description: "Greets the sender in a message reply.",
			Tags: []string{"test", "message"}, Examples: []string{"world"}})
}

// RepliesWithMessage declares that hello answers with messages.
func (Hello) RepliesWithMessage() bool { return true }

// Run replies with the greeting.
func (Hello) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	text := "hello, " + req.Text()
	err := agentrt.ReplyText(w, text)
	if errors.Is(err, agentrt.ErrCannotReply) {
		return w.Complete(text)
	}
	return err
}
