package agents

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Limits of the slow agent's parameters.
const (
	slowDefaultChunks = 5
	slowMaxChunks     = 1000
	slowDefaultDelay  = 200 * time.Millisecond
	slowMaxDelay      = 10 * time.Second
)

// Slow streams "chunks=N delay=D" artifact chunks (append), D apart, and
// stops promptly when canceled.
type Slow struct{}

// Card describes slow.
func (Slow) Card() a2a.AgentCard {
	return card("slow", "Streams N artifact chunks D apart: send \"chunks=5 delay=200ms\".",
		a2a.AgentSkill{ID: "slow", Name: "Slow stream", Description: "Streams numbered chunks with a delay; honours cancel.",
			Tags: []string{"test", "stream"}, Examples: []string{"chunks=10 delay=500ms"}})
}

// ParseSlow reads chunks=N delay=D from text, with defaults and caps.
func ParseSlow(text string) (chunks int, delay time.Duration) {
	chunks, delay = slowDefaultChunks, slowDefaultDelay
	for _, f := range strings.Fields(text) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "chunks":
			if n, err := strconv.Atoi(v); err == nil && n >= 1 {
				chunks = min(n, slowMaxChunks)
			}
		case "delay":
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				delay = min(d, slowMaxDelay)
			} else if ms, err := strconv.Atoi(v); err == nil && ms >= 0 {
				delay = min(time.Duration(ms)*time.Millisecond, slowMaxDelay)
			}
		}
	}
	return chunks, delay
}

// Run streams the chunks.
func (Slow) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	chunks, delay := ParseSlow(req.Text())
	if err := w.Working(fmt.Sprintf("streaming %d chunks, %s apart", chunks, delay)); err != nil {
		return err
	}
	// A stable id: if this turn runs again after a crash, chunk 1 (sent
	// without append) replaces the partial artifact of the earlier run.
	id := req.ArtifactID("chunks")
	t := time.NewTimer(0)
	defer t.Stop()
	for i := 1; i <= chunks; i++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		part := a2a.TextPart(fmt.Sprintf("chunk %d/%d\n", i, chunks))
		if err := w.Artifact(a2a.Artifact{ArtifactID: id, Name: "chunks", Parts: []a2a.Part{part}}, i > 1, i == chunks); err != nil {
			return err
		}
		t.Reset(delay)
	}
	return w.Complete(fmt.Sprintf("sent %d chunks", chunks))
}
