package taskstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
)

// startTestCluster starts a 3-node JetStream cluster on loopback and
// returns a bus opened with cfg through each node (cfg.Replicas is set to 3).
func startTestCluster(t *testing.T, cfg bus.Config) []*Store {
	t.Helper()
	if testing.Short() {
		t.Skip("a 3-node cluster: skipped with -short")
	}
	const n = 3
	ports := make([]string, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = ln.Addr().String()
		require.NoError(t, ln.Close())
	}
	srvs := make([]*natsnode.Server, n)
	errc := make(chan error, n)
	for i := range n {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, "nats-route://"+p)
			}
		}
		go func() {
			s, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), ServerName: fmt.Sprintf("n%d", i),
				ClusterName: "rw", ClusterListen: ports[i], Routes: strings.Join(routes, ",")})
			srvs[i] = s
			errc <- err
		}()
	}
	for range n {
		require.NoError(t, <-errc)
	}
	t.Cleanup(func() {
		for _, s := range srvs {
			s.Shutdown()
		}
	})
	cfg.Replicas = 3
	buses := make([]*Store, n)
	deadline := time.Now().Add(60 * time.Second)
	for i, s := range srvs {
		nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b, err := openOn(ctx, nc, cfg)
			cancel()
			if err == nil {
				buses[i] = b
				break
			}
			require.True(t, time.Now().Before(deadline), "bus on node %d not open: %v", i, err)
			time.Sleep(250 * time.Millisecond)
		}
	}
	return buses
}

// TestReadYourWritesOnCluster writes tasks through each node of an R3
// cluster and reads every one back through every node at once: a reader
// must never miss a write that was acknowledged before it asked. With
// direct gets (answered by any replica) about 1 read in 30 found nothing.
func TestReadYourWritesOnCluster(t *testing.T) {
	buses := startTestCluster(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const tasks = 300
	var missed, behind []string
	for i := 0; i < tasks && ctx.Err() == nil; i++ {
		w := buses[i%len(buses)]
		id := fmt.Sprintf("rw-%d", i)
		rec, err := w.CreateTask(ctx, newRecord(id))
		require.NoError(t, err)
		for j, r := range buses {
			got, err := r.LoadTask(ctx, id)
			switch {
			case errors.Is(err, ErrTaskNotFound):
				missed = append(missed, fmt.Sprintf("%s created via n%d, read via n%d", id, i%3, j))
			case err != nil:
				t.Fatalf("read %s via n%d: %v", id, j, err)
			}
			_ = got
		}
		// A second write, then reads that must include it.
		next, _, err := w.UpdateTask(ctx, id, rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return status(id, a2a.StateWorking), nil
		})
		require.NoError(t, err)
		for j, r := range buses {
			got, err := r.LoadTask(ctx, id)
			require.NoError(t, err, "load %s via n%d", id, j)
			if got.LastSeq < next.LastSeq || got.Task.Status.State != a2a.StateWorking {
				behind = append(behind, fmt.Sprintf("%s via n%d: seq %d state %s, want seq %d working",
					id, j, got.LastSeq, got.Task.Status.State, next.LastSeq))
			}
		}
	}
	require.NoError(t, ctx.Err(), "the writes did not finish in time")
	require.Empty(t, missed, "acknowledged tasks read as not found")
	require.Empty(t, behind, "reads older than an acknowledged write")
}
