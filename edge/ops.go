package edge

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/cardcheck"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/service"
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
	e.mux.Handle("GET /ops/v1/tasks/{id}/events", guard(e.serveTaskEvents))
	e.mux.Handle("DELETE /ops/v1/agents/{name}", guard(e.removeAgent))
	e.mux.Handle("GET /ops/v1/audit", guard(e.serveAudit))
	e.opsTaskRoutes(guard) // ops_task.go
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
	// Status: its live workers (0 for a known agent none of whose
	// workers runs now), when one was last seen, whether its sends queue.
	registry.Status
	Queue fleetQueue `json:"queue"`
	// Card is the agent's public card as GET /agents lists it (unsigned).
	Card a2a.AgentCard `json:"card"`
	// CardCheck is what the agent's proxy worker verified of its upstream
	// card's signatures (GET /agents' cardChecks); absent for an agent
	// that is not a proxy.
	CardCheck *registry.CardCheck `json:"cardCheck,omitempty"`
	// CardIssues is what the card breaks of the specification, or may
	// get wrong (package internal/cardcheck), errors first; empty when
	// nothing.
	CardIssues []cardcheck.Issue `json:"cardIssues"`
	// Failures are the agent's newest dead letters, newest first (at
	// most fleetFailures).
	Failures []fleetFailure `json:"failures"`
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
	caller, pol := callerFrom(r.Context()), e.cfg.Policy.Policy()
	if !pol.AllowsAny(caller, policy.Ops) {
		writeOps(w, http.StatusForbidden, map[string]string{"error": "permission denied: the access policy grants this caller the ops action on no agent"})
		return
	}
	agents := e.reg.Listing()
	doc := fleetDoc{Agents: make([]fleetAgent, 0, len(agents)), Time: time.Now().UTC()}
	for _, en := range agents {
		if !pol.Allows(caller, policy.Ops, en.Agent) {
			continue
		}
		q := queues[en.Agent]
		card := e.agentCard(r, en.Agent, en.Card)
		issues := cardcheck.Check(&card)
		if issues == nil {
			issues = []cardcheck.Issue{}
		}
		doc.Agents = append(doc.Agents, fleetAgent{
			Name: en.Agent, Status: en.Status,
			Queue:     fleetQueue{Pending: q.Pending, InFlight: q.AckPending, Redelivered: q.Redelivered, DeadLetters: q.Dead},
			Card:      card,
			CardCheck: en.CardCheck, CardIssues: issues,
		})
	}
	e.fleetFailures(ctx, doc.Agents)
	writeOpsDoc(w, r, doc)
}

// Bounds of GET /ops/v1/tasks/{id}/events.
const (
	taskEventsDefault = 200
	taskEventsMax     = 1000
)

// taskEventsDoc is the answer of GET /ops/v1/tasks/{id}/events.
type taskEventsDoc struct {
	TaskID string `json:"taskId"`
	// State is the task's state when it was read, before its events: when
	// it is terminal the log is complete, and events with more false end
	// it.
	State a2a.TaskState `json:"state"`
	// Events are the task's recorded events after the asked position, in
	// order.
	Events []taskEvent `json:"events"`
	// More says the log holds events past the last one: ask again with
	// after set to its seq.
	More bool `json:"more"`
}

// taskEvent is one recorded event of a task.
type taskEvent struct {
	// Seq is its position in the mesh's event log: the id a stream sends
	// it under, and what Last-Event-ID resumes after.
	Seq uint64 `json:"seq"`
	// Time is when the log stored it.
	Time time.Time `json:"time"`
	// Event is the StreamResponse as a 1.0 stream sends it.
	Event *a2a.StreamResponse `json:"event"`
}

// serveTaskEvents answers GET /ops/v1/tasks/{id}/events?after=&limit=:
// the caller's task's log, replayed from the event after seq after (0:
// the first), at most limit events (default 200, at most 1000). A task
// that is not the caller's is 404, as GetTask answers it.
func (e *Edge) serveTaskEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	after, limit := uint64(0), taskEventsDefault
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeOps(w, http.StatusBadRequest, map[string]string{"error": "after: want the seq of an event (a non-negative integer)"})
			return
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > taskEventsMax {
			writeOps(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit: want 1 to %d", taskEventsMax)})
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	// GetTask decides what the caller may see: its own tasks only.
	zero := 0
	t, err := e.svc.GetTask(opsCall(ctx, r), &a2a.GetTaskRequest{ID: id, HistoryLength: &zero})
	if err != nil {
		ae := a2a.AsError(err)
		writeOps(w, ae.Status().HTTP, map[string]string{"error": ae.Message})
		return
	}
	events, more, err := e.store.TaskLog(ctx, id, after, limit)
	if err != nil {
		e.log.Warn("ops: task events: reading the log", "task_id", id, "err", err)
		w.Header().Set("Retry-After", "1")
		writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "the task's log cannot be read now; retry"})
		return
	}
	doc := taskEventsDoc{TaskID: id, State: t.Status.State, Events: make([]taskEvent, 0, len(events)), More: more}
	for _, ev := range events {
		doc.Events = append(doc.Events, taskEvent{Seq: ev.Seq, Time: ev.Time.UTC(), Event: ev.Resp})
	}
	writeOpsDoc(w, r, doc)
}

