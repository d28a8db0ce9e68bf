package a2a

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fold(evs ...*StreamResponse) Task {
	var t Task
	for _, ev := range evs {
		t.Apply(ev)
	}
	return t
}

func historyIDs(t Task) []string {
	var ids []string
	for _, m := range t.History {
		ids = append(ids, m.MessageID)
	}
	return ids
}

func statusEv(state TaskState, msg *Message) *StreamResponse {
	return &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: state, Message: msg, Timestamp: "2025-01-01T00:00:00.000Z"}}}
}

func artEv(id string, appendChunk bool, parts ...Part) *StreamResponse {
	return &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: appendChunk, Artifact: Artifact{ArtifactID: id, Parts: parts}}}
}

func initialTask() *StreamResponse {
	user := Message{MessageID: "u1", Role: RoleUser, Parts: []Part{TextPart("hi")}}
	return &StreamResponse{Task: &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateSubmitted}, History: []Message{user}}}
}

func TestApplyTaskReplacesSnapshot(t *testing.T) {
	task := Task{ID: "old", History: []Message{{MessageID: "x"}}, Artifacts: []Artifact{{ArtifactID: "a"}}}
	task.Apply(initialTask())
	assert.Equal(t, "t", task.ID)
	assert.Equal(t, StateSubmitted, task.Status.State)
	assert.Equal(t, []string{"u1"}, historyIDs(task))
	assert.Empty(t, task.Artifacts)
}

func TestApplyStatus(t *testing.T) {
	agent := &Message{MessageID: "a1", Role: RoleAgent, Parts: []Part{TextPart("need more")}}

	t.Run("status without message leaves history", func(t *testing.T) {
		task := fold(initialTask(), statusEv(StateWorking, nil))
		assert.Equal(t, StateWorking, task.Status.State)
		assert.Equal(t, "2025-01-01T00:00:00.000Z", task.Status.Timestamp)
		assert.Nil(t, task.Status.Message)
		assert.Equal(t, []string{"u1"}, historyIDs(task))
	})
	t.Run("status message appended to history once", func(t *testing.T) {
		ev := statusEv(StateInputRequired, agent)
		task := fold(initialTask(), statusEv(StateWorking, nil), ev, ev)
		assert.Equal(t, StateInputRequired, task.Status.State)
		assert.Equal(t, agent, task.Status.Message)
		assert.Equal(t, []string{"u1", "a1"}, historyIDs(task))
	})
	t.Run("same message in a later status is not duplicated", func(t *testing.T) {
		task := fold(initialTask(), statusEv(StateWorking, agent), statusEv(StateCompleted, agent))
		assert.Equal(t, StateCompleted, task.Status.State)
		assert.Equal(t, []string{"u1", "a1"}, historyIDs(task))
	})
	t.Run("different messages each appended", func(t *testing.T) {
		a2 := &Message{MessageID: "a2", Role: RoleAgent}
		task := fold(initialTask(), statusEv(StateWorking, agent), statusEv(StateCompleted, a2))
		assert.Equal(t, []string{"u1", "a1", "a2"}, historyIDs(task))
	})
	t.Run("status replaces the previous status entirely", func(t *testing.T) {
		task := fold(initialTask(), statusEv(StateWorking, agent), &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{Status: TaskStatus{State: StateCompleted}}})
		assert.Equal(t, TaskStatus{State: StateCompleted}, task.Status)
	})
	t.Run("history entry is a copy", func(t *testing.T) {
		m := &Message{MessageID: "a3", Role: RoleAgent}
		task := fold(initialTask(), statusEv(StateWorking, m))
		m.MessageID = "changed"
		assert.Equal(t, []string{"u1", "a3"}, historyIDs(task))
	})
}

