package agents

import (
	"context"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Ask asks for a name (input-required), then greets it.
type Ask struct{}

// Card describes ask.
func (Ask) Card() a2a.AgentCard {
	return card("ask", "Asks for your name, then greets you: a two-turn conversation.",
		a2a.AgentSkill{ID: "greet", Name: "Greet", Description: "Multi-turn: asks for a name (input-required), then greets.",
			Tags: []string{"test", "multi-turn"}, Examples: []string{"hi"}})
}

// Question is the text ask sends when it needs a name.
const Question = "What is your name?"

// Run asks on the first turn and greets on the next.
func (Ask) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	asked := false
	for _, m := range req.History {
		if m.Role == a2a.RoleAgent && m.Text() == Question {
			asked = true
		}
	}
	name := strings.TrimSpace(req.Text())
	if !asked || name == "" {
		return w.InputRequired(Question)
	}
	greeting := "Hello, " + name + "!"
	if err := w.Artifact(a2a.Artifact{Name: "greeting", Parts: []a2a.Part{a2a.TextPart(greeting)}}, false, true); err != nil {
		return err
	}
	return w.Complete(greeting)
}
