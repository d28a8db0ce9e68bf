package registry

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// Failover tests. TestEntrySurvivesJetStreamOutage takes JetStream's
// quorum away on a 3-node cluster (core NATS stays up on the node every
// client uses), so heartbeats (KV writes) fail as they do while the
// registry bucket elects a leader, and liveness pings still work.
// TestHeartbeatRetriesPromptly deletes the registry bucket's stream for a
// moment on a single node.

func testLogger() *slog.Logger {
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// signalHandler is a slog handler that signals c (without blocking) each
// time a record whose message starts with msg is logged.
type signalHandler struct {
	msg string
	c   chan struct{}
}

func (signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		select {
		case h.c <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// openOn opens a bus through its own connection to url (one per simulated
// process).
func openOn(t *testing.T, url, name string, cfg bus.Config) (*bus.Bus, *nats.Conn) {
	t.Helper()
	nc := natstest.Connect(t, name, url)
	var b *bus.Bus
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		b, err = bus.Open(ctx, nc, cfg)
		cancel()
		if err == nil {
			return b, nc
		}
		require.True(t, time.Now().Before(deadline), "bus not open: %v", err)
		time.Sleep(250 * time.Millisecond)
	}
}

// publishing runs Publish until the test ends (or stop is called).
func publishing(t *testing.T, b *bus.Bus, agent, instance string) (stop func()) {
	t.Helper()
	return publishingLog(t, b, agent, instance, testLogger())
}

func publishingLog(t *testing.T, b *bus.Bus, agent, instance string, log *slog.Logger) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := Publish(ctx, b, Entry{Agent: agent, Instance: instance, Card: a2a.AgentCard{Name: agent}}, nil, log)
		if err != nil {
			t.Errorf("publish %s.%s: %v", agent, instance, err)
		}
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

func present(table *Table, agent string) bool { _, ok := table.Lookup(agent); return ok }

// listed reports whether agent has a live instance in the table (Lookup
// also answers for an agent lost within its grace, and for a known agent
// with no live worker).
func listed(table *Table, agent string) bool { return table.Workers()[agent] > 0 }

// A worker whose heartbeats cannot be written stays in the edge's table
// for as long as it lives (it answers pings); a worker whose process dies
// meanwhile leaves the table within about a second of its heartbeat being
// late, and Live tells the two apart too.
func TestEntrySurvivesJetStreamOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster: skipped with -short")
	}
	const ttl = time.Second
	c := natstest.StartCluster(t, 3)
	url := c.Nodes[0].URL() // every client stays on the node that stays up
	cfg := bus.Config{RegistryTTL: ttl, Replicas: 3}
	edgeBus, _ := openOn(t, url, "edge", cfg)
	liveBus, _ := openOn(t, url, "worker-live", cfg)
	doomedBus, doomedConn := openOn(t, url, "worker-doomed", cfg)
	newBus, _ := openOn(t, url, "worker-new", cfg) // opened now: opening the layout needs quorum

	table := NewTable(edgeBus)
	table.Logger = testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = table.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runDone })

	publishing(t, liveBus, "echo", "live1")
	publishing(t, doomedBus, "doomed", "d1")
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		return present(table, "echo") && present(table, "doomed")
	}), "both agents registered")

	// No quorum: every JetStream write fails, core NATS on n0 works.
	c.Nodes[1].Stop()
	c.Nodes[2].Stop()
	outage := time.Now()
	// The doomed worker's process dies: its connection goes, it never
	// deletes its entry (nor could it: JetStream is off).
	doomedConn.Close()
	died := time.Now()

	var goneAfter time.Duration
	for time.Since(outage) < 5*ttl {
		if !listed(table, "echo") {
			t.Fatalf("echo dropped %v into the outage although its worker lives", time.Since(outage).Round(time.Millisecond))
		}
		if goneAfter == 0 && !listed(table, "doomed") {
			goneAfter = time.Since(died)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if goneAfter == 0 {
		t.Fatalf("doomed still listed %v after its worker died", time.Since(died).Round(time.Millisecond))
	}
	t.Logf("dead worker dropped %v after it died (TTL %v)", goneAfter.Round(time.Millisecond), ttl)
	require.Less(t, goneAfter, ttl+3*time.Second, "a dead worker goes soon after its heartbeat is late")

	// A worker that starts during the outage cannot write its entry, but
	// its registration notices reach the table on core NATS at once.
	joined := time.Now()
	stopNew := publishing(t, newBus, "newcomer", "n1")
	require.True(t, natstest.Eventually(ctx, 5*time.Second, func() bool { return listed(table, "newcomer") }),
		"a worker started without quorum is never listed")
	t.Logf("a worker started without quorum listed %v after it started", time.Since(joined).Round(time.Millisecond))
	require.Less(t, time.Since(joined), time.Second, "listed within a second")
	// Stopped before quorum returns: its retried bucket writes would
	// otherwise race the restarting node's stream creation, which
	// nats-server 2.15 leaves running at shutdown.
	stopNew()

	// Live (agents calling agents) answers from pings while the registry
	// bucket cannot be read.
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	live, err := Live(lctx, edgeBus, "echo")
	require.NoError(t, err)
	require.True(t, live, "echo is live during the outage")
	live, err = Live(lctx, edgeBus, "doomed")
	require.NoError(t, err)
	require.False(t, live, "doomed is dead")

	// Quorum back: the live worker's heartbeats land again.
	c.Nodes[1].Start(t)
	back := time.Now()
	require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool {
		for _, e := range table.Agents() {
			if e.Agent == "echo" && e.Beat.After(back) {
				return true
			}
		}
		return false
	}), "heartbeats resume after the outage")
	require.True(t, present(table, "echo"))
	require.False(t, listed(table, "doomed"))
	caughtUp(t, c, 1)
}

