package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// A task lives in two places. Its event log (subject a2a.events.<id>) is the
// truth: every change is one event appended with an expected-last-subject-
// sequence, a compare-and-set on the log itself, so two writers can never
// both extend the same state and a terminal state stays terminal. The KV
// snapshot (bucket A2A_TASKS) is the fold of the log up to LastSeq; it is
// written after each append and repaired by whoever finds it behind the
// log, so a writer that dies between the two loses nothing.

// Errors callers branch on.
var (
	ErrTaskNotFound = errors.New("bus: task not found")
	ErrTaskExists   = errors.New("bus: task already exists")
	ErrTerminal     = errors.New("bus: task is in a terminal state")
	ErrContention   = errors.New("bus: too much contention on task")
	// ErrSuperseded refuses an event from a run of the task that another
	// run (a redelivery of the same work) has since claimed.
	ErrSuperseded = errors.New("bus: task was claimed by a newer run")
)

// Event header names on the log.
const (
	hdrAgent = "A2a-Agent"
	hdrOwner = "A2a-Owner"
	hdrRun   = "A2a-Run"
	hdrTrace = "A2a-Trace"
)

// TaskRecord is a task snapshot with what the mesh needs beside it.
type TaskRecord struct {
	Task    a2a.Task `json:"task"`
	Agent   string   `json:"agent"`
	Owner   string   `json:"owner,omitempty"`
	LastSeq uint64   `json:"lastSeq"`
	// Run names the worker run that last claimed the task (see AppendOptions).
	Run string `json:"run,omitempty"`
	// TurnRuns counts the runs that claimed the task since its last user
	// turn: a worker gives the turn up after MaxDeliver of them. Deliveries
	// that never ran (the bus refused their first write: a failover, a
	// full disk) do not count, however long the outage.
	TurnRuns int `json:"turnRuns,omitempty"`
	// Undecided is true while the task's last event is a worker's claim of
	// a turn that may still be answered with a message (a2a.ClaimKey): a
	// run after a crash may still reply only then.
	Undecided bool   `json:"undecided,omitempty"`
	Created   string `json:"created"`
	Updated   string `json:"updated"`
	// Trace is the W3C traceparent of the span that created the task
	// (empty when it was not traced): later calls on the task (streams,
	// resubscriptions, push deliveries) link to it.
	Trace string `json:"trace,omitempty"`
	// Events is how many events of the log this snapshot folds (0 in
	// snapshots written before it was kept: unknown).
	Events int64 `json:"events,omitempty"`
	// Extensions are the extension URIs the agent activated for the
	// task's current user turn (MetaExtensions); a new turn clears them.
	Extensions []string `json:"extensions,omitempty"`

	rev uint64 // KV revision this record was read at
	// indexed is the status (indexKey) of the task's last index entry
	// this record knows of: a store writes the entry when it differs.
	indexed string
}

// clone returns a copy whose slices can be appended to without touching r.
func (r *TaskRecord) clone() *TaskRecord {
	c := *r
	c.Task.History = append([]a2a.Message(nil), r.Task.History...)
	c.Task.Artifacts = append([]a2a.Artifact(nil), r.Task.Artifacts...)
	return &c
}

// claimedBy notes an event of run: a run other than the last one claimed
// the task.
func (r *TaskRecord) claimedBy(run string) {
	if run != r.Run {
		r.TurnRuns++
	}
	r.Run = run
}

// apply folds one logged event into a copy of r.
func (r *TaskRecord) apply(ev *a2a.StreamResponse, seq uint64, at string) *TaskRecord {
	c := r.clone()
	c.Task.Apply(ev)
	if ev.Message != nil && ev.Message.Role == a2a.RoleUser {
		c.TurnRuns = 0 // a new turn
		c.Extensions = nil
	}
	if exts, ok := EventExtensions(ev); ok {
		c.Extensions = exts
	}
	c.Undecided = a2a.IsClaimEvent(ev)
	c.LastSeq = seq
	c.Updated = at
	if c.Events > 0 || ev.Task != nil {
		c.Events++
	}
	return c
}

// CreateTask starts a task's log with its initial snapshot and stores the
// snapshot. It fails if the task id already has a log.
func (b *Store) CreateTask(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	rec, finish, err := b.StartTask(ctx, rec)
	if err != nil {
		return nil, err
	}
	_ = finish(ctx) // a snapshot refused here is repaired from the log by its next reader
	return rec, nil
}

