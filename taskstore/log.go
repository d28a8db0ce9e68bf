package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// A task's log is the only place the task is stored. One message of the
// log holds one or more of the task's events (a batch: a worker's event
// writer sends what an agent emitted within a couple of milliseconds as
// one message), and some messages also hold the task as it stands after
// them (a snapshot): the creation, every message that settles a turn (a
// final or interrupted state), and one at least every snapshotEvery
// events. A message without a snapshot names in A2a-Base the sequence of
// the last message with one, so reading a task is one get of its log's
// last message, and for a running task the few messages after its base.
//
// Forms of a message (header A2a-Form):
//
//	"c"    the creation: the body is the TaskRecord; its one event is the Task
//	"b"    a batch: the body is batchBody; A2a-N events, a snapshot or A2a-Base
//	absent one event, the body a StreamResponse (logs written before batches;
//	       read as they are, folded from the log's first message)
//
// An event's position, its id on streams and in push deliveries, is
// Pos(seq, i): its message's stream sequence times MaxBatch plus its place
// in the message. Positions grow along a task's log, as sequences did.
const (
	hdrForm  = "A2a-Form"
	hdrBase  = "A2a-Base"
	hdrCount = "A2a-N"
	hdrState = "A2a-State"
	hdrReply = "A2a-Reply"

	formCreate = "c"
	formBatch  = "b"
)

// MaxBatch is the most events one message of a log holds.
const MaxBatch = 32

// snapshotEvery bounds the events a reader folds onto the last snapshot.
const snapshotEvery = 32

const posShift = 5 // MaxBatch == 1<<posShift

// Pos is the position of the i-th event of the log message at seq.
func Pos(seq uint64, i int) uint64 { return seq<<posShift | uint64(i) }

// SeqOf is the stream sequence of the message holding the event at pos.
func SeqOf(pos uint64) uint64 { return pos >> posShift }

// indexOf is the place of the event at pos in its message.
func indexOf(pos uint64) int { return int(pos & (MaxBatch - 1)) }

// batchBody is the body of a batch message. Its events are stored without
// the task and context ids every status and artifact update repeats: the
// message names them once.
type batchBody struct {
	ID     string                `json:"id"`
	Ctx    string                `json:"ctx,omitempty"`
	Events []*a2a.StreamResponse `json:"events"`
	Task   json.RawMessage       `json:"task,omitempty"`
}

// stripIDs returns evs with the task and context ids of status and
// artifact updates left out where they are the task's own (id, ctx).
func stripIDs(evs []*a2a.StreamResponse, id, ctx string) []*a2a.StreamResponse {
	out := make([]*a2a.StreamResponse, len(evs))
	for i, ev := range evs {
		switch {
		case ev.StatusUpdate != nil && ev.StatusUpdate.TaskID == id && ev.StatusUpdate.ContextID == ctx:
			u := *ev.StatusUpdate
			u.TaskID, u.ContextID = "", ""
			out[i] = &a2a.StreamResponse{StatusUpdate: &u}
		case ev.ArtifactUpdate != nil && ev.ArtifactUpdate.TaskID == id && ev.ArtifactUpdate.ContextID == ctx:
			u := *ev.ArtifactUpdate
			u.TaskID, u.ContextID = "", ""
			out[i] = &a2a.StreamResponse{ArtifactUpdate: &u}
		default:
			out[i] = ev
		}
	}
	return out
}

// restoreIDs puts back what stripIDs left out.
func restoreIDs(evs []*a2a.StreamResponse, id, ctx string) {
	for _, ev := range evs {
		switch {
		case ev.StatusUpdate != nil && ev.StatusUpdate.TaskID == "":
			ev.StatusUpdate.TaskID, ev.StatusUpdate.ContextID = id, ctx
		case ev.ArtifactUpdate != nil && ev.ArtifactUpdate.TaskID == "":
			ev.ArtifactUpdate.TaskID, ev.ArtifactUpdate.ContextID = id, ctx
		}
	}
}

// logMsg is one decoded message of a task's log.
type logMsg struct {
	seq    uint64
	at     time.Time
	events []*a2a.StreamResponse
	// snap is the task after this message, when the message holds it.
	snap *TaskRecord
	// base is the sequence of the last message before this one holding a
	// snapshot (0: unknown, a message of a log written before batches).
	base uint64
	run  string
}

