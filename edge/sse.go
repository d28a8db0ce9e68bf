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
// its events until a final state.
func (e *Edge) stream(c *call) error {
	ctx := c.r.Context()
	p, err := e.plan(ctx, c)
	if err != nil {
		return err
	}
	c.log = c.log.With("task_id", p.rec.Task.ID, "context_id", p.rec.Task.ContextID)
	c.taskTraced(p.rec)
	after := p.rec.LastSeq
	first := true
	if p.replay {
		if last, ok := lastEventID(c.r); ok {
			after, first = last, false // a reconnect: resume after what it saw
		}
	}
	if err := e.enqueue(ctx, c, p); err != nil {
		return err
	}
	sw := newSSE(c)
	if first {
		t := p.rec.Task.WithHistory(p.historyLength())
		if err := sw.event(p.rec.LastSeq, a2a.NewResult(c.req.ID, c.encodeEvent(&a2a.StreamResponse{Task: &t}))); err != nil {
			return errStreamStarted
		}
		if p.rec.Task.Status.State.Final() {
			return errStreamStarted
		}
	}
	e.pump(ctx, c, sw, p.rec.Task.ID, after)
	return errStreamStarted
}

// subscribe serves SubscribeToTask / tasks/resubscribe. With Last-Event-ID
// it replays what the client missed, without the snapshot; otherwise it
// sends the current task, then what follows.
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
	if last, ok := lastEventID(c.r); ok {
		if last >= rec.LastSeq && rec.Task.Status.State.Terminal() {
			sw.start() // nothing missed, nothing to come
			return errStreamStarted
		}
		e.pump(ctx, c, sw, rec.Task.ID, last)
		return errStreamStarted
	}
	if rec.Task.Status.State.Terminal() && c.version == a2a.V10 {
		return a2a.ErrUnsupportedOperation.With("Task %s is in terminal state %s; there is nothing to subscribe to",
			rec.Task.ID, a2a.StateV03(rec.Task.Status.State))
	}
	t := rec.Task
	if err := sw.event(rec.LastSeq, a2a.NewResult(c.req.ID, c.encodeEvent(&a2a.StreamResponse{Task: &t}))); err != nil {
		return errStreamStarted
	}
	if rec.Task.Status.State.Terminal() {
		return errStreamStarted
	}
	e.pump(ctx, c, sw, rec.Task.ID, rec.LastSeq)
	return errStreamStarted
}

func lastEventID(r *http.Request) (uint64, bool) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
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
// client leaving, or the bus staying unavailable past the failover budget
// (a -32000 frame).
func (e *Edge) pump(ctx context.Context, c *call, sw *sseWriter, taskID string, after uint64) {
	sw.start()
	p := &streamPump{e: e, c: c, sw: sw, taskID: taskID, lastRead: after}
	p.run(ctx)
	p.closeReader()
}

type streamPump struct {
	e        *Edge
	c        *call
	sw       *sseWriter
	taskID   string
	r        *bus.EventFollower
	lastRead uint64 // the last event read from the log (sent or skipped)
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
			if ev.Resp.Message != nil && ev.Resp.Message.Role == a2a.RoleUser {
				continue // user turns are history, not stream items
			}
			if ev.Resp.Task != nil {
				continue // the creation entry; a client starts from a snapshot
			}
			if err := p.sw.event(ev.Seq, a2a.NewResult(p.c.req.ID, p.c.encodeEvent(ev.Resp))); err != nil {
				return
			}
			if su := ev.Resp.StatusUpdate; su != nil && su.Status.State.Final() {
				return
			}
		}
	}
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
