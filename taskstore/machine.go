package taskstore

import (
	"errors"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// The rules of a task's state, in one place. Every append to a task's log
// is checked here first (Check), inside the compare-and-set loop, so a
// rule holds however many edges and workers race: the log's CAS makes the
// check and the append one step. A redelivered work item is judged here
// too (Redelivered), before its run claims the task.
//
// The states are a2a's. A task is created submitted; a worker's run claims
// it (usually with working) and ends the turn with a final state: terminal
// (completed, failed, canceled, rejected), after which nothing changes, or
// interrupted (input-required, auth-required), after which only a new user
// turn (back to submitted), a cancel or a failure moves it.
//
//	from \ change    start   turn          status→s       artifact  reply  claim (a run's first event)
//	none             ok      not found     not found      not found …      …
//	submitted        exists  not contin.   ok (s ≠ sub.)  ok        ok     ok
//	working          exists  not contin.   ok (s ≠ sub.)  ok        ok     ok (a redelivery takes over)
//	input/auth-req.  exists  ok            ok (s ≠ sub.)  ok        ok     turn settled
//	terminal         exists  terminal      terminal       terminal  term.  terminal
//
// A run's event other than its claim is refused (ErrSuperseded) once a
// newer run has claimed the task: a worker that stalled past AckWait
// cannot interleave its events with the run that replaced it. A status
// never names submitted or an undefined state: only a user turn reopens
// a task.

// Change is what one event of a task's log does.
type Change int

// The changes an event can make.
const (
	// ChangeStart is the task's first event: the Task itself.
	ChangeStart Change = iota
	// ChangeTurn is a user message: a new turn of the conversation.
	ChangeTurn
	// ChangeStatus moves the task to a state (Step.To).
	ChangeStatus
	// ChangeArtifact adds an artifact or a chunk of one.
	ChangeArtifact
	// ChangeReply is an agent message recorded in the history (a turn
	// answered with a message).
	ChangeReply
)

var changeNames = [...]string{"start", "turn", "status", "artifact", "reply"}

func (c Change) String() string {
	if int(c) < len(changeNames) {
		return changeNames[c]
	}
	return "change(" + strconv.Itoa(int(c)) + ")"
}

// Step is one event to append, as the rules see it.
type Step struct {
	Change Change
	// To is the state a ChangeStatus moves the task to.
	To a2a.TaskState
	// Run names the worker run writing (one delivery of a work item);
	// empty for a writer that is not a run (an edge cancels, fails a
	// task it could not queue, records a turn).
	Run string
	// Claim makes Run the task's current run: a run's first event.
	Claim bool
}

// Errors of the rules that only they return.
var (
	// ErrIllegalTransition refuses a status that no writer may set: back
	// to submitted, or a state that is not defined.
	ErrIllegalTransition = errors.New("taskstore: illegal status transition")
	// ErrTurnSettled refuses a run's claim of a task whose turn already
	// ended in an interrupted state: the work item was served.
	ErrTurnSettled = errors.New("taskstore: the turn was already settled")
)

// StepOf classifies the event ev written by run (empty: not a run; claim:
// the run's first event).
func StepOf(ev *a2a.StreamResponse, run string, claim bool) Step {
	s := Step{Run: run, Claim: claim}
	switch {
	case ev.Task != nil:
		s.Change = ChangeStart
	case ev.Message != nil && ev.Message.Role == a2a.RoleUser:
		s.Change = ChangeTurn
	case ev.Message != nil:
		s.Change = ChangeReply
	case ev.StatusUpdate != nil:
		s.Change, s.To = ChangeStatus, ev.StatusUpdate.Status.State
	default:
		s.Change = ChangeArtifact
	}
	return s
}

// Admit reports whether a writer (run, claim: as in Step) may extend the
// existing task cur at all, whatever the event: the part of Check that
// does not depend on the event, so a writer can be refused before it
// builds one.
func Admit(cur *TaskRecord, run string, claim bool) error {
	st := cur.Task.Status.State
	if st.Terminal() {
		return ErrTerminal
	}
	if run != "" {
		if claim && st.Interrupted() {
			return ErrTurnSettled
		}
		if !claim && cur.Run != run {
			return ErrSuperseded
		}
	}
	return nil
}

// Check reports whether step may extend the task as cur holds it (nil: no
// task yet). The error says why not; nil means the event is legal.
func Check(cur *TaskRecord, s Step) error {
	if cur == nil {
		if s.Change == ChangeStart {
			return nil
		}
		return ErrTaskNotFound
	}
	if s.Change == ChangeStart {
		return ErrTaskExists
	}
	if err := Admit(cur, s.Run, s.Claim); err != nil {
		return err
	}
	st := cur.Task.Status.State
	switch s.Change {
	case ChangeTurn:
		if !st.Interrupted() {
			return ErrNotContinuable
		}
	case ChangeStatus:
		if !s.To.Valid() || s.To == a2a.StateSubmitted {
			return ErrIllegalTransition
		}
	}
	return nil
}

// Verdict is what a worker does with a work item it was handed.
type Verdict int

// Verdicts on a delivered work item (Redelivered).
const (
	// RunIt runs the turn.
	RunIt Verdict = iota
	// TurnReplaced acks the item unrun: a later user turn replaced its.
	TurnReplaced
	// TurnDone acks the item unrun: its turn already ended (a redelivery
	// whose ack was lost).
	TurnDone
	// HeldElsewhere acks the item unrun: another work item of the same
	// turn (a recovery that raced the original) claimed the task and is
	// still held by a worker, which will finish it; the two must not take
	// the task from each other.
	HeldElsewhere
	// GiveUp fails the task: its turn was claimed by MaxDeliver runs that
	// all died before settling it.
	GiveUp
)

var verdictNames = [...]string{"run it", "a later turn of the task replaced it", "its turn was already settled",
	"another work item for the same turn holds the task", "the turn's runs all failed"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Redelivered judges a delivery of the work item (stream sequence itemSeq)
// for the user turn turnMsgID of the task as rec holds it. rec may be older
// than the log: each verdict but RunIt rests on a fact of the log's prefix
// that later events do not undo. held reports whether the work item of a
// sequence is still held by a worker (asked only when another item's run
// claimed the task). maxDeliver bounds the runs of one turn that claim it
// without settling it; deliveries refused before they could run do not
// count.
func Redelivered(rec *TaskRecord, turnMsgID string, itemSeq uint64, maxDeliver int, held func(seq uint64) bool) Verdict {
	h := rec.Task.History
	turn := -1
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].MessageID == turnMsgID && h[i].Role == a2a.RoleUser {
			turn = i
			break
		}
	}
	if turn >= 0 {
		for _, later := range h[turn+1:] {
			if later.Role == a2a.RoleUser {
				return TurnReplaced
			}
		}
		st := rec.Task.Status.State
		if st.Interrupted() || st.Terminal() {
			return TurnDone
		}
		if st == a2a.StateWorking && rec.Run != "" {
			seqStr, _, _ := strings.Cut(rec.Run, ".")
			if seq, err := strconv.ParseUint(seqStr, 10, 64); err == nil && seq != itemSeq && held(seq) {
				return HeldElsewhere
			}
		}
	}
	if runs := rec.TurnRuns; runs > 0 && runs+1 >= maxDeliver {
		return GiveUp
	}
	return RunIt
}
