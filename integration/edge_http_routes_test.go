package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In a dev mesh (default agent echo), a task of ask is found and continued
// through the mesh endpoint /a2a by its id alone, in both protocol
// versions, as the CLI's hints do; echo's own endpoint still answers "Task
// not found" for it.
func TestEdgeHTTPMeshEndpointServesAnyAgentsTask(t *testing.T) {
	m := startRawMesh(t)
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			tk := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
			require.Equal(t, p.inputRequired, tk.Status.State)

			got := m.getTask(t, p, "/a2a", tk.ID, nil)
			assert.Equal(t, p.inputRequired, got.Status.State)
			m.fails(t, "/agents/echo", p.get, map[string]any{"id": tk.ID}, -32001)
			m.fails(t, "/agents/echo", p.send, sendParams(inTask(p.msg("Eve"), tk.ID, ""), nil), -32001)

			reply := inTask(p.msg("Bob"), tk.ID, "")
			done := p.sendTask(t, m.ok(t, "/a2a", p.send, sendParams(reply, nil)))
			assert.Equal(t, tk.ID, done.ID)
			assert.Equal(t, p.completed, done.Status.State)
			assert.Equal(t, "Hello, Bob!", done.artifactText())
			// A retry of the reply (same messageId) is the same turn.
			again := p.sendTask(t, m.ok(t, "/a2a", p.send, sendParams(reply, nil)))
			assert.Equal(t, tk.ID, again.ID)
			assert.Equal(t, p.completed, again.Status.State)

			m.fails(t, "/agents/echo", p.get, map[string]any{"id": tk.ID}, -32001)
			assert.Equal(t, p.completed, m.getTask(t, p, "/a2a", tk.ID, nil).Status.State)
		})
	}
}