func TestApplyUserTurn(t *testing.T) {
	agent := &Message{MessageID: "a1", Role: RoleAgent, Parts: []Part{TextPart("which file?")}}
	reply := &Message{MessageID: "u2", Role: RoleUser, Parts: []Part{TextPart("that one")}}
	task := fold(initialTask(), statusEv(StateWorking, nil), statusEv(StateInputRequired, agent), &StreamResponse{Message: reply})
	assert.Equal(t, []string{"u1", "a1", "u2"}, historyIDs(task))
	assert.Equal(t, StateSubmitted, task.Status.State, "a user turn reopens the interrupted task")
	assert.Nil(t, task.Status.Message)

	// A status message equal to the last history entry is the dedupe case;
	// a message after the user turn is new.
	task.Apply(statusEv(StateWorking, agent))
	assert.Equal(t, []string{"u1", "a1", "u2", "a1"}, historyIDs(task))

	// An agent message goes to history without touching the status.
	task = fold(initialTask(), statusEv(StateWorking, nil), &StreamResponse{Message: &Message{MessageID: "a9", Role: RoleAgent}})
	assert.Equal(t, []string{"u1", "a9"}, historyIDs(task))
	assert.Equal(t, StateWorking, task.Status.State)
}

func TestApplyArtifacts(t *testing.T) {
	t.Run("new artifact appended", func(t *testing.T) {
		task := fold(initialTask(), artEv("a", false, TextPart("1")), artEv("b", false, TextPart("x")))
		require.Len(t, task.Artifacts, 2)
		assert.Equal(t, "a", task.Artifacts[0].ArtifactID)
		assert.Equal(t, "b", task.Artifacts[1].ArtifactID)
	})
	t.Run("append adds parts to the same artifact", func(t *testing.T) {
		task := fold(initialTask(), artEv("a", false, TextPart("1")), artEv("a", true, TextPart("2")), artEv("a", true, TextPart("3"), TextPart("4")))
		require.Len(t, task.Artifacts, 1)
		assert.Equal(t, []Part{TextPart("1"), TextPart("2"), TextPart("3"), TextPart("4")}, task.Artifacts[0].Parts)
	})
	t.Run("append to an unknown artifact creates it", func(t *testing.T) {
		task := fold(initialTask(), artEv("a", true, TextPart("1")))
		require.Len(t, task.Artifacts, 1)
		assert.Equal(t, []Part{TextPart("1")}, task.Artifacts[0].Parts)
	})
	t.Run("non-append replaces the artifact in place", func(t *testing.T) {
		repl := &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{Artifact: Artifact{ArtifactID: "a", Name: "v2", Parts: []Part{TextPart("new")}}}}
		task := fold(initialTask(), artEv("a", false, TextPart("old")), artEv("b", false, TextPart("b")), repl)
		require.Len(t, task.Artifacts, 2)
		assert.Equal(t, Artifact{ArtifactID: "a", Name: "v2", Parts: []Part{TextPart("new")}}, task.Artifacts[0], "same position, whole artifact replaced")
		assert.Equal(t, "b", task.Artifacts[1].ArtifactID)
	})
	t.Run("append keeps name and updates metadata only when given", func(t *testing.T) {
		first := &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{Artifact: Artifact{ArtifactID: "a", Name: "doc", Metadata: Metadata{"v": "1"}, Parts: []Part{TextPart("1")}}}}
		noMeta := &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{Append: true, Artifact: Artifact{ArtifactID: "a", Name: "ignored", Parts: []Part{TextPart("2")}}}}
		task := fold(initialTask(), first, noMeta)
		assert.Equal(t, "doc", task.Artifacts[0].Name)
		assert.Equal(t, Metadata{"v": "1"}, task.Artifacts[0].Metadata)
		withMeta := &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{Append: true, Artifact: Artifact{ArtifactID: "a", Metadata: Metadata{"v": "2"}}}}
		task.Apply(withMeta)
		assert.Equal(t, Metadata{"v": "2"}, task.Artifacts[0].Metadata)
		assert.Len(t, task.Artifacts[0].Parts, 2)
	})
}

func TestApplyEmptyEventIsNoop(t *testing.T) {
	task := fold(initialTask(), statusEv(StateWorking, nil))
	before := task
	task.Apply(&StreamResponse{})
	assert.Equal(t, before, task)
}

