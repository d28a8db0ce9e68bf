package edge

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Rate limits that hold across the edges of a fleet.
//
// Each edge keeps its own token buckets and decides every call alone, from
// memory: no call waits for the bus. Every ShareEvery (100 ms) an edge
// publishes on SubjectRateLimitUsage how many calls it admitted per
// principal since its last report, and every edge takes what the others
// report out of its own bucket for that principal. Each edge's bucket
// then counts the calls of the whole fleet, refilled at Rate once: the
// fleet converges on one budget per principal. A bucket may go below
// zero when the news of calls other edges admitted arrives after this
// edge spent its own tokens (a debt, paid back by the refill), so that
// what the fleet let through early (every edge's first burst at once) is
// taken back later.
//
// The bound, over any window of T seconds, for one principal calling N
// edges: at most Rate·T + Burst + U calls, where U is what the other
// edges admitted during the last ShareEvery + d of the window that the
// edge deciding last had not heard of yet (d: the bus's delivery delay,
// well under a millisecond on a LAN). Each edge refills at Rate, so U ≤
// (N−1)·Rate·(ShareEvery+d) while the principal calls steadily (the
// buckets are then near empty), and U ≤ (N−1)·(Burst + Rate·(ShareEvery+d))
// when it turns from idle to a flood of every edge at once, each edge
// starting from a full bucket. The debt a bucket may carry is bounded
// (maxDebtFactor): past it, what the other edges admitted is forgotten
// and U grows by as much.
//
// An edge that hears nothing (NATS down, a single edge, sharing off) is
// limited by its own bucket alone, as before: Rate per edge.

const (
	// defaultShareEvery is how often an edge reports its spending unless
	// Limits.ShareEvery says otherwise.
	defaultShareEvery = 100 * time.Millisecond
	// maxDebtFactor bounds the debt a bucket carries: it goes no lower
	// than -maxDebtFactor×max(Burst, Rate) tokens, so a principal is
	// never refused for more than about 16×max(Burst, Rate)/Rate seconds
	// on the word of other edges (a misbehaving peer cannot lock one out
	// for longer), and a fleet of up to 17 edges pays back every first
	// burst.
	maxDebtFactor = 16
	// usageVersion is the first byte of a usage report.
	usageVersion = 1
	// maxUsageMsgBytes bounds one report; a flush with more is split.
	maxUsageMsgBytes = 16 << 10
	// maxUsageFlushBytes bounds what one flush publishes; spending past
	// it waits for the next flush.
	maxUsageFlushBytes = 256 << 10
	// maxUsageKeyBytes bounds a principal's key in a report; a longer key
	// is limited on each edge alone.
	maxUsageKeyBytes = 512
	// usageHeader is the version byte and the reporting edge's id.
	usageHeader = 1 + 8
)

// usage is one principal's spending in a report: n calls admitted.
type usage struct {
	key string
	n   uint32
}

// errBadUsage is a report that does not decode.
var errBadUsage = errors.New("edge: bad rate-limit usage report")

// spent notes one call admitted for key, to report it. l.mu is held.
// Past MaxPrincipals principals waiting to be reported, a new one's calls
// are not reported (it is limited on this edge alone until the flush).
// SubjectRateLimitUsage is the core-NATS subject on which the edges tell
// each other what they admitted per principal, so that a rate limit holds
// for the whole fleet. Nothing is stored: a message reaches the edges
// listening at that moment, at most once.
const SubjectRateLimitUsage = "a2a.ratelimit.usage"

func (l *limiter) spent(key string) {
	if l.unshared == nil || !l.sharing.Load() || len(key) > maxUsageKeyBytes {
		return
	}
	n, ok := l.unshared[key]
	if !ok && len(l.unshared) >= l.max {
		return
	}
	if n < math.MaxUint32 {
		l.unshared[key] = n + 1
	}
}

// drain takes the spending not reported yet, up to maxUsageFlushBytes,
// out of the table and encodes it as reports of at most maxUsageMsgBytes.
func (l *limiter) drain() [][]byte {
	l.mu.Lock()
	var (
		batch []usage
		size  int
	)
	for k, n := range l.unshared {
		sz := usageEntrySize(k, n)
		if size+sz > maxUsageFlushBytes {
			break // the rest goes with the next flush
		}
		size += sz
		batch = append(batch, usage{k, n})
		delete(l.unshared, k)
	}
	l.mu.Unlock()
	return encodeUsage(l.id, batch)
}

// hear takes the spending another edge reported out of this edge's
// buckets. This edge's own reports change nothing, nor does a report that
// does not decode (errBadUsage).
func (l *limiter) hear(data []byte) error {
	id, batch, err := decodeUsage(data)
	if err != nil {
		l.badReports.Add(1)
		return err
	}
	if id == l.id {
		return nil
	}
	l.heardReports.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, u := range batch {
		l.debit(u.key, float64(u.n), now)
	}
	return nil
}

