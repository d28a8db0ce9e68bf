package agents

import (
	"context"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Echo answers with the text and data parts it got, as one artifact.
type Echo struct{}

// Card describes echo.
func (Echo) Card() a2a.AgentCard {
	return card("echo", "Answers with the text and data it receives, as an artifact.",
		a2a.AgentSkill{ID: "echo", Name: "Echo", Description: "Repeats the message's text and data parts.",
			Tags: []string{"test", "echo"}, Examples: []string{"hello"}})
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
