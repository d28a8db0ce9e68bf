package taskstore

import (
	"bytes"
	"context"
	"errors"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// snapshotSubject is the subject a task's stored snapshot is published on
// by the KV bucket (the bucket is a stream over these subjects).
func snapshotSubject(id string) string { return "$KV." + BucketTasks + "." + id }

// PeekTask returns the stored snapshot of task id without checking the log
// for newer events (LoadTask does). A writer may start from it: if it is
// behind, its first append loses the compare-and-set and UpdateTask folds
// the missing events before retrying.
func (b *Store) PeekTask(ctx context.Context, id string) (*TaskRecord, error) {
	rec, err := b.getStored(ctx, id)
	if errors.Is(err, ErrTaskNotFound) && bus.ValidToken(id) {
		return b.LoadTask(ctx, id) // the creator may have died before storing
	}
	return rec, err
}

var statePrefix = []byte(`"status":{"state":"`)

// peekState reads the task state from a stored TaskRecord without decoding
// it. The record's fields are written in a fixed order (task id, context
// id, then status), and a quote inside a JSON string is always escaped, so
// the first unescaped occurrence of the prefix is the task's own status.
func peekState(data []byte) (a2a.TaskState, bool) {
	i := bytes.Index(data, statePrefix)
	if i < 0 {
		return "", false
	}
	rest := data[i+len(statePrefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return a2a.TaskState(rest[:j]), true
}
