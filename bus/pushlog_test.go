package bus

import (
	"context"
	"fmt"
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

// A task's delegations are listed in order, each child once however
// often it was recorded, at most max with more saying there are others;
// another task's are apart.
func TestDelegationsListsChildrenOnce(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, more, err := b.Delegations(ctx, "parent", 10)
	require.NoError(t, err)
	require.Empty(t, got)
	require.False(t, more)
	for i := range 5 {
		d := Delegation{TaskID: fmt.Sprintf("child-%d", i), Agent: "echo", Time: time.Now().UTC()}
		require.NoError(t, b.RecordDelegation(ctx, "parent", d))
		require.NoError(t, b.RecordDelegation(ctx, "parent", d)) // a re-run of the turn
	}
	require.NoError(t, b.RecordDelegation(ctx, "other", Delegation{TaskID: "child-x", Agent: "upper"}))
	got, more, err = b.Delegations(ctx, "parent", 10)
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, got, 5)
	for i, d := range got {
		require.Equal(t, fmt.Sprintf("child-%d", i), d.TaskID)
		require.Equal(t, "echo", d.Agent)
	}
	got, more, err = b.Delegations(ctx, "parent", 3)
	require.NoError(t, err)
	require.True(t, more)
	require.Len(t, got, 3)
	got, _, err = b.Delegations(ctx, "other", 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Error(t, b.RecordDelegation(ctx, "parent", Delegation{TaskID: "not a token"}))
	info, err := b.delegStream.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 6, info.State.Msgs, "a child recorded again is stored once")
}
