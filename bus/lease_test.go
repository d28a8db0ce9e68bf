package bus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/natsnode"
)

// One process holds a lease at a time; it renews it at will; another
// takes it over once it has not been renewed for leaseTTL, and the first
// then no longer holds it.
func TestLeaseOneHolderAndTakeover(t *testing.T) {
	prev := leaseTTL.Load()
	leaseTTL.Store(int64(300 * time.Millisecond))
	t.Cleanup(func() { leaseTTL.Store(prev) })
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func() *Bus {
		nc, err := srv.Connect("lease-test")
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		b, err := Open(ctx, nc, Config{})
		require.NoError(t, err)
		return b
	}
	a, b := open(), open()
	require.True(t, a.HoldLease(ctx, "work"), "the first to ask takes it")
	assert.False(t, b.HoldLease(ctx, "work"), "held by another")
	assert.True(t, a.HoldLease(ctx, "work"), "the holder renews it")
	assert.True(t, b.HoldLease(ctx, "other"), "leases are independent")
	// a stops renewing: b takes over after the TTL, not before.
	deadline := time.Now().Add(5 * time.Second)
	took := false
	for !took && time.Now().Before(deadline) {
		took = b.HoldLease(ctx, "work")
		time.Sleep(50 * time.Millisecond)
	}
	require.True(t, took, "taken over once the holder stopped renewing")
	assert.False(t, a.HoldLease(ctx, "work"), "the old holder lost it")
	assert.True(t, b.HoldLease(ctx, "work"))
}
