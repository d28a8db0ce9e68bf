package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Before snapshots moved into the log, each task's snapshot was a key of
// the bucket A2A_TASKS and its log held one event a message. Such a log
// reads as it is (log.go folds it from its first message, the task's
// creation), so a store upgraded in place keeps every task. The bucket is
// read only for a task whose log lost its beginning to MaxAge while its
// snapshot, written later, was still kept; it ages out with the
// retention, and nothing writes it any more.

// legacyTask reads task id from the old snapshot bucket, folding the log's
// events after it.
func (b *Store) legacyTask(ctx context.Context, id string) (*TaskRecord, error) {
	e, err := bus.Read(ctx, func(c context.Context) (jetstream.KeyValueEntry, error) { return b.legacy.Get(c, id) })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrTaskNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("taskstore: read task %s: %w", id, err)
	}
	var rec TaskRecord
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, fmt.Errorf("taskstore: decode task %s: %w", id, err)
	}
	// The old snapshot named its last event by sequence: one event a
	// message, so the event at position Pos(seq, 0).
	rec.LastSeq = Pos(rec.LastSeq, 0)
	rec.indexed = indexKey(&rec)
	return b.foldRange(ctx, id, &rec, SeqOf(rec.LastSeq)+1, 0)
}
