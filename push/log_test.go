package push

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
)

// The push log keeps the last LogDepth attempts of each config, in
// order, apart from the other configs' and tasks'.
func TestPushLogKeepsTheLastAttempts(t *testing.T) {
	b := bustest.Open(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := openConfigs(ctx, b)
	require.NoError(t, err)
	got, err := p.Attempts(ctx, "t1", "c1")
	require.NoError(t, err)
	require.Empty(t, got)

	const n = LogDepth + 5
	for i := 1; i <= n; i++ {
		for _, key := range [][2]string{{"t1", "c1"}, {"t1", "c2"}, {"t2", "c1"}} {
			a := Attempt{Seq: uint64(i), Attempt: 1, Time: time.Now().UTC(), Outcome: Delivered, Status: 200}
			if key[1] == "c2" {
				a.Outcome, a.Status = Failed, 500
			}
			require.NoError(t, p.RecordAttempt(ctx, key[0], key[1], a))
		}
	}
	got, err = p.Attempts(ctx, "t1", "c1")
	require.NoError(t, err)
	require.Len(t, got, LogDepth)
	for i, a := range got {
		require.EqualValues(t, n-LogDepth+1+i, a.Seq, "the last ones, oldest first")
		require.Equal(t, Delivered, a.Outcome)
	}
	got, err = p.Attempts(ctx, "t1", "c2")
	require.NoError(t, err)
	require.Len(t, got, LogDepth)
	require.Equal(t, Failed, got[0].Outcome)
	require.Error(t, p.RecordAttempt(ctx, "t1", "bad.key", Attempt{}))
	info, err := p.log.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 3*LogDepth, info.State.Msgs, "the stream keeps %d per config", LogDepth)
}
