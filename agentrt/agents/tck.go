package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// TCK is the system-under-test agent for the A2A conformance suite (the
// TCK): what it does with a turn is chosen by the prefix of the turn's
// messageId, the in-band signal the suite uses to ask for a behaviour
// (complete, add an artifact, stream, ask for input, reject, stay working).
// A messageId with no known prefix gets input-required on every turn, so a
// task a client creates stays open for follow-ups, cancel and subscribe
// until a turn with a completing prefix (tck-complete-task) ends it.
//
// Every scenario is listed in tckScenarios; the card's skills are built
// from that table, so what the card says is what the agent does.
type TCK struct {
	// Hold is how long a test-resubscribe-message-id turn stays working.
	// Zero: twice TCK_STREAMING_TIMEOUT (seconds, from the environment,
	// as the suite reads it), 4s when that is unset; capped at tckMaxHold.
	Hold time.Duration
}

// Bounds of the long-running scenario.
const (
	tckDefaultHold = 4 * time.Second // 2 × the suite's default streaming timeout (2s)
	tckMaxHold     = 60 * time.Second
)

// tckRun is what one scenario does with a turn.
type tckRun func(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter, hold time.Duration) error

// tckScenario is one behaviour of the tck agent.
type tckScenario struct {
	// Prefix selects the scenario: the turn's messageId starts with it
	// (the longest matching prefix wins). Empty for the default.
	Prefix string
	// Skill groups scenarios into the card's skills (a tckSkills id).
	Skill string
	// Does says what the agent does, for the card.
	Does string
	run  tckRun
}

// Values the conformance suite checks in the answers.
const (
	tckCompleteText  = "Hello from TCK"
	tckMessageText   = "Direct message response"
	tckFileName      = "output.txt"
	tckFileMediaType = "text/plain"
	tckFileURL       = "https://example.com/output.txt"
	tckChunk1        = "chunk-1 "
	tckChunk2        = "chunk-2"
)

// What the agent says in the other scenarios.
const (
	tckRejectedText  = "rejected"
	tckFailedText    = "failed"
	tckInputQuestion = "Input required: send a follow-up message to this task."
	tckDefaultPrompt = "No tck scenario for this messageId: send more input, or a follow-up whose messageId starts with tck-complete-task to finish."
)

// tckData is the data part of tck-artifact-data.
var tckData = map[string]any{"key": "value", "count": 42}

// tckDefault answers a messageId with no known prefix.
var tckDefault = tckScenario{
	Skill: "input", Does: "any other messageId: input-required on every turn, asking for more input",
	run: func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
		return w.InputRequired(tckDefaultPrompt)
	},
}

