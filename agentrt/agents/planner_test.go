package agents_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

func TestSplitPlan(t *testing.T) {
	cases := []struct{ in, first, rest string }{
		{"say this; shout that", "say this", "shout that"},
		{"a;b;c", "a", "b;c"}, // the first separator splits
		{"hello brave new world", "hello brave", "new world"},
		{"one two three", "one two", "three"},
		{"  spaced   out  words ", "spaced out", "words"},
		{"alone", "alone", "alone"},
		{"left;", "left", ""},
	}
	for _, c := range cases {
		first, rest := agents.SplitPlan(c.in)
		assert.Equal(t, c.first, first, c.in)
		assert.Equal(t, c.rest, rest, c.in)
	}
}

func TestPlannerAndUpperCards(t *testing.T) {
	b := agents.Builtin()
	for _, name := range []string{"planner", "upper"} {
		a, ok := b[name]
		require.True(t, ok, name)
		c := a.Card()
		assert.Equal(t, name, c.Name)
		require.Len(t, c.Skills, 1)
		assert.NotEmpty(t, c.Skills[0].Examples)
	}
	assert.Contains(t, b["planner"].Card().Description, "echo and upper")
}

func sendTo(t *testing.T, m *meshtest.Mesh, agent, text string) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := client.New(m.URL+"/agents/"+agent).Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage(text)})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	return res.Task
}

// delegatesOf lists the tasks whose MetaParent names parentID.
func delegatesOf(t *testing.T, b *taskstore.Store, parentID string) []*taskstore.TaskRecord {
	t.Helper()
	recs, err := b.ListTasks(context.Background(), func(r *taskstore.TaskRecord) bool {
		ref, _ := r.Task.Metadata[agentrt.MetaParent].(map[string]any)
		return ref != nil && ref["taskId"] == parentID
	})
	require.NoError(t, err)
	return recs
}

func TestPlannerDelegatesAndCombines(t *testing.T) {
	m := meshtest.Start(t)
	task := sendTo(t, m, "planner", "hello brave; new world")
	require.Equal(t, a2a.StateCompleted, task.Status.State, task.Status.Message.Text())
	require.Len(t, task.Artifacts, 1)
	art := task.Artifacts[0]
	require.Len(t, art.Parts, 2)
	assert.Equal(t, "echo: hello brave\nupper: NEW WORLD\n", art.Parts[0].Text)
	var data struct {
		Tasks map[string]string `json:"tasks"`
	}
	require.Equal(t, a2a.PartData, art.Parts[1].Kind)
	require.NoError(t, json.Unmarshal(art.Parts[1].Data, &data))

	// The delegated tasks: one each for echo and upper, in the planner's
	// context, naming the planner's task as their parent.
	recs := delegatesOf(t, m.Store(), task.ID)
	require.Len(t, recs, 2)
	byAgent := map[string]*taskstore.TaskRecord{}
	for _, r := range recs {
		byAgent[r.Agent] = r
	}
	for agent, want := range map[string]string{"echo": "hello brave", "upper": "NEW WORLD"} {
		r := byAgent[agent]
		require.NotNil(t, r, "no task delegated to %s", agent)
		assert.Equal(t, data.Tasks[agent], r.Task.ID, "the artifact names the %s task", agent)
		assert.Equal(t, task.ContextID, r.Task.ContextID)
		ref := r.Task.Metadata[agentrt.MetaParent].(map[string]any)
		assert.Equal(t, "planner", ref["agent"])
		assert.Equal(t, task.ContextID, ref["contextId"])

		// An ordinary task: a client reads it from its agent's endpoint.
		got, err := client.New(m.URL+"/agents/"+agent).GetTask(context.Background(), r.Task.ID, nil)
		require.NoError(t, err)
		assert.Equal(t, a2a.StateCompleted, got.Status.State)
		assert.Equal(t, task.ContextID, got.ContextID)
		require.NotEmpty(t, got.Artifacts)
		var text strings.Builder
		for _, p := range got.Artifacts[0].Parts {
			text.WriteString(p.Text)
		}
		assert.Equal(t, want, text.String())
	}
	// upper streamed: one appended chunk per word.
	assert.Len(t, byAgent["upper"].Task.Artifacts[0].Parts, 2)
}

