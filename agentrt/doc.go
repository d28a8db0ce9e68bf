// Package agentrt is the worker SDK. An agent author implements Agent: a
// card and a Run method that sees only the request and an EventWriter
// (working, artifact, input-required, complete, fail, reject). A Worker runs
// an Agent against the mesh: it shares the agent's durable work queue with
// every other worker of that agent, heartbeats while the agent runs, stops
// it on cancel or timeout, and records every event in the task's log.
// The request names the extensions the client requested; the agent
// activates the ones it applies (Request.Activate), and the worker records
// them with its events for the edge to echo (extensions.go).
//
// agentrt imports a2a, bus and registry; it never imports edge, and edge
// never imports it: they meet only on the bus.
package agentrt
