package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Event is one item of a stream. Seq is the position in the mesh's event
// log of the event it reports (for a snapshot of the task, its last event;
// 0 for none): the id a client resumes after (SSE's id and
// Last-Event-ID). Resp is nil for a keep-alive: the stream has been quiet
// for Config.KeepAlive (SSE writes a comment; a binding with keep-alives
// of its own may skip it).
type Event struct {
	Seq  uint64
	Resp *a2a.StreamResponse
}

// Stream is the events of a stream, in order. An error ends it: the
// stream could not go on (JetStream unavailable past the failover budget,
// -32000, which the client resumes from; an event that cannot be read,
// -32603). It ends without one at the task's final state, or when the
// context ends or the consumer stops.
type Stream = iter.Seq2[Event, error]

// SendStreamingMessage records the user's turn as SendMessage does and
// returns the task's stream: the task first, then its events until a final
// state. A retried send (same messageId) with lastEventID (the id of the
// last event the client read; "" for none) resumes after that event
// instead, as SubscribeToTask does. The error is the send's: the stream
// has not started.
func (s *Service) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest, lastEventID string) (_ Stream, err error) {
	c, err := s.resolve(ctx, "SendStreamingMessage", policy.Send, req.Tenant, s.sendTarget(req))
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	p, err := s.submit(ctx, c, req, false)
	if err != nil {
		return nil, err
	}
	s.activateDeclared(c) // the response's headers go out before the agent runs
	if p.rec.Task.IsReply() {
		return replyOnly(p.rec), nil // a retry of a send answered with a message
	}
	if s.awaitsReply(c, p.rec) {
		return s.replyStream(ctx, c, p), nil
	}
	if p.sub.Replay {
		after, ok, err := s.resumePoint(ctx, c, p.rec, lastEventID)
		if err != nil {
			return nil, err
		}
		if ok { // a reconnect: resume after what it saw
			return s.resume(ctx, c, p.rec, after), nil
		}
	}
	rec := p.rec
	t := rec.Task.WithHistory(p.historyLength())
	return func(yield func(Event, error) bool) {
		if !yield(Event{Seq: rec.LastSeq, Resp: &a2a.StreamResponse{Task: &t}}, nil) {
			return
		}
		if rec.Task.Status.State.Final() {
			return
		}
		_, _ = s.pump(ctx, c, rec.Task.ID, rec.LastSeq, 0, yield)
	}, nil
}

// SubscribeToTask returns the stream of a task of the caller. With
// lastEventID (the id of the last event the client read) it replays what
// the client missed, without a snapshot (see resumePoint); otherwise it
// sends the task as it stands, then what follows. A 1.0 call on a task
// that has ended is refused (UnsupportedOperation); 0.3 gets the task as
// its one event. The error is the call's: the stream has not started.
func (s *Service) SubscribeToTask(ctx context.Context, req *a2a.TaskIDRequest, lastEventID string) (_ Stream, err error) {
	c, err := s.resolve(ctx, "SubscribeToTask", policy.Read, req.Tenant, req.ID)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	rec, err := s.loadTask(ctx, c, req.ID)
	if err != nil {
		return nil, err
	}
	c.Log = c.Log.With("task_id", rec.Task.ID)
	after, ok, err := s.resumePoint(ctx, c, rec, lastEventID)
	if err != nil {
		return nil, err
	}
	if ok {
		return s.resume(ctx, c, rec, after), nil
	}
	if rec.Task.Status.State.Terminal() && !c.v03() {
		return nil, a2a.ErrUnsupportedOperation.With("Task %s is in terminal state %s; there is nothing to subscribe to",
			rec.Task.ID, a2a.StateV03(rec.Task.Status.State))
	}
	return func(yield func(Event, error) bool) {
		if !yield(snapshot(rec), nil) {
			return
		}
		if rec.Task.Status.State.Terminal() {
			return
		}
		_, _ = s.pump(ctx, c, rec.Task.ID, rec.LastSeq, 0, yield)
	}, nil
}

// snapshot is the task as it stands as one event, whose id is the task's
// last event.
func snapshot(rec *taskstore.TaskRecord) Event {
	t := rec.Task
	return Event{Seq: rec.LastSeq, Resp: &a2a.StreamResponse{Task: &t}}
}

