package registry

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// Connection probes (proc.go). The TTL here is the default 10s, so an
// entry left by a dead worker outlives every bound below: only the probes
// can make it go in time.
const crashTTL = 10 * time.Second

// A worker process that dies (its connection closes without a word: no
// entry is deleted) leaves the edge's table within about a second, every
// agent it served with it; an agent it alone served is not routable
// either (the crash is known: no grace), and one another worker serves
// stays.
func TestCrashedWorkerLeavesAtOnce(t *testing.T) {
	nd := natstest.StartSingle(t)
	cfg := bus.Config{RegistryTTL: crashTTL}
	edgeBus, _ := openOn(t, nd.URL(), "edge", cfg)
	deadBus, deadConn := openOn(t, nd.URL(), "worker-dies", cfg)
	liveBus, _ := openOn(t, nd.URL(), "worker-lives", cfg)
	table := NewTable(edgeBus) // the default LostGrace: 30s
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)

	publishing(t, deadBus, "solo", "s1")
	publishing(t, deadBus, "pair", "p1")
	publishing(t, liveBus, "pair", "p2")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		table.mu.RLock()
		defer table.mu.RUnlock()
		return len(table.entries) == 3
	}), "three entries")
	table.mu.RLock()
	procs := len(table.procs)
	table.mu.RUnlock()
	require.Equal(t, 2, procs, "one probe subject per connection, however many agents it serves")

	deadConn.Close() // the process dies
	died := time.Now()
	var gone time.Duration
	for time.Since(died) < 3*time.Second {
		require.True(t, listed(table, "pair") && present(table, "pair"), "pair has a live worker")
		if !listed(table, "solo") {
			gone = time.Since(died)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NotZero(t, gone, "solo still listed %v after its only worker died", time.Since(died).Round(time.Millisecond))
	t.Logf("dead worker gone from the table %v after its connection closed (TTL %v)", gone.Round(time.Millisecond), crashTTL)
	card, ok := table.Lookup("pair")
	require.True(t, ok)
	require.Equal(t, "pair", card.Name)
	time.Sleep(500 * time.Millisecond)
	require.True(t, present(table, "solo"), "an agent outlives its crashed worker: its sends queue")
}

// The entries of a dead worker outlive it in the bucket (3 TTLs), and a
// watch that starts again replays them: they are not listed again.
func TestReplayedEntryOfDeadWorkerStaysGone(t *testing.T) {
	const ttl = time.Second
	nd := natstest.StartSingle(t)
	cfg := bus.Config{RegistryTTL: ttl}
	edgeBus, _ := openOn(t, nd.URL(), "edge", cfg)
	deadBus, deadConn := openOn(t, nd.URL(), "worker-dies", cfg)
	table := NewTable(edgeBus)
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)
	publishing(t, deadBus, "ghost", "g1")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return listed(table, "ghost") }))

	deadConn.Close()
	require.True(t, natstest.Eventually(ctx, 3*time.Second, func() bool { return !listed(table, "ghost") }), "gone")
	require.True(t, natstest.Eventually(ctx, 5*time.Second, func() bool {
		table.mu.RLock()
		defer table.mu.RUnlock()
		return len(table.entries) == 0
	}), "its entry expires from the table")
	raw, err := edgeBus.Registry().Get(ctx, "ghost.g1")
	require.NoError(t, err, "the entry is still in the bucket")
	table.apply(&bus.Entry{Key: "ghost.g1", Value: raw, Revision: 1}) // what a new watch replays
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		require.False(t, listed(table, "ghost"), "a replayed entry of a dead worker is listed again")
	}
}

