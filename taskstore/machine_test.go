package taskstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// The rules of a task's state, written out as the table they are, and
// checked against Check for every (state, change, writer) there is.

// from is a task's state before an event ("" for no task yet).
var fromStates = []a2a.TaskState{"", a2a.StateSubmitted, a2a.StateWorking, a2a.StateInputRequired,
	a2a.StateAuthRequired, a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected}

// statusTargets are the states a status event may name, the undefined ones
// included.
var statusTargets = []a2a.TaskState{a2a.StateUnspecified, a2a.StateSubmitted, a2a.StateWorking,
	a2a.StateInputRequired, a2a.StateAuthRequired, a2a.StateCompleted, a2a.StateFailed,
	a2a.StateCanceled, a2a.StateRejected, "TASK_STATE_BOGUS"}

// writer is who appends: a caller that is not a run (an edge), the run
// that holds the task, a run claiming it, or a run another has replaced.
type writer int

const (
	caller writer = iota
	currentRun
	claimingRun
	staleRun
)

func (w writer) String() string {
	return [...]string{"caller", "current run", "claiming run", "stale run"}[w]
}

func (w writer) step(s Step) Step {
	switch w {
	case currentRun:
		s.Run = "7.1"
	case claimingRun:
		s.Run, s.Claim = "9.1", true
	case staleRun:
		s.Run = "5.3"
	}
	return s
}

// want is the table: what an event does to a task, written from the
// rules (machine.go's comment), not from the code.
func want(from a2a.TaskState, s Step, w writer) error {
	if from == "" { // no task yet
		if s.Change == ChangeStart {
			return nil
		}
		return ErrTaskNotFound
	}
	if s.Change == ChangeStart {
		return ErrTaskExists
	}
	switch from {
	case a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected:
		return ErrTerminal
	}
	interrupted := from == a2a.StateInputRequired || from == a2a.StateAuthRequired
	switch w {
	case claimingRun:
		if interrupted {
			return ErrTurnSettled
		}
	case staleRun:
		return ErrSuperseded
	}
	switch s.Change {
	case ChangeTurn:
		if !interrupted {
			return ErrNotContinuable
		}
	case ChangeStatus:
		switch s.To {
		case a2a.StateWorking, a2a.StateInputRequired, a2a.StateAuthRequired,
			a2a.StateCompleted, a2a.StateFailed, a2a.StateCanceled, a2a.StateRejected:
		default: // back to submitted, or a state that is not defined
			return ErrIllegalTransition
		}
	}
	return nil
}

func TestStateMachineEveryPair(t *testing.T) {
	var steps []Step
	for _, c := range []Change{ChangeStart, ChangeTurn, ChangeArtifact, ChangeReply} {
		steps = append(steps, Step{Change: c})
	}
	for _, to := range statusTargets {
		steps = append(steps, Step{Change: ChangeStatus, To: to})
	}
	cases, legal := 0, 0
	for _, from := range fromStates {
		for _, base := range steps {
			for w := caller; w <= staleRun; w++ {
				s := w.step(base)
				var cur *TaskRecord
				if from != "" {
					cur = &TaskRecord{Task: a2a.Task{ID: "t", Status: a2a.TaskStatus{State: from}}, Run: "7.1"}
				}
				name := fmt.Sprintf("%s/%s%s/%s", orNone(from), s.Change, toName(s), w)
				got, exp := Check(cur, s), want(from, s, w)
				if exp == nil {
					legal++
					assert.NoError(t, got, name)
				} else {
					assert.ErrorIs(t, got, exp, name)
				}
				cases++
			}
		}
	}
	// 9 states × 14 events × 4 writers; legal: starting a task that does
	// not exist, and on a live task every defined status but submitted,
	// an artifact or a reply (and a turn when it waits for input), by any
	// writer but a stale run, and but a claiming one when it waits.
	require.Equal(t, 9*14*4, cases)
	assert.Equal(t, 1*4+ // start a task that does not exist, any writer
		2*3*(2+7)+ // submitted, working: artifact, reply, 7 statuses; caller, current, claiming
		2*2*(3+7), // input/auth-required: turn, artifact, reply, 7 statuses; caller, current
		legal)
}

func orNone(s a2a.TaskState) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

func toName(s Step) string {
	if s.Change == ChangeStatus {
		return "→" + string(s.To)
	}
	return ""
}

// StepOf reads the change off the event as the log holds it.
func TestStepOf(t *testing.T) {
	for _, c := range []struct {
		ev   *a2a.StreamResponse
		want Step
	}{
		{&a2a.StreamResponse{Task: &a2a.Task{ID: "t"}}, Step{Change: ChangeStart}},
		{&a2a.StreamResponse{Message: &a2a.Message{Role: a2a.RoleUser}}, Step{Change: ChangeTurn}},
		{&a2a.StreamResponse{Message: &a2a.Message{Role: a2a.RoleAgent}}, Step{Change: ChangeReply}},
		{&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: a2a.StateFailed}}},
			Step{Change: ChangeStatus, To: a2a.StateFailed}},
		{&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{}}, Step{Change: ChangeArtifact}},
	} {
		assert.Equal(t, c.want, StepOf(c.ev, "", false))
	}
	assert.Equal(t, Step{Change: ChangeArtifact, Run: "3.1", Claim: true},
		StepOf(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{}}, "3.1", true))
}