// Event ids and Last-Event-ID. Every task's events are kept in one event
// log shared by the whole mesh (a JetStream stream); an event's id is its
// position in that log. The ids of one task's events therefore grow but
// skip the positions of other tasks' events, and an id means the same on
// every edge. The snapshot that opens a stream carries the id of the
// task's last event at that moment.
//
// A client that reconnects sends the id of the last event it read as
// Last-Event-ID, and gets the task's events after it, without a snapshot
// first. The id must be one the task's stream carried (or 0: from the
// task's start); anything else is refused, -32602: an id that is not a
// decimal number, or a position that is not an event of this task
// (another task's id, a number past the end of the log). When the task is
// already at a final state (completed, failed, canceled, rejected, or
// waiting for input) and nothing of it follows the id, the stream has
// nothing to replay and nothing to wait for: it sends the task as it
// stands (state, status message, artifacts) as its one event, with the id
// of the task's last event, and ends. While the event log does not answer
// (a failover) an id is not checked: the resume goes ahead after it.

// resumePoint reads a Last-Event-ID for task rec: ok is false when there
// is none.
func (s *Service) resumePoint(ctx context.Context, c *Call, rec *taskstore.TaskRecord, lastEventID string) (after uint64, ok bool, err error) {
	v := strings.TrimSpace(lastEventID)
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, false, a2a.ErrInvalidParams.With("Last-Event-ID %s is not an event id: ids are the decimal numbers "+
			"on the stream's id: lines", strconv.Quote(trunc(v, 64)))
	}
	if n == 0 || n == rec.LastSeq {
		return n, true, nil
	}
	_, err = s.store.EventAt(ctx, rec.Task.ID, n)
	switch {
	case errors.Is(err, taskstore.ErrTaskNotFound):
		return 0, false, a2a.ErrInvalidParams.With("Last-Event-ID %d is not an event of task %s "+
			"(event ids are positions in the mesh's shared event log; resume with an id this task's stream sent)",
			n, rec.Task.ID)
	case err != nil && ctx.Err() != nil:
		return 0, false, err
	case err != nil:
		// The log does not answer (a failover, most likely: clients
		// resume after one). Resume after the id as given rather than
		// fail the resume: the stream rides out the failover itself.
		c.Log.Debug("stream: Last-Event-ID not checked: the event log does not answer", "last_event_id", n, "err", err)
	}
	return n, true, nil
}

// resume streams task rec's events after position after. A task at a
// final state is replayed up to its last event; when none of them is for
// the client (nothing after the id, or only history), the client gets the
// task as it stands instead, so a resume never ends without an event.
func (s *Service) resume(ctx context.Context, c *Call, rec *taskstore.TaskRecord, after uint64) Stream {
	return func(yield func(Event, error) bool) {
		if after > rec.LastSeq {
			// The task moved on since it was read: read it again.
			if fresh, err := s.readTask(ctx, rec.Task.ID); err == nil {
				rec = fresh
			}
		}
		if !rec.Task.Status.State.Final() {
			_, _ = s.pump(ctx, c, rec.Task.ID, after, 0, yield)
			return
		}
		sent, ok := 0, true
		if after < rec.LastSeq {
			sent, ok = s.pump(ctx, c, rec.Task.ID, after, rec.LastSeq, yield)
		}
		if ok && sent == 0 && ctx.Err() == nil {
			yield(snapshot(rec), nil)
		}
	}
}

// Streams through a failover. A stream reads the task's log with a bus
// EventTail: the edge's one event feed (a single reader of the whole log,
// fanned out to the streams of each task; bus/fanout.go) queues the
// task's events for it, after it caught up from the log itself, so it
// gets every event after the last one it read, in order, once. The feed
// reads the log again after its own position whenever it may have lost
// something (a delivery gap, a lost heartbeat, a reconnect, a quiet
// consumer that stays behind). A tail that fails (a catch-up read
// JetStream did not answer) is replaced by a new one after the last event
// read: no gap, no duplicate, whichever edge the client is on. As a safety
// net, a stream quiet for streamProbeAfter asks the log's leader for its
// last event (again every streamProbeFollowing while the feed reads the
// log, every streamProbeAfter while it does not), and opens a new tail
// (which reads the log again) when the log has events the tail has not
// delivered by the next ask. A JetStream that has not answered for the
// failover budget (bus.FailoverBudget, 15s) ends the stream with -32000
// (bus.ErrUnavailable): the client resumes with Last-Event-ID. Only an
// event the service cannot decode is -32603.
const (
	// streamProbeAfter is how long a stream may receive nothing before it
	// asks the log whether it is behind; while it is behind or JetStream
	// does not answer, it asks every streamProbeRetry.
	streamProbeAfter = 5 * time.Second
	streamProbeRetry = time.Second
	// streamProbeFollowing is how often a quiet stream asks while the
	// edge's event feed reads the log (the feed watches for its own
	// losses): 10,000 quiet streams would otherwise ask 2,000 times a
	// second.
	streamProbeFollowing = 30 * time.Second
	// streamProbeTimeout bounds one ask.
	streamProbeTimeout = 2 * time.Second
	// streamReopenFirst is the pause before opening a reader again; it
	// doubles up to streamReopenMax.
	streamReopenFirst = 100 * time.Millisecond
	streamReopenMax   = time.Second
	// streamMaxReopens bounds the readers one stream opens.
	streamMaxReopens = 1000
)

