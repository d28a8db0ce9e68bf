package taskstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// A task lives in its log (log.go): every change is appended with an
// expected-last-subject-sequence, a compare-and-set on the log itself, so
// two writers can never both extend the same state and a terminal state
// stays terminal. What is read as the task is the log's last snapshot with
// the events after it folded in.

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

// Event header names on the log (log.go has the others). A2a-Owner is the
// owner's hash (hashToken); in a message of the earlier one-event form it
// was the owner itself.
const (
	hdrAgent = "A2a-Agent"
	hdrOwner = "A2a-Owner"
	hdrRun   = "A2a-Run"
	hdrTrace = "A2a-Trace"
)

// TaskRecord is a task snapshot with what the mesh needs beside it.
type TaskRecord struct {
	Task  a2a.Task `json:"task"`
	Agent string   `json:"agent"`
	Owner string   `json:"owner,omitempty"`
	// LastSeq is the position (Pos) of the last event folded: the id a
	// stream of the task goes on after.
	LastSeq uint64 `json:"lastSeq,omitempty"`
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

	// base is the sequence of the log message holding the snapshot
	// this record was folded from (or written as), sinceBase the events
	// folded onto it since.
	base      uint64
	sinceBase int
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

// CreateTask starts a task's log with the task. It fails with
// ErrTaskExists if the task id already has a log, and with an error
// matching ErrStoreFull when the store refused it for lack of room.
//
// The creation is a compare-and-set on the empty log, so an id is created
// once. A task whose id was not minted (MintTaskID) is kept under its
// owner and context, with an alias of its id written first (ids.go).
func (b *Store) CreateTask(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	id := rec.Task.ID
	subj, ok := mintedSubject(id)
	if !ok {
		if !bus.ValidToken(id) {
			return nil, fmt.Errorf("taskstore: %q cannot name a task", id)
		}
		subj = homeSubject(rec.Owner, rec.Task.ContextID, id)
		if err := b.writeAlias(ctx, id, subj); err != nil {
			return nil, err
		}
	}
	now := a2a.Now()
	rec.Created, rec.Updated = now, now
	rec.LastSeq, rec.Events = 0, 1
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("taskstore: encode task: %w", err)
	}
	hdr := logHeader(formCreate, 1, rec.Run, true, 0, rec)
	seq, err := b.publishLog(ctx, subj, data, hdr, 0)
	if err != nil {
		if bus.IsWrongLastSeq(err) {
			return nil, fmt.Errorf("%w: %s", ErrTaskExists, id)
		}
		return nil, err
	}
	rec.LastSeq, rec.base, rec.sinceBase = Pos(seq, 0), seq, 0
	if !rec.Task.IsReply() {
		b.countTask(rec.Owner, rec.Agent, +1)
	}
	return rec, nil
}

// writeAlias stores where the log of task id (not minted) is, once: a
// second creation of the same id finds the alias and fails on the log.
func (b *Store) writeAlias(ctx context.Context, id, subj string) error {
	msg := &nats.Msg{Subject: aliasSubject(id), Header: nats.Header{hdrAlias: []string{subj}}}
	_, err := b.bus.Publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
	if bus.IsWrongLastSeq(err) {
		if cur, err := b.subject(ctx, id); err == nil && cur == subj {
			return nil // a retry of this creation (the log decides)
		}
		return fmt.Errorf("%w: %s", ErrTaskExists, id)
	}
	switch {
	case isStoreFull(err):
		return fmt.Errorf("%w: %w", ErrStoreFull, err)
	case err != nil:
		return err
	}
	if b.aliases.n.Add(1) <= aliasCacheMax {
		b.aliases.m.Store(id, subj)
	}
	return nil
}

// LoadTask reads task id from its log.
func (b *Store) LoadTask(ctx context.Context, id string) (*TaskRecord, error) {
	return b.readTask(ctx, id)
}

