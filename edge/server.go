package edge

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// NewServer returns the http.Server an edge runs behind: header and body
// reads are bounded against slow clients; writes are not, since streams
// stay open for as long as their tasks run.
//
// It answers a request whose method its path does not take (GET on a
// JSON-RPC endpoint, POST on a card) itself, with 405: see methodGuard.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           methodGuard{h},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Gate is the handler an edge process serves from the moment it listens,
// before it can build its Edge (which needs the bus open, so NATS
// reachable): until Open, /healthz answers 503 saying it waits for NATS,
// JSON-RPC calls get -32000 (retry), HTTP+JSON calls 503 UNAVAILABLE in
// their google.rpc.Status shape (rest.go), /livez 200, everything else 503.
// After Open it is the edge.
type Gate struct {
	e atomic.Pointer[Edge]
}

// NewGate returns a gate that is not open yet.
func NewGate() *Gate { return &Gate{} }

// Open makes the gate serve e from now on.
func (g *Gate) Open(e *Edge) { g.e.Store(e) }

// errEdgeStarting answers calls while the edge waits for NATS.
var errEdgeStarting = a2a.ErrServerBusy.With("this edge is starting: waiting for NATS; retry shortly")

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e := g.e.Load(); e != nil {
		e.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/livez" {
		serveLive(w, r)
		return
	}
	if _, ok := parseRESTPath(r.URL.EscapedPath()); ok {
		restStarting(w, r) // an HTTP+JSON call: 503 in its shape
		return
	}
	if r.Method != http.MethodPost {
		writeStarting(w, []string{"NATS"})
		return
	}
	// A JSON-RPC call: answer with its id, in its version's shape, as an
	// SSE event for a streaming method (where clients read errors).
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req, rerr := a2a.ParseRequest(body)
	if rerr != nil || req == nil {
		writeJSON(w, http.StatusOK, a2a.NewError(nil, errEdgeStarting))
		return
	}
	op, mv, ok := a2a.LookupMethod(req.Method)
	if !ok {
		writeJSON(w, http.StatusOK, a2a.NewError(req.ID, errEdgeStarting))
		return
	}
	c := &call{w: w, r: r, req: req, op: op, version: mv}
	if v, verr := a2a.NegotiateVersion(mv, r.Header.Get("A2A-Version")); verr == nil {
		c.version = v
	}
	if op.Streaming() {
		_ = newSSE(w).event(0, c.errorResponse(errEdgeStarting))
		return
	}
	writeJSON(w, http.StatusOK, c.errorResponse(errEdgeStarting))
}

// methodGuard answers 405 Method Not Allowed, with an Allow header and a
// JSON body saying what the path takes, to a request whose method the
// path does not take; everything else goes to the handler. Without it such
// a request gets the edge's catch-all 404, which reads as "no such agent".
//
//   - JSON-RPC endpoints (/, /a2a, /agents/{name}, each also with a
//     trailing slash) take POST; any other method gets a JSON-RPC error
//     object (id null, -32600) naming POST. When the edge has CORS
//     origins, its CORS policy answers a preflight from an allowed origin
//     (204), a plain OPTIONS gets 204 with Allow, and a preflight from
//     another origin 405; without CORS, OPTIONS is 405 like GET.
//   - Resources (cards, /agents, /healthz, /livez, /metrics, the JWKS)
//     take GET and HEAD; any other method gets {"error": ...}.
//
// The HTTP+JSON routes (/message:send, /tasks/..., under the root, a
// tenant or an agent) are neither: they pass, and the binding answers a
// wrong method itself, 405 in its own error shape (rest.go).
type methodGuard struct{ h http.Handler }

func (g methodGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, agent := classifyPath(r.URL.EscapedPath())
	switch kind {
	case pathRPC:
		if r.Method == http.MethodPost {
			break
		}
		e := g.edge()
		cors := e != nil && len(e.cfg.CORSOrigins) > 0
		if e != nil && e.cors(w, r) {
			return // a preflight, answered by the CORS policy
		}
		if r.Method == http.MethodOptions && cors && r.Header.Get("Access-Control-Request-Method") == "" {
			w.Header().Set("Allow", "OPTIONS, POST") // a plain OPTIONS: what the endpoint takes
			w.WriteHeader(http.StatusNoContent)
			return
		}
		allow := "POST"
		if cors {
			allow = "OPTIONS, POST"
		}
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, a2a.NewError(nil, rpcWrongMethod(r.Method, agent)))
		return
	case pathResource:
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			break
		}
		if e := g.edge(); e != nil && e.cors(w, r) {
			return
		}
		w.Header().Set("Allow", "GET, HEAD")
		msg := "method " + r.Method + " is not allowed here: GET this resource"
		if agentsList(r.URL.EscapedPath()) {
			msg += "; to call an agent, POST JSON-RPC to /agents/<name>"
		}
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": msg})
		return
	}
	g.h.ServeHTTP(w, r)
}

// edge is the edge behind the guard, if known yet (nil for a gate that is
// not open, or another handler).
func (g methodGuard) edge() *Edge {
	switch h := g.h.(type) {
	case *Edge:
		return h
	case *Gate:
		return h.e.Load()
	}
	return nil
}

// rpcWrongMethod is the error a JSON-RPC endpoint answers a method other
// than POST with; agent is the agent the path names ("" for the mesh).
func rpcWrongMethod(method, agent string) *a2a.Error {
	card := "/.well-known/agent-card.json"
	if agent != "" {
		card = "/agents/" + agent + card
	}
	return a2a.ErrInvalidRequest.With("HTTP method %s is not allowed: this is a JSON-RPC endpoint; "+
		"POST a JSON-RPC 2.0 request (Content-Type: application/json). The card is at GET %s",
		trunc(method, 16), card)
}

type pathKind int

const (
	pathOther pathKind = iota
	pathRPC
	pathResource
)

// classifyPath tells a JSON-RPC endpoint from a GET resource, as the
// edge's routes (edge.go) lay them out; agent is the {name} of
// /agents/{name}. It works on the escaped path, split on "/" as the
// router splits it.
func classifyPath(p string) (kind pathKind, agent string) {
	switch p {
	case "/", "/a2a", "/a2a/":
		return pathRPC, ""
	case "/agents", "/agents/", "/healthz", "/livez", "/metrics",
		"/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/jwks.json":
		return pathResource, ""
	}
	rest, ok := strings.CutPrefix(p, "/agents/")
	if !ok {
		return pathOther, ""
	}
	name, tail, _ := strings.Cut(rest, "/")
	if name == "" {
		return pathOther, ""
	}
	switch tail {
	case "":
		if !bus.ValidToken(name) {
			return pathRPC, "<name>"
		}
		return pathRPC, name
	case ".well-known/agent-card.json", ".well-known/agent.json":
		return pathResource, name
	}
	return pathOther, ""
}

func agentsList(p string) bool { return p == "/agents" || p == "/agents/" }
