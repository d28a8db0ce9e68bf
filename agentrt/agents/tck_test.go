package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// TestTCKScenarioMapping: which scenario a messageId selects. The suite
// sends "<prefix>-<session>" and sometimes "-<transport>" after it.
func TestTCKScenarioMapping(t *testing.T) {
	cases := map[string]string{
		"tck-complete-task-1a2b3c4d":           "tck-complete-task",
		"tck-complete-task-1a2b3c4d-jsonrpc":   "tck-complete-task",
		"tck-complete-task":                    "tck-complete-task",
		"tck-message-response-1a2b3c4d":        "tck-message-response",
		"tck-artifact-text-1a2b3c4d":           "tck-artifact-text",
		"tck-artifact-file-1a2b3c4d":           "tck-artifact-file",
		"tck-artifact-file-url-1a2b3c4d":       "tck-artifact-file-url", // longest prefix wins
		"tck-artifact-data-1a2b3c4d":           "tck-artifact-data",
		"tck-input-required-1a2b3c4d":          "tck-input-required",
		"tck-reject-task-1a2b3c4d":             "tck-reject-task",
		"tck-fail-task-1":                      "tck-fail-task",
		"tck-stream-001-1a2b3c4d-http_json":    "tck-stream-001",
		"tck-stream-002-1a2b3c4d":              "tck-stream-002",
		"tck-stream-003-1a2b3c4d":              "tck-stream-003",
		"tck-stream-ordering-001-1a2b3c4d":     "tck-stream-ordering-001",
		"tck-stream-artifact-text-1a2b3c4d":    "tck-stream-artifact-text",
		"tck-stream-artifact-file-1a2b3c4d":    "tck-stream-artifact-file",
		"tck-stream-artifact-chunked-1a2b3c4d": "tck-stream-artifact-chunked",
		"test-resubscribe-message-id-8c1e6a0e": "test-resubscribe-message-id",
		// Anything else: the default (input-required).
		"":                                "",
		"m-1":                             "",
		"tck-infer-ctx-1a2b3c4d":          "",
		"tck-sse-streaming-001-1a2b3c4d":  "",
		"test-state-message-id-8c1e6a0e":  "",
		"TCK-COMPLETE-TASK-1":             "", // prefixes are case-sensitive
		"x-tck-complete-task":             "", // and anchored at the start
		"tck-stream-00":                   "",
		"test-resubscribe-message-i":      "",
		"7f9c2ba4-e88f-11ee-a506-0242ac1": "",
	}
	for id, want := range cases {
		assert.Equal(t, want, TCKScenario(id), "messageId %q", id)
	}
}

// TestTCKScenarioTable: prefixes are unique, every scenario belongs to a
// skill of the card, and the card names every prefix.
func TestTCKScenarioTable(t *testing.T) {
	skills := map[string]bool{}
	for _, sk := range tckSkills {
		skills[sk.ID] = true
	}
	seen := map[string]bool{}
	for _, s := range append(tckScenarios[:len(tckScenarios):len(tckScenarios)], tckDefault) {
		assert.False(t, seen[s.Prefix], "prefix %q twice", s.Prefix)
		seen[s.Prefix] = true
		assert.True(t, skills[s.Skill], "scenario %q: unknown skill %q", s.Prefix, s.Skill)
		assert.NotEmpty(t, s.Does, s.Prefix)
		assert.NotNil(t, s.run, s.Prefix)
		assert.Equal(t, s.Prefix, TCKScenario(s.Prefix+"-x"), "a scenario's own prefix selects it")
	}

	c := TCK{}.Card()
	assert.Equal(t, "tck", c.Name)
	assert.NotEmpty(t, c.Description)
	require.Len(t, c.Skills, len(tckSkills))
	var examples []string
	for _, sk := range c.Skills {
		assert.NotEmpty(t, sk.Examples, "skill %s has examples", sk.ID)
		examples = append(examples, sk.Examples...)
	}
	all := strings.Join(examples, "\n")
	for _, s := range tckScenarios {
		assert.Contains(t, all, "messageId "+s.Prefix+"-1: ", "the card describes %s", s.Prefix)
	}
	assert.Contains(t, all, "any other messageId")
	assert.True(t, *c.Capabilities.Streaming)
}

