// Package edge is the mesh's HTTP front door: a plain http.Handler that
// serves agent cards, JSON-RPC 2.0 in both A2A 1.0 and 0.3, and SSE streams.
// Its JSON-RPC handler is a codec over the A2A service (package service):
// it parses the envelope and decodes the params once, calls one service
// method, and encodes the result, error or event stream for the call's
// protocol version. Auth, rate limits, the body limit, metrics and the
// server span are still applied in the handler. An edge holds no task state, only open streams: any edge can
// answer any call about any task. Push delivery is its own component
// (package push), which an edge role may host; the edge itself only stores
// push configs and serves the signing key set. It also serves the web
// console (package console) at /console/ and the read-only operator API
// the console reads where A2A has no method, under /ops/v1 (ops.go).
//
// edge imports a2a, bus, tasks, service, registry, push and console; it
// never imports agentrt.
package edge
