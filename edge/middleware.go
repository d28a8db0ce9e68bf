package edge

import (
	"context"
	"errors"
	"net/http"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/tokens"
)

// The HTTP middleware every A2A transport of the edge runs its calls
// through, outermost first: request metrics (countRequests), authentication
// (authenticate), the per-principal rate limit (rateLimit) and the body
// limit (limitBody), then the server span (traceCalls, tracing.go). What a
// refusal looks like is the transport's: it supplies a refusals. The
// transport starts the server span (startServerSpan) once it has read the
// call's method and trace context out of its request; traceCalls ends it.

// refusals answers, in a transport's shape, the requests the middleware
// turns away before the transport reads them.
type refusals interface {
	// unauthenticated answers a request without valid credentials (HTTP
	// 401; the WWW-Authenticate challenges are set already).
	unauthenticated(w http.ResponseWriter, msg string)
	// rateLimited answers a request over its principal's rate (HTTP 429;
	// Retry-After is set already).
	rateLimited(w http.ResponseWriter, msg string)
	// tooLarge answers a request whose body exceeds limit bytes (HTTP 413).
	tooLarge(w http.ResponseWriter, limit int64)
	// unavailable answers a request the edge cannot decide now (its
	// token issuer is down): HTTP 503 (Retry-After is set already).
	unavailable(w http.ResponseWriter, msg string)
	// binding names the transport in metrics: bindingJSONRPC, bindingREST.
	binding() string
}

// The bindings as metrics label them.
const (
	bindingJSONRPC = "jsonrpc"
	bindingREST    = "rest"
	bindingGRPC    = "grpc"
)

// rpcRefusals are the JSON-RPC transport's refusals: a JSON-RPC error with
// id null.
type rpcRefusals struct{}

func (rpcRefusals) unauthenticated(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusUnauthorized, a2a.NewError(nil, &a2a.Error{Code: codeUnauthenticated, Message: msg}))
}

func (rpcRefusals) rateLimited(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusTooManyRequests, a2a.NewError(nil, &a2a.Error{Code: codeRateLimited, Message: msg}))
}

func (rpcRefusals) binding() string { return bindingJSONRPC }

func (rpcRefusals) unavailable(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusServiceUnavailable, a2a.NewError(nil, a2a.ErrServerBusy.With("%s", msg)))
}

func (rpcRefusals) tooLarge(w http.ResponseWriter, limit int64) {
	writeJSON(w, http.StatusRequestEntityTooLarge, a2a.NewError(nil,
		a2a.ErrInvalidRequest.With("request body exceeds %d bytes", limit)))
}

// guard wraps a transport's handler in the edge's middleware.
func (e *Edge) guard(ref refusals, h http.Handler) http.Handler {
	return e.countRequests(ref, e.authenticate(ref, e.rateLimit(ref, limitBody(e.cfg.MaxBodyBytes, ref, traceCalls(h)))))
}

// countRequests records each request in a2amesh_edge_requests_total once
// it is answered, with the method and code the transport noted on its
// writer (noteMethod, noteCode; metrics.go).
func (e *Edge) countRequests(ref refusals, h http.Handler) http.Handler {
	if e.cfg.Metrics == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, counted := e.countRequest(w, ref.binding())
		defer counted()
		h.ServeHTTP(w, r)
	})
}

// callerKey is the context key of the authenticated caller.
type callerKey struct{}

// withCaller returns ctx carrying c.
func withCaller(ctx context.Context, c policy.Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom is the caller authenticate found for the request (the zero
// Caller when the edge has no auth).
func callerFrom(ctx context.Context) policy.Caller {
	c, _ := ctx.Value(callerKey{}).(policy.Caller)
	return c
}

// principalFrom is the principal authenticate found for the request ("" when
// the edge has no auth).
func principalFrom(ctx context.Context) string { return callerFrom(ctx).Principal }

// authenticate answers a request without valid credentials with 401 and a
// challenge for each accepted scheme, before its body is read; it passes
// on the others with their principal in the context (principalFrom).
func (e *Edge) authenticate(ref refusals, h http.Handler) http.Handler {
	if !e.id.on() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := e.id.identify(r.Context(), r.Header.Get(APIKeyHeader), r.Header.Get("Authorization"), r.TLS)
		switch {
		case errors.Is(err, tokens.ErrUnavailable):
			e.log.Warn("auth: the token issuer cannot be reached", "err", err)
			w.Header().Set("Retry-After", "5")
			ref.unavailable(w, "the token issuer cannot be reached to verify the bearer token; retry shortly")
			return
		case err != nil:
			reason := "no valid credential"
			var bad *badToken
			if errors.As(err, &bad) {
				reason = "bearer token: " + bad.reason
			}
			e.auditRefusal(ref.binding(), r.RemoteAddr, r.Method+" "+trunc(r.URL.Path, 128), reason)
			unauthorized(w, ref, e.id, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	})
}

// rateLimit takes one of the principal's tokens for each request (limit.go),
// answering 429 when there is none.
func (e *Edge) rateLimit(ref refusals, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.allow(w, r, principalFrom(r.Context()), ref) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// limitBody answers 413 for a request whose declared length exceeds max,
// and bounds what the transport can read of the others: a read past max
// fails with an error bodyTooLarge recognises.
func limitBody(max int64, ref refusals, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			ref.tooLarge(w, max)
			return
		}
		r = r.WithContext(r.Context()) // a copy: handlers do not modify their request
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// bodyTooLarge reports whether err, from reading a request body limitBody
// bounds, is its limit; then it has answered the request (413).
func bodyTooLarge(w http.ResponseWriter, err error, ref refusals) bool {
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		return false
	}
	ref.tooLarge(w, mbe.Limit)
	return true
}

// auditRefusal records a call refused for its credentials in the audit
// log (no secret, no token: only why).
func (e *Edge) auditRefusal(binding, from, what, reason string) {
	e.cfg.Audit.Record(audit.Entry{From: from, Binding: binding, Method: what, Outcome: audit.Unauthenticated + ": " + reason})
}