// StartTask is CreateTask returning as soon as the log holds the task:
// the snapshot's store and the index entry are in flight, and finish
// waits for them (it must be called, before rec is used to write). The
// task exists from the first append on (every reader folds the log), so
// a caller may enqueue its work meanwhile and save a round trip. A worker
// that is faster than the snapshot's store repairs it from the log, and
// the creation's index entry is written only where no entry is yet, so
// it never overwrites the entry of a change that overtook it.
//
// finish returns an error matching ErrStoreFull when JetStream refused the
// snapshot for lack of storage: the task stands (its log has it, its work
// may be queued), but the store is at its limit, so its worker will not
// get far until space returns. Any other outcome of the snapshot's store
// is nil: a snapshot stored by a faster reader, or not at all, is repaired
// from the log.
func (b *Store) StartTask(ctx context.Context, rec *TaskRecord) (*TaskRecord, func(context.Context) error, error) {
	now := a2a.Now()
	rec.Created, rec.Updated = now, now
	hdr := nats.Header{}
	hdr.Set(hdrAgent, rec.Agent)
	if rec.Owner != "" {
		hdr.Set(hdrOwner, rec.Owner)
	}
	if rec.Trace != "" {
		hdr.Set(hdrTrace, rec.Trace)
	}
	task := rec.Task
	seq, err := b.appendEvent(ctx, rec.Task.ID, &a2a.StreamResponse{Task: &task}, 0, hdr)
	if err != nil {
		if bus.IsWrongLastSeq(err) {
			return nil, nil, fmt.Errorf("%w: %s", ErrTaskExists, rec.Task.ID)
		}
		return nil, nil, err
	}
	rec.LastSeq, rec.Events = seq, 1
	b.countTask(rec.Owner, rec.Agent, +1)
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	indexed := b.indexFirst(rec)
	snap := &nats.Msg{Subject: snapshotSubject(rec.Task.ID), Data: data}
	fut, ferr := b.js.PublishMsgAsync(snap, jetstream.WithExpectLastSequencePerSubject(0))
	finish := func(ctx context.Context) error {
		defer indexed(ctx)
		if ferr != nil {
			return nil // the log has the task: the next reader repairs the snapshot
		}
		t := time.NewTimer(bus.AttemptTimeout)
		defer t.Stop()
		select {
		case ack := <-fut.Ok():
			rec.rev = ack.Sequence // a KV revision is its message's sequence
		case err := <-fut.Err(): // stored by a faster reader, or not: as above
			if isStoreFull(err) {
				return fmt.Errorf("%w: %w", ErrStoreFull, err)
			}
		case <-ctx.Done():
		case <-t.C:
		}
		return nil
	}
	return rec, finish, nil
}

// LoadTask returns the task's current snapshot, folding any events the
// stored snapshot is missing.
func (b *Store) LoadTask(ctx context.Context, id string) (*TaskRecord, error) {
	if !bus.ValidToken(id) {
		return nil, ErrTaskNotFound // no subject could hold its log
	}
	rec, err := b.getStored(ctx, id)
	if err != nil && !errors.Is(err, ErrTaskNotFound) {
		return nil, err
	}
	last, lerr := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.events.GetLastMsgForSubject(c, EventsSubject(id))
	})
	if lerr != nil {
		if errors.Is(lerr, jetstream.ErrMsgNotFound) {
			if rec != nil {
				return rec, nil // log expired before the snapshot: the snapshot stands
			}
			return nil, ErrTaskNotFound
		}
		return nil, lerr
	}
	if rec != nil && last.Sequence <= rec.LastSeq {
		return rec, nil
	}
	return b.repair(ctx, id, rec)
}

// getStored reads the KV snapshot without consulting the log.
func (b *Store) getStored(ctx context.Context, id string) (*TaskRecord, error) {
	if !bus.ValidToken(id) {
		return nil, ErrTaskNotFound
	}
	e, err := bus.Read(ctx, func(c context.Context) (jetstream.KeyValueEntry, error) { return b.tasks.Get(c, id) })
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, ErrTaskNotFound
		}
		return nil, fmt.Errorf("bus: get task: %w", err)
	}
	var rec TaskRecord
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, fmt.Errorf("bus: decode task %s: %w", id, err)
	}
	rec.rev = e.Revision()
	rec.indexed = indexKey(&rec) // stored with its entry
	return &rec, nil
}

// refresh returns rec with any newer events of its log folded in, without
// storing; on any error it returns rec as it was.
func (b *Store) refresh(ctx context.Context, rec *TaskRecord) *TaskRecord {
	last, err := b.events.GetLastMsgForSubject(ctx, EventsSubject(rec.Task.ID))
	if err != nil || last.Sequence <= rec.LastSeq {
		return rec
	}
	fresh, err := b.forward(ctx, rec.Task.ID, rec)
	if err != nil {
		return rec
	}
	return fresh
}