// last is the position of the message's last event.
func (m *logMsg) last() uint64 { return Pos(m.seq, max(len(m.events), 1)-1) }

// decodeLog decodes a raw message of a task's log.
func decodeLog(seq uint64, at time.Time, hdr nats.Header, data []byte) (*logMsg, error) {
	m := &logMsg{seq: seq, at: at, run: hdr.Get(hdrRun)}
	switch hdr.Get(hdrForm) {
	case formCreate:
		var rec TaskRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("taskstore: decode message %d: %w", seq, err)
		}
		task := rec.Task
		m.events = []*a2a.StreamResponse{{Task: &task}}
		m.snap = &rec
	case formBatch:
		var b batchBody
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("taskstore: decode message %d: %w", seq, err)
		}
		if len(b.Events) == 0 || len(b.Events) > MaxBatch {
			return nil, fmt.Errorf("taskstore: message %d holds %d events", seq, len(b.Events))
		}
		restoreIDs(b.Events, b.ID, b.Ctx)
		m.events = b.Events
		if len(b.Task) > 0 {
			var rec TaskRecord
			if err := json.Unmarshal(b.Task, &rec); err != nil {
				return nil, fmt.Errorf("taskstore: decode message %d: %w", seq, err)
			}
			m.snap = &rec
		} else {
			m.base, _ = strconv.ParseUint(hdr.Get(hdrBase), 10, 64)
		}
	default:
		var ev a2a.StreamResponse
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("taskstore: decode message %d: %w", seq, err)
		}
		m.events = []*a2a.StreamResponse{&ev}
		if ev.Task != nil && hdr.Get(hdrAgent) != "" {
			// A creation written before batches: the task and its record.
			m.snap = &TaskRecord{Task: *ev.Task, Agent: hdr.Get(hdrAgent), Owner: hdr.Get(hdrOwner),
				Trace: hdr.Get(hdrTrace), Created: a2a.FormatTime(at), Updated: a2a.FormatTime(at), Events: 1}
		}
	}
	if m.snap != nil {
		m.snap.LastSeq = m.last()
		m.snap.base, m.snap.sinceBase = seq, 0
	}
	return m, nil
}

// decodeRaw decodes a message read from the log.
func decodeRaw(m *jetstream.RawStreamMsg) (*logMsg, error) {
	return decodeLog(m.Sequence, m.Time, m.Header, m.Data)
}

// EventsOf decodes a message of the log as its events with their
// positions (the push dispatcher reads the log's messages raw).
func EventsOf(seq uint64, hdr nats.Header, data []byte) ([]Event, error) {
	m, err := decodeLog(seq, time.Time{}, hdr, data)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(m.events))
	for i, ev := range m.events {
		out[i] = Event{Seq: Pos(seq, i), Resp: ev}
	}
	return out, nil
}

// fold applies the message m to rec (nil: m must hold a snapshot) and
// returns the task after it.
func fold(rec *TaskRecord, m *logMsg) (*TaskRecord, error) {
	if m.snap != nil {
		s := *m.snap
		return &s, nil
	}
	if rec == nil {
		return nil, ErrTaskNotFound // the log's head aged out (retention)
	}
	at := a2a.FormatTime(m.at)
	for i, ev := range m.events {
		rec = rec.apply(ev, Pos(m.seq, i), at)
	}
	rec.sinceBase += len(m.events)
	if m.run != "" {
		rec.claimedBy(m.run)
	}
	return rec, nil
}

// lastMsg reads the last message of task id's log.
func (b *Store) lastMsg(ctx context.Context, id string) (*logMsg, error) {
	subj, err := b.subject(ctx, id)
	if err != nil {
		return nil, err
	}
	raw, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.log.GetLastMsgForSubject(c, subj)
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrTaskNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("taskstore: read task %s: %w", id, err)
	}
	return decodeRaw(raw)
}

