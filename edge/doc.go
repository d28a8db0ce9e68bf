// Package edge is the mesh's HTTP front door: a plain http.Handler that
// serves agent cards, JSON-RPC 2.0 in both A2A 1.0 and 0.3, and SSE streams,
// translating every call into bus operations. An edge holds no task state,
// only open streams: any edge can answer any call about any task.
//
// edge imports a2a, bus and registry; it never imports agentrt.
package edge
