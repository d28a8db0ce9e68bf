package edge

import (
	"context"
	"net/http"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// The operator API: read-only views of the mesh that A2A has no method
// for, under /ops/v1, for the console (package console) and for tools.
// It sits behind the same credentials and rate limit as the A2A
// endpoints; its answers are JSON with lowerCamelCase fields, never
// cached, and its errors {"error": "<message>"} with the HTTP status.
// docs/console.md describes it.

// opsTimeout bounds the JetStream reads of one operator API call.
const opsTimeout = 5 * time.Second

func (e *Edge) opsRoutes() {
	guard := func(h http.HandlerFunc) http.Handler {
		return e.authenticate(opsRefusals{}, e.rateLimit(opsRefusals{}, h))
	}
	e.mux.Handle("GET /ops/v1/fleet", guard(e.serveFleet))
}

// fleetDoc is the answer of GET /ops/v1/fleet.
type fleetDoc struct {
	// Agents are the live agents, sorted by name.
	Agents []fleetAgent `json:"agents"`
	// Time is when the figures were read.
	Time time.Time `json:"time"`
}

// fleetAgent is one live agent of the fleet.
type fleetAgent struct {
	Name string `json:"name"`
	// Workers counts the agent's live worker instances.
	Workers int        `json:"workers"`
	Queue   fleetQueue `json:"queue"`
	// Card is the agent's public card as GET /agents lists it (unsigned).
	Card a2a.AgentCard `json:"card"`
}

// fleetQueue are the figures of an agent's work queue.
type fleetQueue struct {
	// Pending counts tasks waiting for a worker: the queue's depth.
	Pending uint64 `json:"pending"`
	// InFlight counts tasks a worker holds and has not finished.
	InFlight uint64 `json:"inFlight"`
	// Redelivered counts tasks in flight that were delivered more than
	// once (a worker crashed or handed them back).
	Redelivered uint64 `json:"redelivered"`
	// DeadLetters counts the agent's work items in the dead-letter
	// stream (A2A_DEAD): items no worker could process.
	DeadLetters uint64 `json:"deadLetters"`
}

// serveFleet answers GET /ops/v1/fleet: every live agent with its
// workers, its work queue's figures and its card.
func (e *Edge) serveFleet(w http.ResponseWriter, r *http.Request) {
	if e.registryLoading(w) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	queues, err := e.bus.Queues(ctx)
	if err != nil {
		e.log.Warn("ops: fleet: reading the work queues", "err", err)
		w.Header().Set("Retry-After", "1")
		writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "the work queues cannot be read now; retry"})
		return
	}
	entries := e.reg.Agents()
	workers := e.reg.Workers()
	doc := fleetDoc{Agents: make([]fleetAgent, 0, len(entries)), Time: time.Now().UTC()}
	for _, en := range entries {
		q := queues[en.Agent]
		doc.Agents = append(doc.Agents, fleetAgent{
			Name: en.Agent, Workers: workers[en.Agent],
			Queue: fleetQueue{Pending: q.Pending, InFlight: q.AckPending, Redelivered: q.Redelivered, DeadLetters: q.Dead},
			Card:  e.agentCard(r, en.Agent, en.Card),
		})
	}
	writeOps(w, http.StatusOK, doc)
}

// writeOps writes an operator API answer: JSON, never cached.
func writeOps(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, v)
}

// opsRefusals are the operator API's refusals: {"error": message}.
type opsRefusals struct{}

func (opsRefusals) unauthenticated(w http.ResponseWriter, msg string) {
	writeOps(w, http.StatusUnauthorized, map[string]string{"error": msg})
}

func (opsRefusals) rateLimited(w http.ResponseWriter, msg string) {
	writeOps(w, http.StatusTooManyRequests, map[string]string{"error": msg})
}

func (opsRefusals) tooLarge(w http.ResponseWriter, limit int64) {
	writeOps(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "request body too large"})
}

func (opsRefusals) binding() string { return "ops" }
