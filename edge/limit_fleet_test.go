package edge

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
)

// The fleet-wide rate limit (limit_fleet.go): the report codec and the
// bookkeeping with a fake clock, then real edges (each on its own
// connection to one embedded NATS server, serving HTTP and gRPC on
// loopback) sharing one principal's budget.

func TestUsageCodec(t *testing.T) {
	id := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	batch := []usage{{"p:alice", 3}, {"ip:127.0.0.1", 1}, {"p:" + strings.Repeat("x", maxUsageKeyBytes-2), 70_000}}
	msgs := encodeUsage(id, batch)
	require.Len(t, msgs, 1)
	gotID, got, err := decodeUsage(msgs[0])
	require.NoError(t, err)
	assert.Equal(t, id, gotID)
	assert.Equal(t, batch, got)
	assert.Empty(t, encodeUsage(id, nil), "nothing spent: nothing to send")

	// A large batch is split into reports of at most maxUsageMsgBytes,
	// which together hold every entry once.
	var big []usage
	for i := range 5000 {
		big = append(big, usage{"p:principal-" + strings.Repeat("y", i%40) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i), uint32(i + 1)})
	}
	msgs = encodeUsage(id, big)
	require.Greater(t, len(msgs), 1)
	var all []usage
	for _, m := range msgs {
		require.LessOrEqual(t, len(m), maxUsageMsgBytes)
		_, b, err := decodeUsage(m)
		require.NoError(t, err)
		all = append(all, b...)
	}
	assert.Equal(t, big, all)
}

