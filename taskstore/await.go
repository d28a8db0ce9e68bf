package taskstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/nats-io/nats.go"
)

// SettleWatch waits for a task to settle: to reach a final (terminal or
// interrupted) state. Start it before the task's work is enqueued, so a
// fast worker's notification is not missed.
type SettleWatch struct {
	b       *Store
	id      string
	sub     *nats.Subscription
	msgs    chan *nats.Msg
	stalled chan struct{} // NoticeStoreFull for the task (stalls.go)
}

// WatchSettle starts watching task id for a final state: the writer whose
// append settled the task sends the task as it left it (notifySettled) as
// soon as the append is stored, before the snapshot's store, and it
// arrives on a channel subscription that Wait reads itself, so a settled
// task wakes its waiter straight from the connection's reader, with no
// read and no goroutine of its own per watch. Delivery is at most once (a
// full channel drops a notice, a writer may die before sending it: Wait
// loads the task once a second anyway).
func (b *Store) WatchSettle(id string) (*SettleWatch, error) {
	w := &SettleWatch{b: b, id: id, msgs: make(chan *nats.Msg, 8), stalled: make(chan struct{}, 1)}
	if err := b.stalls.add(b.nc, id, w.stalled); err != nil {
		return nil, err
	}
	sub, err := b.nc.ChanSubscribe(settledSubject(id), w.msgs)
	if err != nil {
		b.stalls.remove(id, w.stalled)
		return nil, err
	}
	w.sub = sub
	return w, nil
}

// Stop ends the watch.
func (w *SettleWatch) Stop() {
	_ = w.sub.Unsubscribe()
	w.b.stalls.remove(w.id, w.stalled)
}

// notifySettled tells whoever waits for rec's task that it settled, with
// the task as the append that settled it left it (data: rec encoded
// without its position, which rides in a header). A core NATS message,
// sent only once the append is stored, so it never tells of an event the
// log refused; at most once, so a waiter that misses it loads the task.
func (b *Store) notifySettled(rec *TaskRecord, data []byte) {
	m := &nats.Msg{Subject: settledSubject(rec.Task.ID), Data: data,
		Header: nats.Header{hdrPos: []string{strconv.FormatUint(rec.LastSeq, 10)}}}
	_ = b.nc.PublishMsg(m)
}

// hdrPos carries a settle notice's position (TaskRecord.LastSeq).
const hdrPos = "A2a-Pos"

// NoticeStoreFull tells whoever waits for task id to settle that its
// worker could not record the task's next step because the store is full
// (the task stands, and runs again once space returns): a blocking send
// then answers with the task as it stands instead of waiting out its
// bound. A core NATS message, at most once: a waiter that misses it waits
// as it would have.
func (b *Store) NoticeStoreFull(id string) { _ = b.nc.Publish(stalledSubject(id), nil) }

// settled decodes a settle notice when its task is final (nil otherwise).
func settled(m *nats.Msg) *TaskRecord {
	if len(m.Data) == 0 {
		return nil // a delete or purge marker
	}
	if st, ok := peekState(m.Data); ok && !st.Final() {
		return nil // skip decoding snapshots nobody waits for
	}
	var rec TaskRecord
	if json.Unmarshal(m.Data, &rec) != nil || !rec.Task.Status.State.Final() {
		return nil
	}
	rec.LastSeq, _ = strconv.ParseUint(m.Header.Get(hdrPos), 10, 64)
	rec.base, rec.sinceBase = SeqOf(rec.LastSeq), 0
	return &rec
}

// Wait returns the task once it has settled; rec is the task as the caller
// last saw it. An error matching ErrStoreFull says the task's worker could
// not record its next step for lack of storage (NoticeStoreFull). The stored snapshot arrives whole as soon as a worker
// stores it; once a second the task is also loaded from its log, in case a
// notification was lost or its writer died before storing. It returns
// ctx's error when ctx ends first (the task itself goes on).
func (w *SettleWatch) Wait(ctx context.Context, rec *TaskRecord) (*TaskRecord, error) {
	load := func() (*TaskRecord, error) {
		rec, err := w.b.LoadTask(ctx, w.id)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return rec, err
	}
	if rec.Task.Status.State.Final() {
		// Settled as last seen (a turn recorded before, say): confirm.
		if fresh, err := load(); err != nil || fresh.Task.Status.State.Final() {
			return fresh, err
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-w.stalled:
			return nil, fmt.Errorf("%w: task %s waits for space to record its next step", ErrStoreFull, w.id)
		case m := <-w.msgs:
			if r := settled(m); r != nil {
				return r, nil
			}
		case <-tick.C:
			rec, err := load()
			if err != nil {
				return nil, err
			}
			if rec.Task.Status.State.Final() {
				return rec, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
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