// Folding must never write into the events: the same log folded twice, or
// into two snapshots, gives identical results and leaves the log unchanged.
func TestApplyDoesNotAliasEvents(t *testing.T) {
	base := initialTask()
	base.Task.History = make([]Message, 1, 10) // spare capacity invites in-place appends
	base.Task.History[0] = Message{MessageID: "u1", Role: RoleUser}
	base.Task.Artifacts = make([]Artifact, 1, 10)
	base.Task.Artifacts[0] = Artifact{ArtifactID: "a", Parts: append(make([]Part, 0, 10), TextPart("1"))}
	chunk := artEv("a", true, TextPart("2"))
	chunk.ArtifactUpdate.Artifact.Parts = append(make([]Part, 0, 10), TextPart("2"))

	log := []*StreamResponse{base, chunk, artEv("b", false, TextPart("b1"))}
	snapshot, err := json.Marshal(log)
	require.NoError(t, err)

	a := fold(log...)
	b := fold(log...)
	a.Apply(&StreamResponse{Message: &Message{MessageID: "ua", Role: RoleUser}})
	b.Apply(&StreamResponse{Message: &Message{MessageID: "ub", Role: RoleUser}})
	a.Apply(artEv("a", true, TextPart("A")))
	b.Apply(artEv("a", true, TextPart("B")))
	a.Apply(artEv("b", true, TextPart("A")))
	b.Apply(artEv("b", true, TextPart("B")))
	a.Apply(&StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("replaced")}}}})

	assert.Equal(t, []string{"u1", "ua"}, historyIDs(a))
	assert.Equal(t, []string{"u1", "ub"}, historyIDs(b))
	assert.Equal(t, []Part{TextPart("replaced")}, a.Artifacts[0].Parts)
	assert.Equal(t, []Part{TextPart("1"), TextPart("2"), TextPart("B")}, b.Artifacts[0].Parts)
	assert.Equal(t, []Part{TextPart("b1"), TextPart("A")}, a.Artifacts[1].Parts)
	assert.Equal(t, []Part{TextPart("b1"), TextPart("B")}, b.Artifacts[1].Parts)

	after, err := json.Marshal(log)
	require.NoError(t, err)
	assert.JSONEq(t, string(snapshot), string(after), "the event log is unchanged")
	assert.Equal(t, TextPart("1"), base.Task.Artifacts[0].Parts[:2][0])
	assert.Equal(t, Message{}, base.Task.History[:2][1], "no write into the event's spare capacity")
	assert.Equal(t, Part{}, base.Task.Artifacts[0].Parts[:2][1], "no write into the event's spare capacity")
}

// Folding the full log gives the same task the agent would report.
func TestApplyFullConversation(t *testing.T) {
	user := Message{MessageID: "u1", ContextID: "c", TaskID: "t", Role: RoleUser, Parts: []Part{TextPart("summarise")}}
	done := &Message{MessageID: "a1", ContextID: "c", TaskID: "t", Role: RoleAgent, Parts: []Part{TextPart("done")}}
	log := []*StreamResponse{
		{Task: &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateSubmitted}, History: []Message{user}}},
		statusEv(StateWorking, nil),
		artEv("sum", false, TextPart("part one")),
		artEv("sum", true, TextPart("part two")),
		statusEv(StateCompleted, done),
	}
	got := fold(log...)
	want := Task{
		ID: "t", ContextID: "c",
		Status:    TaskStatus{State: StateCompleted, Message: done, Timestamp: "2025-01-01T00:00:00.000Z"},
		Artifacts: []Artifact{{ArtifactID: "sum", Parts: []Part{TextPart("part one"), TextPart("part two")}}},
		History:   []Message{user, *done},
	}
	assert.Equal(t, want, got)

	// The log survives a JSON round trip (as stored in the bus) and folds the same.
	var decoded []*StreamResponse
	require.NoError(t, json.Unmarshal(mustMarshal(t, log), &decoded))
	assert.Equal(t, want, fold(decoded...))
}