// debit takes n tokens out of key's bucket, down to the floor, making the
// bucket when there is none (a missing bucket is a full one). l.mu is
// held.
func (l *limiter) debit(key string, n float64, now time.Time) {
	b := l.bucketAt(key, now)
	b.tokens = math.Max(l.floor, b.tokens-n)
}

// bucketAt returns key's bucket refilled up to now, making a full one
// (and room for it) when key has none. The caller holds l's lock.
func (l *limiter) bucketAt(key string, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.max {
			l.makeRoom(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
		return b
	}
	b.tokens = l.level(b, now)
	b.last = now
	return b
}

// usageEntrySize is the encoded size of one entry.
func usageEntrySize(key string, n uint32) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], uint64(len(key))) + len(key) + binary.PutUvarint(buf[:], uint64(n))
}

// encodeUsage encodes batch as reports of at most maxUsageMsgBytes each:
// the version byte, the edge's id, then per principal the key's length
// (uvarint), the key and the calls admitted (uvarint).
func encodeUsage(id [8]byte, batch []usage) [][]byte {
	var (
		out [][]byte
		msg []byte
	)
	for _, u := range batch {
		if msg != nil && len(msg)+usageEntrySize(u.key, u.n) > maxUsageMsgBytes {
			out = append(out, msg)
			msg = nil
		}
		if msg == nil {
			msg = make([]byte, 0, min(maxUsageMsgBytes, 512))
			msg = append(msg, usageVersion)
			msg = append(msg, id[:]...)
		}
		msg = binary.AppendUvarint(msg, uint64(len(u.key)))
		msg = append(msg, u.key...)
		msg = binary.AppendUvarint(msg, uint64(u.n))
	}
	if msg != nil {
		out = append(out, msg)
	}
	return out
}

// decodeUsage decodes a report whole, or fails: a report of another
// version, truncated, longer than 4×maxUsageMsgBytes, or with an empty or
// over-long key or a count of 0 or past 32 bits is refused entirely.
func decodeUsage(data []byte) (id [8]byte, batch []usage, err error) {
	if len(data) < usageHeader || data[0] != usageVersion || len(data) > 4*maxUsageMsgBytes {
		return id, nil, errBadUsage
	}
	copy(id[:], data[1:usageHeader])
	p := data[usageHeader:]
	for len(p) > 0 {
		kl, w := binary.Uvarint(p)
		if w <= 0 || kl == 0 || kl > maxUsageKeyBytes || uint64(len(p)-w) < kl {
			return id, nil, errBadUsage
		}
		key := string(p[w : w+int(kl)])
		p = p[w+int(kl):]
		n, w := binary.Uvarint(p)
		if w <= 0 || n == 0 || n > math.MaxUint32 {
			return id, nil, errBadUsage
		}
		p = p[w:]
		batch = append(batch, usage{key, uint32(n)})
	}
	return id, batch, nil
}

// RunLimits shares this edge's rate-limit spending with the fleet's other
// edges over the bus, and takes theirs into account, until ctx ends
// (limit_fleet.go); its host runs it beside the HTTP server. Without it
// (and with Limits.PerEdge, or no rate limit, where it returns at once)
// the edge limits on its own. It never holds up a call: while the bus
// does not answer, spending is not reported and the edge limits on its
// own until it hears from the others again.
func (e *Edge) RunLimits(ctx context.Context) error {
	l := e.limiter
	if l == nil || l.every <= 0 || e.bus == nil {
		return nil
	}
	return l.share(ctx, e.bus.Gossip(SubjectRateLimitUsage), e.log)
}

// share runs the reports: it hears the other edges' from the bus, and
// publishes this edge's every l.every, until ctx ends.
func (l *limiter) share(ctx context.Context, g *bus.Gossip, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	hear := func(data []byte) {
		if l.hear(data) != nil && l.badReports.Load() == 1 {
			log.Warn("ignoring a rate-limit usage report that does not decode (another a2amesh version on the bus?); further ones are ignored silently",
				"subject", SubjectRateLimitUsage, "bytes", len(data))
		}
	}
	l.sharing.Store(true)
	defer func() {
		l.sharing.Store(false)
		l.mu.Lock()
		clear(l.unshared)
		l.mu.Unlock()
	}()
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	var sub *bus.Subscription
	defer func() { sub.Stop() }()
	warned := false
	for {
		if sub == nil {
			s, err := g.Listen(hear)
			switch {
			case err == nil:
				sub = s
			case !warned:
				warned = true
				log.Warn("rate limits: not hearing the other edges, limiting on this edge alone", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for _, msg := range l.drain() {
			if g.Publish(msg) != nil {
				break // not connected: this spending is not reported
			}
		}
	}
}