// A NATS node dies under workers whose failover takes longer than the
// probes' confirmation (their next server in line swallows the connect
// for 1.2s): no agent leaves any edge meanwhile, since the dead
// connections' server does not answer for anyone either. A worker that
// cannot fail over (its only server is the dead node) is unlisted after
// slowConfirm but stays routable for the lost grace.
func TestNodeFailoverNoFalseDeparture(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster: skipped with -short")
	}
	c := natstest.StartCluster(t, 3)
	cfg := bus.Config{RegistryTTL: crashTTL, Replicas: 3}
	edgeBus, _ := openOn(t, c.URLs(0), "edge", cfg)
	table := NewTable(edgeBus)
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)

	stall := stallingServer(t)
	var reconnects sync.Map // worker name -> time it reconnected
	const failing = 4
	for i := range failing {
		name := fmt.Sprintf("solo%d", i)
		// On n1, then a server that never speaks, then n2.
		b, _ := openWith(t, c.Nodes[1].URL()+","+stall+","+c.Nodes[2].URL(), name, cfg, &reconnects)
		publishing(t, b, name, "w")
	}
	steadyBus, _ := openOn(t, c.Nodes[2].URL(), "steady", cfg)
	publishing(t, steadyBus, "steady", "w")
	stuckBus, _ := openWith(t, c.Nodes[1].URL(), "stuck", cfg, &reconnects)
	publishing(t, stuckBus, "stuck", "w")
	all := []string{"solo0", "solo1", "solo2", "solo3", "steady", "stuck"}
	require.True(t, natstest.Eventually(ctx, 20*time.Second, func() bool {
		for _, a := range all {
			if !listed(table, a) {
				return false
			}
		}
		return true
	}), "every agent registered")

	c.Nodes[1].Stop()
	stopped := time.Now()
	var unlisted time.Duration
	for time.Since(stopped) < slowConfirm+3*time.Second {
		for _, a := range all[:failing+1] {
			if !listed(table, a) || !present(table, a) {
				t.Fatalf("%s left the table %v into the failover although its worker lives", a, time.Since(stopped).Round(time.Millisecond))
			}
		}
		if unlisted == 0 && !listed(table, "stuck") {
			unlisted = time.Since(stopped)
		}
		require.True(t, present(table, "stuck"), "a worker cut off with its node stays routable (lost grace)")
		time.Sleep(10 * time.Millisecond)
	}
	for i := range failing {
		at, ok := reconnects.Load(fmt.Sprintf("solo%d", i))
		require.True(t, ok, "solo%d reconnected", i)
		took := at.(time.Time).Sub(stopped)
		t.Logf("solo%d reconnected %v after its node stopped", i, took.Round(time.Millisecond))
		require.Greater(t, took, confirmAfter, "the failover outlasts the confirmation (else this test proves nothing)")
	}
	require.NotZero(t, unlisted, "a worker unreachable with its node is unlisted after a while")
	t.Logf("the worker stuck on the dead node unlisted %v after it stopped", unlisted.Round(time.Millisecond))
	require.GreaterOrEqual(t, unlisted, slowConfirm, "not before slowConfirm")
}

// A worker whose connection drops while its server lives (kicked: a
// slow consumer, a network blip) is back within ReconnectWait plus jitter
// (the mesh's own dial options): longer than a probe period, so probes
// find it missing, but not long enough to unlist it.
func TestDroppedConnectionNoFalseDeparture(t *testing.T) {
	nd := natstest.StartSingle(t)
	cfg := bus.Config{RegistryTTL: crashTTL}
	edgeBus, _ := openOn(t, nd.URL(), "edge", cfg)
	table := NewTable(edgeBus)
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)

	reconnected := make(chan struct{}, 1)
	nc, err := bus.Dial(bus.DialConfig{URL: nd.URL(), Name: "worker"})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	nc.SetReconnectHandler(func(*nats.Conn) {
		select {
		case reconnected <- struct{}{}:
		default:
		}
	})
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	b, err := bustest.OpenStoreOn(octx, nc, cfg)
	cancel()
	require.NoError(t, err)
	publishing(t, b.Bus(), "echo", "w")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return listed(table, "echo") }))

	// Watch the table throughout, the reconnects included.
	var left atomic.Int64 // when echo was first seen unlisted (unix ns)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for i := 0; i < 100_000 && wctx.Err() == nil; i++ {
			if !listed(table, "echo") || !present(table, "echo") {
				left.CompareAndSwap(0, time.Now().UnixNano())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stopWatch(); <-watched })
	for i := range 4 {
		cid, err := nc.GetClientID()
		require.NoError(t, err)
		require.NoError(t, nd.Server().DisconnectClientByID(cid))
		kicked := time.Now()
		select {
		case <-reconnected:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker did not reconnect")
		}
		took := time.Since(kicked)
		t.Logf("kick %d: the worker reconnected after %v", i+1, took.Round(time.Millisecond))
		require.Greater(t, took, DefaultProbeEvery, "the connection was away for longer than a probe period")
		time.Sleep(time.Second)
		if at := left.Load(); at != 0 {
			t.Fatalf("echo left the table %v after kick %d although its worker lives", time.Unix(0, at).Sub(kicked).Round(time.Millisecond), i+1)
		}
	}
}

