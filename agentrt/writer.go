package agentrt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

func newID() string { return uuid.NewString() }

// writer is the EventWriter of one run. It caches the task snapshot it last
// wrote, so each event costs one append; the snapshot is stored at a final
// or interrupted state and otherwise every storeEvery events or
// storeInterval, since readers fold newer log events into it.
type writer struct {
	b       *taskstore.Store
	taskID  string
	ctxID   string
	turn    string // message id of the user turn being run
	timeout time.Duration
	run     string // this delivery of the work item: "<stream seq>.<delivery>"
	replies bool   // the agent declares message replies (MessageReplier)

	mu         sync.Mutex
	rec        *taskstore.TaskRecord
	claimed    bool          // whether this run has claimed the task yet
	decided    bool          // the run recorded an event after its claim
	superseded bool          // a newer run of the same work claimed the task
	unstored   int           // events appended since the last snapshot store
	lastStored time.Time     // when the snapshot was last stored
	final      a2a.TaskState // last state written by this run, if final
	unnamed    int           // artifacts written without an id so far
	busErr     error         // the last write the bus failed (not a closed task)
	full       bool          // a write was refused by the events-per-task bound
	act        *activation   // the extensions the run activated (extensions.go)
}

func (w *writer) update(ev *a2a.StreamResponse) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.final.Final() {
		return ErrTaskClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	final := ev.StatusUpdate != nil && ev.StatusUpdate.Status.State.Final()
	if final && w.full {
		// Some of the agent's output was refused: whatever the agent
		// meant to end with, the task did not get all of it.
		ev = w.statusEvent(a2a.StateFailed, fmt.Sprintf(
			"the task reached the mesh's limit of %d events per task; the agent's later output was not recorded",
			w.b.Config().MaxTaskEvents))
	}
	store := final || w.unstored+1 >= storeEvery || time.Since(w.lastStored) >= storeInterval
	activated := w.act.list()
	rec, _, err := w.b.AppendTask(ctx, w.taskID, w.rec, func(cur *taskstore.TaskRecord) (*a2a.StreamResponse, error) {
		return withExtensions(ev, activated, cur.Extensions), nil
	}, taskstore.AppendOptions{Store: store, Run: w.run, Claim: !w.claimed})
	if errors.Is(err, taskstore.ErrTerminal) || errors.Is(err, taskstore.ErrTurnSettled) {
		w.rec = rec
		return ErrTaskClosed
	}
	if errors.Is(err, taskstore.ErrSuperseded) {
		w.superseded = true
		return ErrTaskClosed
	}
	if err != nil {
		w.rec = nil // reload next time
		w.busErr = err
		w.full = w.full || errors.Is(err, taskstore.ErrTaskLogFull)
		return err
	}
	w.rec = rec
	w.decided = w.claimed // every event after the claim decides the turn
	w.claimed = true
	w.busErr = nil
	if store {
		w.unstored, w.lastStored = 0, time.Now()
	} else {
		w.unstored++
	}
	if final {
		w.final = ev.StatusUpdate.Status.State
	}
	return nil
}

// How often a run stores the task snapshot between final states.
const (
	storeEvery    = 32
	storeInterval = 500 * time.Millisecond
)

func (w *writer) status(state a2a.TaskState, text string) error {
	return w.update(w.statusEvent(state, text))
}

func (w *writer) statusEvent(state a2a.TaskState, text string) *a2a.StreamResponse {
	st := a2a.TaskStatus{State: state, Timestamp: a2a.Now()}
	if text != "" {
		st.Message = AgentMessage(w.taskID, w.ctxID, text)
	}
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: w.taskID, ContextID: w.ctxID, Status: st,
	}}
}

func (w *writer) Working(text string) error       { return w.status(a2a.StateWorking, text) }
func (w *writer) InputRequired(text string) error { return w.status(a2a.StateInputRequired, text) }
func (w *writer) Complete(text string) error      { return w.status(a2a.StateCompleted, text) }
func (w *writer) Fail(text string) error          { return w.status(a2a.StateFailed, text) }
func (w *writer) Reject(text string) error        { return w.status(a2a.StateRejected, text) }

