package taskstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// A settle watch wakes its waiter with the task as the final append left
// it (well before Wait's once-a-second load), passing over the changes
// before it that did not settle the task.
func TestSettleWatchWakesOnTheFinalSnapshot(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := b.CreateTask(ctx, newRecord("s1"))
	require.NoError(t, err)
	w, err := b.WatchSettle("s1")
	require.NoError(t, err)
	defer w.Stop()
	seen := rec
	got := make(chan *TaskRecord, 1)
	go func() {
		r, err := w.Wait(ctx, seen)
		assert.NoError(t, err)
		got <- r
	}()
	rec, _, err = b.UpdateTask(ctx, "s1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) { return status("s1", a2a.StateWorking), nil })
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("woken by a snapshot that is not final: %s", r.Task.Status.State)
	default:
	}
	rec, _, err = b.UpdateTask(ctx, "s1", rec, func(*TaskRecord) (*a2a.StreamResponse, error) { return status("s1", a2a.StateCompleted), nil })
	require.NoError(t, err)
	select {
	case r := <-got:
		require.NotNil(t, r)
		assert.Equal(t, a2a.StateCompleted, r.Task.Status.State)
		assert.Equal(t, rec.LastSeq, r.LastSeq)
	case <-time.After(900 * time.Millisecond):
		t.Fatal("the waiter was not woken by the settling append (the once-a-second load comes later)")
	}
}

// The waiter is woken by the append that settled the task, not by the
// snapshot's store: a final event appended without storing a snapshot
// (the writer died before it, or stores later) still wakes it at once,
// with the task as the append left it.
func TestSettleWatchWakesOnTheSettlingAppend(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := b.CreateTask(ctx, newRecord("s2"))
	require.NoError(t, err)
	w, err := b.WatchSettle("s2")
	require.NoError(t, err)
	defer w.Stop()
	got := make(chan *TaskRecord, 1)
	seen := rec
	go func() {
		r, err := w.Wait(ctx, seen)
		assert.NoError(t, err)
		got <- r
	}()
	done := func(*TaskRecord) (*a2a.StreamResponse, error) { return status("s2", a2a.StateInputRequired), nil }
	next, _, err := b.AppendTask(ctx, "s2", rec, done, AppendOptions{Run: "1.1", Claim: true})
	require.NoError(t, err)
	select {
	case r := <-got:
		assert.Equal(t, a2a.StateInputRequired, r.Task.Status.State)
		assert.Equal(t, next.LastSeq, r.LastSeq)
		assert.Equal(t, "1.1", r.Run)
	case <-time.After(900 * time.Millisecond):
		t.Fatal("the waiter was not woken by the settling append")
	}
}

// A worker that cannot record a task's step for lack of storage says so,
// and the waiter stops waiting at once with an error matching
// ErrStoreFull; a notice for another task wakes nobody.
func TestSettleWatchEndsOnAStoreFullNotice(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := b.CreateTask(ctx, newRecord("s2"))
	require.NoError(t, err)
	w, err := b.WatchSettle("s2")
	require.NoError(t, err)
	defer w.Stop()
	errc := make(chan error, 1)
	go func() {
		_, err := w.Wait(ctx, rec)
		errc <- err
	}()
	b.NoticeStoreFull("another")
	select {
	case err := <-errc:
		t.Fatalf("woken by another task's notice: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	b.NoticeStoreFull("s2")
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrStoreFull)
	case <-time.After(900 * time.Millisecond): // before Wait's once-a-second load
		t.Fatal("the notice did not end the wait")
	}
}
