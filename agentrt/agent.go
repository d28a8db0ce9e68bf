package agentrt

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/registry"
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

// CardChecker is implemented by agents whose card comes from elsewhere
// (proxy workers): CardCheck says what was verified of its signatures,
// and is registered with the card at every heartbeat.
type CardChecker interface {
	CardCheck() *registry.CardCheck
}

// ExtendedCarder is implemented by an agent with an extended agent card
// (A2A GetExtendedAgentCard): the card authenticated callers get, which
// may list skills the public card does not. Its public Card must declare
// capabilities.extendedAgentCard for edges to serve it; a card that
// declares it while ExtendedCard returns nil is answered with -32007
// (not configured). Edges fill in the interfaces, as for Card, and may
// hide skills the public card lacks from some callers (the edge's auth
// file says which).
type ExtendedCarder interface {
	ExtendedCard() *a2a.AgentCard
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
	// Extensions are the extension URIs the client requested for this
	// turn (the A2A-Extensions service parameter), in its order. Activate
	// the ones the turn applies (Activate); see extensions.go.
	Extensions []string
	// Attempt counts deliveries of this turn (1 on the first run; more after
	// a worker crashed while running it).
	Attempt int

	owner string // the principal the task belongs to
	mesh  *Mesh
	act   *activation // the extensions activated, shared with the writer
}

// Text is the text of the turn's message.
func (r *Request) Text() string { return r.Message.Text() }

// ArtifactID returns a stable id for the artifact called name of this turn:
// the same on every run of the turn. A turn can run again after a worker
// died mid-run (Attempt > 1); an agent that names its artifacts this way
// and sends each one's first chunk without append replaces what the dead
// run left instead of adding a second, partial copy.
func (r *Request) ArtifactID(name string) string {
	return turnArtifactID(r.TaskID, r.Message.MessageID, name)
}

// turnArtifactID derives an artifact id from the task, the turn's message
// id and a name (a name-based UUID, so it is well-formed and stable).
func turnArtifactID(taskID, messageID, name string) string {
	return uuid.NewSHA1(artifactNS, []byte(taskID+"\x00"+messageID+"\x00"+name)).String()
}

// artifactNS is the UUID namespace of turnArtifactID.
var artifactNS = uuid.MustParse("6f0c5a3e-2b1d-4c8e-9a57-3d2e8b4f1a60")

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
	// Event records an A2A event as another A2A implementation produced
	// it (a proxied agent, an a2a-go executor). Its task and context ids
	// are replaced by this task's. A status or artifact update is recorded
	// as is, except that a submitted status, and a working status without
	// a message while the task is working, are skipped (the mesh recorded
	// them already). A Message, the agent's whole reply, is a message reply
	// (see Reply) when the turn can be answered so; otherwise it completes
	// the task with the message as its status message. A Task contributes
	// its artifacts and, unless it is submitted, its status.
	Event(ev *a2a.StreamResponse) error
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
