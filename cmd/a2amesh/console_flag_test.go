package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// The console is on unless --console=false (or A2AMESH_CONSOLE=false).
func TestConsoleFlagConfig(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		args []string
		env  string
		off  bool
	}{{nil, "", false}, {[]string{"--console=false"}, "", true}, {nil, "false", true}, {[]string{"--console"}, "false", false}} {
		t.Setenv("A2AMESH_CONSOLE", c.env)
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ef := addEdgeFlags(fs, "")
		require.NoError(t, fs.Parse(c.args))
		cfg, err := ef.config(log, metrics.New)
		require.NoError(t, err)
		require.Equal(t, c.off, cfg.DisableConsole, "%v env %q", c.args, c.env)
	}
}

// --jaeger-ui and --jaeger-query take a base URL (a trailing slash
// dropped); anything else is refused, naming the flag.
func TestJaegerFlagsConfig(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	parse := func(args ...string) (ui, query string, err error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ef := addEdgeFlags(fs, "")
		require.NoError(t, fs.Parse(args))
		cfg, err := ef.config(log, metrics.New)
		return cfg.JaegerUI, cfg.JaegerQuery, err
	}
	ui, query, err := parse()
	require.NoError(t, err)
	require.Empty(t, ui)
	require.Empty(t, query)
	ui, query, err = parse("--jaeger-ui", "http://127.0.0.1:16686/", "--jaeger-query", "http://jaeger:16686")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:16686", ui)
	require.Equal(t, "http://jaeger:16686", query)
	for _, bad := range []string{"127.0.0.1:16686", "javascript:alert(1)", "ftp://h/"} {
		_, _, err = parse("--jaeger-ui", bad)
		require.ErrorContains(t, err, "invalid --jaeger-ui", bad)
		_, _, err = parse("--jaeger-query", bad)
		require.ErrorContains(t, err, "invalid --jaeger-query", bad)
	}
}

// `dev --console=false` serves no console: /console/ is 404 while the
// mesh serves its agents.
func TestDevConsoleOff(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, []string{"--listen", addr, "--data", t.TempDir(), "--console=false",
			"--log-level", "error", "--metrics=false", "--push=false", "--grpc-listen", "off"})
	}()
	status := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.True(t, natstest.Eventually(ctx, 30*time.Second, func() bool { return status("/healthz") == http.StatusOK }))
	require.Equal(t, http.StatusNotFound, status("/console/"))
	require.Equal(t, http.StatusOK, status("/agents"))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("dev did not stop")
	}
}
