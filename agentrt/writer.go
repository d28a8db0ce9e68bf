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

// writer is the EventWriter of one run. It batches: an event is held
// until the turn settles (a final or interrupted state, written at once),
// MaxBatch events wait, or linger has passed since the first of them, and
// the events held go to the task's log as one message. An echo run is one
// append; a streaming agent's chunks reach streams linger later at most.
// The run's first message claims the task (run fencing): a run that dies
// before it wrote anything is not counted against the turn.
//
// A batch written after its linger that the bus refuses stays held and is
// tried again with the next event or linger; the error reaches the agent
// when an event that ends the turn cannot be written.
type writer struct {
	b       *taskstore.Store
	taskID  string
	ctxID   string
	turn    string // message id of the user turn being run
	timeout time.Duration
	run     string // this delivery of the work item: "<stream seq>.<delivery>"
	replies bool   // the agent declares message replies (MessageReplier)
	linger  time.Duration

	mu         sync.Mutex
	rec        *taskstore.TaskRecord // the task as the run's last append left it
	held       []*a2a.StreamResponse // events not appended yet
	timer      *time.Timer           // flushes held after linger
	gaveUp     bool                  // a write that settles the turn failed: no lingering retry
	state      a2a.TaskState         // the task's state after held
	claimed    bool                  // the run's claim is held or written
	undecided  bool                  // that claim leaves the turn open to a message reply
	written    bool                  // an append of this run succeeded (its claim is in the log)
	decided    bool                  // the run recorded an event after its claim
	superseded bool                  // a newer run of the same work claimed the task
	final      a2a.TaskState         // last state written by this run, if final
	unnamed    int                   // artifacts written without an id so far
	busErr     error                 // the last write the bus failed (not a closed task)
	closed     bool                  // the task was closed (ended by someone else)
	full       bool                  // a write was refused by the events-per-task bound
	act        *activation           // the extensions the run activated (extensions.go)
}

// defaultLinger is how long a run's first held event waits for more.
const defaultLinger = 2 * time.Millisecond

func (w *writer) update(ev *a2a.StreamResponse) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.final.Final() || w.closed || w.superseded {
		return ErrTaskClosed
	}
	ends := ev.StatusUpdate != nil && ev.StatusUpdate.Status.State.Final()
	if ends && w.full {
		// Some of the agent's output was refused: whatever the agent
		// meant to end with, the task did not get all of it.
		w.held = nil
		ev = w.statusEvent(a2a.StateFailed, fmt.Sprintf(
			"the task reached the mesh's limit of %d events per task; the agent's later output was not recorded",
			w.b.Config().MaxTaskEvents))
	}
	if len(w.held) == taskstore.MaxBatch {
		if err := w.flushLocked(); err != nil {
			return err
		}
	}
	w.held = append(w.held, ev)
	if w.claimed {
		w.decided = true // every event after the claim decides the turn
	}
	w.claimed = true
	if ev.StatusUpdate != nil {
		w.state = ev.StatusUpdate.Status.State
	}
	if ends || len(w.held) == taskstore.MaxBatch || w.linger <= 0 {
		err := w.flushLocked()
		if err != nil && ends {
			// The run could not settle its turn: the worker hands the
			// turn back, and a lingering retry must not settle it after
			// that (the next run would find it done without running).
			w.gaveUp = true
			if w.timer != nil {
				w.timer.Stop()
			}
		}
		return err
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(w.linger, w.flushLingered)
	} else if len(w.held) == 1 {
		w.timer.Reset(w.linger)
	}
	return nil
}

// flushLingered writes the held events once their linger is over.
func (w *writer) flushLingered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 || w.closed || w.superseded || w.gaveUp {
		return
	}
	if err := w.flushLocked(); err != nil && w.busErr != nil && len(w.held) > 0 {
		w.timer.Reset(50 * time.Millisecond) // the bus failed: again, a little later
	}
}

// flush writes the events held, if any.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	return w.flushLocked()
}

// flushLocked appends the held events as one message. A batch the bus
// refuses as too large is written in halves. A run whose first batch is
// refused for another reason writes its claim alone before it gives up, so
// that a run the bus refuses only part of (an event over the bus's size
// limit, say) is still counted against the turn.
func (w *writer) flushLocked() error {
	held := w.held
	err := w.appendHeld(held)
	switch {
	case err == nil || len(held) < 2 || w.closed || w.superseded || w.full:
	case taskstore.IsTooLarge(err):
		half := len(held) / 2
		if err = w.appendHeld(held[:half]); err == nil {
			err = w.appendHeld(held[half:])
		}
	case !w.written:
		if err2 := w.appendHeld(held[:1]); err2 == nil {
			err = w.appendHeld(held[1:])
		}
	}
	if err == nil {
		w.held = nil
	}
	return err
}

// appendHeld appends evs, some of the events held, as one message.
func (w *writer) appendHeld(evs []*a2a.StreamResponse) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	activated := w.act.list()
	rec, _, err := w.b.AppendEvents(ctx, w.taskID, w.rec, func(cur *taskstore.TaskRecord) ([]*a2a.StreamResponse, error) {
		out := make([]*a2a.StreamResponse, len(evs))
		recorded := cur.Extensions
		for i, ev := range evs {
			out[i] = withExtensions(ev, activated, recorded)
			if exts, ok := taskstore.EventExtensions(out[i]); ok {
				recorded = exts
			}
		}
		return out, nil
	}, taskstore.AppendOptions{Run: w.run, Claim: !w.written})
	switch {
	case errors.Is(err, taskstore.ErrTerminal) || errors.Is(err, taskstore.ErrTurnSettled):
		w.rec, w.held, w.closed = rec, nil, true
		return ErrTaskClosed
	case errors.Is(err, taskstore.ErrSuperseded):
		w.held, w.superseded = nil, true
		return ErrTaskClosed
	case errors.Is(err, taskstore.ErrTaskLogFull):
		w.held, w.full, w.busErr = nil, true, err
		return err
	case err != nil:
		w.rec = nil // read again next time
		w.busErr = err
		return err
	}
	w.rec, w.written, w.busErr = rec, true, nil
	if st := rec.Task.Status.State; st.Final() {
		w.final = st
	}
	return nil
}

// stop ends the run's writes: events still held are dropped (a run that
// ended without settling its turn hands it to the next run) and a linger
// in flight has finished.
func (w *writer) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed, w.held = true, nil
	if w.timer != nil {
		w.timer.Stop()
	}
}

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

// isWorking reports whether the task is known to be working (with the
// events held).
func (w *writer) isWorking() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == a2a.StateWorking
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