// removeAgent answers DELETE /ops/v1/agents/{name}[?force=true]: it
// forgets the agent (registry.Remove), for a caller the access policy
// grants the remove action on it (without a policy: any caller the edge
// admits). An agent with a live worker is refused (409) unless force,
// since that worker would register it again.
func (e *Edge) removeAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	caller := callerFrom(r.Context())
	entry := audit.Entry{Principal: caller.Principal, From: r.RemoteAddr, Binding: "ops", Method: "RemoveAgent", Agent: name}
	done := func(outcome string, code int) {
		entry.Outcome, entry.Code = outcome, code
		e.cfg.Audit.Record(entry)
	}
	if !e.cfg.Policy.Policy().Allows(caller, policy.Remove, name) {
		done(audit.Denied, a2a.CodePermissionDenied)
		writeOps(w, http.StatusForbidden, map[string]string{"error": "permission denied: the access policy does not grant this caller the remove action on agent " + strconv.Quote(trunc(name, 64))})
		return
	}
	if !bus.ValidToken(name) {
		writeOps(w, http.StatusNotFound, map[string]string{"error": "no agent named " + strconv.Quote(trunc(name, 64)) + " is known to the mesh"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	if r.URL.Query().Get("force") != "true" {
		live, err := registry.Answering(ctx, e.bus, name)
		if err != nil {
			w.Header().Set("Retry-After", "1")
			writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "cannot tell now whether the agent has a live worker; retry"})
			return
		}
		if live {
			done(audit.Failed, http.StatusConflict)
			writeOps(w, http.StatusConflict, map[string]string{"error": name + " has a live worker, which would register it again: stop its workers first, or add ?force=true"})
			return
		}
	}
	removed, err := registry.Remove(ctx, e.bus, name)
	switch {
	case err != nil:
		e.log.Warn("ops: removing an agent", "agent", name, "err", err)
		w.Header().Set("Retry-After", "1")
		writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "the agents bucket cannot be written now; retry"})
	case !removed:
		done(audit.Failed, http.StatusNotFound)
		writeOps(w, http.StatusNotFound, map[string]string{"error": "no agent named " + strconv.Quote(name) + " is known to the mesh"})
	default:
		done(audit.OK, 0)
		e.log.Info("agent removed", "agent", name, "principal", caller.Principal)
		writeOps(w, http.StatusOK, map[string]string{"removed": name})
	}
}

// auditDoc is the answer of GET /ops/v1/audit.
type auditDoc struct {
	Entries []audit.Entry `json:"entries"`
	// More: more entries matched past limit; ask again with since set to
	// the last entry's time.
	More bool `json:"more"`
}

// serveAudit answers GET /ops/v1/audit?since=&agent=&principal=&outcome=&method=&limit=:
// the audit log's entries, in time order, of the agents the access policy
// grants the caller audit on (entries of no agent, such as refused
// credentials, to those it grants audit on every agent, "*"). Without a
// policy nobody is named an auditor: 403 (a2amesh audit reads it
// through NATS).
func (e *Edge) serveAudit(w http.ResponseWriter, r *http.Request) {
	caller, pol := callerFrom(r.Context()), e.cfg.Policy.Policy()
	if pol == nil || !pol.AllowsAny(caller, policy.Audit) {
		writeOps(w, http.StatusForbidden, map[string]string{"error": "permission denied: only principals the access policy (--policy) grants the audit action may read the audit log"})
		return
	}
	q := r.URL.Query()
	since, err := audit.ParseSince(q.Get("since"), time.Now())
	if err != nil {
		writeOps(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	f := audit.Filter{Since: since, Agent: q.Get("agent"), Principal: q.Get("principal"), Outcome: q.Get("outcome"), Method: q.Get("method")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > audit.MaxLimit {
			writeOps(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit: want 1 to %d", audit.MaxLimit)})
			return
		}
		f.Limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	entries, more, err := audit.Read(ctx, e.bus, f, func(en audit.Entry) bool {
		if en.Agent == "" {
			return pol.Allows(caller, policy.Audit, "*")
		}
		return pol.Allows(caller, policy.Audit, en.Agent)
	})
	if err != nil {
		e.log.Warn("ops: reading the audit log", "err", err)
		w.Header().Set("Retry-After", "1")
		writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "the audit log cannot be read now; retry"})
		return
	}
	if entries == nil {
		entries = []audit.Entry{}
	}
	writeOpsDoc(w, r, auditDoc{Entries: entries, More: more})
}

// opsCall is the service call of an operator API request: its caller, on
// the mesh endpoint (a task is found whichever agent has it), in 1.0.
func opsCall(ctx context.Context, r *http.Request) context.Context {
	caller := callerFrom(r.Context())
	return service.WithCall(ctx, &service.Call{Principal: caller.Principal, Grants: caller.Grants, Binding: "ops", From: r.RemoteAddr, Version: a2a.V10})
}

// writeOps writes an operator API answer: JSON, never cached.
func writeOps(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, v)
}

// gzipMin is the size from which writeOpsDoc compresses an answer.
const gzipMin = 4 << 10

// writeOpsDoc writes a 200 answer of the operator API as writeOps does,
// gzipped when the client accepts it and it is large: a fleet of a
// hundred agents is about 160 KB of JSON with their cards, polled every
// few seconds, and its cards repeat one shape.
func writeOpsDoc(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeOps(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	h.Add("Vary", "Accept-Encoding")
	if len(body) < gzipMin || !acceptsGzip(r) {
		_, _ = w.Write(append(body, '\n'))
		return
	}
	h.Set("Content-Encoding", "gzip")
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
	_, _ = zw.Write(append(body, '\n'))
	_ = zw.Close()
}

// acceptsGzip reports whether r's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
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

func (opsRefusals) unavailable(w http.ResponseWriter, msg string) {
	writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": msg})
}