// rec is an EventWriter that records what the agent does, one line per
// event.
type rec struct {
	events    []string
	artifacts []a2a.Artifact
	closed    bool // every write fails, as after a cancel
}

func (r *rec) add(e string) error {
	if r.closed {
		return agentrt.ErrTaskClosed
	}
	r.events = append(r.events, e)
	return nil
}

func (r *rec) Working(text string) error       { return r.add("working " + text) }
func (r *rec) InputRequired(text string) error { return r.add("input-required " + text) }
func (r *rec) Complete(text string) error      { return r.add("completed " + text) }
func (r *rec) Fail(text string) error          { return r.add("failed " + text) }
func (r *rec) Reject(text string) error        { return r.add("rejected " + text) }
func (r *rec) Event(*a2a.StreamResponse) error { return r.add("event") }
func (r *rec) Artifact(a a2a.Artifact, appendChunk, lastChunk bool) error {
	var parts []string
	for _, p := range a.Parts {
		switch p.Kind {
		case a2a.PartText:
			parts = append(parts, fmt.Sprintf("text %q", p.Text))
		case a2a.PartRaw:
			parts = append(parts, fmt.Sprintf("raw %q %s %s", p.Raw, p.Filename, p.MediaType))
		case a2a.PartURL:
			parts = append(parts, fmt.Sprintf("url %s %s %s", p.URL, p.Filename, p.MediaType))
		case a2a.PartData:
			parts = append(parts, "data "+string(p.Data))
		}
	}
	if err := r.add(fmt.Sprintf("artifact %s append=%t last=%t", strings.Join(parts, ","), appendChunk, lastChunk)); err != nil {
		return err
	}
	r.artifacts = append(r.artifacts, a)
	return nil
}

