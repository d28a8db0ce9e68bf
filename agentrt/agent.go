package agentrt

import (
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/a2a"
)

// Agent is what an agent author implements.
type Agent interface {
	// Card describes the agent. Interface URLs are filled in by edges.
	Card() a2a.AgentCard
	// Run processes one user turn. It reports progress and results through
	// w. Returning nil without a final state completes the task; returning
	// an error fails it (the error text goes to the log, not the client).
	// ctx ends when the task is canceled, times out or the worker stops.
	Run(ctx context.Context, req *Request, w EventWriter) error
}

// Request is one user turn of a task, as an agent sees it.
type Request struct {
	TaskID    string
	ContextID string
	// Message is the turn to process.
	Message a2a.Message
	// History is the task's history before this turn (earlier turns of a
	// multi-turn task, including the agent's own questions).
	History []a2a.Message
	// Artifacts already produced by earlier turns.
	Artifacts []a2a.Artifact
	// AcceptedOutputModes are the media types the client accepts (empty:
	// anything).
	AcceptedOutputModes []string
	// Metadata is the request's metadata.
	Metadata a2a.Metadata
	// Attempt counts deliveries of this turn (1 on the first run; more after
	// a worker crashed while running it).
	Attempt int
}

// Text is the text of the turn's message.
func (r *Request) Text() string { return r.Message.Text() }

// EventWriter records what the agent does. Every method appends one event
// to the task's log; it returns ErrTaskClosed once the task reached a
// terminal state (for example it was canceled), and the agent should stop.
type EventWriter interface {
	// Working reports progress; text may be empty.
	Working(text string) error
	// Artifact adds an artifact, or a chunk of one when appendChunk is set
	// (same ArtifactID as an earlier chunk). lastChunk marks its end.
	Artifact(a a2a.Artifact, appendChunk, lastChunk bool) error
	// InputRequired asks the client for more input and ends this turn.
	InputRequired(text string) error
	// Complete finishes the task successfully, with an optional message.
	Complete(text string) error
	// Fail finishes the task as failed with a message for the client.
	Fail(text string) error
	// Reject finishes the task as rejected with a message for the client.
	Reject(text string) error
}

// ErrTaskClosed is returned by an EventWriter when the task no longer
// accepts events (canceled, failed, completed by someone else).
var ErrTaskClosed = errors.New("agentrt: task is closed")

// AgentMessage builds an agent message with one text part for task events.
func AgentMessage(taskID, contextID, text string) *a2a.Message {
	return &a2a.Message{
		MessageID: newID(), TaskID: taskID, ContextID: contextID,
		Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)},
	}
}
