package taskstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/a2amesh/a2amesh/bus"
)

// Run (retention) returns nil when its context ends.
func TestRunReturnsWhenDone(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	leaks := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	goleak.VerifyNone(t, leaks)
}