// forward folds the log's messages after rec (nil: reads the task).
func (b *Store) forward(ctx context.Context, id string, rec *TaskRecord) (*TaskRecord, error) {
	if rec == nil {
		return b.LoadTask(ctx, id)
	}
	next, err := b.foldRange(ctx, id, rec.clone(), SeqOf(rec.LastSeq)+1, 0)
	if err == nil && next.LastSeq == rec.LastSeq {
		// Nothing after rec, yet its append was refused: rec is not of
		// this log (a work item from before a migration). Read it whole.
		return b.LoadTask(ctx, id)
	}
	return next, err
}

// hdrTry names one append of a log message (publishLog).
const hdrTry = "A2a-Try"

// newTry is a new append's A2a-Try.
func newTry() string {
	u := uuid.New()
	return base64.RawURLEncoding.EncodeToString(u[:12])
}

// storedTryScan bounds how far stored looks.
const storedTryScan = 64

// stored reports whether the log on subj holds, at sequence from or
// later, the message of append try.
func (b *Store) stored(ctx context.Context, subj string, from uint64, try string) bool {
	for i := 0; i < storedTryScan; i++ {
		m, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
			return b.log.GetMsg(c, from, jetstream.WithGetMsgSubject(subj))
		})
		if err != nil {
			return false
		}
		if m.Header.Get(hdrTry) == try {
			return true
		}
		from = m.Sequence + 1
	}
	return false
}

// Mutation decides the next event of a task from its current state. It
// must not modify rec. Returning an error aborts the update with it.
type Mutation func(rec *TaskRecord) (*a2a.StreamResponse, error)

// UpdateTask appends the event chosen by mutate to the task's log,
// retrying on contention with the task read again. rec may be the task as
// the caller last saw it (nil reads it). Every event is checked against
// the rules of a task's state (Check, machine.go): a terminal task
// refuses every event with ErrTerminal.
func (b *Store) UpdateTask(ctx context.Context, id string, rec *TaskRecord, mutate Mutation) (*TaskRecord, *a2a.StreamResponse, error) {
	return b.AppendTask(ctx, id, rec, mutate, AppendOptions{})
}

// AppendOptions tune AppendTask.
type AppendOptions struct {
	// Run names the worker run appending (one delivery of a work item).
	// With Claim the event makes Run the task's current run; without it
	// the event is refused with ErrSuperseded unless Run is still current.
	// This fences a run that stalled past AckWait from the redelivered run
	// that replaced it: their events never interleave.
	Run   string
	Claim bool
}

// AppendTask is UpdateTask for a worker's run (opts).
func (b *Store) AppendTask(ctx context.Context, id string, rec *TaskRecord, mutate Mutation, opts AppendOptions) (*TaskRecord, *a2a.StreamResponse, error) {
	next, evs, err := b.AppendEvents(ctx, id, rec, func(cur *TaskRecord) ([]*a2a.StreamResponse, error) {
		ev, err := mutate(cur)
		if err != nil {
			return nil, err
		}
		return []*a2a.StreamResponse{ev}, nil
	}, opts)
	if len(evs) == 0 {
		return next, nil, err
	}
	return next, evs[0], err
}

// Batch decides the next events of a task (at most MaxBatch) from its
// current state. It must not modify rec.
type Batch func(rec *TaskRecord) ([]*a2a.StreamResponse, error)

