package edge

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
)

// sseWriter writes one SSE response, for any binding that streams over
// SSE (JSON-RPC, HTTP+JSON): what an event's data is, the binding says.
// Every event of the task's stream has an id: the stream sequence of the
// log entry it reports, so Last-Event-ID resumes on any edge.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newSSE(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
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

// event writes one event whose data is v as JSON, with id seq (none for
// 0).
func (s *sseWriter) event(seq uint64, v any) error {
	s.start()
	data, err := json.Marshal(v)
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

// relay writes stream as SSE: each event's data is frame(ev.Resp), its id
// the event's position in the event log (what Last-Event-ID resumes
// after); a keep-alive is a comment; an error that ends the stream is the
// event failed(err) returns, without an id. It returns that error (nil
// when the stream ended without one, or the client went away).
func (s *sseWriter) relay(stream service.Stream, frame func(*a2a.StreamResponse) any, failed func(error) any) error {
	s.start()
	for ev, err := range stream {
		if err != nil {
			_ = s.event(0, failed(err))
			return err
		}
		if ev.Resp == nil {
			if s.keepAlive() != nil {
				return nil
			}
			continue
		}
		if s.event(ev.Seq, frame(ev.Resp)) != nil {
			return nil
		}
	}
	return nil
}

// writeStream answers a JSON-RPC streaming call with its stream: each
// event is a JSON-RPC response frame in the call's version; an error that
// ends the stream is an error frame.
func (e *Edge) writeStream(c *call, stream service.Stream) {
	_ = newSSE(c.w).relay(stream,
		func(resp *a2a.StreamResponse) any { return a2a.NewResult(c.req.ID, c.encodeEvent(resp)) },
		func(err error) any { return c.errorResponse(rpcError(err)) })
}
