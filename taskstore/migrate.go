package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// Upgrading from the earlier layout. Releases before the log held the
// owner in its subjects kept each task's log on a2a.events.<taskId>
// (stream A2A_EVENTS), an index entry per task (A2A_INDEX), and, before
// that, snapshots in the bucket A2A_TASKS. A store refuses to open on such
// a NATS (ErrOldLayout) rather than serve it half: Migrate moves every
// retained task into the log, then removes the old streams.

// ErrOldLayout refuses to open a store whose NATS holds tasks in the
// earlier layout.
var ErrOldLayout = errors.New("taskstore: this NATS holds tasks in the layout of an earlier a2amesh " +
	"(stream " + oldStreamEvents + "); stop every a2amesh process on it, run `a2amesh migrate` " +
	"with the same NATS settings (docs/deployment.md#upgrading), then start this release")

func (b *Store) refuseOldLayout(ctx context.Context) error {
	_, err := bus.Read(ctx, func(c context.Context) (jetstream.Stream, error) { return b.js.Stream(c, oldStreamEvents) })
	switch {
	case err == nil:
		return ErrOldLayout
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	default:
		return fmt.Errorf("taskstore: look for an earlier layout: %w", err)
	}
}

// MigrateReport says what Migrate did.
type MigrateReport struct {
	// Moved tasks were written to the log; Already were there from an
	// earlier, interrupted run; Unreadable could not be read (a log that
	// lost its start with no snapshot left).
	Moved, Already, Unreadable int
}

// Migrate moves the tasks of the earlier layout on b into the log: each
// task A2A_EVENTS retains, read as the earlier release read it (its log
// folded from its creation, or from its snapshot in A2A_TASKS where the
// log lost its start), becomes one creation message holding the task as
// it stands, under its owner and context with an alias for its id (its id
// was not minted, ids.go). Then A2A_EVENTS, A2A_INDEX and A2A_TASKS are
// deleted. Run it with every a2amesh process stopped; it is safe to run
// again after an interruption (a task already moved is skipped). Event
// ids (SSE ids) start afresh; work still queued stays queued (a worker's
// first append finds the task moved and reads it again). The task counts
// are kept: they count the same tasks.
func Migrate(ctx context.Context, b *bus.Bus, progress func(MigrateReport)) (MigrateReport, error) {
	var rep MigrateReport
	s := &Store{bus: b, nc: b.Conn(), js: b.JetStream(), cfg: b.Config()}
	old, err := s.js.Stream(ctx, oldStreamEvents)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("taskstore: migrate: %w", err)
	}
	if err := s.ensureStreams(ctx); err != nil {
		return rep, err
	}
	snaps, err := s.js.KeyValue(ctx, oldBucketTasks)
	if err != nil {
		snaps = nil
	}
	// Each old log's last message names a task; the consumer hands them
	// over oldest first.
	c, err := s.js.CreateConsumer(ctx, oldStreamEvents, jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		FilterSubject:     oldEventsPrefix + "*",
		HeadersOnly:       true,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
	})
	if err != nil {
		return rep, fmt.Errorf("taskstore: migrate: %w", err)
	}
	left := int(c.CachedInfo().NumPending)
	for left > 0 {
		batch, err := c.Fetch(min(left, 500), jetstream.FetchMaxWait(bus.AttemptTimeout))
		if err != nil {
			return rep, fmt.Errorf("taskstore: migrate: %w", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			left--
			id := m.Subject()[len(oldEventsPrefix):]
			rec, err := readOld(ctx, old, snaps, id)
			if err != nil {
				rep.Unreadable++
				continue
			}
			moved, err := s.moveTask(ctx, rec)
			if err != nil {
				return rep, fmt.Errorf("taskstore: migrate task %s: %w", id, err)
			}
			if moved {
				rep.Moved++
			} else {
				rep.Already++
			}
		}
		if err := batch.Error(); err != nil {
			return rep, fmt.Errorf("taskstore: migrate: %w", err)
		}
		if got == 0 {
			return rep, errors.New("taskstore: migrate: the old log stopped answering")
		}
		if progress != nil {
			progress(rep)
		}
	}
	for _, name := range []string{oldStreamEvents, oldStreamIndex} {
		if err := s.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return rep, fmt.Errorf("taskstore: migrate: delete %s: %w", name, err)
		}
	}
	if snaps != nil {
		if err := s.js.DeleteKeyValue(ctx, oldBucketTasks); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return rep, fmt.Errorf("taskstore: migrate: delete %s: %w", oldBucketTasks, err)
		}
	}
	return rep, nil
}

// readOld reads task id as the earlier layout held it.
func readOld(ctx context.Context, old jetstream.Stream, snaps jetstream.KeyValue, id string) (*TaskRecord, error) {
	subj := oldEventsPrefix + id
	var rec *TaskRecord
	first := true
	for seq := uint64(1); ; {
		raw, err := old.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		m, err := decodeRaw(raw)
		if err != nil {
			return nil, err
		}
		if first && m.snap == nil && snaps != nil {
			// The log lost its start: the old snapshot, then the events
			// after it.
			e, err := snaps.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			var r TaskRecord
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				return nil, err
			}
			r.LastSeq = Pos(r.LastSeq, 0)
			rec = &r
			if raw.Sequence <= SeqOf(r.LastSeq) {
				seq = SeqOf(r.LastSeq) + 1
				first = false
				continue
			}
		}
		first = false
		if rec, err = fold(rec, m); err != nil {
			return nil, err
		}
		seq = raw.Sequence + 1
	}
	if rec == nil {
		return nil, ErrTaskNotFound
	}
	return rec, nil
}

// moveTask writes rec as a creation message of its new log (false: an
// earlier run moved it).
func (b *Store) moveTask(ctx context.Context, rec *TaskRecord) (bool, error) {
	id := rec.Task.ID
	subj, ok := mintedSubject(id)
	if !ok {
		if !bus.ValidToken(id) {
			return false, fmt.Errorf("%q cannot name a task", id)
		}
		subj = homeSubject(rec.Owner, rec.Task.ContextID, id)
		if err := b.writeAlias(ctx, id, subj); err != nil {
			return false, err
		}
	}
	r := rec.clone()
	r.LastSeq, r.base, r.sinceBase = 0, 0, 0
	data, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	hdr := logHeader(formCreate, 1, r.Run, true, 0, r)
	msg := &nats.Msg{Subject: subj, Data: data, Header: hdr}
	_, err = b.bus.Publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
	if bus.IsWrongLastSeq(err) {
		return false, nil
	}
	return err == nil, err
}
