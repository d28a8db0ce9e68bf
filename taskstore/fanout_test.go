package taskstore

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// tailTask is a task whose log a test extends.
type tailTask struct {
	t   *testing.T
	b   *Store
	id  string
	rec *TaskRecord
	all []uint64 // every event of its log, in order
}

func newTailTask(t *testing.T, ctx context.Context, b *Store) *tailTask {
	t.Helper()
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, newRecord(id))
	if err != nil {
		t.Fatal(err)
	}
	return &tailTask{t: t, b: b, id: id, rec: rec, all: []uint64{rec.LastSeq}}
}

// add appends n events and returns their positions.
func (tt *tailTask) add(ctx context.Context, n int) []uint64 {
	tt.t.Helper()
	var seqs []uint64
	for range n {
		next, _, err := tt.b.AppendTask(ctx, tt.id, tt.rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return status(tt.id, a2a.StateWorking), nil
		}, AppendOptions{})
		if err != nil {
			tt.t.Fatal(err)
		}
		tt.rec = next
		seqs = append(seqs, next.LastSeq)
	}
	tt.all = append(tt.all, seqs...)
	return seqs
}

// after is every event of the log after seq.
func (tt *tailTask) after(seq uint64) []uint64 {
	var out []uint64
	for _, s := range tt.all {
		if s > seq {
			out = append(out, s)
		}
	}
	return out
}

// readTail drives a tail as a stream does (Ready, then Next) until it
// has handed out n events, and fails the test past within.
func readTail(t *testing.T, ctx context.Context, tl *EventTail, n int, within time.Duration) []uint64 {
	t.Helper()
	var out []uint64
	timer := time.NewTimer(within)
	defer timer.Stop()
	for i := 0; len(out) < n && i < 1_000_000; i++ {
		select {
		case <-tl.Ready():
			ev, ok, err := tl.Next(ctx)
			if err != nil {
				t.Fatalf("tail failed after %v: %v", out, err)
			}
			if ok {
				out = append(out, ev.Seq)
			}
		case <-timer.C:
			t.Fatalf("tail handed out %v after %v; want %d events", out, within, n)
		}
	}
	return out
}

// quiet checks that a tail hands out nothing more for a while, and leaves
// it caught up (reading its queue).
func quiet(t *testing.T, ctx context.Context, tl *EventTail, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for range 1000 {
		select {
		case <-tl.Ready():
			ev, ok, err := tl.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				t.Fatalf("unexpected event %d", ev.Seq)
			}
		case <-timer.C:
			return
		}
	}
}

func feedOf(b *Store) *feed {
	feedsMu.Lock()
	defer feedsMu.Unlock()
	return feeds[b]
}

