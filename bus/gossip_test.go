package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A gossip subject reaches every listener, the publisher's own included,
// and nothing more once a listener stopped; publishing fails, sending
// nothing, while the connection is down.
func TestGossip(t *testing.T) {
	b := openTestBus(t, Config{})
	leaks := goleak.IgnoreCurrent()
	g := b.Gossip("a2a.test.gossip")
	var (
		mu  sync.Mutex
		got [][]byte
	)
	sub, err := g.Listen(func(data []byte) {
		mu.Lock()
		got = append(got, data)
		mu.Unlock()
	})
	require.NoError(t, err)
	heard := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	require.NoError(t, g.Publish([]byte("one")))
	require.Eventually(t, func() bool { return heard() == 1 }, 10*time.Second, 5*time.Millisecond)
	mu.Lock()
	require.Equal(t, "one", string(got[0]))
	mu.Unlock()

	sub.Stop()
	require.NoError(t, g.Publish([]byte("two")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, b.Flush(ctx))
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, 1, heard(), "nothing after Stop")
	goleak.VerifyNone(t, leaks)

	b.nc.Close()
	require.ErrorIs(t, g.Publish([]byte("three")), ErrNotConnected)
	_, err = g.Listen(func([]byte) {})
	require.Error(t, err, "no listening on a closed connection")
}