// caughtUp waits until the restarted node i holds as many streams as
// another running node, so that the test does not stop it while it still
// creates them (nats-server then leaves their goroutines running).
func caughtUp(t *testing.T, c *natstest.Cluster, i int) {
	t.Helper()
	streams := func(nd *natstest.Node) int {
		s := nd.Server()
		if s == nil {
			return -1
		}
		info, err := s.Jsz(nil)
		if err != nil {
			return -1
		}
		return info.Streams
	}
	most := func() int { // the most streams another running node holds
		n := -1
		for j, nd := range c.Nodes {
			if j != i {
				n = max(n, streams(nd))
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n := streams(c.Nodes[i]); n > 0 && n >= most() {
			time.Sleep(500 * time.Millisecond)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node %d did not catch up within 30s: %d streams, the others at most %d", i, streams(c.Nodes[i]), most())
}

// A heartbeat that fails is retried within about a second, not a whole
// heartbeat interval (TTL/3) later; and a worker that starts while the
// registry cannot be written registers once it can, instead of giving up.
func TestHeartbeatRetriesPromptly(t *testing.T) {
	const ttl = 15 * time.Second // heartbeats every 5s
	nd := natstest.StartSingle(t)
	cfg := bus.Config{RegistryTTL: ttl}
	edgeBus, _ := openOn(t, nd.URL(), "edge", cfg)
	workerBus, adminConn := openOn(t, nd.URL(), "worker", cfg)
	lateBus, _ := openOn(t, nd.URL(), "worker-late", cfg)
	table, ctx, _ := watchTable(t, edgeBus)

	failed := make(chan struct{}, 1)
	publishingLog(t, workerBus, "echo", "w1", slog.New(signalHandler{msg: "registry heartbeat failed", c: failed}))
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return present(table, "echo") }))

	// The registry bucket's stream goes: every heartbeat fails (nothing
	// stores its subject) until it is created again.
	js, err := jetstream.New(adminConn)
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, "KV_"+bus.BucketRegistry))
	// A worker starting now cannot register yet.
	publishing(t, lateBus, "late", "l1")
	// Wait for the worker to see a heartbeat fail (the next one is due
	// within TTL/3), then bring the bucket back. Waiting on the failure,
	// not on the clock, keeps a slow machine from racing the next beat.
	select {
	case <-failed:
	case <-time.After(ttl):
		t.Fatal("no heartbeat failed while the registry bucket was gone")
	}
	admin, _ := openOn(t, nd.URL(), "admin", cfg) // ensures the bucket again
	back := time.Now()
	var renewed time.Duration
	require.True(t, natstest.Eventually(ctx, ttl, func() bool {
		// Read the bucket itself: the table's watcher died with the
		// stream and is replaced only once it has been quiet a while.
		kv, err := admin.Registry().Get(ctx, "echo.w1")
		if err != nil {
			return false
		}
		var e Entry
		if json.Unmarshal(kv, &e) == nil && e.Beat.After(back) {
			renewed = time.Since(back)
			return true
		}
		return false
	}), "the heartbeat lands again")
	t.Logf("heartbeat renewed %v after the bucket came back (interval %v)", renewed.Round(time.Millisecond), ttl/3)
	// The failed heartbeat was just before the bucket came back: the next
	// interval tick is ~5s after it; a retry lands within about a second.
	require.Less(t, renewed, 3*time.Second, "a failed heartbeat is retried promptly")
	require.True(t, natstest.Eventually(ctx, 20*time.Second, func() bool { return present(table, "late") }),
		"a worker that started while the registry could not be written registers once it can")
	require.True(t, present(table, "echo"), "the table kept echo throughout")
}