// forward folds the log's events after rec.LastSeq (rec nil: from the start).
func (b *Store) forward(ctx context.Context, id string, rec *TaskRecord) (*TaskRecord, error) {
	subj := EventsSubject(id)
	next := uint64(1)
	if rec != nil {
		next = rec.LastSeq + 1
	}
	for i := 0; i < 100_000; i++ {
		m, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
			return b.events.GetMsg(c, next, jetstream.WithGetMsgSubject(subj))
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("bus: read log of %s: %w", id, err)
		}
		var ev a2a.StreamResponse
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return nil, fmt.Errorf("bus: decode event %d of %s: %w", m.Sequence, id, err)
		}
		at := a2a.FormatTime(m.Time)
		if rec == nil {
			if ev.Task == nil {
				// The head of the log aged out (retention): the task is gone.
				return nil, ErrTaskNotFound
			}
			rec = &TaskRecord{Agent: m.Header.Get(hdrAgent), Owner: m.Header.Get(hdrOwner), Trace: m.Header.Get(hdrTrace), Created: at}
		}
		rev, first := rec.rev, rec.LastSeq == 0
		rec = rec.apply(&ev, m.Sequence, at)
		rec.rev = rev
		if first && ev.Task != nil {
			// The creation wrote the index entry of this status: a
			// repair storing this fold must not move the entry.
			rec.indexed = indexKey(rec)
		}
		if run := m.Header.Get(hdrRun); run != "" {
			rec.claimedBy(run)
		}
		next = m.Sequence + 1
	}
	if rec == nil {
		return nil, ErrTaskNotFound
	}
	return rec, nil
}

// repair folds the log into the stored snapshot and stores the result.
// Storing is best effort: a lost race means someone stored a newer fold.
func (b *Store) repair(ctx context.Context, id string, rec *TaskRecord) (*TaskRecord, error) {
	fresh, err := b.forward(ctx, id, rec)
	if err != nil {
		return nil, err
	}
	b.store(ctx, fresh, rec == nil)
	return fresh, nil
}

func (b *Store) store(ctx context.Context, rec *TaskRecord, create bool) bool {
	data, err := json.Marshal(rec)
	if err != nil {
		return false
	}
	// The entry is written whether or not this store wins its race: it
	// says what the log already holds.
	indexed := b.indexAsync(rec)
	var rev uint64
	if create {
		rev, err = b.tasks.Create(ctx, rec.Task.ID, data)
	} else {
		rev, err = b.tasks.Update(ctx, rec.Task.ID, data, rec.rev)
	}
	indexed(ctx)
	if err != nil {
		return false
	}
	rec.rev = rev
	return true
}

// Mutation decides the next event of a task from its current snapshot. It
// must not modify rec. Returning an error aborts the update with it.
type Mutation func(rec *TaskRecord) (*a2a.StreamResponse, error)

// UpdateTask appends the event chosen by mutate to the task's log, retrying
// on contention with a fresh snapshot, then stores the new snapshot. rec may
// be a snapshot the caller already holds (nil loads one). Every event is
// checked against the rules of a task's state (Check, machine.go): a
// terminal task refuses every event with ErrTerminal.
func (b *Store) UpdateTask(ctx context.Context, id string, rec *TaskRecord, mutate Mutation) (*TaskRecord, *a2a.StreamResponse, error) {
	return b.AppendTask(ctx, id, rec, mutate, AppendOptions{Store: true})
}

// AppendOptions tune AppendTask.
type AppendOptions struct {
	// Store writes the new snapshot after the append.
	Store bool
	// Run names the worker run appending (one delivery of a work item).
	// With Claim the event makes Run the task's current run; without it
	// the event is refused with ErrSuperseded unless Run is still current.
	// This fences a run that stalled past AckWait from the redelivered run
	// that replaced it: their events never interleave.
	Run   string
	Claim bool
}

