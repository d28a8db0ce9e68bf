package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/registry"
)

// The rate-limit benchmark: how many calls of one principal N edges let
// through together, with each edge limiting on its own (Limits.PerEdge)
// and with the edges sharing what they admit (the default).

// Limits of the rate-limit benchmark.
const (
	// MaxRateLimitEdges bounds RateLimitOptions.Edges.
	MaxRateLimitEdges = 16
	// MaxRateLimitDrive bounds RateLimitOptions.Drive (calls per second).
	MaxRateLimitDrive = 5000
	// maxRateLimitSenders bounds the calls in flight at once.
	maxRateLimitSenders = 64
	// rateLimitSettle is how long the edges run before the load starts:
	// their bus subscriptions are in place by then.
	rateLimitSettle = 500 * time.Millisecond
)

// RateLimitOptions configures one rate-limit run.
type RateLimitOptions struct {
	// Edges is how many edges share the NATS server (1 to
	// MaxRateLimitEdges).
	Edges int
	// Limits is every edge's rate limit (Rate > 0).
	Limits edge.Limits
	// Drive is the calls per second sent, round robin across the edges
	// (default the larger of 10×Rate and 2×Rate×Edges, so that every edge
	// alone is driven past the rate; at most MaxRateLimitDrive).
	Drive float64
	// Duration is how long the calls are sent (default 10s, at most
	// MaxDuration).
	Duration time.Duration
	// TempDir is where the NATS server's files go (removed afterwards;
	// default os.TempDir()).
	TempDir string
	Logger  *slog.Logger
}

// RateLimitResult is what one run measured.
type RateLimitResult struct {
	Edges    int
	PerEdge  bool
	Rate     float64
	Burst    int
	Drive    float64       // calls per second asked for
	Elapsed  time.Duration // from the first call sent to the last answered
	Sent     int
	Admitted int   // answered other than 429
	Refused  int   // answered 429
	Errors   int   // not answered
	ByEdge   []int // admitted, per edge
}

// AdmittedPerSec is the calls admitted per second.
func (r RateLimitResult) AdmittedPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Admitted) / r.Elapsed.Seconds()
}

// Overshoot is how far the admitted calls per second are above Rate
// (0.1: 10 % above).
func (r RateLimitResult) Overshoot() float64 { return r.AdmittedPerSec()/r.Rate - 1 }

// Budget is what one token bucket admits over the run: Rate×Elapsed +
// Burst.
func (r RateLimitResult) Budget() float64 { return r.Rate*r.Elapsed.Seconds() + float64(r.Burst) }

// OverBudget is how far the admitted calls are above Budget.
func (r RateLimitResult) OverBudget() float64 { return float64(r.Admitted)/r.Budget() - 1 }

