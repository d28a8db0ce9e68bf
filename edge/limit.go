package edge

import (
	"crypto/rand"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// Limits bounds what each principal may ask of the edge: a token bucket
// per principal refills at Rate calls per second up to Burst. A JSON-RPC
// call takes one token when it arrives, after authentication and before
// its body is read; a stream (SendStreamingMessage, SubscribeToTask) is one
// call when opened, however long it then runs. Cards, /agents and /healthz
// are not limited.
//
// The principal is the authenticated one; without auth it is the client's
// IP address as the connection shows it (X-Forwarded-For is not trusted: a
// client could name any address in it). Behind a proxy or load balancer
// without auth, every client is then the proxy's one address: enable auth,
// or limit at the proxy.
//
// The edges of a fleet share one budget per principal (limit_fleet.go):
// each edge takes tokens from its own buckets, with no bus round trip on
// a call, and every ShareEvery tells the others over the bus how many
// calls it admitted per principal; each edge takes what the others
// admitted out of its own bucket for that principal. Across N edges a
// principal gets about Rate calls per second, not N×Rate; how far above
// it can go is bounded in docs/configuration.md (--rate-limit). An edge
// that hears nothing from the others (NATS down, a single edge) limits on
// its own; it never waits for the bus. Edge.RunLimits runs the sharing.
type Limits struct {
	// Rate is the sustained calls per second allowed per principal; 0 (the
	// default) turns limiting off.
	Rate float64
	// Burst is how many calls a principal may make at once after being
	// idle (default: 2×Rate, at least 1).
	Burst int
	// MaxPrincipals bounds how many principals' buckets are kept (default
	// 10 000): an idle principal's bucket refills to full and is then
	// dropped (a full bucket and no bucket are the same), and past the
	// bound the least recently seen of a small sample is dropped, which can
	// only hand that principal a fresh burst early.
	MaxPrincipals int
	// PerEdge limits on this edge alone, sharing nothing with the other
	// edges: N edges then let a principal through at up to N×Rate.
	PerEdge bool
	// ShareEvery is how often the edge tells the other edges what it
	// admitted (default 100ms): the lag of the fleet's shared budget.
	ShareEvery time.Duration
}

// codeRateLimited is the JSON-RPC error code of a 429 answer: an
// implementation-defined server error (-32000..-32099), distinct from
// -32000 (busy, unauthenticated) so a client can tell "slow down" apart.
const codeRateLimited = a2a.CodeRateLimited

const (
	defaultMaxPrincipals = 10_000
	// evictSample is how many buckets are looked at to pick one to drop
	// when the table is full of active principals.
	evictSample = 8
	// sweepEvery spaces the scans that drop full (idle) buckets.
	sweepEvery = time.Minute
)

// limiter is a set of token buckets keyed by principal.
type limiter struct {
	rate  float64 // tokens per second
	burst float64
	max   int
	now   func() time.Time
	// floor is the lowest a bucket goes when other edges' spending is
	// taken out of it (a debt; 0 without sharing): see maxDebtFactor.
	floor float64
	// every is how often spending is shared (0: not shared).
	every time.Duration
	// id tells this limiter's gossip apart from the other edges'.
	id [8]byte

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
	// unshared counts the calls admitted per principal since they were
	// last told to the other edges (nil: not shared), while sharing runs
	// (Edge.RunLimits).
	unshared map[string]uint32
	sharing  atomic.Bool
	// heardReports and badReports count the other edges' usage reports
	// taken into account, and the reports ignored as undecodable.
	heardReports, badReports atomic.Int64
}

type bucket struct {
	tokens float64   // tokens at last
	last   time.Time // when tokens was computed
}

// newLimiter returns nil (no limiting) for a zero or negative rate.
func newLimiter(l Limits, now func() time.Time) *limiter {
	if !(l.Rate > 0) || math.IsInf(l.Rate, 0) {
		return nil
	}
	burst := l.Burst
	if burst <= 0 {
		burst = max(1, int(math.Ceil(2*l.Rate)))
	}
	maxP := l.MaxPrincipals
	if maxP <= 0 {
		maxP = defaultMaxPrincipals
	}
	if now == nil {
		now = time.Now
	}
	lim := &limiter{rate: l.Rate, burst: float64(burst), max: maxP, now: now,
		buckets: map[string]*bucket{}, lastSweep: now()}
	if !l.PerEdge {
		lim.every = l.ShareEvery
		if lim.every <= 0 {
			lim.every = defaultShareEvery
		}
		lim.floor = -maxDebtFactor * math.Max(lim.burst, lim.rate)
		lim.unshared = map[string]uint32{}
		_, _ = rand.Read(lim.id[:])
	}
	return lim
}

// take takes one token from key's bucket. When none is left it takes
// nothing and says how long until one will be.
func (l *limiter) take(key string) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.lastSweep) >= sweepEvery {
		l.sweep(now)
	}
	b := l.bucketAt(key, now)
	if b.tokens >= 1 {
		b.tokens--
		l.spent(key)
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// level is b's token count at now.
func (l *limiter) level(b *bucket, now time.Time) float64 {
	el := now.Sub(b.last).Seconds()
	if el < 0 { // the clock stepped back: refill nothing
		el = 0
	}
	return math.Min(l.burst, b.tokens+el*l.rate)
}

// sweep drops every bucket that has refilled to full.
func (l *limiter) sweep(now time.Time) {
	l.lastSweep = now
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			delete(l.buckets, k)
		}
	}
}

// makeRoom frees at least one slot: full buckets first (at most one scan
// per second, so a flood of new principals does not scan every call), else
// the least recently seen of a few (map order is random in Go).
func (l *limiter) makeRoom(now time.Time) {
	if now.Sub(l.lastSweep) >= time.Second {
		l.sweep(now)
		if len(l.buckets) < l.max {
			return
		}
	}
	var (
		victim string
		oldest time.Time
		n      int
	)
	for k, b := range l.buckets {
		if n == 0 || b.last.Before(oldest) {
			victim, oldest = k, b.last
		}
		if n++; n >= evictSample {
			break
		}
	}
	delete(l.buckets, victim)
}

// size is the number of buckets held.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// limitKey is the bucket of a call: the principal, else the client IP.
func limitKey(r *http.Request, principal string) string {
	return limitKeyAddr(r.RemoteAddr, principal)
}

// limitKeyAddr is the bucket of a call from the peer at addr (host:port):
// the principal, else the peer's IP.
func limitKeyAddr(addr, principal string) string {
	if principal != "" {
		return "p:" + principal
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return "ip:" + host
}

// takeToken takes one token of the bucket key (limitKeyAddr) for a call
// of a transport that answers its refusal itself (gRPC): ok, or how long
// until a token will be there. Without a rate limit it is always ok.
func (e *Edge) takeToken(key string) (ok bool, wait time.Duration) {
	if e.limiter == nil {
		return true, 0
	}
	return e.limiter.take(key)
}

// allow reports whether principal may make another call now. When it may
// not, it has answered the request: HTTP 429 with Retry-After (whole
// seconds, at least 1) and the transport's error body (for JSON-RPC an
// error with id null), before the body is read.
func (e *Edge) allow(w http.ResponseWriter, r *http.Request, principal string, ref refusals) bool {
	lim := e.limiter
	if lim == nil {
		return true
	}
	ok, wait := lim.take(limitKey(r, principal))
	if ok {
		return true
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	ref.rateLimited(w, "Rate limit exceeded: retry after "+strconv.Itoa(secs)+"s")
	return false
}
