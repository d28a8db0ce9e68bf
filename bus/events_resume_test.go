package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/google/uuid"
)

// A follower delivers the log after a sequence, in order, each event once;
// losing its consumer ends it with an error (no retry of its own), and a
// new follower after the last event read goes on without a gap; the
// consumer goes with Close.
func TestFollowEvents(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, newRecord(id))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	add := func(n int) {
		for range n {
			next, _, err := b.UpdateTask(ctx, id, rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
				return status(id, a2a.StateWorking), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			rec = next
			seqs = append(seqs, next.LastSeq)
		}
	}
	add(3)
	if last, err := b.LastEventSeq(ctx, id); err != nil || last != seqs[2] {
		t.Fatalf("LastEventSeq = %d, %v; want %d", last, err, seqs[2])
	}
	if last, err := b.LastEventSeq(ctx, uuid.NewString()); err != nil || last != 0 {
		t.Fatalf("LastEventSeq of no task = %d, %v", last, err)
	}

	f, err := b.FollowEvents(ctx, id, seqs[0])
	if err != nil {
		t.Fatal(err)
	}
	next := func(f *EventFollower) uint64 {
		t.Helper()
		select {
		case ev, ok := <-f.C:
			if !ok {
				t.Fatalf("follower ended: %v", f.Err())
			}
			return ev.Seq
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		return 0
	}
	if got := []uint64{next(f), next(f)}; got[0] != seqs[1] || got[1] != seqs[2] {
		t.Fatalf("got %v, want %v", got, seqs[1:3])
	}
	// Its consumer goes: the follower ends with an error.
	var name string
	for info := range b.events.ListConsumers(ctx).Info() {
		if info.Config.FilterSubject == EventsSubject(id) {
			name = info.Name
		}
	}
	if err := b.js.DeleteConsumer(ctx, StreamEvents, name); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-f.C:
		if ok {
			t.Fatal("an event after its consumer went")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follower did not end when its consumer went")
	}
	if f.Err() == nil {
		t.Fatal("no error")
	}
	f.Close()
	add(2)
	f, err = b.FollowEvents(ctx, id, seqs[2])
	if err != nil {
		t.Fatal(err)
	}
	if got := []uint64{next(f), next(f)}; got[0] != seqs[3] || got[1] != seqs[4] {
		t.Fatalf("after resuming: got %v, want %v", got, seqs[3:5])
	}
	f.Close()
	if f.Err() != nil {
		t.Fatalf("closed follower: %v", f.Err())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for info := range b.events.ListConsumers(ctx).Info() {
			if info.Config.FilterSubject == EventsSubject(id) {
				n++
			}
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d consumers left after Close", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A follower whose very first delivery is lost in transit (taken here by
// another puller, as a dropped connection would lose it: the consumer acks
// nothing and counts it delivered) ends with a gap instead of starting at
// the second event.
func TestFollowerEndsWhenItsFirstDeliveryIsLost(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, newRecord(id))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if rec, _, err = b.UpdateTask(ctx, id, rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return status(id, a2a.StateWorking), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	followCreated = func(consumer string) {
		// Pull the first message to an inbox nobody reads.
		req := []byte(`{"batch":1,"expires":1000000000}`)
		if err := b.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+StreamEvents+"."+consumer, b.nc.NewRespInbox(), req); err != nil {
			t.Error(err)
		}
		_ = b.nc.Flush()
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() { followCreated = nil })
	f, err := b.FollowEvents(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	select {
	case ev, ok := <-f.C:
		if ok {
			t.Fatalf("the follower delivered event %d although the one before it was lost", ev.Seq)
		}
		if !errors.Is(f.Err(), errFollowGap) {
			t.Fatalf("follower ended with %v, want a gap", f.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower neither ended nor delivered")
	}
}
