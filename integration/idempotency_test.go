package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// send posts a blocking send of msg to echo and returns the task's id.
func sendID(t *testing.T, m *rawMesh, p proto, msg map[string]any) string {
	t.Helper()
	return p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(msg, nil))).ID
}

func TestIdempotencyWindow(t *testing.T) {
	const window = 400 * time.Millisecond
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.IdempotencyWindow = window }))
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			msg := p.msg("same message")
			first := sendID(t, m, p, msg)
			assert.Equal(t, first, sendID(t, m, p, msg), "a retry within the window is the same task")

			time.Sleep(window + 100*time.Millisecond)
			second := sendID(t, m, p, msg)
			assert.NotEqual(t, first, second, "the messageId reused after the window starts a new task")
			assert.Equal(t, second, sendID(t, m, p, msg), "a retry of the new send finds the new task")

			time.Sleep(window + 100*time.Millisecond)
			third := sendID(t, m, p, msg)
			assert.NotContains(t, []string{first, second}, third)
		})
	}
}

func TestIdempotencyOff(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.IdempotencyWindow = -1 }))
	msg := v10.msg("again")
	a := sendID(t, m, v10, msg)
	b := sendID(t, m, v10, msg)
	require.NotEmpty(t, a)
	assert.NotEqual(t, a, b, "with the window off every send is a new task")
}

func TestIdempotencyOffRepeatedTurnIsNew(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.IdempotencyWindow = -1 }))
	first := v10.msg("hi")
	tk := v10.sendTask(t, m.ok(t, "/agents/tck", v10.send, sendParams(first, nil)))
	require.Equal(t, v10.inputRequired, tk.Status.State)
	turn := v10.msg("again")
	for i := 0; i < 3; i++ { // the same messageId each time, as the TCK's history helper does
		turn["messageId"] = "same-turn"
		tk = v10.sendTask(t, m.ok(t, "/agents/tck", v10.send, sendParams(inTask(turn, tk.ID, tk.ContextID), nil)))
	}
	got := m.getTask(t, v10, "/agents/tck", tk.ID, nil)
	users := 0
	for _, h := range got.History {
		if h.Role == v10.userRole {
			users++
		}
	}
	assert.Equal(t, 4, users, "with dedupe off each repeated turn is recorded")
}