// A worker whose connection is away for longer than the confirmation
// (kicked, and slow to reconnect) is taken for crashed; once it is back,
// it is listed again at once, not at its next heartbeat.
func TestGoneConnectionComesBack(t *testing.T) {
	nd := natstest.StartSingle(t)
	cfg := bus.Config{RegistryTTL: crashTTL}
	edgeBus, _ := openOn(t, nd.URL(), "edge", cfg)
	table := NewTable(edgeBus)
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)

	reconnected := make(chan time.Time, 1)
	nc, err := nats.Connect(nd.URL(), nats.Name("worker"), nats.MaxReconnects(-1), nats.ReconnectWait(2*time.Second),
		nats.ReconnectJitter(0, 0), nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- time.Now():
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	b, err := bustest.OpenStoreOn(octx, nc, cfg)
	cancel()
	require.NoError(t, err)
	publishing(t, b.Bus(), "echo", "w")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return listed(table, "echo") }))

	cid, err := nc.GetClientID()
	require.NoError(t, err)
	require.NoError(t, nd.Server().DisconnectClientByID(cid))
	require.True(t, natstest.Eventually(ctx, 3*time.Second, func() bool { return !listed(table, "echo") }),
		"a connection away from a live server for long is taken for crashed")
	var back time.Time
	select {
	case back = <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not reconnect")
	}
	require.True(t, natstest.Eventually(ctx, 3*time.Second, func() bool { return listed(table, "echo") && present(table, "echo") }))
	again := time.Since(back)
	t.Logf("listed again %v after it reconnected", again.Round(time.Millisecond))
	require.Less(t, again, time.Second, "listed again by a probe, not a heartbeat (every %v)", crashTTL/3)
}

// A worker whose NATS user may not subscribe to its connection's probe
// subject (the server refuses it after Subscribe returned) does not
// advertise it: else every edge would take it for dead at once.
func TestRefusedProbeSubscriptionIsNotAdvertised(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		Users: []*server.User{
			{Username: "edge", Password: "e"},
			{Username: "worker", Password: "w", Permissions: &server.Permissions{
				Subscribe: &server.SubjectPermission{Deny: []string{subjAlivePrefix + "proc.>"}}}},
		}}
	srv, err := server.NewServer(opts)
	require.NoError(t, err)
	go srv.Start()
	require.True(t, srv.ReadyForConnections(20*time.Second))
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	cfg := bus.Config{RegistryTTL: crashTTL}
	connect := func(user, pass string) *bus.Bus {
		nc, err := nats.Connect(url, nats.UserInfo(user, pass), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b, err := bustest.OpenStoreOn(ctx, nc, cfg)
		require.NoError(t, err)
		return b.Bus()
	}
	edgeBus, workerBus := connect("edge", "e"), connect("worker", "w")
	table := NewTable(edgeBus)
	table.Logger = testLogger()
	table, ctx, _ := watchTableWith(t, edgeBus, table)
	publishing(t, workerBus, "echo", "w")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return listed(table, "echo") }))
	for _, e := range table.Agents() {
		require.Empty(t, e.Proc, "no connection advertised")
	}
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		require.True(t, listed(table, "echo") && present(table, "echo"), "a live worker left the table")
	}
}

// openWith opens a bus on its own connection to urls (in that order, and
// no others: not the servers the cluster tells of; 1.2s to connect to
// each), noting in reconnects when it reconnected.
func openWith(t *testing.T, urls, name string, cfg bus.Config, reconnects *sync.Map) (*bus.Bus, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(urls, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.DontRandomize(), nats.IgnoreDiscoveredServers(), nats.Timeout(1200*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { reconnects.Store(name, time.Now()) }))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	deadline := time.Now().Add(30 * time.Second)
	for {
		octx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := bustest.OpenStoreOn(octx, nc, cfg)
		cancel()
		if err == nil {
			return b.Bus(), nc
		}
		require.True(t, time.Now().Before(deadline), "bus not open: %v", err)
		time.Sleep(250 * time.Millisecond)
	}
}

// stallingServer listens on loopback, accepts connections and never says
// a word (a NATS client waits for the server's INFO until its connect
// timeout), until the test ends. It returns its nats:// URL.
func stallingServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	held := make(chan net.Conn, 64)
	conns.Add(1)
	go func() {
		defer conns.Done()
		for range 1000 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case held <- c:
			default:
				c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Wait()
		close(held)
		for c := range held {
			c.Close()
		}
	})
	return "nats://" + ln.Addr().String()
}
