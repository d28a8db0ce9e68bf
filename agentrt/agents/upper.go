package agents

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Limits of the upper agent.
const (
	upperDelay    = 100 * time.Millisecond
	upperMaxWords = 1000
)

// Upper streams the text it gets back in upper case, one word per artifact
// chunk (append), 100ms apart, and stops promptly when canceled. It is the
// streaming delegate of planner.
type Upper struct{}

// Card describes upper.
func (Upper) Card() a2a.AgentCard {
	return card("upper", "Streams your text back in upper case, one word per artifact chunk, 100ms apart.",
		a2a.AgentSkill{ID: "upper", Name: "Upper case stream",
			Description: fmt.Sprintf("Upper-cases the text word by word, streaming each word as an appended chunk; at most %d words; honours cancel.", upperMaxWords),
			Tags:        []string{"example", "stream"}, Examples: []string{"hello brave new world"}})
}

// Run streams the words.
func (Upper) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	words := strings.Fields(req.Text())
	if len(words) > upperMaxWords {
		return w.Reject(fmt.Sprintf("upper takes at most %d words, got %d", upperMaxWords, len(words)))
	}
	id := req.ArtifactID("upper")
	if len(words) == 0 {
		if err := w.Artifact(a2a.Artifact{ArtifactID: id, Name: "upper", Parts: []a2a.Part{a2a.TextPart("")}}, false, true); err != nil {
			return err
		}
		return w.Complete("")
	}
	if err := w.Working(fmt.Sprintf("streaming %d words", len(words))); err != nil {
		return err
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for i, word := range words {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		chunk := strings.ToUpper(word)
		if i > 0 {
			chunk = " " + chunk
		}
		// The first chunk, sent without append, replaces what a dead
		// earlier run of this turn left (the id is stable).
		if err := w.Artifact(a2a.Artifact{ArtifactID: id, Name: "upper", Parts: []a2a.Part{a2a.TextPart(chunk)}}, i > 0, i == len(words)-1); err != nil {
			return err
		}
		t.Reset(upperDelay)
	}
	return w.Complete(fmt.Sprintf("sent %d words", len(words)))
}