func tckRequest(messageID string) *agentrt.Request {
	return &agentrt.Request{TaskID: "task-1", ContextID: "ctx-1", Attempt: 1,
		Message: a2a.Message{MessageID: messageID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}
}

// TestTCKScenarioEvents: the events each scenario writes, in order (the
// worker itself writes the first "working" before Run).
func TestTCKScenarioEvents(t *testing.T) {
	cases := map[string][]string{
		"tck-complete-task-1":    {"completed Hello from TCK"},
		"tck-message-response-1": {"event"}, // agentrt.Reply: a message, as Event records it
		"tck-stream-002-1":       {"completed "},
		"tck-artifact-text-1":    {`artifact text "Generated text content" append=false last=true`, "completed "},
		"tck-artifact-file-1":    {`artifact raw "tck" output.txt text/plain append=false last=true`, "completed "},
		"tck-artifact-file-url-1": {"artifact url https://example.com/output.txt output.txt text/plain append=false last=true",
			"completed "},
		"tck-artifact-data-1":             {`artifact data {"count":42,"key":"value"} append=false last=true`, "completed "},
		"tck-stream-001-1":                {`artifact text "Stream hello from TCK" append=false last=true`, "completed "},
		"tck-stream-003-1":                {`artifact text "Stream task lifecycle" append=false last=true`, "completed "},
		"tck-stream-ordering-001-1":       {`artifact text "Ordered output" append=false last=true`, "completed "},
		"tck-stream-artifact-text-1":      {`artifact text "Streamed text content" append=false last=true`, "completed "},
		"tck-stream-artifact-file-1":      {`artifact raw "tck" output.txt text/plain append=false last=true`, "completed "},
		"tck-stream-artifact-chunked-1":   {`artifact text "chunk-1 " append=false last=false`, `artifact text "chunk-2" append=true last=true`, "completed "},
		"tck-input-required-1":            {"input-required " + tckInputQuestion},
		"tck-reject-task-1":               {"rejected rejected"},
		"tck-fail-task-1":                 {"failed failed"},
		"test-resubscribe-message-id-1":   {"working working for 10ms", "completed "},
		"tck-anything-else-1":             {"input-required " + tckDefaultPrompt},
		"3f6c1c7e-9b3e-4d55-8d0e-4c2f0a1": {"input-required " + tckDefaultPrompt},
	}
	agent := TCK{Hold: 10 * time.Millisecond}
	for id, want := range cases {
		t.Run(id, func(t *testing.T) {
			w := &rec{}
			require.NoError(t, agent.Run(context.Background(), tckRequest(id), w))
			assert.Equal(t, want, w.events)
			// Artifacts have stable, turn-derived ids; chunks share one.
			for _, a := range w.artifacts {
				assert.Equal(t, a.ArtifactID, w.artifacts[0].ArtifactID)
				assert.Equal(t, tckRequest(id).ArtifactID(a.Name), a.ArtifactID)
			}
		})
	}
}

// TestTCKRunsAreDeterministic: the same turn writes the same events.
func TestTCKRunsAreDeterministic(t *testing.T) {
	agent := TCK{Hold: time.Millisecond}
	for _, s := range append(tckScenarios[:len(tckScenarios):len(tckScenarios)], tckDefault) {
		id := s.Prefix + "-det"
		a, b := &rec{}, &rec{}
		require.NoError(t, agent.Run(context.Background(), tckRequest(id), a))
		require.NoError(t, agent.Run(context.Background(), tckRequest(id), b))
		assert.Equal(t, a.events, b.events, id)
		ja, _ := json.Marshal(a.artifacts)
		jb, _ := json.Marshal(b.artifacts)
		assert.JSONEq(t, string(ja), string(jb), id)
	}
}

// TestTCKHoldHonoursCancel: the long-running scenario ends as soon as its
// context does, without completing.
func TestTCKHoldHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &rec{}
	done := make(chan error, 1)
	go func() { done <- TCK{Hold: time.Minute}.Run(ctx, tckRequest("test-resubscribe-message-id-1"), w) }()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(start), time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("long-running scenario ignored cancel")
	}
	assert.Equal(t, []string{"working working for 1m0s"}, w.events)
}

// TestTCKStopsWhenTaskClosed: a write refused because the task is closed
// ends the run with that error.
func TestTCKStopsWhenTaskClosed(t *testing.T) {
	for _, id := range []string{"tck-stream-artifact-chunked-1", "tck-artifact-text-1", "test-resubscribe-message-id-1"} {
		err := TCK{Hold: time.Minute}.Run(context.Background(), tckRequest(id), &rec{closed: true})
		assert.True(t, errors.Is(err, agentrt.ErrTaskClosed), "%s: %v", id, err)
	}
}

func TestTCKHold(t *testing.T) {
	cases := map[string]time.Duration{
		"":      tckDefaultHold,
		"2":     4 * time.Second,
		"2.0":   4 * time.Second,
		" 0.5 ": time.Second,
		"5":     10 * time.Second,
		"0":     tckDefaultHold,
		"-1":    tckDefaultHold,
		"NaN":   tckDefaultHold,
		"Inf":   tckMaxHold,
		"abc":   tckDefaultHold,
		"1e9":   tckMaxHold,
	}
	for in, want := range cases {
		assert.Equal(t, want, tckHoldFromEnv(in), "TCK_STREAMING_TIMEOUT=%q", in)
	}
	t.Setenv("TCK_STREAMING_TIMEOUT", "1.5")
	assert.Equal(t, 3*time.Second, TCK{}.hold(), "read from the environment")
	assert.Equal(t, 250*time.Millisecond, TCK{Hold: 250 * time.Millisecond}.hold(), "Hold wins")
	assert.Equal(t, tckMaxHold, TCK{Hold: time.Hour}.hold(), "capped")
}
