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
	"github.com/a2amesh/a2amesh/mesh/meshtest"
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

// ListLatency times ListTasks calls and reads the total the mesh reports;
// an endpoint that is not a mesh is an error, not figures.
func TestListLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := meshtest.Start(t)
	ep := m.URL + "/agents/echo"
	hc := bench.NewClient(2)
	res, err := bench.Run(ctx, bench.Options{URL: ep, Method: bench.MethodSend10, Concurrency: 2, MaxRequests: 7, Duration: time.Minute, Client: hc})
	require.NoError(t, err)
	require.EqualValues(t, 7, res.Tasks)
	lr, err := bench.ListLatency(ctx, hc, ep, 3, "")
	require.NoError(t, err)
	require.Empty(t, lr.FirstError)
	require.Equal(t, 3, lr.Calls)
	require.Equal(t, 7, lr.TotalSize)
	require.Equal(t, 7, lr.PageTasks)
	require.Positive(t, lr.P50)

	lr, err = bench.ListLatency(ctx, hc, m.URL+"/healthz", 3, "")
	require.NoError(t, err)
	require.NotEmpty(t, lr.FirstError, "an error answer is reported, not timed")
	_, err = bench.ListLatency(ctx, hc, ep, 0, "")
	require.Error(t, err)
}