// pump yields the task's events after seq until a final state, the event
// at position stop (0: no such bound), the consumer stopping, the context
// ending, or the bus staying unavailable past the failover budget (an
// error). It returns how many events it yielded, and whether the stream
// may go on (false once the consumer stopped or an error was yielded).
func (s *Service) pump(ctx context.Context, c *Call, taskID string, after, stop uint64, yield func(Event, error) bool) (sent int, ok bool) {
	p := &streamPump{s: s, c: c, yield: yield, taskID: taskID, lastRead: after, stop: stop}
	p.run(ctx)
	p.closeReader()
	return p.sent, !p.ended
}

// pumpClaims is pump, except that the events it yields keep the mark of
// a worker's claim (a2a.ClaimKey), for firstOutput.
func (s *Service) pumpClaims(ctx context.Context, c *Call, taskID string, after uint64, yield func(Event, error) bool) {
	p := &streamPump{s: s, c: c, yield: yield, taskID: taskID, lastRead: after, keepClaims: true}
	p.run(ctx)
	p.closeReader()
}

type streamPump struct {
	s        *Service
	c        *Call
	yield    func(Event, error) bool
	ended    bool // the consumer stopped, or an error was yielded
	taskID   string
	r        *taskstore.EventTail
	lastRead uint64 // the last event read from the log (sent or skipped)
	stop     uint64 // end after reading this event (0: at a final state only)
	// keepClaims passes claims on marked (pumpClaims)
	keepClaims bool
	sent       int // events sent
	// outage is when the bus stopped answering this stream (zero: it
	// answers); lastErr is what it said last.
	outage  time.Time
	lastErr error
	// quiet is when the stream last received an event or opened a reader;
	// behind is the log's last event at the previous ask when the reader
	// had not delivered it (0: not behind); asked is when the log was
	// last asked.
	quiet, asked time.Time
	behind       uint64
	opens        int
}

// emit yields an event or an error; it reports whether the consumer
// takes more.
func (p *streamPump) emit(ev Event, err error) bool {
	if p.ended {
		return false
	}
	if !p.yield(ev, err) || err != nil {
		p.ended = true
		return false
	}
	return true
}

func (p *streamPump) run(ctx context.Context) {
	ka := time.NewTicker(p.s.cfg.KeepAlive)
	defer ka.Stop()
	check := time.NewTicker(streamProbeRetry)
	defer check.Stop()
	wait := streamReopenFirst
	for {
		if p.r == nil {
			if !p.open(ctx) {
				if ctx.Err() != nil || p.budgetSpent() {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(bus.Jitter(wait)):
				}
				wait = min(2*wait, streamReopenMax)
				continue
			}
			wait = streamReopenFirst
		}
		var ready <-chan struct{}
		if p.r != nil {
			ready = p.r.Ready()
		}
		select {
		case <-ctx.Done():
			return
		case <-ka.C:
			if !p.emit(Event{}, nil) {
				return
			}
		case now := <-check.C:
			if !p.probe(ctx, now) {
				return
			}
		case <-ready:
			ev, ok, err := p.r.Next(ctx)
			if err != nil {
				if !p.readerEnded(ctx, err) {
					return
				}
				continue
			}
			if !ok {
				continue
			}
			p.lastRead, p.quiet, p.behind = ev.Seq, time.Now(), 0
			p.recovered()
			if p.forward(ev) {
				return
			}
		}
	}
}

// forward yields one event read from the log, unless it is history; it
// reports whether the stream ends with it.
func (p *streamPump) forward(ev taskstore.Event) (end bool) {
	switch {
	case ev.Resp.Message != nil && ev.Resp.Message.Role == a2a.RoleUser:
		// user turns are history, not stream items
	case ev.Resp.Task != nil:
		// the creation entry; a client starts from a snapshot
	case !p.keepClaims && a2a.IsClaimEvent(ev.Resp):
		// a worker's mark that the agent has not decided between a
		// message and a task (reply.go); what it decides follows
	default:
		if !p.emit(Event{Seq: ev.Seq, Resp: ev.Resp}, nil) {
			return true
		}
		p.sent++
		if su := ev.Resp.StatusUpdate; su != nil && su.Status.State.Final() {
			return true
		}
	}
	return p.stop > 0 && ev.Seq >= p.stop
}