// tckScenarios is every scenario, by messageId prefix.
var tckScenarios = []tckScenario{
	{Prefix: "tck-complete-task", Skill: "complete", Does: `completed, with the status message "` + tckCompleteText + `"`,
		run: completeWith(tckCompleteText)},
	{Prefix: "tck-message-response", Skill: "complete", Does: `answers with a message "` + tckMessageText + `", no task (on a later turn of a task: completes it with that status message)`,
		run: replyWith(tckMessageText)},
	{Prefix: "tck-stream-002", Skill: "complete", Does: "completed at once, no artifact",
		run: completeWith("")},

	{Prefix: "tck-artifact-text", Skill: "artifacts", Does: `completed with a text artifact "Generated text content"`,
		run: artifactThenComplete("text", a2a.TextPart("Generated text content"))},
	{Prefix: "tck-artifact-file", Skill: "artifacts", Does: "completed with a file artifact (raw bytes) named " + tckFileName + ", " + tckFileMediaType,
		run: artifactThenComplete("file", tckFilePart())},
	{Prefix: "tck-artifact-file-url", Skill: "artifacts", Does: "completed with a file artifact by URL " + tckFileURL + ", named " + tckFileName + ", " + tckFileMediaType,
		run: artifactThenComplete("file-url", a2a.Part{Kind: a2a.PartURL, URL: tckFileURL, Filename: tckFileName, MediaType: tckFileMediaType})},
	{Prefix: "tck-artifact-data", Skill: "artifacts", Does: `completed with a data artifact {"key":"value","count":42}`,
		run: artifactThenComplete("data", a2a.DataPart(tckData))},

	{Prefix: "tck-stream-001", Skill: "stream", Does: `working, a text artifact "Stream hello from TCK", completed`,
		run: artifactThenComplete("stream", a2a.TextPart("Stream hello from TCK"))},
	{Prefix: "tck-stream-003", Skill: "stream", Does: `working, a text artifact "Stream task lifecycle", completed`,
		run: artifactThenComplete("stream", a2a.TextPart("Stream task lifecycle"))},
	{Prefix: "tck-stream-ordering-001", Skill: "stream", Does: `working, a text artifact "Ordered output", completed`,
		run: artifactThenComplete("stream", a2a.TextPart("Ordered output"))},
	{Prefix: "tck-stream-artifact-text", Skill: "stream", Does: `working, a text artifact "Streamed text content", completed`,
		run: artifactThenComplete("stream", a2a.TextPart("Streamed text content"))},
	{Prefix: "tck-stream-artifact-file", Skill: "stream", Does: "working, a file artifact named " + tckFileName + ", completed",
		run: artifactThenComplete("file", tckFilePart())},
	{Prefix: "tck-stream-artifact-chunked", Skill: "stream", Does: `working, one artifact in two chunks "` + tckChunk1 + `" + "` + tckChunk2 + `" (append, lastChunk), completed`,
		run: chunkedThenComplete},

	{Prefix: "tck-input-required", Skill: "input", Does: "input-required (on every turn: follow-ups with this prefix keep asking)",
		run: func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
			return w.InputRequired(tckInputQuestion)
		}},

	{Prefix: "tck-reject-task", Skill: "refuse", Does: `rejected, with the status message "` + tckRejectedText + `"`,
		run: func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
			return w.Reject(tckRejectedText)
		}},
	{Prefix: "tck-fail-task", Skill: "refuse", Does: `failed, with the status message "` + tckFailedText + `" (a mesh addition, not a TCK scenario)`,
		run: func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
			return w.Fail(tckFailedText)
		}},

	{Prefix: "test-resubscribe-message-id", Skill: "long", Does: "working for 2 × TCK_STREAMING_TIMEOUT (4s by default), then completed; cancel ends it at once",
		run: holdThenComplete},
}

// tckSkills are the card's skills, in order; their examples come from
// tckScenarios.
var tckSkills = []a2a.AgentSkill{
	{ID: "complete", Name: "Complete at once", Description: "The task completes in one turn, with a status message or nothing.", Tags: []string{"tck", "completed"}},
	{ID: "artifacts", Name: "Artifacts", Description: "The task completes with one artifact of a given part type (text, file bytes, file URL, data).", Tags: []string{"tck", "artifact"}},
	{ID: "stream", Name: "Streamed lifecycle", Description: "working, artifact update(s), completed: for streaming sends and event-order checks.", Tags: []string{"tck", "stream"}},
	{ID: "input", Name: "Input required", Description: "The task stops at input-required and stays open for follow-ups, cancel and subscribe. A follow-up whose messageId starts with tck-complete-task completes it.", Tags: []string{"tck", "input-required", "multi-turn"}},
	{ID: "refuse", Name: "Reject or fail", Description: "The task ends as rejected or failed.", Tags: []string{"tck", "rejected", "failed"}},
	{ID: "long", Name: "Long-running", Description: "The task stays working for a few seconds, for cancel, subscribe and resubscribe checks; it honours cancel.", Tags: []string{"tck", "cancel", "resubscribe"}},
}

// TCKScenario returns the prefix selecting what the tck agent does with a
// message of this id ("" for the default: input-required).
func TCKScenario(messageID string) string {
	return tckScenarioFor(messageID).Prefix
}

// tckScenarioFor returns the scenario with the longest prefix of
// messageID, or the default.
func tckScenarioFor(messageID string) *tckScenario {
	best := &tckDefault
	for i := range tckScenarios {
		s := &tckScenarios[i]
		if strings.HasPrefix(messageID, s.Prefix) && len(s.Prefix) > len(best.Prefix) {
			best = s
		}
	}
	return best
}

