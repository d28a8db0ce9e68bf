package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFleetFigures is the bounded run of `a2amesh bench fleet`: one
// scale-from-zero round, two NATS node restarts (a worker started while a
// node is down, then one stopped), and a rolling restart of 2 workers and
// 2 edges under blocking load whose clients keep routing to an edge for a
// second after its SIGTERM. It asserts what the figures rest on: the
// queued sends complete once a worker starts, every edge shows each change
// made while a NATS node is down, and the rolling restart fails no
// request. With the edges' drain off (Drain 0) the last fails: clients
// are refused by the edge that closed its listener (984 of 7,752 requests
// in a run of the bench).
//
// About 90 s; A2AMESH_SKIP_CHAOS=1 skips it with the chaos run.
func TestFleetFigures(t *testing.T) {
	if os.Getenv("A2AMESH_SKIP_CHAOS") == "1" {
		t.Skip("A2AMESH_SKIP_CHAOS=1: the fleet figures run is skipped")
	}
	if !faultsSupported {
		t.Skip("the fleet figures need a Unix system (SIGKILL, process groups)")
	}
	bin := buildA2amesh(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fig, err := RunFigures(ctx, FiguresConfig{
		Bin: bin, ScaleRounds: 1, Queued: 5, Restarts: 2,
		Rolling: true, RollClients: 8, RollWorkers: 2, Drain: 3 * time.Second, RouteLag: time.Second,
		Logf: t.Logf,
	})
	require.NoError(t, err)
	require.Len(t, fig.ScaleFromZero, 1)
	assert.Positive(t, fig.ScaleFromZero[0].FirstAnswer)
	require.Len(t, fig.Convergence, 2)
	assert.Equal(t, "worker started", fig.Convergence[0].Change)
	assert.Equal(t, "worker stopped", fig.Convergence[1].Change)
	r := fig.Rolling
	require.NotNil(t, r)
	t.Logf("rolling restart: %d requests, %d failed %v %v", r.Requests, r.Failures, r.Failed, r.Examples)
	assert.Positive(t, r.Requests)
	assert.Zero(t, r.Failures, "a rolling restart with a drain fails no request: %v", r.Examples)
}
