package taskstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
)

// A task's delegations are listed in order, each child once however
// often it was recorded, at most max with more saying there are others;
// another task's are apart.
func TestDelegationsListsChildrenOnce(t *testing.T) {
	b := openTestStore(t, bus.Config{})
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
