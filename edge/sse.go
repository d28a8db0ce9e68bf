package edge

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
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

// writeStream answers a streaming call with its stream, as SSE: each
// event is a JSON-RPC response frame in the call's version, whose id is
// the event's position in the event log (what Last-Event-ID resumes
// after); a keep-alive is a comment; an error that ends the stream is a
// frame of its own, without an id.
func (e *Edge) writeStream(c *call, stream service.Stream) {
	sw := newSSE(c)
	sw.start()
	for ev, err := range stream {
		if err != nil {
			_ = sw.event(0, c.errorResponse(rpcError(err)))
			return
		}
		if ev.Resp == nil {
			if sw.keepAlive() != nil {
				return
			}
			continue
		}
		if sw.event(ev.Seq, a2a.NewResult(c.req.ID, c.encodeEvent(ev.Resp))) != nil {
			return
		}
	}
}
