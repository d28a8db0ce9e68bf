package edge

import (
	"context"
	"encoding/json"
	"errors"
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

// pump forwards the task's events after seq until a final state, the
// client leaving, or a bus failure (reported as a JSON-RPC error frame).
func (e *Edge) pump(ctx context.Context, c *call, sw *sseWriter, taskID string, after uint64) {
	sw.start()
	r, err := e.bus.ReadEvents(ctx, taskID, after)
	if err != nil {
		c.log.Error("stream: read events", "err", err)
		_ = sw.event(0, c.errorResponse(a2a.ErrInternal))
		return
	}
	defer r.Close()
	ka := time.NewTicker(e.cfg.KeepAlive)
	defer ka.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ka.C:
			if sw.keepAlive() != nil {
				return
			}
		case ev, ok := <-r.C:
			if !ok {
				if err := r.Err(); err != nil && !errors.Is(err, context.Canceled) {
					c.log.Error("stream: event log read failed", "err", err)
					_ = sw.event(0, c.errorResponse(a2a.ErrInternal))
				}
				return
			}
			if ev.Resp.Message != nil && ev.Resp.Message.Role == a2a.RoleUser {
				continue // user turns are history, not stream items
			}
			if ev.Resp.Task != nil {
				continue // the creation entry; a client starts from a snapshot
			}
			if err := sw.event(ev.Seq, a2a.NewResult(c.req.ID, c.encodeEvent(ev.Resp))); err != nil {
				return
			}
			if su := ev.Resp.StatusUpdate; su != nil && su.Status.State.Final() {
				return
			}
		}
	}
}

var _ = bus.ErrTaskNotFound
