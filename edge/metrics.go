package edge

import (
	"net/http"
	"strconv"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
)

// watchMetrics has the metrics read the registry table's size, each known
// agent's live workers and the consumers' statistics at scrape time:
// every agent's work consumer (also as each agent's pending and in-flight
// work) and the push consumers.
func (e *Edge) watchMetrics() {
	m := e.cfg.Metrics
	if m == nil {
		return
	}
	m.SetRegistrySize(func() int { return len(e.reg.Agents()) })
	m.SetAgentWorkers(func() map[string]int {
		live := e.reg.Workers()
		for _, en := range e.reg.Agents() {
			live[en.Agent] += 0 // every known agent, 0 when none of its workers runs
		}
		return live
	})
	m.AddConsumers(metrics.StreamConsumers(e.bus, bus.StreamWork))
	m.AddConsumers(metrics.StreamConsumers(e.bus, taskstore.StreamLog, bus.ConsumerPushDispatch))
	m.AddConsumers(metrics.StreamConsumers(e.bus, push.StreamOut, push.ConsumerDeliver))
}

// countedWriter notes what a call of an HTTP transport answered, for
// a2amesh_edge_requests_total: the method once it is known to be one, and
// the error code of the answer ("ok" for a result or a stream).
type countedWriter struct {
	http.ResponseWriter
	binding, method, code string
}

// Unwrap lets http.ResponseController flush SSE through the wrapper.
func (w *countedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countRequest wraps w when metrics are on; done records the call as
// one of binding.
func (e *Edge) countRequest(w http.ResponseWriter, binding string) (http.ResponseWriter, func()) {
	m := e.cfg.Metrics
	if m == nil {
		return w, func() {}
	}
	cw := &countedWriter{ResponseWriter: w, binding: binding, method: "unknown", code: "ok"}
	return cw, func() {
		if p := recover(); p != nil {
			m.EdgeRequest(cw.binding, cw.method, strconv.Itoa(a2a.CodeInternalError))
			panic(p)
		}
		m.EdgeRequest(cw.binding, cw.method, cw.code)
	}
}

// noteMethod records a call's method (a known one: the label stays bounded).
func noteMethod(w http.ResponseWriter, method string) {
	if cw, ok := w.(*countedWriter); ok {
		cw.method = method
	}
}

// noteAnswer records the code of a JSON-RPC answer written to w.
func noteAnswer(w http.ResponseWriter, v any) {
	if resp, ok := v.(*a2a.Response); ok && resp.Error != nil {
		noteCode(w, resp.Error.Code)
	}
}

// noteCode records the JSON-RPC error code a call answered with.
func noteCode(w http.ResponseWriter, code int) {
	if cw, ok := w.(*countedWriter); ok {
		cw.code = strconv.Itoa(code)
	}
}

// countCall records one call of a transport that does not answer through
// an http.ResponseWriter (gRPC) in a2amesh_edge_requests_total: its
// method (a 1.0 method name: the label stays bounded) and code (the A2A
// error code it answered with, "ok", or a gRPC code name for a refusal
// of gRPC's own).
func (e *Edge) countCall(method, code string) {
	e.cfg.Metrics.EdgeRequest(bindingGRPC, method, code) // nil-safe
}