// Every malformed report is refused whole.
func TestUsageDecodeRefusesBadReports(t *testing.T) {
	id := [8]byte{9}
	good := encodeUsage(id, []usage{{"p:a", 2}})[0]
	bad := map[string][]byte{
		"empty":           {},
		"header only, v2": append([]byte{2}, id[:]...),
		"short header":    good[:5],
		"truncated key":   good[:len(good)-3],
		"no count":        good[:len(good)-1],
		"count 0":         append(append([]byte{}, good[:len(good)-1]...), 0),
		"count past 32b":  append(append([]byte{}, good[:len(good)-1]...), 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
		"empty key":       append(append([]byte{}, good[:usageHeader]...), 0, 1),
		"key too long":    append(append([]byte{}, good[:usageHeader]...), 0x81, 0x04, 'p'),
		"too large":       append(append([]byte{}, good...), make([]byte, 4*maxUsageMsgBytes)...),
		"json":            []byte(`{"p:a":2}`),
	}
	for name, data := range bad {
		_, _, err := decodeUsage(data)
		assert.ErrorIs(t, err, errBadUsage, name)
	}
	_, b, err := decodeUsage(append([]byte{}, good[:usageHeader]...))
	require.NoError(t, err, "a report of nothing is a report")
	assert.Empty(t, b)
}

// What other edges report is taken out of this edge's buckets, down to a
// floor; its own reports and bad ones change nothing.
func TestLimitHearDebits(t *testing.T) {
	l, c := newTestLimiter(Limits{Rate: 2, Burst: 4})
	peer := [8]byte{0xee}
	report := func(id [8]byte, key string, n uint32) []byte { return encodeUsage(id, []usage{{key, n}})[0] }

	require.NoError(t, l.hear(report(peer, "p:a", 3)))
	ok, _ := l.take("p:a")
	assert.True(t, ok, "4 - 3 leaves one")
	ok, wait := l.take("p:a")
	assert.False(t, ok)
	assert.Equal(t, 500*time.Millisecond, wait)

	// A debt: a bucket goes below zero, and refills from there.
	require.NoError(t, l.hear(report(peer, "p:a", 2)))
	ok, wait = l.take("p:a")
	assert.False(t, ok)
	assert.Equal(t, 1500*time.Millisecond, wait, "-2 tokens: 3 tokens to go at 2/s")
	c.advance(1500 * time.Millisecond)
	ok, _ = l.take("p:a")
	assert.True(t, ok)

	// The debt stops at the floor, however much is reported.
	require.NoError(t, l.hear(report(peer, "p:b", 1_000_000)))
	_, wait = l.take("p:b")
	assert.Equal(t, time.Duration((1-l.floor)/2*float64(time.Second)), wait)
	assert.Equal(t, -maxDebtFactor*4.0, l.floor)

	// Its own reports and undecodable ones change nothing.
	require.NoError(t, l.hear(report(l.id, "p:c", 4)))
	require.ErrorIs(t, l.hear([]byte("garbage")), errBadUsage)
	for i := range 4 {
		ok, _ := l.take("p:c")
		require.True(t, ok, "call %d of p:c's burst", i+1)
	}
	assert.Equal(t, int64(1), l.badReports.Load())
	assert.Equal(t, int64(3), l.heardReports.Load())
}

// Calls admitted are reported once; a principal's reports are bounded.
func TestLimitDrain(t *testing.T) {
	l, _ := newTestLimiter(Limits{Rate: 1, Burst: 3, MaxPrincipals: 4})
	_, _ = l.take("p:before")
	assert.Empty(t, l.drain(), "nothing is noted for reports while sharing does not run")
	l.sharing.Store(true) // as RunLimits does
	// 3 admitted, 2 refused.
	for range 5 {
		_, _ = l.take("p:a")
	}
	_, _ = l.take("p:b")
	msgs := l.drain()
	require.Len(t, msgs, 1)
	id, got, err := decodeUsage(msgs[0])
	require.NoError(t, err)
	assert.Equal(t, l.id, id)
	assert.ElementsMatch(t, []usage{{"p:a", 3}, {"p:b", 1}}, got, "admitted calls only")
	assert.Empty(t, l.drain(), "reported once")

	// At most MaxPrincipals principals wait to be reported.
	for i := range 10 {
		_, _ = l.take("ip:10.0.0." + strconv.Itoa(i))
	}
	msgs = l.drain()
	require.Len(t, msgs, 1)
	_, got, err = decodeUsage(msgs[0])
	require.NoError(t, err)
	assert.Len(t, got, 4)

	assert.Nil(t, newLimiter(Limits{Rate: 1, PerEdge: true}, nil).unshared, "per edge: nothing to report")
}

// fleetEdge is an edge on its own connection to a shared NATS server,
// serving JSON-RPC over HTTP and the gRPC binding on loopback.
type fleetEdge struct {
	e        *Edge
	url      string
	grpc     a2apb.A2AServiceClient
	stopped  chan struct{} // closed when RunLimits returned
	shareErr error
}

// startFleet starts n edges with lim on one embedded NATS server; each
// runs RunLimits (share) until the test ends.
func startFleet(t *testing.T, n int, lim Limits, share bool) []*fleetEdge {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	var edges []*fleetEdge
	for i := range n {
		nc, err := srv.Connect("fleet-edge-" + strconv.Itoa(i))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{})
		cancel()
		require.NoError(t, err)
		e := New(Config{Store: b, Registry: registry.NewTable(b.Bus()), Limits: lim,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		hs := NewServer(e, e.log)
		go func() { _ = hs.Serve(ln) }()
		t.Cleanup(func() { _ = hs.Close() })
		gln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gs := e.GRPCServer()
		go func() { _ = gs.Serve(gln) }()
		t.Cleanup(gs.Stop)
		conn, err := grpc.NewClient(gln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		fe := &fleetEdge{e: e, url: "http://" + ln.Addr().String() + "/a2a", grpc: a2apb.NewA2AServiceClient(conn),
			stopped: make(chan struct{})}
		rctx, stop := context.WithCancel(context.Background())
		go func() {
			defer close(fe.stopped)
			if share {
				fe.shareErr = e.RunLimits(rctx)
			}
		}()
		t.Cleanup(func() { stop(); <-fe.stopped })
		edges = append(edges, fe)
	}
	if share && n > 1 { // every edge hears the others before the test starts
		deadline := time.Now().Add(10 * time.Second)
		for _, fe := range edges {
			for !fe.e.limiter.sharing.Load() {
				require.True(t, time.Now().Before(deadline), "RunLimits does not run")
				time.Sleep(5 * time.Millisecond)
			}
			fe.e.limiter.mu.Lock()
			fe.e.limiter.spent("p:hello") // a report to hear, on no principal of the test
			fe.e.limiter.mu.Unlock()
		}
		for _, fe := range edges {
			for fe.e.limiter.heardReports.Load() < int64(n-1) {
				require.True(t, time.Now().Before(deadline), "the edges do not hear each other")
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	return edges
}

// callHTTP makes one JSON-RPC call to u and reports whether it was
// admitted (anything but 429).
func callHTTP(t *testing.T, hc *http.Client, u string) bool {
	t.Helper()
	resp, err := hc.Post(u, "application/json", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"no-such-task"}}`)))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode != http.StatusTooManyRequests
}

// callGRPC makes one gRPC call and reports whether it was admitted
// (anything but RESOURCE_EXHAUSTED).
func callGRPC(t *testing.T, c a2apb.A2AServiceClient) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "no-such-task"})
	st, _ := status.FromError(err)
	require.NotEqual(t, codes.Unavailable, st.Code(), "the edge answers: %v", err)
	require.NotEqual(t, codes.DeadlineExceeded, st.Code(), "the edge answers: %v", err)
	return st.Code() != codes.ResourceExhausted
}

// drive sends one principal's calls (this process's loopback address)
// round robin to edges, HTTP and gRPC in turn, far faster than the rate,
// for about window: at most 100 calls a second, and at most 1000 calls.
// It returns the calls sent and admitted, and the time they took.
func drive(t *testing.T, edges []*fleetEdge, window time.Duration) (sent, admitted int, took time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 1000 && time.Since(start) < window; i++ {
		fe := edges[i%len(edges)]
		var ok bool
		if (i/len(edges))%2 == 0 {
			ok = callHTTP(t, hc, fe.url)
		} else {
			ok = callGRPC(t, fe.grpc)
		}
		sent++
		if ok {
			admitted++
		}
		<-tick.C
	}
	return sent, admitted, time.Since(start)
}

// Two edges sharing one bus hold one principal, calling both in turn over
// HTTP and gRPC, to about Rate×window+Burst, not twice that: the edges
// tell each other what they admitted. The same edges limiting on their
// own (no sharing) let about twice as much through: the bound below tells
// the two apart, which is what makes this test fail without the sharing.
func TestFleetLimitHoldsAcrossEdges(t *testing.T) {
	const (
		rate   = 5.0
		burst  = 5
		window = 3 * time.Second
	)
	lim := Limits{Rate: rate, Burst: burst, ShareEvery: 50 * time.Millisecond}
	// The budget over the time taken, with slack for the gossip's lag and
	// a loaded machine: a second of rate (20 times the lag). Without
	// sharing two edges admit 2×(Rate×T+Burst), 40 calls in 3 s, over it.
	bound := func(took time.Duration) float64 { return rate*took.Seconds() + burst + rate }

	t.Run("shared", func(t *testing.T) {
		edges := startFleet(t, 2, lim, true)
		_, admitted, took := drive(t, edges, window)
		t.Logf("2 edges, shared: %d calls admitted in %v (rate %v/s, burst %d)", admitted, took.Round(time.Millisecond), rate, burst)
		assert.LessOrEqual(t, float64(admitted), bound(took), "the principal's budget holds across the two edges")
		assert.GreaterOrEqual(t, float64(admitted), rate*took.Seconds()/2, "and is not cut (an edge taking its own calls twice)")
		for _, fe := range edges {
			assert.Positive(t, fe.e.limiter.heardReports.Load())
		}
	})
	t.Run("per edge", func(t *testing.T) {
		edges := startFleet(t, 2, lim, false)
		sent, admitted, took := drive(t, edges, window)
		t.Logf("2 edges, not shared: %d calls admitted in %v", admitted, took.Round(time.Millisecond))
		if float64(sent)/2 < 1.5*(rate*took.Seconds()+burst) {
			t.Skipf("only %d calls sent in %v: too few to drive each edge past its own budget", sent, took)
		}
		assert.Greater(t, float64(admitted), bound(took), "without sharing each edge grants the whole budget")
	})
}

// With NATS gone an edge limits on its own, and no call waits for the
// bus; RunLimits returns when told to, leaving nothing running.
func TestFleetLimitWithoutNATS(t *testing.T) {
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	var once sync.Once
	shutdown := func() { once.Do(srv.Shutdown) }
	t.Cleanup(shutdown)
	nc, err := srv.Connect("edge-without-nats")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{})
	require.NoError(t, err)
	leaks := goleak.IgnoreCurrent()

	e := New(Config{Store: b, Registry: registry.NewTable(b.Bus()), Limits: Limits{Rate: 1, Burst: 3, ShareEvery: 20 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunLimits(rctx) }()

	take := func() bool {
		t0 := time.Now()
		ok, _ := e.takeToken("p:alice")
		require.Less(t, time.Since(t0), 100*time.Millisecond, "a call never waits for the bus")
		return ok
	}
	for range 2 {
		require.True(t, take())
	}
	shutdown()
	require.Eventually(t, func() bool { return !b.Bus().Connected() }, 10*time.Second, 10*time.Millisecond)
	require.True(t, take(), "the last token of the burst")
	for range 50 {
		require.False(t, take(), "limited on this edge alone")
		time.Sleep(5 * time.Millisecond) // flushes come and go meanwhile
	}
	assert.ErrorIs(t, b.Bus().Gossip(SubjectRateLimitUsage).Publish([]byte{1}), bus.ErrNotConnected)

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("RunLimits did not return")
	}
	// The connection's own reconnect loop runs until it is closed.
	goleak.VerifyNone(t, leaks, goleak.IgnoreTopFunction("github.com/nats-io/nats%2ego.(*Conn).doReconnect"))
}

// Reports that do not decode, published on the subject by anyone, are
// ignored; the edge keeps hearing good ones.
func TestFleetLimitIgnoresBadReports(t *testing.T) {
	edges := startFleet(t, 1, Limits{Rate: 1, Burst: 3, ShareEvery: 20 * time.Millisecond}, true)
	l := edges[0].e.limiter
	b := edges[0].e.bus
	g := b.Gossip(SubjectRateLimitUsage)
	peer := [8]byte{0xab}
	garbage := [][]byte{
		{},
		[]byte("not a report"),
		append([]byte{usageVersion + 1}, make([]byte, 20)...),
		encodeUsage(peer, []usage{{"p:alice", 3}})[0][:12],
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.badReports.Load() == 0 { // until RunLimits listens, and hears them
		require.True(t, time.Now().Before(deadline), "no report heard")
		for _, m := range garbage {
			require.NoError(t, g.Publish(m))
		}
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, b.Flush(fctx))
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 3 {
		ok, _ := l.take("p:alice")
		require.True(t, ok, "call %d: bad reports took nothing", i+1)
	}
	// A good report still counts.
	require.NoError(t, g.Publish(encodeUsage(peer, []usage{{"p:bob", 3}})[0]))
	require.Eventually(t, func() bool { return l.heardReports.Load() > 0 }, 10*time.Second, 10*time.Millisecond)
	ok, _ := l.take("p:bob")
	assert.False(t, ok, "bob's burst was spent on another edge")
}

// RunLimits returns at once where there is nothing to share.
func TestRunLimitsNothingToShare(t *testing.T) {
	for _, lim := range []Limits{{}, {Rate: 1, PerEdge: true}} {
		e := &Edge{limiter: newLimiter(lim, nil)}
		require.NoError(t, e.RunLimits(context.Background()))
	}
}
