package edge

import (
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// NewServer returns the http.Server an edge runs behind: header and body
// reads are bounded against slow clients; writes are not, since streams
// stay open for as long as their tasks run.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Gate is the handler an edge process serves from the moment it listens,
// before it can build its Edge (which needs the bus open, so NATS
// reachable): until Open, /healthz answers 503 saying it waits for NATS,
// JSON-RPC calls get -32000 (retry), /livez 200, everything else 503.
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
		_ = newSSE(c).event(0, c.errorResponse(errEdgeStarting))
		return
	}
	writeJSON(w, http.StatusOK, c.errorResponse(errEdgeStarting))
}