// A redelivered work item: what its worker does, for every state its task
// can be in and every place its turn can have in the history.
func TestRedeliveredVerdicts(t *testing.T) {
	user := func(id string) a2a.Message { return a2a.Message{MessageID: id, Role: a2a.RoleUser} }
	agent := a2a.Message{MessageID: "a", Role: a2a.RoleAgent}
	rec := func(st a2a.TaskState, run string, turnRuns int, h ...a2a.Message) *TaskRecord {
		return &TaskRecord{Task: a2a.Task{ID: "t", Status: a2a.TaskStatus{State: st}, History: h}, Run: run, TurnRuns: turnRuns}
	}
	const max = 10
	heldAsked := 0
	held := func(v bool) func(uint64) bool {
		return func(seq uint64) bool {
			heldAsked++
			assert.EqualValues(t, 4, seq, "the holder named by the task's run")
			return v
		}
	}
	for _, c := range []struct {
		name string
		rec  *TaskRecord
		held bool
		want Verdict
	}{
		{"turn not yet in the snapshot", rec(a2a.StateSubmitted, "", 0), false, RunIt},
		{"first run", rec(a2a.StateSubmitted, "", 0, user("m")), false, RunIt},
		{"a later turn replaced it", rec(a2a.StateSubmitted, "", 0, user("m"), agent, user("n")), false, TurnReplaced},
		{"settled: input required", rec(a2a.StateInputRequired, "4.1", 1, user("m"), agent), false, TurnDone},
		{"settled: auth required", rec(a2a.StateAuthRequired, "4.1", 1, user("m")), false, TurnDone},
		{"settled: completed", rec(a2a.StateCompleted, "4.1", 1, user("m")), false, TurnDone},
		{"settled: canceled", rec(a2a.StateCanceled, "", 0, user("m")), false, TurnDone},
		{"its own item's redelivery takes over", rec(a2a.StateWorking, "8.1", 1, user("m")), false, RunIt},
		{"another item claimed, still held", rec(a2a.StateWorking, "4.2", 1, user("m")), true, HeldElsewhere},
		{"another item claimed, no longer held", rec(a2a.StateWorking, "4.2", 1, user("m")), false, RunIt},
		{"runs left", rec(a2a.StateWorking, "8.8", max-2, user("m")), false, RunIt},
		{"runs exhausted", rec(a2a.StateWorking, "8.9", max-1, user("m")), false, GiveUp},
		{"runs exhausted, turn not in the snapshot", rec(a2a.StateWorking, "8.9", max-1), false, GiveUp},
	} {
		assert.Equal(t, c.want, Redelivered(c.rec, "m", 8, max, held(c.held)), c.name)
	}
	assert.Equal(t, 2, heldAsked, "the bus is asked only when another item's run claimed the task")
}

// A stale run's late write is refused by the log itself, not only by the
// table: a run that lost its claim gets ErrSuperseded from AppendTask.
func TestAppendRefusesWhatTheRulesRefuse(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, err := b.CreateTask(ctx, newRecord("m1"))
	require.NoError(t, err)
	status := func(st a2a.TaskState) Mutation {
		return func(cur *TaskRecord) (*a2a.StreamResponse, error) { return StatusEvent(cur, st, ""), nil }
	}
	_, _, err = b.AppendTask(ctx, "m1", rec, status(a2a.StateSubmitted), AppendOptions{Run: "1.1", Claim: true})
	require.ErrorIs(t, err, ErrIllegalTransition, "a status never goes back to submitted")
	rec, _, err = b.AppendTask(ctx, "m1", nil, status(a2a.StateInputRequired), AppendOptions{Run: "1.1", Claim: true})
	require.NoError(t, err)
	_, _, err = b.AppendTask(ctx, "m1", rec, status(a2a.StateWorking), AppendOptions{Run: "2.1", Claim: true})
	require.ErrorIs(t, err, ErrTurnSettled, "a redelivered run may not claim a settled turn")
	rec, _, err = b.AppendTask(ctx, "m1", rec, status(a2a.StateCanceled), AppendOptions{})
	require.NoError(t, err, "a caller cancels a task waiting for input")
	_, _, err = b.AppendTask(ctx, "m1", rec, status(a2a.StateCompleted), AppendOptions{Run: "1.1"})
	require.True(t, errors.Is(err, ErrTerminal))
	assert.Equal(t, []a2a.TaskState{a2a.StateInputRequired, a2a.StateCanceled}, logStates(t, b, "m1"))
}