// A tail hands out its task's events after its starting point, from the
// log and then live from the edge's one feed, in order and once, however
// many tails a task has; the feed stops with the last tail.
func TestTailEvents(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x, y := newTailTask(t, ctx, b), newTailTask(t, ctx, b)
	for range 3 { // interleaved: one task's positions skip the other's
		x.add(ctx, 1)
		y.add(ctx, 1)
	}

	fromStart, err := b.TailEvents(ctx, x.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fromStart.Close()
	fromMiddle, err := b.TailEvents(ctx, x.id, x.all[2])
	if err != nil {
		t.Fatal(err)
	}
	defer fromMiddle.Close()
	other, err := b.TailEvents(ctx, y.id, y.all[len(y.all)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, want := readTail(t, ctx, fromStart, len(x.all), 10*time.Second), x.after(0); !slices.Equal(got, want) {
		t.Fatalf("from the start: %v, want %v", got, want)
	}
	if got, want := readTail(t, ctx, fromMiddle, len(x.after(x.all[2])), 10*time.Second), x.after(x.all[2]); !slices.Equal(got, want) {
		t.Fatalf("from the middle: %v, want %v", got, want)
	}
	quiet(t, ctx, fromStart, 100*time.Millisecond)
	quiet(t, ctx, other, 100*time.Millisecond)

	// Live: appended after every tail caught up.
	before, beforeY := x.all[len(x.all)-1], y.all[len(y.all)-1]
	for range 5 {
		x.add(ctx, 2)
		y.add(ctx, 1)
	}
	want := x.after(before)
	for name, tl := range map[string]*EventTail{"from the start": fromStart, "from the middle": fromMiddle} {
		if got := readTail(t, ctx, tl, len(want), 10*time.Second); !slices.Equal(got, want) {
			t.Fatalf("%s, live: %v, want %v", name, got, want)
		}
		quiet(t, ctx, tl, 100*time.Millisecond)
	}
	if got, want := readTail(t, ctx, other, len(y.after(beforeY)), 10*time.Second), y.after(beforeY); !slices.Equal(got, want) {
		t.Fatalf("other task, live: %v, want %v", got, want)
	}

	f := feedOf(b)
	if f == nil {
		t.Fatal("no feed while tails are open")
	}
	fromStart.Close()
	fromMiddle.Close()
	other.Close()
	other.Close() // twice is harmless
	if feedOf(b) != nil {
		t.Fatal("the feed outlived its last tail")
	}
	select {
	case <-f.done:
	default:
		t.Fatal("the feed's goroutine is still running")
	}
}

// dropOnce makes the feed lose each of seqs once in transit, as a dropped
// connection loses messages in flight; it counts the consumers the feed
// creates.
func dropOnce(t *testing.T, seqs ...uint64) (starts func() int) {
	var mu sync.Mutex
	drop := map[uint64]bool{}
	for _, s := range seqs {
		drop[s] = true
	}
	n := 0
	feedDrop = func(seq uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		if drop[seq] {
			delete(drop, seq)
			return true
		}
		return false
	}
	feedStarted = func(uint64) {
		mu.Lock()
		n++
		mu.Unlock()
	}
	t.Cleanup(func() { feedDrop, feedStarted = nil, nil })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// The live feed losing events in transit (its consumer's first delivery
// and one in the middle of a burst, which the next delivery's gap reveals,
// and the last one, which nothing follows) does not lose them for a
// stream: the feed reads the log again after the last event it handed
// out, and every tail gets every event, in order, once.
func TestTailEventsFeedLosesEvents(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x, y := newTailTask(t, ctx, b), newTailTask(t, ctx, b)
	x.add(ctx, 1)
	next := SeqOf(x.all[len(x.all)-1])
	// x's next event, then y's and x's alternating, x's last (the feed
	// drops messages, one event each here).
	first, middle, last := next+1, next+1+2*4, next+1+2*10 // x's 1st, 5th and 11th events
	starts := dropOnce(t, first, middle, last)
	tails := make([]*EventTail, 3)
	for i := range tails {
		tl, err := b.TailEvents(ctx, x.id, x.all[0])
		if err != nil {
			t.Fatal(err)
		}
		defer tl.Close()
		tails[i] = tl
		readTail(t, ctx, tl, 1, 10*time.Second) // caught up from the log
		quiet(t, ctx, tl, 50*time.Millisecond)
	}
	before := x.all[len(x.all)-1]
	x.add(ctx, 1)
	for range 10 {
		y.add(ctx, 1)
		x.add(ctx, 1)
	}
	if !slices.Contains(x.all, Pos(first, 0)) || !slices.Contains(x.all, Pos(middle, 0)) || x.all[len(x.all)-1] != Pos(last, 0) {
		t.Fatalf("positions %v do not hold %d, %d and %d", x.all, first, middle, last)
	}
	want := x.after(before)
	for i, tl := range tails {
		if got := readTail(t, ctx, tl, len(want), 20*time.Second); !slices.Equal(got, want) {
			t.Fatalf("tail %d: %v, want %v", i, got, want)
		}
		quiet(t, ctx, tl, 100*time.Millisecond)
	}
	if n := starts(); n < 2 {
		t.Fatalf("the feed created %d consumers; want it to read the log again after the losses", n)
	}
}

// A tail whose stream does not read while its queue overflows drops the
// queue and reads the log again: nothing is lost, nothing repeated.
func TestTailEventsOverflow(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x := newTailTask(t, ctx, b)
	tl, err := b.TailEvents(ctx, x.id, x.all[0])
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	quiet(t, ctx, tl, 50*time.Millisecond)
	x.add(ctx, tailMaxQueued+20)
	if !natstest.Eventually(ctx, 10*time.Second, func() bool {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return tl.lost
	}) {
		t.Fatal("the queue did not overflow")
	}
	x.add(ctx, 5)
	want := x.after(x.all[0])
	if got := readTail(t, ctx, tl, len(want), 20*time.Second); !slices.Equal(got, want) {
		t.Fatalf("got %d events (%v...), want %d", len(got), got[:min(5, len(got))], len(want))
	}
	quiet(t, ctx, tl, 100*time.Millisecond)
}

// Through a restart of the NATS server (the connection drops and
// reconnects; the feed's consumer is gone) a tail hands out every event
// once, in order: the ones before, the ones appended while the server
// came back, the ones after.
func TestTailEventsServerRestart(t *testing.T) {
	node := natstest.StartSingle(t)
	nc := natstest.Connect(t, "tail-restart", node.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := openOn(ctx, nc, bus.Config{})
	if err != nil {
		t.Fatal(err)
	}
	x := newTailTask(t, ctx, b)
	x.add(ctx, 2)
	starts := dropOnce(t) // counts consumers only
	tl, err := b.TailEvents(ctx, x.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	got := readTail(t, ctx, tl, 3, 10*time.Second)
	quiet(t, ctx, tl, 50*time.Millisecond) // caught up: live from here
	before := x.all[len(x.all)-1]
	x.add(ctx, 2)
	got = append(got, readTail(t, ctx, tl, 2, 10*time.Second)...)
	quiet(t, ctx, tl, 50*time.Millisecond)
	if starts() != 1 {
		t.Fatalf("%d consumers before the restart (%v)", starts(), tl.f.err())
	}

	node.Stop()
	node.Start(t)
	x.add(ctx, 3) // retried by the bus until the server answers
	got = append(got, readTail(t, ctx, tl, 3, 30*time.Second)...)
	quiet(t, ctx, tl, 50*time.Millisecond)
	x.add(ctx, 2)
	got = append(got, readTail(t, ctx, tl, 2, 10*time.Second)...)
	if want := x.after(0); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v (last before the restart %d)", got, want, before)
	}
	quiet(t, ctx, tl, 200*time.Millisecond)
	if starts() < 2 {
		t.Fatalf("the feed did not read the log again after the restart (%d consumers, %d reconnects)", starts(), nc.Stats().Reconnects)
	}
}