// RateLimit starts an embedded NATS server on loopback and o.Edges edges
// in this process, each with its own NATS connection over TCP, its rate
// limit (sharing it unless o.Limits.PerEdge) and its HTTP server on
// loopback; then it sends one principal's calls (JSON-RPC GetTask of a
// task that does not exist, from this host's loopback address, without
// auth) round robin across the edges at o.Drive calls per second for
// o.Duration, and counts what they admit. Everything is stopped when it
// returns.
func RateLimit(ctx context.Context, o RateLimitOptions) (RateLimitResult, error) {
	if o.Edges < 1 || o.Edges > MaxRateLimitEdges {
		return RateLimitResult{}, fmt.Errorf("bench: %d edges: want 1 to %d", o.Edges, MaxRateLimitEdges)
	}
	if !(o.Limits.Rate > 0) {
		return RateLimitResult{}, errors.New("bench: a rate limit is needed")
	}
	if o.Drive <= 0 {
		o.Drive = min(MaxRateLimitDrive, max(10*o.Limits.Rate, 2*o.Limits.Rate*float64(o.Edges)))
	}
	if o.Drive > MaxRateLimitDrive {
		return RateLimitResult{}, fmt.Errorf("bench: drive %v calls/s: at most %d", o.Drive, MaxRateLimitDrive)
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration > MaxDuration {
		return RateLimitResult{}, fmt.Errorf("bench: duration %v: at most %v", o.Duration, MaxDuration)
	}
	if o.Limits.Burst <= 0 {
		o.Limits.Burst = max(1, int(2*o.Limits.Rate+0.999999))
	}
	log := quietLogger(o.Logger)
	dir, err := os.MkdirTemp(o.TempDir, "a2amesh-bench-ratelimit-*")
	if err != nil {
		return RateLimitResult{}, err
	}
	defer os.RemoveAll(dir)
	srv, err := startNATS(dir)
	if err != nil {
		return RateLimitResult{}, err
	}
	defer srv.Shutdown()
	var edges []*limitedEdge
	defer func() {
		for _, e := range edges {
			e.close()
		}
	}()
	for range o.Edges {
		e, err := startLimitedEdge(ctx, srv.ClientURL(), o.Limits, log)
		if err != nil {
			return RateLimitResult{}, err
		}
		edges = append(edges, e)
	}
	sleepCtx(ctx, rateLimitSettle)
	res := RateLimitResult{Edges: o.Edges, PerEdge: o.Limits.PerEdge, Rate: o.Limits.Rate, Burst: o.Limits.Burst,
		Drive: o.Drive, ByEdge: make([]int, o.Edges)}
	drive(ctx, edges, o, &res)
	return res, ctx.Err()
}

// drive sends the calls: each of a few senders takes the next slot (call
// i is due at start + i/Drive) and sends it to edge i mod N.
func drive(ctx context.Context, edges []*limitedEdge, o RateLimitOptions, res *RateLimitResult) {
	senders := min(maxRateLimitSenders, max(4, int(o.Drive/50)))
	tr := &http.Transport{MaxIdleConnsPerHost: senders, MaxConnsPerHost: senders, IdleConnTimeout: 30 * time.Second}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"bench-ratelimit-no-such-task"}}`)
	total := int64(o.Drive * o.Duration.Seconds())
	var (
		next                       atomic.Int64
		sent, admitted, refused, e atomic.Int64
		mu                         sync.Mutex
		last                       time.Time
		wg                         sync.WaitGroup
	)
	byEdge := make([]atomic.Int64, len(edges))
	start := time.Now()
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				if d := time.Until(start.Add(time.Duration(float64(i) / o.Drive * float64(time.Second)))); d > 0 {
					sleepCtx(ctx, d)
				}
				k := int(i % int64(len(edges)))
				sent.Add(1)
				code, err := postStatus(ctx, hc, edges[k].url, body)
				switch {
				case err != nil:
					e.Add(1)
				case code == http.StatusTooManyRequests:
					refused.Add(1)
				default:
					admitted.Add(1)
					byEdge[k].Add(1)
				}
				mu.Lock()
				last = time.Now()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = last.Sub(start)
	res.Sent, res.Admitted, res.Refused, res.Errors = int(sent.Load()), int(admitted.Load()), int(refused.Load()), int(e.Load())
	for k := range byEdge {
		res.ByEdge[k] = int(byEdge[k].Load())
	}
}

// postStatus posts body to url and returns the answer's status code.
func postStatus(ctx context.Context, hc *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReplyBytes))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// limitedEdge is an edge with a rate limit, served in this process on a
// loopback port with its own NATS connection, sharing its limit as the
// edge role does (Edge.RunLimits).
type limitedEdge struct {
	url    string
	nc     *nats.Conn
	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startLimitedEdge(ctx context.Context, natsURL string, lim edge.Limits, log *slog.Logger) (*limitedEdge, error) {
	b, nc, err := openBus(ctx, natsURL, "a2amesh-bench-ratelimit-edge", bus.Config{}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: edge listen: %w", err)
	}
	e := edge.New(edge.Config{Store: b, Registry: registry.NewTable(b.Bus()), Limits: lim, Logger: log})
	rctx, cancel := context.WithCancel(context.Background())
	n := &limitedEdge{url: "http://" + ln.Addr().String() + "/a2a", nc: nc, srv: edge.NewServer(e, log), cancel: cancel}
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		_ = e.RunLimits(rctx)
	}()
	go func() {
		defer n.wg.Done()
		if err := n.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("bench: edge stopped", "err", err)
		}
	}()
	return n, nil
}

func (n *limitedEdge) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := n.srv.Shutdown(ctx); err != nil {
		_ = n.srv.Close()
	}
	cancel()
	n.cancel()
	n.wg.Wait()
	n.nc.Close()
}

// RateLimits runs RateLimit with o at each edge count of counts, with
// each edge limiting on its own and with the edges sharing, as perEdge
// lists (true: on its own), and writes a row to w as soon as it is
// measured.
func RateLimits(ctx context.Context, w io.Writer, o RateLimitOptions, counts []int, perEdge []bool) error {
	fmt.Fprintf(w, "bench ratelimit: one principal, rate %v/s, burst %d, calls round robin across the edges for %v; fleet edges report every %v\n",
		o.Limits.Rate, o.Limits.Burst, o.Duration, o.Limits.ShareEvery)
	const row = "%5v  %5v  %7v  %6v  %8v  %6v  %6v  %10v  %8v  %12v  %8v  %v\n"
	fmt.Fprintf(w, row, "edges", "scope", "drive/s", "sent", "admitted", "429", "errors", "admitted/s", "vs rate", "rate×T+burst", "vs that", "admitted by edge")
	for _, n := range counts {
		for _, pe := range perEdge {
			ro := o
			ro.Edges, ro.Limits.PerEdge = n, pe
			r, err := RateLimit(ctx, ro)
			if err != nil {
				return err
			}
			scope := "fleet"
			if r.PerEdge {
				scope = "edge"
			}
			fmt.Fprintf(w, row, r.Edges, scope, fmt.Sprintf("%.0f", r.Drive), r.Sent, r.Admitted, r.Refused, r.Errors,
				fmt.Sprintf("%.1f", r.AdmittedPerSec()), fmt.Sprintf("%+.1f%%", 100*r.Overshoot()),
				fmt.Sprintf("%.0f", r.Budget()), fmt.Sprintf("%+.1f%%", 100*r.OverBudget()), r.ByEdge)
		}
	}
	return nil
}
