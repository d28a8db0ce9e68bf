package agentrt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// flooder writes more artifacts than a task's log may hold, then ends the
// way its mode says.
type flooder struct{ mode string }

func (f *flooder) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "flood-" + f.mode, Description: "writes too much", Version: "1"}
}

func (f *flooder) Run(_ context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	var refused error
	for i := 0; i < 100; i++ {
		err := w.Artifact(a2a.Artifact{ArtifactID: fmt.Sprint("a", i), Parts: []a2a.Part{a2a.TextPart("x")}}, false, true)
		if err != nil && refused == nil {
			refused = err
		}
	}
	switch f.mode {
	case "complete":
		return w.Complete("all done") // as if nothing had been refused
	case "error":
		return refused
	}
	return nil
}

// An agent that writes past the events-per-task bound gets its writes
// refused; the task still ends, failed, saying why, whatever the agent
// did next (the last places of the log are kept for that).
func TestTaskOverEventLimitFails(t *testing.T) {
	const max = 40
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus.MaxTaskEvents = max }))
	for _, mode := range []string{"complete", "error", "return"} {
		t.Run(mode, func(t *testing.T) {
			name := "flood-" + mode
			startWorker(t, m.Store(), &flooder{mode: mode})
			waitRoutable(t, m, name)
			task := sendText(t, m.URL+"/agents/"+name, "go")
			require.Equal(t, a2a.StateFailed, task.Status.State)
			require.NotNil(t, task.Status.Message)
			text := task.Status.Message.Parts[0].Text
			assert.True(t, strings.Contains(text, fmt.Sprintf("limit of %d events", max)), "status message %q", text)
			assert.Less(t, len(task.Artifacts), max, "the refused artifacts are not in the task")

			// The log stays within its bound.
			rec, err := m.Store().LoadTask(context.Background(), task.ID)
			require.NoError(t, err)
			assert.LessOrEqual(t, rec.Events, int64(max))
		})
	}
}