// AppendEvents appends the events chosen by mutate to the task's log as
// one message, each checked against the rules in turn (the first with
// opts.Claim, when set), retrying on contention with the task read again.
// A message that settles the turn (or brings the events since the last
// snapshot to snapshotEvery) holds the task as it leaves it, and a
// settling one tells waiters (notifySettled).
func (b *Store) AppendEvents(ctx context.Context, id string, rec *TaskRecord, mutate Batch, opts AppendOptions) (*TaskRecord, []*a2a.StreamResponse, error) {
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
		evs, err := mutate(rec)
		if err != nil {
			return rec, nil, err
		}
		if len(evs) == 0 || len(evs) > MaxBatch {
			return rec, nil, fmt.Errorf("taskstore: a message holds 1 to %d events, not %d", MaxBatch, len(evs))
		}
		next, err := b.plan(rec, evs, opts)
		if err != nil {
			return rec, nil, err
		}
		snap := next.Task.Status.State.Final() || next.sinceBase >= snapshotEvery
		body := batchBody{ID: id, Ctx: rec.Task.ContextID, Events: stripIDs(evs, id, rec.Task.ContextID)}
		var task []byte
		if snap {
			next.LastSeq = 0
			if task, err = json.Marshal(next); err != nil {
				return rec, nil, fmt.Errorf("taskstore: encode task: %w", err)
			}
			body.Task = task
		}
		data, err := json.Marshal(body)
		if err != nil {
			return rec, nil, fmt.Errorf("taskstore: encode events: %w", err)
		}
		hdr := logHeader(formBatch, len(evs), opts.Run, snap, rec.base, next)
		subj, err := b.subject(ctx, id)
		if err != nil {
			return rec, nil, err
		}
		try := newTry()
		hdr.Set(hdrTry, try)
		seq, err := b.publishLog(ctx, subj, data, hdr, SeqOf(rec.LastSeq))
		if bus.IsWrongLastSeq(err) {
			from := SeqOf(rec.LastSeq) + 1
			if rec, err = b.forward(ctx, id, rec); err != nil {
				return nil, nil, err
			}
			if b.stored(ctx, subj, from, try) {
				// This append was stored (its ack lost), and another
				// writer's came after it: the task as it now stands
				// holds it.
				if rec.Task.Status.State.Final() {
					if task, err := json.Marshal(rec); err == nil {
						b.notifySettled(rec, task)
					}
				}
				return rec, evs, nil
			}
			continue
		}
		if err != nil {
			return rec, nil, err
		}
		if next.Task.IsReply() && !rec.Task.IsReply() {
			// A task that answered its send with a message is not
			// listed (the client never saw it), nor counted.
			b.countTask(next.Owner, next.Agent, -1)
		}
		next.LastSeq = Pos(seq, len(evs)-1)
		if snap {
			next.base, next.sinceBase = seq, 0
		}
		if next.Task.Status.State.Final() {
			b.notifySettled(next, task)
		}
		return next, evs, nil
	}
	return rec, nil, ErrContention
}

// plan checks evs against the rules on rec, one after another, and
// returns the task they would leave.
func (b *Store) plan(rec *TaskRecord, evs []*a2a.StreamResponse, opts AppendOptions) (*TaskRecord, error) {
	next, at := rec, a2a.Now()
	for i, ev := range evs {
		claim := opts.Claim && i == 0
		if err := Check(next, StepOf(ev, opts.Run, claim)); err != nil {
			return nil, err
		}
		if b.logNearlyFull(next) && !endsTurn(ev) {
			return nil, ErrTaskLogFull
		}
		next = next.apply(ev, next.LastSeq, at)
		if opts.Run != "" && i == 0 {
			next.claimedBy(opts.Run)
		}
	}
	next.sinceBase = rec.sinceBase + len(evs)
	return next, nil
}

// publishLog appends one message to the log on subj, expecting the log's
// last sequence to be expect (0: an empty log). The message carries in
// A2a-Try an id of this append alone, which publish repeats through a
// failover: a repeat of an attempt that was stored fails the
// compare-and-set, and finds its own id in the log's last message. (No
// Nats-Msg-Id: the server would keep one per append for its duplicate
// window, a third of its heap under load, for what the compare-and-set
// already decides.)
func (b *Store) publishLog(ctx context.Context, subj string, data []byte, hdr nats.Header, expect uint64) (uint64, error) {
	try := hdr.Get(hdrTry)
	if try == "" {
		try = newTry()
		hdr.Set(hdrTry, try)
	}
	msg := &nats.Msg{Subject: subj, Data: data, Header: hdr}
	ack, err := b.bus.Publish(ctx, msg, jetstream.WithExpectLastSequencePerSubject(expect))
	if bus.IsWrongLastSeq(err) {
		if last, lerr := b.log.GetLastMsgForSubject(ctx, subj); lerr == nil && last.Header.Get(hdrTry) == try {
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
