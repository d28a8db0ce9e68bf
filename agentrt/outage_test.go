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

// Deliveries whose runs wrote nothing (the bus refused the run's first
// write, which claims the task: a failover, a full disk) do not use up the
// turn's runs: a task whose claim is refused more than MaxDeliver times in
// a row still completes when the bus takes writes again, instead of
// ending failed, and its log counts one run.
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
	refused := "the turn will run again"
	deadline := time.Now().Add(30 * time.Second)
	for logs.count(refused) <= cfg.MaxDeliver && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Greater(t, logs.count(refused), cfg.MaxDeliver, "the claim was not refused more than MaxDeliver times")
	capEvents(t, m.Store(), -1)

	rec := waitFinal(t, m.Store(), id, 3*cfg.AckWait+10*time.Second)
	require.NotNil(t, rec)
	require.Equal(t, a2a.StateCompleted, rec.Task.Status.State, "log states %v", logStates(t, m.Store(), id))
	assert.Equal(t, 1, rec.TurnRuns, "runs the log counts against the turn")
	assert.Greater(t, a.runs.Load(), int64(cfg.MaxDeliver), "agent runs")
}
