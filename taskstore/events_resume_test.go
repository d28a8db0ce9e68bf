package taskstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// LastEventSeq is the position of a task's last event (0 for no task).
func TestLastEventSeq(t *testing.T) {
	b := openTestStore(t, bus.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, newRecord(id))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for range 3 {
		next, _, err := b.UpdateTask(ctx, id, rec, func(*TaskRecord) (*a2a.StreamResponse, error) {
			return status(id, a2a.StateWorking), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rec = next
		seqs = append(seqs, next.LastSeq)
	}
	if last, err := b.LastEventSeq(ctx, id); err != nil || last != seqs[2] {
		t.Fatalf("LastEventSeq = %d, %v; want %d", last, err, seqs[2])
	}
	if last, err := b.LastEventSeq(ctx, uuid.NewString()); err != nil || last != 0 {
		t.Fatalf("LastEventSeq of no task = %d, %v", last, err)
	}
}