// AppendTask is UpdateTask with the snapshot store made optional: a writer
// producing many events (artifact chunks) may store only now and then, since
// every reader folds the log's newer events into the stored snapshot. The
// returned record keeps the revision of the last store, for the next one.
func (b *Store) AppendTask(ctx context.Context, id string, rec *TaskRecord, mutate Mutation, opts AppendOptions) (*TaskRecord, *a2a.StreamResponse, error) {
	var hdr nats.Header
	if opts.Run != "" {
		hdr = nats.Header{hdrRun: []string{opts.Run}}
	}
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if rec == nil {
			if rec, err = b.LoadTask(ctx, id); err != nil {
				return nil, nil, err
			}
		}
		if err := Admit(rec, opts.Run, opts.Claim); err != nil {
			return rec, nil, err
		}
		ev, err := mutate(rec)
		if err != nil {
			return rec, nil, err
		}
		if err := Check(rec, StepOf(ev, opts.Run, opts.Claim)); err != nil {
			return rec, nil, err
		}
		if b.logNearlyFull(rec) && !endsTurn(ev) {
			return rec, nil, ErrTaskLogFull
		}
		seq, err := b.appendEvent(ctx, id, ev, rec.LastSeq, hdr)
		if bus.IsWrongLastSeq(err) {
			if rec, err = b.forward(ctx, id, rec); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return rec, nil, err
		}
		next := rec.apply(ev, seq, a2a.Now())
		if opts.Run != "" {
			next.claimedBy(opts.Run)
		}
		if next.Task.Status.State.Final() {
			b.notifySettled(next)
		}
		if opts.Store {
			b.storeAfter(ctx, next)
		}
		return next, ev, nil
	}
	return rec, nil, ErrContention
}

func (b *Store) storeAfter(ctx context.Context, next *TaskRecord) {
	if b.store(ctx, next, false) {
		return
	}
	b.settle(ctx, next.Task.ID, next.LastSeq)
	if s, err := b.getStored(ctx, next.Task.ID); err == nil && s.LastSeq == next.LastSeq {
		next.rev = s.rev
	}
}

// settle makes sure the stored snapshot includes event seq after a lost
// store race, repairing from the log a bounded number of times.
func (b *Store) settle(ctx context.Context, id string, seq uint64) {
	for i := 0; i < 10; i++ {
		s, err := b.getStored(ctx, id)
		if err != nil && !errors.Is(err, ErrTaskNotFound) {
			return
		}
		if s != nil && s.LastSeq >= seq {
			return
		}
		fresh, err := b.forward(ctx, id, s)
		if err != nil {
			return
		}
		if b.store(ctx, fresh, s == nil) {
			return
		}
	}
}

// appendEvent publishes ev on the task's log, expecting the log's last
// sequence to be expect (0: no event yet).
func (b *Store) appendEvent(ctx context.Context, id string, ev *a2a.StreamResponse, expect uint64, hdr nats.Header) (uint64, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("bus: encode event: %w", err)
	}
	msg := &nats.Msg{Subject: EventsSubject(id), Data: data, Header: hdr}
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	// A message id of this append alone lets publish repeat it through a
	// failover: a repeat of an attempt that was stored is acknowledged as
	// its duplicate (clustered streams check ids before the sequence).
	msgID := "e-" + uuid.NewString()
	ack, err := b.bus.Publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(expect), jetstream.WithMsgID(msgID))
	if bus.IsWrongLastSeq(err) {
		// A single server checks the sequence first: the last event may
		// be this append's own earlier attempt.
		if last, lerr := b.events.GetLastMsgForSubject(ctx, EventsSubject(id)); lerr == nil && last.Header.Get(jetstream.MsgIDHeader) == msgID {
			return last.Sequence, nil
		}
	}
	switch {
	case IsTaskLogFull(err):
		return 0, fmt.Errorf("%w: %w", ErrTaskLogFull, err)
	case isStoreFull(err):
		return 0, fmt.Errorf("%w: %w", ErrStoreFull, err)
	case err != nil:
		return 0, err
	}
	return ack.Sequence, nil
}

// Event is one entry of a task's log with its stream sequence (the SSE id).
type Event struct {
	Seq  uint64
	Resp *a2a.StreamResponse
}

// ListTasks returns every task snapshot accepted by keep. It reads the
// bucket with one ordered watcher, not one request per key, and brings the
// snapshots of unfinished tasks up to date with their logs.
func (b *Store) ListTasks(ctx context.Context, keep func(*TaskRecord) bool) ([]*TaskRecord, error) {
	var out []*TaskRecord
	err := bus.ScanBucket(ctx, "list tasks",
		func(ctx context.Context) (jetstream.KeyWatcher, error) {
			return b.tasks.WatchAll(ctx, jetstream.IgnoreDeletes())
		},
		func() { out = out[:0] },
		func(e jetstream.KeyValueEntry) {
			var rec TaskRecord
			if json.Unmarshal(e.Value(), &rec) != nil {
				return
			}
			rec.rev = e.Revision()
			r := &rec
			if !r.Task.Status.State.Final() {
				// Workers store snapshots of running tasks only now and
				// then: fold what the log has beyond it.
				r = b.refresh(ctx, r)
			}
			if keep(r) {
				out = append(out, r)
			}
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}