func TestPlannerWithoutSeparatorSplitsWords(t *testing.T) {
	m := meshtest.Start(t)
	task := sendTo(t, m, "planner", "one two three four five")
	require.Equal(t, a2a.StateCompleted, task.Status.State, task.Status.Message.Text())
	require.Len(t, task.Artifacts, 1)
	assert.Equal(t, "echo: one two three\nupper: FOUR FIVE\n", task.Artifacts[0].Parts[0].Text)
}

func TestPlannerRejectsEmptyText(t *testing.T) {
	m := meshtest.Start(t)
	task := sendTo(t, m, "planner", "   ")
	assert.Equal(t, a2a.StateRejected, task.Status.State)
	assert.Empty(t, delegatesOf(t, m.Store(), task.ID))
}

// A delegate that ends its task other than completed fails the planner,
// with a message naming it.
func TestPlannerFailsWhenADelegateFails(t *testing.T) {
	m := meshtest.Start(t)
	// upper rejects more than 1000 words.
	task := sendTo(t, m, "planner", "fine; "+strings.Repeat("word ", 1001))
	require.Equal(t, a2a.StateFailed, task.Status.State)
	msg := task.Status.Message.Text()
	assert.Contains(t, msg, `agent "upper"`)
	assert.Contains(t, msg, "rejected")
	assert.Empty(t, task.Artifacts)
}

// A delegate that no worker serves fails the planner, naming the agent.
func TestPlannerFailsOnUnknownDelegate(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: m.Store(), Agent: agents.Planner{Second: "nobody"}, Name: "planner2", Timeout: 20 * time.Second}
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	c := client.New(m.URL + "/agents/planner2")
	require.Eventually(t, func() bool {
		_, err := c.Card(context.Background())
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)

	task := sendTo(t, m, "planner2", "a; b")
	require.Equal(t, a2a.StateFailed, task.Status.State)
	assert.Contains(t, task.Status.Message.Text(), `no agent "nobody" is registered with the mesh`)
}

// Canceling the planner's task cancels the task it delegated.
func TestPlannerCancelCancelsDelegates(t *testing.T) {
	m := meshtest.Start(t)
	c := client.New(m.URL + "/agents/planner")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// upper streams 300 words 100ms apart: it is still working when canceled.
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("quick; " + strings.Repeat("slow ", 300)),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	parentID := res.Task.ID

	var upperID string
	require.Eventually(t, func() bool {
		for _, r := range delegatesOf(t, m.Store(), parentID) {
			if r.Agent == "upper" && r.Task.Status.State == a2a.StateWorking {
				upperID = r.Task.ID
				return true
			}
		}
		return false
	}, 15*time.Second, 20*time.Millisecond, "the upper task never started")

	_, err = c.Cancel(ctx, parentID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rec, err := m.Store().LoadTask(ctx, upperID)
		return err == nil && rec.Task.Status.State == a2a.StateCanceled
	}, 15*time.Second, 20*time.Millisecond, "the delegated task must be canceled with the planner's")
	got, err := c.GetTask(ctx, parentID, nil)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, got.Status.State)
	assert.Empty(t, got.Artifacts)
}

func TestUpperStreamsWordByWord(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.New(m.URL+"/agents/upper").Stream(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("a bc d")})
	require.NoError(t, err)
	defer s.Close()
	var chunks []string
	var final a2a.TaskState
	for i := 0; i < 100 && !final.Final(); i++ {
		ev, err := s.Next()
		require.NoError(t, err)
		switch r := ev.Response; {
		case r.ArtifactUpdate != nil:
			assert.Equal(t, len(chunks) > 0, r.ArtifactUpdate.Append)
			for _, p := range r.ArtifactUpdate.Artifact.Parts {
				chunks = append(chunks, p.Text)
			}
		case r.StatusUpdate != nil:
			final = r.StatusUpdate.Status.State
		}
	}
	assert.Equal(t, a2a.StateCompleted, final)
	assert.Equal(t, []string{"A", " BC", " D"}, chunks)
}
