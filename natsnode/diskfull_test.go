package natsnode

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
)

// withStoreWatch makes the store watch quick for a test.
func withStoreWatch(t *testing.T, every, gap time.Duration, free int64) {
	t.Helper()
	e, g, f := storeCheckEvery, restartGapMin, storeRecoverFree.Load()
	storeCheckEvery, restartGapMin = every, gap
	storeRecoverFree.Store(free)
	t.Cleanup(func() { storeCheckEvery, restartGapMin = e, g; storeRecoverFree.Store(f) })
}

// A JetStream that nats-server stopped for lack of space (what it does on
// a clustered node whose disk fills) is started again by the embedded
// server once its disk has the space it needs, not before; the bus's
// clients write again without reconnecting, and what was written before
// is still there. (A single node's "critical write error" on a stream,
// the other fault, needs a real full disk: integration's tmpfs tests.)
func TestJetStreamRestartsOnceSpaceReturns(t *testing.T) {
	withStoreWatch(t, 50*time.Millisecond, 100*time.Millisecond, 1<<62) // no disk has that much free
	srv, b := startWatchedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := b.Registry().Put(ctx, "before", []byte("x"))
	require.NoError(t, err)

	// What nats-server does when a write finds no space on a clustered
	// node (handleOutOfSpace): it says so, and stops JetStream keeping its
	// state on disk.
	srv.current().Logger().Errorf("JetStream out of %s resources, will be DISABLED", "File")
	require.NoError(t, srv.current().ShutdownJetStream())
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = b.Registry().Put(wctx, "during", []byte("x"))
	wcancel()
	require.Error(t, err, "a write while JetStream is off")

	// Not enough space: JetStream stays off.
	time.Sleep(500 * time.Millisecond)
	require.False(t, srv.JetStreamEnabled(), "restarted without the space it needs")
	require.Zero(t, srv.JetStreamRestarts())

	// Space returns: JetStream is back by itself, and writes work again.
	storeRecoverFree.Store(1)
	deadline := time.Now().Add(10 * time.Second)
	for !srv.JetStreamEnabled() {
		require.True(t, time.Now().Before(deadline), "JetStream not restarted once space returned")
		time.Sleep(20 * time.Millisecond)
	}
	require.EqualValues(t, 1, srv.JetStreamRestarts())
	for {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		_, err = b.Registry().Put(wctx, "after", []byte("x"))
		wcancel()
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no write after the restart: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range []string{"before", "after"} {
		v, err := b.Registry().Get(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, "x", string(v), id)
	}
	// Healthy again: no further restart.
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 1, srv.JetStreamRestarts())
}

// startWatchedServer starts a quiet embedded server and opens a bus on it.
func startWatchedServer(t *testing.T) (*Server, *bus.Bus) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := StartServer(ServerConfig{DataDir: t.TempDir(), DontListen: true, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("diskfull-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, nc, bus.Config{})
	require.NoError(t, err)
	return srv, b
}

// JetStream stopped for another reason than space (here: as when the node
// is removed from its cluster, with room on the disk) is left alone: a
// restart would not mend it, and would undo what an operator did.
func TestJetStreamStoppedNotForSpaceIsLeftAlone(t *testing.T) {
	withStoreWatch(t, 50*time.Millisecond, 100*time.Millisecond, 1) // every disk has room
	srv, _ := startWatchedServer(t)
	srv.current().Logger().Errorf("JetStream being DISABLED, our server was removed from the cluster")
	require.NoError(t, srv.current().ShutdownJetStream())
	time.Sleep(time.Second)
	require.Zero(t, srv.JetStreamRestarts())
	require.False(t, srv.JetStreamEnabled())
}

// nats-server's words for stopping JetStream for lack of space are
// noticed, and only those.
func TestServerLogNotesOutOfSpace(t *testing.T) {
	for _, c := range []struct {
		format string
		args   []any
		want   bool
	}{
		{"JetStream out of %s resources, will be DISABLED", []any{"File"}, true},
		{"JetStream out of resources, will be DISABLED", nil, true},
		{"JetStream out of space, will be DISABLED", nil, true},
		{"JetStream being DISABLED, our server was removed from the cluster", nil, false},
		{"File system permission denied while writing, disabling JetStream", nil, false},
		{"JetStream %s resource limits exceeded for server", []any{"file"}, false},
	} {
		var flag atomic.Bool
		serverLog{outOfSpace: &flag}.Errorf(c.format, c.args...)
		if flag.Load() != c.want {
			t.Errorf("%q: out of space %v, want %v", c.format, flag.Load(), c.want)
		}
	}
}
