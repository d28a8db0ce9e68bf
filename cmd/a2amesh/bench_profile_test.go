package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bench"
	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// The load generator process measures a load and reports it with its own
// CPU use and, on Linux, the machine's CPU time over the same span.
func TestLoadgenProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{Binding: "HTTP+JSON"})
	require.NoError(t, err)
	defer srv.Stop()
	bin := buildCLI(t)
	r := runBin(t, bin, cliEnv(), "bench", "loadgen", "--url", srv.Endpoint, "--binding", "rest",
		"--concurrency", "2", "--duration", "500ms", "--warmup", "100ms")
	require.Equal(t, 0, r.code, r.stderr)
	var rep bench.LoadgenReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Positive(t, rep.Result.Tasks)
	require.Zero(t, rep.Result.Errors, "%v", rep.Result.ErrorSummary())
	require.Positive(t, rep.CPU, "its own CPU time")
	require.Positive(t, rep.Cores())
	if _, err := os.Stat("/proc/stat"); err == nil {
		require.Positive(t, rep.MachineTotal)
		require.Greater(t, rep.MachineTotal, rep.MachineBusy-1e-9)
		require.Positive(t, rep.Share())
		require.LessOrEqual(t, rep.Share(), 1.0)
	}

	r = runBin(t, bin, cliEnv(), "bench", "loadgen", "--url", srv.Endpoint, "--binding", "soap")
	require.NotEqual(t, 0, r.code, "a bad binding fails the run")
}

// bench list fills a mesh to each level and times ListTasks there; bad
// levels are refused before anything starts.
func TestBenchList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, runBenchList(ctx, []string{"--tasks", "20,60", "--calls", "2", "--clients", "4", "--data", t.TempDir()}))
	for _, bad := range [][]string{{"--tasks", "50,20"}, {"--tasks", "0"}, {"--tasks", "x"}, {"--calls", "0"}} {
		require.Error(t, runBenchList(ctx, bad), "%v", bad)
	}
}
