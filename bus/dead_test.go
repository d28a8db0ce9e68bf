package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// RecentDeadLetters reads an agent's newest letters, newest first, with
// their reasons and tasks, with one get per letter read, however many
// letters of other agents lie between them; letters appended at once
// still chain.
func TestRecentDeadLettersReadsTheNewestFew(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	got, err := b.RecentDeadLetters(ctx, "alpha", 5)
	require.NoError(t, err)
	require.Empty(t, got, "no letters")

	// An old letter recorded before letters were chained: no header.
	_, err = b.js.Publish(ctx, DeadSubject("alpha"), []byte(`{"taskId":"old"}`))
	require.NoError(t, err)
	// alpha's letters among many of beta's.
	reasons := []string{"max deliveries", "undecodable", "task not found"}
	for i := range 30 {
		require.NoError(t, b.DeadLetter(ctx, "alpha", fmt.Appendf(nil, `{"taskId":"a%d"}`, i), reasons[i%3]))
		for j := range 20 {
			require.NoError(t, b.DeadLetter(ctx, "beta", fmt.Appendf(nil, `{"taskId":"b%d-%d"}`, i, j), "max deliveries"))
		}
	}
	require.NoError(t, b.DeadLetter(ctx, "alpha", []byte("not json"), "undecodable"))

	// Count the gets the read makes: one per letter.
	var gets atomic.Int32
	sub, err := b.nc.Subscribe("$JS.API.STREAM.MSG.GET."+StreamDead, func(*nats.Msg) { gets.Add(1) })
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())

	got, err = b.RecentDeadLetters(ctx, "alpha", 4)
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())
	require.Len(t, got, 4)
	require.Equal(t, DeadLetterInfo{Seq: got[0].Seq, Time: got[0].Time, Reason: "undecodable"}, got[0], "a letter that does not decode has no task")
	for i, want := range []string{"a29", "a28", "a27"} {
		require.Equal(t, want, got[i+1].TaskID)
		require.Equal(t, reasons[(29-i)%3], got[i+1].Reason)
	}
	for i := 1; i < len(got); i++ {
		require.Less(t, got[i].Seq, got[i-1].Seq, "newest first")
		require.False(t, got[i].Time.After(got[i-1].Time))
	}
	require.Eventually(t, func() bool { return gets.Load() == 4 }, 2*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 4, gets.Load(), "one get per letter, no scan")
	require.NoError(t, sub.Unsubscribe())

	// The chain ends at the first chained letter: the unchained one
	// before it is not reached, and nothing of beta's is.
	got, err = b.RecentDeadLetters(ctx, "alpha", MaxRecentDeadLetters+5)
	require.NoError(t, err)
	require.Len(t, got, MaxRecentDeadLetters)
	got, err = b.RecentDeadLetters(ctx, "gamma", 3)
	require.NoError(t, err)
	require.Empty(t, got)

	// Letters of one agent appended at once chain all the same: each
	// append expects the newest it read, and tries again when another
	// came first.
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				require.NoError(t, b.DeadLetter(ctx, "gamma", fmt.Appendf(nil, `{"taskId":"g%d-%d"}`, g, i), "max deliveries"))
			}
		}()
	}
	wg.Wait()
	got, err = b.RecentDeadLetters(ctx, "gamma", MaxRecentDeadLetters)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, l := range got {
		seen[l.TaskID] = true
	}
	require.Len(t, seen, 12, "every letter on the chain once: %v", got)
}
