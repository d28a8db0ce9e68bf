package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// An agent stays known after its last worker stopped: its card is served
// and it is routable, by a table that saw the worker and by one started
// after it left, until an operator removes it.
func TestAgentOutlivesItsWorkers(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 600 * time.Millisecond})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, _ := watchTable(t, b)

	wctx, stopWorker := context.WithCancel(ctx)
	pub := make(chan struct{})
	go func() {
		defer close(pub)
		_ = Publish(wctx, b, Entry{Agent: "sleepy", Instance: "a", Card: a2a.AgentCard{Name: "sleepy", Description: "d"}}, nil, log)
	}()
	waitFor(t, "sleepy's worker to be listed", func() bool { return listed(table, "sleepy") })
	waitFor(t, "sleepy's record to reach the table", func() bool { return knows(table, "sleepy") })
	stopWorker()
	<-pub
	stopped := time.Now()
	waitFor(t, "sleepy's worker to leave", func() bool { return !listed(table, "sleepy") })

	card, ok := table.Lookup("sleepy")
	require.True(t, ok, "a known agent with no worker is routable")
	assert.Equal(t, "d", card.Description)

	// A table that starts after the worker left knows the agent too.
	later, _, _ := watchTable(t, b)
	_, ok = later.Lookup("sleepy")
	require.True(t, ok, "a new edge knows an agent whose workers all left")
	agents := later.Agents()
	require.Len(t, agents, 1)
	assert.Equal(t, "sleepy", agents[0].Agent)
	assert.Empty(t, agents[0].Instance, "no live instance")
	assert.WithinDuration(t, stopped, agents[0].Beat, 5*time.Second, "when a worker was last seen")
	assert.Zero(t, later.Workers()["sleepy"])

	for _, name := range []string{"sleepy", "never"} {
		known, err := IsKnown(ctx, b, name)
		require.NoError(t, err)
		routable, err := Routable(ctx, b, name)
		require.NoError(t, err)
		assert.Equal(t, name == "sleepy", known, name)
		assert.Equal(t, name == "sleepy", routable, name)
	}

	// An operator removes it: unknown everywhere within a second.
	removed, err := Remove(ctx, b, "sleepy")
	require.NoError(t, err)
	require.True(t, removed)
	for _, tb := range []*Table{table, later} {
		waitFor(t, "the removal to reach the table", func() bool { _, ok := tb.Lookup("sleepy"); return !ok })
		assert.Empty(t, tb.Agents())
	}
	removed, err = Remove(ctx, b, "sleepy")
	require.NoError(t, err)
	assert.False(t, removed, "removing an unknown agent removes nothing")
	routable, err := Routable(ctx, b, "sleepy")
	require.NoError(t, err)
	assert.False(t, routable)
}

// An agent no worker has written for AgentRetention is forgotten, though
// the bucket's expiry tells no watcher.
func TestAgentForgottenAfterItsRetention(t *testing.T) {
	const retention = 1500 * time.Millisecond
	b := openBus(t, bus.Config{RegistryTTL: 600 * time.Millisecond, AgentRetention: retention})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, _ := watchTable(t, b)
	wctx, stopWorker := context.WithCancel(ctx)
	pub := make(chan struct{})
	go func() {
		defer close(pub)
		_ = Publish(wctx, b, Entry{Agent: "brief", Instance: "a", Card: a2a.AgentCard{Name: "brief"}}, nil, log)
	}()
	waitFor(t, "brief to be listed", func() bool { return listed(table, "brief") && knows(table, "brief") })
	// While a worker runs, it writes the record again (every tenth of the
	// retention here): the agent is never forgotten.
	time.Sleep(2 * retention)
	known, err := IsKnown(ctx, b, "brief")
	require.NoError(t, err)
	require.True(t, known, "a running worker keeps its agent's record")
	stopWorker()
	<-pub
	left := time.Now()
	_, ok := table.Lookup("brief")
	require.True(t, ok)
	waitFor(t, "brief to be forgotten", func() bool { _, ok := table.Lookup("brief"); return !ok })
	assert.GreaterOrEqual(t, time.Since(left), retention/2, "kept for about its retention")
	assert.Empty(t, table.Agents())
}

// knows reports whether the table holds agent's record from the agents
// bucket (what keeps it routable without workers).
func knows(table *Table, agent string) bool {
	table.mu.RLock()
	defer table.mu.RUnlock()
	_, ok := table.known[agent]
	return ok
}
