// Package bustest opens a bus on an embedded NATS server with JetStream, in
// the test process and without a listener: what a package's unit tests need
// to run against the real bus. Test support only.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Open starts an embedded server on a fresh data dir and opens a bus with
// cfg on it. Both stop when the test ends.
func Open(t testing.TB, cfg bus.Config) *bus.Bus {
	t.Helper()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	if err != nil {
		t.Fatalf("bustest: start server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect(t.Name())
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("bustest: open bus: %v", err)
	}
	return b
}
