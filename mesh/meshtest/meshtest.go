// Package meshtest starts a whole mesh (package mesh) for a test: a real
// embedded NATS server with JetStream in the test's temp dir, a real HTTP
// edge on a free loopback port and the built-in agents, stopped when the
// test ends. The mesh's own tests use it, and so can tests of programs
// that talk to a mesh or run workers on one (WithConfig sets
// mesh.Config.NATSListen for workers in other processes; Bus serves
// workers in the test's own process).
package meshtest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
)

// Mesh is a running test mesh: the mesh.Mesh and its URL.
type Mesh struct {
	*mesh.Mesh
	// URL is the edge's base URL, http://127.0.0.1:PORT.
	URL string
}

// Option adjusts the mesh's configuration.
type Option func(*mesh.Config)

// WithConfig lets a test change any setting of the mesh.Config that Start
// passes to mesh.Start; f sees Start's defaults (free loopback port, temp
// dir, 15s keep-alive, logs as described at Start) and may change them.
func WithConfig(f func(*mesh.Config)) Option { return Option(f) }

// WithGRPC has the edge also serve the A2A gRPC binding, on a free
// loopback port: Mesh.GRPCAddr is its address.
func WithGRPC() Option {
	return func(c *mesh.Config) { c.GRPCListen = "127.0.0.1:0" }
}

// Start starts a mesh and stops it when the test ends (t.Cleanup); it
// fails the test when the mesh does not start within 30 seconds. The
// edge keeps open streams alive with a comment every 15 seconds. Logs
// are discarded unless the environment variable A2AMESH_TEST_LOG is set
// (then debug logs go to stderr).
func Start(t testing.TB, opts ...Option) *Mesh {
	t.Helper()
	cfg := mesh.Config{
		Listen:  "127.0.0.1:0",
		DataDir: t.TempDir(),
		Edge:    edge.Config{KeepAlive: 15 * time.Second},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mesh.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("meshtest: start mesh: %v", err)
	}
	t.Cleanup(m.Close)
	return &Mesh{Mesh: m, URL: m.URL()}
}