// Card describes tck: one skill per group of scenarios, each example a
// messageId prefix and what it does.
func (TCK) Card() a2a.AgentCard {
	all := append(tckScenarios[:len(tckScenarios):len(tckScenarios)], tckDefault)
	skills := make([]a2a.AgentSkill, 0, len(tckSkills))
	for _, sk := range tckSkills {
		for _, s := range all {
			if s.Skill != sk.ID {
				continue
			}
			if s.Prefix == "" {
				sk.Examples = append(sk.Examples, s.Does)
			} else {
				sk.Examples = append(sk.Examples, fmt.Sprintf("messageId %s-1: %s", s.Prefix, s.Does))
			}
		}
		skills = append(skills, sk)
	}
	return card("tck", "Conformance fixture for the A2A TCK: the prefix of a message's messageId chooses what happens "+
		"(complete, artifact, stream, input-required, reject, fail, stay working); see the skills' examples. "+
		"Any other messageId gets input-required on every turn.", skills...)
}

// RepliesWithMessage declares that tck answers tck-message-response with
// a message.
func (TCK) RepliesWithMessage() bool { return true }

// Run plays the scenario the turn's messageId selects.
func (a TCK) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	return tckScenarioFor(req.Message.MessageID).run(ctx, req, w, a.hold())
}

// hold is how long the long-running scenario stays working.
func (a TCK) hold() time.Duration {
	if a.Hold > 0 {
		return min(a.Hold, tckMaxHold)
	}
	return tckHoldFromEnv(os.Getenv("TCK_STREAMING_TIMEOUT"))
}

// tckHoldFromEnv is twice the suite's streaming timeout given in seconds
// (as in TCK_STREAMING_TIMEOUT), tckDefaultHold when it is unset or
// invalid, capped at tckMaxHold.
func tckHoldFromEnv(v string) time.Duration {
	secs, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(secs > 0) {
		return tckDefaultHold
	}
	if secs >= tckMaxHold.Seconds()/2 {
		return tckMaxHold
	}
	return 2 * time.Duration(secs*float64(time.Second))
}

func tckFilePart() a2a.Part {
	return a2a.Part{Kind: a2a.PartRaw, Raw: []byte("tck"), Filename: tckFileName, MediaType: tckFileMediaType}
}

// completeWith completes the task with a status message (none if empty).
func completeWith(text string) tckRun {
	return func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
		return w.Complete(text)
	}
}

// replyWith answers with a message of text, not a task; a turn that
// cannot be answered so (a later turn of a task) completes the task with
// text as its status message.
func replyWith(text string) tckRun {
	return func(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
		err := agentrt.ReplyText(w, text)
		if errors.Is(err, agentrt.ErrCannotReply) {
			return w.Complete(text)
		}
		return err
	}
}

// artifactThenComplete adds one artifact holding part, then completes.
func artifactThenComplete(name string, part a2a.Part) tckRun {
	return func(_ context.Context, req *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
		a := a2a.Artifact{ArtifactID: req.ArtifactID(name), Name: name, Parts: []a2a.Part{part}}
		if err := w.Artifact(a, false, true); err != nil {
			return err
		}
		return w.Complete("")
	}
}

// chunkedThenComplete sends one artifact as two chunks, then completes.
func chunkedThenComplete(_ context.Context, req *agentrt.Request, w agentrt.EventWriter, _ time.Duration) error {
	id := req.ArtifactID("chunked")
	for i, text := range []string{tckChunk1, tckChunk2} {
		a := a2a.Artifact{ArtifactID: id, Name: "chunked", Parts: []a2a.Part{a2a.TextPart(text)}}
		if err := w.Artifact(a, i > 0, i == 1); err != nil {
			return err
		}
	}
	return w.Complete("")
}

// holdThenComplete stays working for hold (or until canceled), then
// completes.
func holdThenComplete(ctx context.Context, _ *agentrt.Request, w agentrt.EventWriter, hold time.Duration) error {
	if err := w.Working(fmt.Sprintf("working for %s", hold)); err != nil {
		return err
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return w.Complete("")
}
