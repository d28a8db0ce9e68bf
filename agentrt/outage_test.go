package agentrt_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// count reports how many times s was logged.
func (l *syncLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// Deliveries that never ran (the bus refused the run's first write: a
// failover, a full disk) do not use up the turn's runs: a task whose
// claim is refused more than MaxDeliver times in a row still runs, once,
// when the bus takes writes again, instead of ending failed.
func TestRefusedClaimsDoNotUseUpTheRuns(t *testing.T) {
	cfg := bus.Config{AckWait: 3 * time.Second, MaxDeliver: 3}
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus = cfg }))
	const name = "outlaster"
	a := &counter{name: name}
	id := queueTurn(t, m.Store(), name, "outage-")

	pre := capEvents(t, m.Store(), tinyCap)
	t.Cleanup(func() { capEvents(t, m.Store(), pre) })
	logs := &syncLog{}
	startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Name: name, Concurrency: 1, Timeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	refused := "could not mark task working"
	deadline := time.Now().Add(30 * time.Second)
	for logs.count(refused) <= cfg.MaxDeliver && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Greater(t, logs.count(refused), cfg.MaxDeliver, "the claim was not refused more than MaxDeliver times")
	capEvents(t, m.Store(), -1)

	rec := waitFinal(t, m.Store(), id, 3*cfg.AckWait+10*time.Second)
	require.NotNil(t, rec)
	require.Equal(t, a2a.StateCompleted, rec.Task.Status.State, "log states %v", logStates(t, m.Store(), id))
	assert.EqualValues(t, 1, a.runs.Load(), "agent runs")
}