func (w *writer) Artifact(a a2a.Artifact, appendChunk, lastChunk bool) error {
	if a.ArtifactID == "" {
		// The n-th unnamed artifact of a turn gets the same id on every run
		// of it, so a re-run after a crash replaces it rather than adding
		// a copy.
		w.mu.Lock()
		w.unnamed++
		n := w.unnamed
		w.mu.Unlock()
		a.ArtifactID = turnArtifactID(w.taskID, w.turn, "#"+strconv.Itoa(n))
	}
	return w.update(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
		TaskID: w.taskID, ContextID: w.ctxID, Artifact: a, Append: appendChunk, LastChunk: lastChunk,
	}})
}

func (w *writer) Event(ev *a2a.StreamResponse) error {
	switch {
	case ev == nil:
		return nil
	case ev.StatusUpdate != nil:
		u := *ev.StatusUpdate
		if u.Status.State == a2a.StateSubmitted || u.Status.State == a2a.StateUnspecified {
			return w.decide()
		}
		if u.Status.State == a2a.StateWorking && u.Status.Message == nil && w.isWorking() {
			return w.decide() // the worker marked the task working already
		}
		u.TaskID, u.ContextID = w.taskID, w.ctxID
		u.Status.Message = w.ownMessage(u.Status.Message)
		if u.Status.Timestamp == "" {
			u.Status.Timestamp = a2a.Now()
		}
		return w.update(&a2a.StreamResponse{StatusUpdate: &u})
	case ev.ArtifactUpdate != nil:
		u := *ev.ArtifactUpdate
		u.TaskID, u.ContextID = w.taskID, w.ctxID
		return w.Artifact(u.Artifact, u.Append, u.LastChunk)
	case ev.Message != nil:
		if w.mayReply() {
			return w.update(w.replyEvent(ev.Message))
		}
		return w.update(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
			TaskID: w.taskID, ContextID: w.ctxID,
			Status: a2a.TaskStatus{State: a2a.StateCompleted, Message: w.ownMessage(ev.Message), Timestamp: a2a.Now()},
		}})
	case ev.Task != nil:
		for _, a := range ev.Task.Artifacts {
			if err := w.Artifact(a, false, true); err != nil {
				return err
			}
		}
		st := ev.Task.Status
		if st.State == a2a.StateSubmitted || st.State == a2a.StateUnspecified {
			return w.decide()
		}
		return w.Event(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: st, Metadata: ev.Task.Metadata}})
	}
	return nil
}

// isWorking reports whether the task is known to be working.
func (w *writer) isWorking() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rec != nil && w.rec.Task.Status.State == a2a.StateWorking
}

// ownMessage returns a copy of m as a message of this task from the agent.
func (w *writer) ownMessage(m *a2a.Message) *a2a.Message {
	if m == nil {
		return nil
	}
	c := *m
	c.TaskID, c.ContextID, c.Role = w.taskID, w.ctxID, a2a.RoleAgent
	if _, ok := c.Metadata[a2a.ReplyKey]; ok {
		// the mesh's own marker (replyEvent sets it): an agent cannot
		// forge a reply
		c.Metadata = maps.Clone(c.Metadata)
		delete(c.Metadata, a2a.ReplyKey)
	}
	if c.MessageID == "" {
		c.MessageID = newID()
	}
	return &c
}

// wasSuperseded reports whether a newer run of the same work took over.
func (w *writer) wasSuperseded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.superseded
}

// writeFailed returns the bus error of the run's last write, if it failed
// for a reason other than the task being closed.
func (w *writer) writeFailed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busErr
}

// finalState is the final state this run wrote, or "".
func (w *writer) finalState() a2a.TaskState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.final
}
