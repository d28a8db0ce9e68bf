package bus

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Queues reads each agent's work consumer (waiting, in flight, delivered
// again) and dead letters from a real JetStream.
func TestQueuesCountsWorkAndDeadLetters(t *testing.T) {
	b := openTestBus(t, Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	q, err := b.Queues(ctx)
	require.NoError(t, err)
	require.Empty(t, q, "no consumer, no dead letter")

	c, err := b.WorkConsumer(ctx, "alpha")
	require.NoError(t, err)
	for _, id := range []string{"t1", "t2", "t3"} {
		require.NoError(t, b.Enqueue(ctx, "alpha", id, []byte("{}"), "", nil))
	}
	require.NoError(t, b.Enqueue(ctx, "beta", "t9", []byte("{}"), "", nil)) // no consumer: not listed
	// A consumer's pending count follows the stream a moment after the
	// publish's ack: read until it has caught up (bounded).
	requireQueues(t, b, map[string]QueueStats{"alpha": {Pending: 3}})

	// All three taken, one of them handed back: it is delivered again
	// (the only one waiting, so the next fetch gets it) and counts as
	// redelivered while held.
	got := fetchN(t, ctx, c, 3)
	require.NoError(t, got[1].Nak())
	again := fetchN(t, ctx, c, 1)
	info, err := again[0].Info()
	require.NoError(t, err)
	require.EqualValues(t, 2, info.NumDelivered)
	require.NoError(t, b.DeadLetter(ctx, "alpha", []byte("x"), "max deliveries"))
	require.NoError(t, b.DeadLetter(ctx, "alpha", []byte("y"), "max deliveries"))
	require.NoError(t, b.DeadLetter(ctx, "gone", []byte("z"), "undecodable"))
	requireQueues(t, b, map[string]QueueStats{
		"alpha": {AckPending: 3, Redelivered: 1, Dead: 2},
		"gone":  {Dead: 1},
	})

	require.NoError(t, got[0].AckSync(ctx))
	require.NoError(t, again[0].AckSync(ctx))
	requireQueues(t, b, map[string]QueueStats{"alpha": {AckPending: 1, Dead: 2}, "gone": {Dead: 1}})
}

// requireQueues reads Queues until it says want, for at most 5 s.
func requireQueues(t *testing.T, b *Bus, want map[string]QueueStats) {
	t.Helper()
	var got map[string]QueueStats
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 200; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		q, err := b.Queues(ctx)
		cancel()
		require.NoError(t, err)
		if got = q; reflect.DeepEqual(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	require.Equal(t, want, got)
}

// fetchN takes n messages from c, failing the test past a few seconds.
func fetchN(t *testing.T, ctx context.Context, c Consumer, n int) []*Msg {
	t.Helper()
	ch, err := c.FetchWait(n, 5*time.Second)
	require.NoError(t, err)
	var out []*Msg
	for m := range ch {
		out = append(out, m)
	}
	require.Len(t, out, n)
	return out
}
