package registry

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/natsnode"
)

func openBus(t *testing.T, cfg bus.Config) *bus.Bus {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("registry-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bustest.OpenStoreOn(ctx, nc, cfg)
	require.NoError(t, err)
	return b.Bus()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watchTable runs a table on b until stop is called (or the test ends)
// and returns it once it has caught up; ctx ends with stop.
func watchTable(t *testing.T, b *bus.Bus) (table *Table, ctx context.Context, stop func()) {
	return watchTableWith(t, b, NewTable(b))
}

// watchTableWith is watchTable with a table set up by the caller.
func watchTableWith(t *testing.T, b *bus.Bus, table *Table) (_ *Table, ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = table.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	<-table.Ready()
	return table, ctx, stop
}

func TestAgentAppearsAndLeaves(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 600 * time.Millisecond})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, stop := watchTable(t, b)

	// Two workers of one agent: the agent lives while either does.
	w1ctx, stop1 := context.WithCancel(ctx)
	w2ctx, stop2 := context.WithCancel(ctx)
	p1, p2 := make(chan struct{}), make(chan struct{})
	card := a2a.AgentCard{Name: "echo", Description: "d"}
	go func() {
		defer close(p1)
		_ = Publish(w1ctx, b, Entry{Agent: "echo", Instance: "a", Card: card}, nil, log)
	}()
	go func() {
		defer close(p2)
		_ = Publish(w2ctx, b, Entry{Agent: "echo", Instance: "b", Card: card}, nil, log)
	}()

	start := time.Now()
	waitFor(t, "echo to appear", func() bool { _, ok := table.Lookup("echo"); return ok })
	t.Logf("join latency: %s", time.Since(start))
	assert.Len(t, table.Agents(), 1, "two instances of one agent list once")

	stop1()
	<-p1
	time.Sleep(100 * time.Millisecond)
	_, ok := table.Lookup("echo")
	assert.True(t, ok, "agent stays while one worker remains")

	stop2()
	<-p2
	waitFor(t, "echo's workers to leave after a clean stop", func() bool { return table.Workers()["echo"] == 0 })
	card, ok = table.Lookup("echo")
	assert.True(t, ok, "an agent outlives its workers")
	assert.Equal(t, "echo", card.Name)
	stop()
}

func TestCrashedWorkerExpires(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 300 * time.Millisecond})
	table := NewTable(b)
	table.LostGrace = -1
	table, _, stop := watchTableWith(t, b, table)

	// A worker that registered once and died without deleting its entry.
	e := Entry{Agent: "ghost", Instance: "x", Card: a2a.AgentCard{Name: "ghost"}, TTL: 300 * time.Millisecond, Beat: time.Now()}
	table.apply(fakeEntry{key: "ghost.x", e: e}.entry())
	_, ok := table.Lookup("ghost")
	require.True(t, ok)
	waitFor(t, "ghost to expire", func() bool { _, ok := table.Lookup("ghost"); return !ok })
	stop()
}

// A card that changes reaches the table with the next heartbeat.
func TestChangedCardIsRepublished(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 300 * time.Millisecond})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, stop := watchTable(t, b)

	var desc atomic.Value
	desc.Store("first")
	card := func() a2a.AgentCard { return a2a.AgentCard{Name: "shifty", Description: desc.Load().(string)} }
	pub := make(chan struct{})
	go func() { defer close(pub); _ = Publish(ctx, b, Entry{Agent: "shifty", Instance: "a"}, card, log) }()
	waitFor(t, "the first card", func() bool { c, ok := table.Lookup("shifty"); return ok && c.Description == "first" })
	desc.Store("second")
	waitFor(t, "the changed card", func() bool { c, ok := table.Lookup("shifty"); return ok && c.Description == "second" })
	stop()
	<-pub
}

// An agent whose last instance stops answering (crashed, or cut off with
// a NATS node) stays routable for LostGrace, so sends queue for it instead
// of being refused; then it goes. A new instance ends the grace.
func TestLostAgentStaysRoutableForItsGrace(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 300 * time.Millisecond})
	table := NewTable(b)
	const grace = 1500 * time.Millisecond
	table.LostGrace = grace
	table, _, stop := watchTableWith(t, b, table)
	defer stop()

	ghost := func(instance string) fakeEntry {
		return fakeEntry{key: "ghost." + instance, e: Entry{Agent: "ghost", Instance: instance, Card: a2a.AgentCard{Name: "ghost"},
			TTL: 300 * time.Millisecond, Beat: time.Now()}}
	}
	table.apply(ghost("x").entry())
	waitFor(t, "the instance to be dropped", func() bool { return len(table.Agents()) == 0 })
	dropped := time.Now()
	card, ok := table.Lookup("ghost")
	require.True(t, ok, "a lost agent stays routable during its grace")
	assert.Equal(t, "ghost", card.Name)
	waitFor(t, "the grace to end", func() bool { _, ok := table.Lookup("ghost"); return !ok })
	assert.GreaterOrEqual(t, time.Since(dropped), grace/2, "routable for about its grace")

	// A new instance during the grace ends it; its clean stop is final.
	table.apply(ghost("y").entry())
	waitFor(t, "the second instance to be dropped", func() bool { return len(table.Agents()) == 0 })
	table.apply(ghost("z").entry())
	_, ok = table.Lookup("ghost")
	require.True(t, ok)
	table.apply(fakeEntry{key: "ghost.z", deleted: true}.entry())
	_, ok = table.Lookup("ghost")
	assert.False(t, ok, "a clean stop of the last instance ends the agent at once")
}

// A heartbeat written before an instance's clean stop and delivered after
// its stop notice (a bucket write still in flight when the worker stopped)
// does not list the instance again; one written after does.
func TestStopNoticeOutranksAStaleHeartbeat(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 10 * time.Second})
	table := NewTable(b)
	t0 := time.Now()
	beat := func(at time.Time) *bus.Entry {
		return fakeEntry{key: "late.x", e: Entry{Agent: "late", Instance: "x", Card: a2a.AgentCard{Name: "late"},
			TTL: 10 * time.Second, Beat: at}}.entry()
	}
	table.apply(beat(t0))
	require.Equal(t, 1, table.Workers()["late"])
	table.applyStop("late", "x", t0.Add(time.Second))
	require.Zero(t, table.Workers()["late"], "a stop notice ends the instance at once")
	table.apply(beat(t0.Add(500 * time.Millisecond)))
	assert.Zero(t, table.Workers()["late"], "a heartbeat from before the stop is stale")
	table.apply(beat(t0.Add(2 * time.Second)))
	assert.Equal(t, 1, table.Workers()["late"], "a heartbeat from after the stop lists it")
}