// msgFrom reads the first message of task id's log at or after seq
// (ErrMsgNotFound: none).
func (b *Store) msgFrom(ctx context.Context, id string, seq uint64) (*logMsg, error) {
	subj, err := b.subject(ctx, id)
	if errors.Is(err, ErrTaskNotFound) {
		return nil, jetstream.ErrMsgNotFound
	}
	if err != nil {
		return nil, err
	}
	raw, err := bus.Read(ctx, func(c context.Context) (*jetstream.RawStreamMsg, error) {
		return b.log.GetMsg(c, seq, jetstream.WithGetMsgSubject(subj))
	})
	if err != nil {
		return nil, err
	}
	return decodeRaw(raw)
}

// readTask reads task id from its log: the last message, and when that
// holds no snapshot, the messages from its base on.
func (b *Store) readTask(ctx context.Context, id string) (*TaskRecord, error) {
	last, err := b.lastMsg(ctx, id)
	if err != nil {
		return nil, err
	}
	if last.snap != nil {
		return fold(nil, last)
	}
	rec, err := b.foldRange(ctx, id, nil, max(last.base, 1), last.seq)
	if errors.Is(err, ErrTaskNotFound) && last.base > 1 {
		// The base went (retention aged it out): the whole log then.
		rec, err = b.foldRange(ctx, id, nil, 1, last.seq)
	}
	return rec, err
}

// foldRange folds the messages of task id's log with sequences in
// [from, to] (to 0: to the end) onto rec (nil: the first of them must
// hold a snapshot).
func (b *Store) foldRange(ctx context.Context, id string, rec *TaskRecord, from, to uint64) (*TaskRecord, error) {
	next := from
	for i := 0; i < 1_000_000; i++ {
		if to > 0 && next > to {
			break
		}
		m, err := b.msgFrom(ctx, id, next)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("taskstore: read log of %s: %w", id, err)
		}
		if to > 0 && m.seq > to {
			break
		}
		if rec, err = fold(rec, m); err != nil {
			return nil, err
		}
		next = m.seq + 1
	}
	if rec == nil {
		return nil, ErrTaskNotFound
	}
	return rec, nil
}

// logHeader is the header of a message of n events that leaves the task
// as next. Besides what a reader of the log needs (form, count, base,
// run), it says what a listing filters on without reading the body: the
// task's agent, its owner's hash, its state after the message, and
// whether it answered its send with a message (list.go).
func logHeader(form string, n int, run string, snap bool, base uint64, next *TaskRecord) nats.Header {
	h := nats.Header{hdrForm: []string{form}}
	h.Set(hdrAgent, next.Agent)
	h.Set(hdrOwner, hashToken(next.Owner))
	h.Set(hdrState, string(next.Task.Status.State))
	if next.Task.IsReply() {
		h.Set(hdrReply, "1")
	}
	if n > 1 {
		h.Set(hdrCount, strconv.Itoa(n))
	}
	if run != "" {
		h.Set(hdrRun, run)
	}
	if !snap && base > 0 {
		h.Set(hdrBase, strconv.FormatUint(base, 10))
	}
	return h
}

// countOf is how many events a raw log message holds, from its header.
func countOf(hdr nats.Header) int {
	if n, err := strconv.Atoi(hdr.Get(hdrCount)); err == nil && n > 0 {
		return n
	}
	return 1
}

// workTask is a task as a work item carries it: the record with where it
// stands in its log.
type workTask struct {
	Rec       *TaskRecord `json:"rec"`
	LastSeq   uint64      `json:"lastSeq"`
	Base      uint64      `json:"base,omitempty"`
	SinceBase int         `json:"since,omitempty"`
}

// EncodeWorkTask encodes rec for a work item (WorkItem.Task): nil
// when it cannot.
func EncodeWorkTask(rec *TaskRecord) []byte {
	data, err := json.Marshal(workTask{Rec: rec, LastSeq: rec.LastSeq, Base: rec.base, SinceBase: rec.sinceBase})
	if err != nil {
		return nil
	}
	return data
}

// DecodeWorkTask decodes a work item's task (nil when it has none or it
// cannot be read: the worker reads the task then).
func DecodeWorkTask(data []byte, id string) *TaskRecord {
	if len(data) == 0 {
		return nil
	}
	var w workTask
	if json.Unmarshal(data, &w) != nil || w.Rec == nil || w.Rec.Task.ID != id || w.LastSeq == 0 {
		return nil
	}
	w.Rec.LastSeq, w.Rec.base, w.Rec.sinceBase = w.LastSeq, w.Base, w.SinceBase
	return w.Rec
}
