package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bench"
)

// Bad levels and roles are refused before anything starts.
func TestBenchMemoryFlags(t *testing.T) {
	ctx := context.Background()
	for _, bad := range [][]string{
		{"--tasks", "200,100"}, {"--tasks", "0"}, {"--tasks", "x"},
		{"--tasks", "10", "--roles", "cluster"}, {"--tasks", "10", "--max-tasks", "1"},
		{"--tasks", "10", "--clients", "-1"},
	} {
		err := runBenchMemory(ctx, append(bad, "--bin", "/nonexistent"))
		require.Error(t, err, "%v", bad)
		require.False(t, strings.Contains(err.Error(), "nonexistent"), "%v: refused before starting: %v", bad, err)
	}
}

// --pprof-listen serves profiles and the free-os-memory call on loopback
// only.
func TestServePprofLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, bad := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		_, err := servePprof(bad, log)
		require.Error(t, err, bad)
	}
	stop, err := servePprof("", log)
	require.NoError(t, err)
	stop()

	addr, err := bench.FreePort()
	require.NoError(t, err)
	stop, err = servePprof(addr, log)
	require.NoError(t, err)
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "# HeapAlloc = ")
	resp, err = http.Post("http://"+addr+"/debug/free-os-memory", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get("http://" + addr + "/debug/free-os-memory")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "only POST frees memory")
}
