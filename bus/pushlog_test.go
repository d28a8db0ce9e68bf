package bus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The push log keeps the last PushLogDepth attempts of each config, in
// order, apart from the other configs' and tasks'.
func TestPushLogKeepsTheLastAttempts(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := b.OpenPush(ctx)
	require.NoError(t, err)
	got, err := p.Attempts(ctx, "t1", "c1")
	require.NoError(t, err)
	require.Empty(t, got)

	const n = PushLogDepth + 5
	for i := 1; i <= n; i++ {
		for _, key := range [][2]string{{"t1", "c1"}, {"t1", "c2"}, {"t2", "c1"}} {
			a := PushAttempt{Seq: uint64(i), Attempt: 1, Time: time.Now().UTC(), Outcome: PushDelivered, Status: 200}
			if key[1] == "c2" {
				a.Outcome, a.Status = PushFailed, 500
			}
			require.NoError(t, p.RecordAttempt(ctx, key[0], key[1], a))
		}
	}
	got, err = p.Attempts(ctx, "t1", "c1")
	require.NoError(t, err)
	require.Len(t, got, PushLogDepth)
	for i, a := range got {
		require.EqualValues(t, n-PushLogDepth+1+i, a.Seq, "the last ones, oldest first")
		require.Equal(t, PushDelivered, a.Outcome)
	}
	got, err = p.Attempts(ctx, "t1", "c2")
	require.NoError(t, err)
	require.Len(t, got, PushLogDepth)
	require.Equal(t, PushFailed, got[0].Outcome)
	require.Error(t, p.RecordAttempt(ctx, "t1", "bad.key", PushAttempt{}))
	info, err := p.log.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3*PushLogDepth, info.State.Msgs, "the stream keeps %d per config", PushLogDepth)
}
