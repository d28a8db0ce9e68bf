package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// sseWriter writes one SSE response. Every event has an id: the stream
// sequence of the log entry it reports, so Last-Event-ID resumes on any edge.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	c       *call
	started bool
}

func newSSE(c *call) *sseWriter {
	return &sseWriter{w: c.w, rc: http.NewResponseController(c.w), c: c}
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
}

// event writes one JSON-RPC response frame carrying v (or an error).
func (s *sseWriter) event(seq uint64, resp *a2a.Response) error {
	s.start()
	data, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	var b strings.Builder
	if seq > 0 {
		b.WriteString("id: ")
		b.WriteString(strconv.FormatUint(seq, 10))
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) keepAlive() error {
	s.start()
	if _, err := s.w.Write([]byte(": keep-alive\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// stream serves SendStreamingMessage / message/stream: the task first, then
// its events until a final state. A retried send (same messageId) with
// Last-Event-ID resumes after that event instead (see resume).
func (e *Edge) stream(c *call) error {
	ctx := c.r.Context()
	p, err := e.submit(ctx, c, false)
	if err != nil {
		return err
	}
	c.log = c.log.With("task_id", p.rec.Task.ID, "context_id", p.rec.Task.ContextID)
	c.taskTraced(p.rec)
	sw := newSSE(c)
	if p.replay {
		after, ok, err := e.resumePoint(ctx, c, p.rec)
		if err != nil {
			return err
		}
		if ok { // a reconnect: resume after what it saw
			e.resume(ctx, c, sw, p.rec, after)
			return errStreamStarted
		}
	}
	t := p.rec.Task.WithHistory(p.historyLength())
	if err := sw.event(p.rec.LastSeq, a2a.NewResult(c.req.ID, c.encodeEvent(&a2a.StreamResponse{Task: &t}))); err != nil {
		return errStreamStarted
	}
	if p.rec.Task.Status.State.Final() {
		return errStreamStarted
	}
	e.pump(ctx, c, sw, p.rec.Task.ID, p.rec.LastSeq, 0)
	return errStreamStarted
}

// subscribe serves SubscribeToTask / tasks/resubscribe. With Last-Event-ID
// it replays what the client missed, without the snapshot (see resume);
// otherwise it sends the current task, then what follows.
func (e *Edge) subscribe(c *call) error {
	var p a2a.TaskIDRequest
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return err
	}
	ctx := c.r.Context()
	rec, err := e.loadTask(ctx, c, p.ID)
	if err != nil {
		return err
	}
	c.log = c.log.With("task_id", rec.Task.ID)
	sw := newSSE(c)
	after, ok, err := e.resumePoint(ctx, c, rec)
	if err != nil {
		return err
	}
	if ok {
		e.resume(ctx, c, sw, rec, after)
		return errStreamStarted
	}
	if rec.Task.Status.State.Terminal() && c.version == a2a.V10 {
		return a2a.ErrUnsupportedOperation.With("Task %s is in terminal state %s; there is nothing to subscribe to",
			rec.Task.ID, a2a.StateV03(rec.Task.Status.State))
	}
	if err := e.snapshot(c, sw, rec); err != nil {
		return errStreamStarted
	}
	if rec.Task.Status.State.Terminal() {
		return errStreamStarted
	}
	e.pump(ctx, c, sw, rec.Task.ID, rec.LastSeq, 0)
	return errStreamStarted
}

// snapshot sends the task as it stands as one event, whose id is the
// task's last event.
func (e *Edge) snapshot(c *call, sw *sseWriter, rec *bus.TaskRecord) error {
	t := rec.Task
	return sw.event(rec.LastSeq, a2a.NewResult(c.req.ID, c.encodeEvent(&a2a.StreamResponse{Task: &t})))
}

// Event ids and Last-Event-ID. Every task's events are kept in one event
// log shared by the whole mesh (a JetStream stream); an SSE event's id is
// the position of its event in that log. The ids of one task's events
// therefore grow but skip the positions of other tasks' events, and an id
// means the same on every edge. The snapshot that opens a stream carries
// the id of the task's last event at that moment.
//
// A client that reconnects sends the id of the last event it read as
// Last-Event-ID, and gets the task's events after it, without a snapshot
// first. The id must be one the task's stream carried (or 0: from the
// task's start); anything else is answered with one error event, -32602:
// an id that is not a decimal number, or a position that is not an event
// of this task (another task's id, a number past the end of the log).
// When the task is already at a final state (completed, failed, canceled,
// rejected, or waiting for input) and nothing of it follows the id, the
// stream has nothing to replay and nothing to wait for: it sends the task
// as it stands (state, status message, artifacts) as its one event, with
// the id of the task's last event, and ends. While the event log does not
// answer (a failover) an id is not checked: the resume goes ahead after it.

// resumePoint reads the call's Last-Event-ID for task rec: ok is false
// when the request has none.
func (e *Edge) resumePoint(ctx context.Context, c *call, rec *bus.TaskRecord) (after uint64, ok bool, err error) {
	v := strings.TrimSpace(c.r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, false, nil
	}
	n, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, false, a2a.ErrInvalidParams.With("Last-Event-ID %s is not an event id: ids are the decimal numbers "+
			"on the stream's id: lines", quoteTrunc(v))
	}
	if n == 0 || n == rec.LastSeq {
		return n, true, nil
	}
	_, err = e.bus.EventAt(ctx, rec.Task.ID, n)
	switch {
	case errors.Is(err, bus.ErrTaskNotFound):
		return 0, false, a2a.ErrInvalidParams.With("Last-Event-ID %d is not an event of task %s "+
			"(event ids are positions in the mesh's shared event log; resume with an id this task's stream sent)",
			n, rec.Task.ID)
	case err != nil && ctx.Err() != nil:
		return 0, false, err
	case err != nil:
		// The log does not answer (a failover, most likely: clients
		// resume after one). Resume after the id as given rather than
		// fail the resume: the stream rides out the failover itself.
		c.log.Debug("stream: Last-Event-ID not checked: the event log does not answer", "last_event_id", n, "err", err)
	}
	return n, true, nil
}

// resume streams task rec's events after position after. A task at a
// final state is replayed up to its last event; when none of them is for
// the client (nothing after the id, or only history), the client gets the
// task as it stands instead, so a resume never ends without an event.
func (e *Edge) resume(ctx context.Context, c *call, sw *sseWriter, rec *bus.TaskRecord, after uint64) {
	if after > rec.LastSeq {
		// The task moved on since it was read: read it again.
		if fresh, err := e.readTask(ctx, rec.Task.ID); err == nil {
			rec = fresh
		}
	}
	if !rec.Task.Status.State.Final() {
		e.pump(ctx, c, sw, rec.Task.ID, after, 0)
		return
	}
	sent := 0
	if after < rec.LastSeq {
		sent = e.pump(ctx, c, sw, rec.Task.ID, after, rec.LastSeq)
	}
	if sent == 0 && ctx.Err() == nil {
		_ = e.snapshot(c, sw, rec)
	}
}

// Streams through a failover. A stream reads the task's log with a bus
// EventFollower, which ends at the first sign of trouble (a lost
// heartbeat, a consumer lost with its node, a delivery gap) instead of
// retrying on its own. When it cannot be opened or ends, the stream opens
// a new one after the last event it read: no gap, no duplicate, whichever
// edge the client is on. As a safety net, a stream quiet for
// streamProbeAfter asks the log's leader for its last event, and opens a
// new follower when the log has events the follower has not delivered by
// the next ask. A JetStream that has not answered for the failover budget
// (bus.FailoverBudget, 15s) ends the stream with -32000
// (bus.ErrUnavailable): the client resumes with Last-Event-ID. Only an
// event the edge cannot decode is -32603.
const (
	// streamProbeAfter is how long a stream may receive nothing before it
	// asks the log whether it is behind; while it is behind or JetStream
	// does not answer, it asks every streamProbeRetry.
	streamProbeAfter = 5 * time.Second
	streamProbeRetry = time.Second
	// streamProbeTimeout bounds one ask.
	streamProbeTimeout = 2 * time.Second
	// streamReopenFirst is the pause before opening a reader again; it
	// doubles up to streamReopenMax.
	streamReopenFirst = 100 * time.Millisecond
	streamReopenMax   = time.Second
	// streamMaxReopens bounds the readers one stream opens.
	streamMaxReopens = 1000
)

// pump forwards the task's events after seq until a final state, the
// event at position stop (0: no such bound), the client leaving, or the
// bus staying unavailable past the failover budget (a -32000 frame). It
// returns how many events it sent.
func (e *Edge) pump(ctx context.Context, c *call, sw *sseWriter, taskID string, after, stop uint64) int {
	sw.start()
	p := &streamPump{e: e, c: c, sw: sw, taskID: taskID, lastRead: after, stop: stop}
	p.run(ctx)
	p.closeReader()
	return p.sent
}

type streamPump struct {
	e        *Edge
	c        *call
	sw       *sseWriter
	taskID   string
	r        *bus.EventFollower
	lastRead uint64 // the last event read from the log (sent or skipped)
	stop     uint64 // end after reading this event (0: at a final state only)
	sent     int    // events sent
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

func (p *streamPump) run(ctx context.Context) {
	ka := time.NewTicker(p.e.cfg.KeepAlive)
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
		var events <-chan bus.Event
		if p.r != nil {
			events = p.r.C
		}
		select {
		case <-ctx.Done():
			return
		case <-ka.C:
			if p.sw.keepAlive() != nil {
				return
			}
		case now := <-check.C:
			if !p.probe(ctx, now) {
				return
			}
		case ev, ok := <-events:
			if !ok {
				if !p.readerEnded(ctx) {
					return
				}
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

// forward sends one event read from the log to the client, unless it is
// history; it reports whether the stream ends with it.
func (p *streamPump) forward(ev bus.Event) (end bool) {
	switch {
	case ev.Resp.Message != nil && ev.Resp.Message.Role == a2a.RoleUser:
		// user turns are history, not stream items
	case ev.Resp.Task != nil:
		// the creation entry; a client starts from a snapshot
	default:
		if err := p.sw.event(ev.Seq, a2a.NewResult(p.c.req.ID, p.c.encodeEvent(ev.Resp))); err != nil {
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
	r, err := p.e.bus.FollowEvents(ctx, p.taskID, p.lastRead)
	if err != nil {
		if ctx.Err() == nil {
			p.unavailable(err, "stream: cannot open the event log; retrying")
		}
		return false
	}
	p.r, p.quiet = r, time.Now()
	if p.opens > 1 {
		p.c.log.Info("stream: reading the event log again", "after_seq", p.lastRead, "readers", p.opens)
	}
	return true
}

// readerEnded handles the end of the reader's channel; it reports whether
// the stream goes on.
func (p *streamPump) readerEnded(ctx context.Context) bool {
	err := p.r.Err()
	p.closeReader()
	if ctx.Err() != nil {
		return false
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		p.c.log.Error("stream: event log unreadable", "err", err)
		_ = p.sw.event(0, p.c.errorResponse(a2a.ErrInternal))
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
	if !p.outage.IsZero() || p.behind > 0 {
		every = streamProbeRetry
	}
	if now.Sub(p.quiet) < streamProbeAfter || now.Sub(p.asked) < every {
		return true
	}
	p.asked = now
	pctx, cancel := context.WithTimeout(ctx, streamProbeTimeout)
	last, err := p.e.bus.LastEventSeq(pctx, p.taskID)
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
		// follower is stuck.
		p.c.log.Warn("stream: event reader stalled; reading the log again", "last_read", p.lastRead, "log_last", last)
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
		p.c.log.Warn(msg, "err", err, "after_seq", p.lastRead)
	}
	p.lastErr = err
}

func (p *streamPump) recovered() {
	if !p.outage.IsZero() {
		p.c.log.Info("stream: event log answers again", "after_ms", time.Since(p.outage).Milliseconds())
		p.outage, p.lastErr = time.Time{}, nil
	}
}

// budgetSpent ends the stream with -32000 once the bus has not answered
// for the failover budget; it reports whether it did.
func (p *streamPump) budgetSpent() bool {
	if p.outage.IsZero() || time.Since(p.outage) < p.e.failoverBudget() {
		return false
	}
	p.fail(p.lastErr)
	return true
}

// fail ends the stream with -32000: the client retries (Last-Event-ID
// resumes it without a gap).
func (p *streamPump) fail(err error) {
	p.c.log.Warn("stream: event log unavailable past the failover budget; the client is told to retry", "err", err,
		"after_seq", p.lastRead, "budget", p.e.failoverBudget())
	_ = p.sw.event(0, p.c.errorResponse(bus.ErrUnavailable))
}

// closeReader closes the follower (at once: it waits for nothing).
func (p *streamPump) closeReader() {
	if p.r != nil {
		p.r.Close()
		p.r = nil
	}
}