// open opens a reader after the last event read; it reports whether it
// did. A failure starts (or continues) an outage.
func (p *streamPump) open(ctx context.Context) bool {
	if p.opens >= streamMaxReopens {
		p.fail(fmt.Errorf("stream: %d readers opened; giving up", p.opens))
		return false
	}
	p.opens++
	r, err := p.s.store.TailEvents(ctx, p.taskID, p.lastRead)
	if err != nil {
		if ctx.Err() == nil {
			p.unavailable(err, "stream: cannot open the event log; retrying")
		}
		return false
	}
	p.r, p.quiet = r, time.Now()
	if p.opens > 1 {
		p.c.Log.Info("stream: reading the event log again", "after_seq", p.lastRead, "readers", p.opens)
	}
	return true
}

// readerEnded handles the failure of the reader; it reports whether the
// stream goes on.
func (p *streamPump) readerEnded(ctx context.Context, err error) bool {
	p.closeReader()
	if ctx.Err() != nil {
		return false
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		p.c.Log.Error("stream: event log unreadable", "err", err)
		p.emit(Event{}, a2a.ErrInternal)
		return false
	}
	if err == nil {
		err = errors.New("event reader stopped")
	}
	p.unavailable(err, "stream: event log read failed; resuming after the last event read")
	return !p.budgetSpent()
}

// probe asks the log's leader, when the stream has been quiet long enough,
// whether the reader is behind and whether JetStream answers; it reports
// whether the stream goes on.
func (p *streamPump) probe(ctx context.Context, now time.Time) bool {
	if p.r == nil {
		return true // open's retries keep the count
	}
	every := streamProbeAfter
	switch {
	case !p.outage.IsZero() || p.behind > 0:
		every = streamProbeRetry
	case p.r.Following():
		every = streamProbeFollowing
	}
	if now.Sub(p.quiet) < streamProbeAfter || now.Sub(p.asked) < every {
		return true
	}
	p.asked = now
	pctx, cancel := context.WithTimeout(ctx, streamProbeTimeout)
	last, err := p.s.store.LastEventSeq(pctx, p.taskID)
	cancel()
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		p.unavailable(err, "stream: the event log does not answer; waiting for the failover")
		return !p.budgetSpent()
	}
	p.recovered()
	switch {
	case last <= p.lastRead:
		p.behind = 0 // quiet, not stalled
	case p.behind > 0 && p.lastRead < p.behind:
		// Events the log had at the last ask are still not here: the
		// tail is stuck.
		p.c.Log.Warn("stream: event reader stalled; reading the log again", "last_read", p.lastRead, "log_last", last)
		p.closeReader()
		p.behind = 0
	default:
		p.behind = last
	}
	return true
}

// unavailable notes a failure of the bus for this stream.
func (p *streamPump) unavailable(err error, msg string) {
	if p.outage.IsZero() {
		p.outage = time.Now()
		p.c.Log.Warn(msg, "err", err, "after_seq", p.lastRead)
	}
	p.lastErr = err
}

func (p *streamPump) recovered() {
	if !p.outage.IsZero() {
		p.c.Log.Info("stream: event log answers again", "after_ms", time.Since(p.outage).Milliseconds())
		p.outage, p.lastErr = time.Time{}, nil
	}
}

// budgetSpent ends the stream with -32000 once the bus has not answered
// for the failover budget; it reports whether it did.
func (p *streamPump) budgetSpent() bool {
	if p.outage.IsZero() || time.Since(p.outage) < p.s.failoverBudget() {
		return false
	}
	p.fail(p.lastErr)
	return true
}

// fail ends the stream with -32000: the client retries (Last-Event-ID
// resumes it without a gap).
func (p *streamPump) fail(err error) {
	p.c.Log.Warn("stream: event log unavailable past the failover budget; the client is told to retry", "err", err,
		"after_seq", p.lastRead, "budget", p.s.failoverBudget())
	p.emit(Event{}, bus.ErrUnavailable)
}

// closeReader closes the tail (at once: it waits for nothing).
func (p *streamPump) closeReader() {
	if p.r != nil {
		p.r.Close()
		p.r = nil
	}
}
