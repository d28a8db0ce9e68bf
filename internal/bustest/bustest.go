// Package bustest opens a bus on an embedded NATS server with JetStream, in
// the test process and without a listener: what a package's unit tests need
// to run against the real bus. Test support only.
package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Open starts an embedded server on a fresh data dir and opens a bus with
// cfg on it. Both stop when the test ends.
func Open(t testing.TB, cfg bus.Config) *bus.Bus {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
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

// OpenStore is Open with the task store on the bus.
func OpenStore(t testing.TB, cfg bus.Config) *taskstore.Store {
	t.Helper()
	b := Open(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := taskstore.Open(ctx, b)
	if err != nil {
		t.Fatalf("bustest: open the task store: %v", err)
	}
	return s
}

// OpenStoreOn opens the bus on nc with cfg, and the task store on it.
func OpenStoreOn(ctx context.Context, nc *nats.Conn, cfg bus.Config) (*taskstore.Store, error) {
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	return taskstore.Open(ctx, b)
}
