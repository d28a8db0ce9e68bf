// Package meshtest starts an in-process mesh for tests: a real embedded
// NATS server with JetStream in a temp dir, a real HTTP edge on a loopback
// port and the built-in agents.
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

// Mesh is a running test mesh.
type Mesh struct {
	*mesh.Mesh
	// URL is the edge's base URL, http://127.0.0.1:PORT.
	URL string
}

// Option adjusts the mesh's configuration.
type Option func(*mesh.Config)

// WithConfig lets a test change any setting.
func WithConfig(f func(*mesh.Config)) Option { return Option(f) }

// Start starts a mesh and stops it when the test ends. Logs are discarded
// unless A2AMESH_TEST_LOG is set.
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
