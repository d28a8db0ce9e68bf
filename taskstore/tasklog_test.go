package taskstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// TaskLog reads a task's recorded events in order with their positions
// and times, a page at a time, and stops at the log's end.
func TestTaskLogReadsPages(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	events, more, err := b.TaskLog(ctx, "t1", 0, 10)
	require.NoError(t, err)
	require.Empty(t, events, "no log")
	require.False(t, more)

	start := time.Now()
	var seqs []uint64
	for _, id := range []string{"t1", "other"} { // interleaved: other's events are not read
		rec, err := b.CreateTask(ctx, newRecord(id))
		require.NoError(t, err)
		if id == "t1" {
			seqs = append(seqs, rec.LastSeq)
		}
	}
	states := []a2a.TaskState{a2a.StateSubmitted, a2a.StateWorking, a2a.StateWorking, a2a.StateCompleted}
	for _, st := range states[1:] {
		for _, id := range []string{"t1", "other"} {
			rec, _, err := b.UpdateTask(ctx, id, nil, func(*TaskRecord) (*a2a.StreamResponse, error) { return status(id, st), nil })
			require.NoError(t, err)
			if id == "t1" {
				seqs = append(seqs, rec.LastSeq)
			}
		}
	}
	state := func(r *a2a.StreamResponse) a2a.TaskState {
		if r.Task != nil {
			return r.Task.Status.State
		}
		return r.StatusUpdate.Status.State
	}

	first, more, err := b.TaskLog(ctx, "t1", 0, 3)
	require.NoError(t, err)
	require.True(t, more)
	require.Len(t, first, 3)
	rest, more, err := b.TaskLog(ctx, "t1", first[2].Seq, 3)
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, rest, 1)
	all := append(first, rest...)
	for i, ev := range all {
		require.Equal(t, seqs[i], ev.Seq)
		require.Equal(t, states[i], state(ev.Resp))
		require.WithinDuration(t, start, ev.Time, 5*time.Second)
	}

	none, more, err := b.TaskLog(ctx, "t1", seqs[3], 3)
	require.NoError(t, err)
	require.Empty(t, none, "nothing after the last event")
	require.False(t, more)
}
