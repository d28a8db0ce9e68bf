package agents

import (
	"context"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Echo answers with the text and data parts it got, as one artifact.
type Echo struct{}

// Card describes echo. It declares an extended card (ExtendedCard).
func (Echo) Card() a2a.AgentCard {
	c := card("echo", "Answers with the text and data it receives, as an artifact.", echoSkill)
	c.Capabilities.ExtendedAgentCard = a2a.Bool(true)
	return c
}

var echoSkill = a2a.AgentSkill{ID: "echo", Name: "Echo", Description: "Repeats the message's text and data parts.",
	Tags: []string{"test", "echo"}, Examples: []string{"hello"}}

// EchoDataSkill is the skill echo's extended card adds to its public card.
const EchoDataSkill = "echo-data"

// ExtendedCard is echo's extended agent card, served to authenticated
// callers (GetExtendedAgentCard): the public card with one more skill,
// which the edge's auth file may hide from some principals.
func (e Echo) ExtendedCard() *a2a.AgentCard {
	c := e.Card()
	c.Description += " Authenticated callers also learn that structured data comes back unchanged."
	c.Skills = append(c.Skills, a2a.AgentSkill{ID: EchoDataSkill, Name: "Echo data",
		Description: "Returns application/json data parts as they were sent, in the same artifact.",
		Tags:        []string{"test", "echo", "data"}, InputModes: []string{"application/json"},
		OutputModes: []string{"application/json"}})
	return &c
}

// Run echoes the message.
func (Echo) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	var parts []a2a.Part
	for _, p := range req.Message.Parts {
		if p.Kind == a2a.PartText || p.Kind == a2a.PartData {
			parts = append(parts, a2a.Part{Kind: p.Kind, Text: p.Text, Data: p.Data, MediaType: p.MediaType})
		}
	}
	if len(parts) == 0 {
		parts = []a2a.Part{a2a.TextPart("")}
	}
	if err := w.Artifact(a2a.Artifact{Name: "echo", Parts: parts}, false, true); err != nil {
		return err
	}
	return w.Complete("")
}

var _ agentrt.ExtendedCarder = Echo{}
