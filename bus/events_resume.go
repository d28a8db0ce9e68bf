package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// LastEventSeq returns the sequence of the last event in task id's log (0
// when the log is empty or gone). A stream uses it to tell a quiet task
// from a reader stalled by a failover: events in the log beyond the last
// one read mean the reader is stuck, and a new one resumes after it.
func (b *Bus) LastEventSeq(ctx context.Context, id string) (uint64, error) {
	if !ValidToken(id) {
		return 0, nil
	}
	m, err := b.events.GetLastMsgForSubject(ctx, EventsSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}
