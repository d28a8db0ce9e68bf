package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// profiled writes a CPU profile of the run it wraps, and passes the run's
// result and error through; without a path it only runs it.
func TestProfiled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pprof")
	res, err := profiled(path, func() (bench.Result, error) {
		x := int64(0)
		for i := range int64(5_000_000) { // some work to sample
			x += i % 7
		}
		return bench.Result{Tasks: 42 + x*0}, nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 42, res.Tasks, "the run's result is passed through")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Positive(t, st.Size(), "a profile was written")

	boom := errors.New("boom")
	_, err = profiled("", func() (bench.Result, error) { return bench.Result{}, boom })
	require.ErrorIs(t, err, boom)
	_, err = profiled(filepath.Join(t.TempDir(), "no", "such", "dir", "p"), func() (bench.Result, error) { return bench.Result{}, nil })
	require.Error(t, err, "an unwritable profile path fails before the run")
}

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
	var rep loadgenReport
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
	assert.Contains(t, fmtGen(rep), "cores")

	r = runBin(t, bin, cliEnv(), "bench", "loadgen", "--url", srv.Endpoint, "--binding", "soap")
	require.NotEqual(t, 0, r.code, "a bad binding fails the run")
}
