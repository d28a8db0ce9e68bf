// Package bench holds the benchmarks of `a2amesh bench`, what a user runs
// to measure a mesh as `nats bench` measures NATS: the comparison with
// the a2a-go SDK's server (compare.go; a deployment of the user's with
// --url, as bench streams), worker scaling (scale.go), the
// registry's joins and leaves (registry.go, registry_many.go), ListTasks
// (list.go), open streams (streams.go), the rate limit across edges
// (ratelimit.go) and memory per retained task (memory.go), with what each
// prints (report.go). The command parses the flags; everything else is
// here. The chaos harness, test tooling, is internal/chaos.
//
// At its core is a closed-loop load generator for A2A JSON-RPC
// message/send (or its 1.0 name, SendMessage), HTTP+JSON and gRPC, run in
// the bench's process or as a process of its own (loadgen.go).
//
// Each of Options.Concurrency workers sends one request, waits for the
// reply, checks that it is a completed task echoing the text, and sends the
// next, until Options.Duration has passed. All workers share one
// http.Client with enough idle connections per host to keep one connection
// per worker alive.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
)

// Methods the load generator can send.
const (
	// MethodSend03 is A2A 0.3's message/send with the 0.3 body
	// ({"kind":"text"} parts, role "user") and a task with state
	// "completed" expected back.
	MethodSend03 = "message/send"
	// MethodSend10 is A2A 1.0's SendMessage with the 1.0 body (role
	// "ROLE_USER", parts without kind) and {"task":{...}} with state
	// "TASK_STATE_COMPLETED" expected back.
	MethodSend10 = "SendMessage"
)

// Limits that bound every run whatever the options say.
const (
	// MaxConcurrency caps Options.Concurrency.
	MaxConcurrency = 4096
	// MaxDuration caps Options.Duration.
	MaxDuration = 10 * time.Minute
	// DefaultMaxRequests caps the requests one Run sends when
	// Options.MaxRequests is zero.
	DefaultMaxRequests = 50_000_000
	// DefaultRequestTimeout bounds one request when Options.RequestTimeout
	// is zero.
	DefaultRequestTimeout = 30 * time.Second
	// maxReplyBytes is the most of one reply the generator reads.
	maxReplyBytes = 4 << 20
	// maxErrorSamples is how many distinct error texts a Result keeps.
	maxErrorSamples = 8
)

// Options configures one load run.
type Options struct {
	// URL is the JSON-RPC endpoint, e.g. http://127.0.0.1:8080/agents/echo.
	URL string
	// Concurrency is the number of workers, each with one request in
	// flight at a time. Default 1, at most MaxConcurrency.
	Concurrency int
	// Duration is how long workers keep starting requests. Default 10s,
	// at most MaxDuration.
	Duration time.Duration
	// Warmup, if set, runs the same load for this long first and discards
	// its figures (connections get opened, caches and pools filled).
	Warmup time.Duration
	// Method is MethodSend03 ("message/send", the default) or MethodSend10
	// ("SendMessage"); it picks both the method name and the body shape.
	Method string
	// Text is the text part sent; default "hello".
	Text string
	// MaxRequests caps the requests sent (default DefaultMaxRequests).
	MaxRequests int64
	// RequestTimeout bounds each request (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Client, if set, is used instead of a client built for the run.
	Client *http.Client
	// Check, if set, judges each reply body instead of CheckReply (for
	// agents that do not echo the text, e.g. slow). JSON-RPC and REST only.
	Check func(body []byte) error
	// Binding is BindingJSONRPC (the default), BindingREST or
	// BindingGRPC. REST and gRPC send 1.0 SendMessage (Method must be
	// empty or MethodSend10).
	Binding string
	// Tenant is the tenant of every request (REST: in the body; gRPC: the
	// request's tenant field); empty for none.
	Tenant string
}

// Result is what one run measured. Latencies are of successful requests.
type Result struct {
	// Tasks is the number of replies that were completed tasks.
	Tasks int64
	// Errors is the number of requests that failed in any way: transport
	// error, non-200 status, JSON-RPC error, or a reply that was not a
	// completed task echoing the text.
	Errors int64
	// Elapsed is the wall time from the first request to the last reply.
	Elapsed time.Duration
	// Throughput is Tasks per second of Elapsed.
	Throughput float64
	// P50 and P99 are latency percentiles (nearest rank) of the
	// successful requests; Mean is their mean.
	P50, P99, Mean time.Duration
	// ErrorSamples maps up to maxErrorSamples distinct error texts to how
	// often each was seen.
	ErrorSamples map[string]int64
}

// String renders r on one line.
func (r Result) String() string {
	return fmt.Sprintf("%d tasks, %d errors in %v: %.0f tasks/s, p50 %v, p99 %v",
		r.Tasks, r.Errors, r.Elapsed.Round(time.Millisecond), r.Throughput,
		r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond))
}

func (o *Options) normalize() error {
	if o.URL == "" {
		return errors.New("bench: URL is required")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.Concurrency > MaxConcurrency {
		return fmt.Errorf("bench: concurrency %d above the limit %d", o.Concurrency, MaxConcurrency)
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration > MaxDuration {
		return fmt.Errorf("bench: duration %v above the limit %v", o.Duration, MaxDuration)
	}
	if o.Warmup < 0 || o.Warmup > MaxDuration {
		return fmt.Errorf("bench: warmup %v out of range", o.Warmup)
	}
	switch o.Binding {
	case "":
		o.Binding = BindingJSONRPC
	case BindingJSONRPC:
	case BindingREST, BindingGRPC:
		if o.Method != "" && o.Method != MethodSend10 {
			return fmt.Errorf("bench: the %s binding sends %q only", o.Binding, MethodSend10)
		}
		o.Method = MethodSend10
		if o.Binding == BindingGRPC && o.Check != nil {
			return errors.New("bench: Check applies to JSON bodies, not gRPC")
		}
	default:
		return fmt.Errorf("bench: binding %q not supported (want %q, %q or %q)", o.Binding, BindingJSONRPC, BindingREST, BindingGRPC)
	}
	switch o.Method {
	case "":
		o.Method = MethodSend03
	case MethodSend03, MethodSend10:
	default:
		return fmt.Errorf("bench: method %q not supported (want %q or %q)", o.Method, MethodSend03, MethodSend10)
	}
	if o.Text == "" {
		o.Text = "hello"
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return nil
}

// NewClient returns an http.Client for concurrency workers against one
// host: keep-alive on, an idle connection kept for every worker, no
// compression, HTTP/1.1.
func NewClient(concurrency int) *http.Client {
	if concurrency < 1 {
		concurrency = 1
	}
	tr := &http.Transport{
		Proxy: nil, // loopback benchmarks never go through a proxy
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          concurrency * 2,
		MaxIdleConnsPerHost:   concurrency * 2,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ResponseHeaderTimeout: DefaultRequestTimeout,
	}
	return &http.Client{Transport: tr}
}

// Run drives load against o.URL and returns what it measured. It returns
// an error only for bad options or a context canceled before any request
// completed; failed requests are counted in Result.Errors.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.normalize(); err != nil {
		return Result{}, err
	}
	client := o.Client
	if client == nil {
		client = NewClient(o.Concurrency)
		defer client.CloseIdleConnections()
	}
	var conns []*grpc.ClientConn
	if o.Binding == BindingGRPC {
		var err error
		if conns, err = dialGRPC(o); err != nil {
			return Result{}, err
		}
		defer closeGRPC(conns)
	}
	newSender := func(worker int) loadSender {
		switch o.Binding {
		case BindingREST:
			return newRESTSender(client, o)
		case BindingGRPC:
			return newGRPCSender(conns[worker/grpcConnsPerWorkers], o)
		}
		return newRPCSender(client, o, worker)
	}
	if o.Warmup > 0 {
		w := o
		w.Duration = o.Warmup
		runLoad(ctx, newSender, w)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return runLoad(ctx, newSender, o), nil
}

// workerStats is what one worker gathered; merged at the end so workers
// share nothing while running.
type workerStats struct {
	tasks, errors int64
	latencies     []time.Duration
	errSamples    map[string]int64
}

func (w *workerStats) fail(err error) {
	w.errors++
	if w.errSamples == nil {
		w.errSamples = make(map[string]int64)
	}
	msg := err.Error()
	if _, ok := w.errSamples[msg]; ok || len(w.errSamples) < maxErrorSamples {
		w.errSamples[msg]++
	}
}

func runLoad(ctx context.Context, newSender func(worker int) loadSender, o Options) Result {
	start := time.Now()
	deadline := start.Add(o.Duration)
	// Requests still in flight at the deadline get up to one request
	// timeout to finish; the run context ends there at the latest.
	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(o.RequestTimeout))
	defer cancel()

	// Every request takes a ticket, so the total is bounded however fast
	// the server answers.
	var remaining atomic.Int64
	remaining.Store(o.MaxRequests)
	take := func() bool { return remaining.Add(-1) >= 0 }

	stats := make([]workerStats, o.Concurrency)
	var wg sync.WaitGroup
	for i := range stats {
		wg.Add(1)
		go func(w *workerStats, worker int) {
			defer wg.Done()
			s := newSender(worker)
			// Pre-size for a plausible rate so appends rarely copy.
			w.latencies = make([]time.Duration, 0, 4096)
			for runCtx.Err() == nil && time.Now().Before(deadline) && take() {
				t0 := time.Now()
				err := s.send(runCtx)
				d := time.Since(t0)
				if err != nil {
					w.fail(err)
					continue
				}
				w.tasks++
				w.latencies = append(w.latencies, d)
			}
		}(&stats[i], i)
	}
	wg.Wait()
	elapsed := time.Since(start)

	var r Result
	r.Elapsed = elapsed
	var all []time.Duration
	for i := range stats {
		w := &stats[i]
		r.Tasks += w.tasks
		r.Errors += w.errors
		all = append(all, w.latencies...)
		for msg, n := range w.errSamples {
			if r.ErrorSamples == nil {
				r.ErrorSamples = make(map[string]int64)
			}
			if _, ok := r.ErrorSamples[msg]; ok || len(r.ErrorSamples) < maxErrorSamples {
				r.ErrorSamples[msg] += n
			}
		}
	}
	if elapsed > 0 {
		r.Throughput = float64(r.Tasks) / elapsed.Seconds()
	}
	r.P50, r.P99, r.Mean = percentiles(all)
	return r
}

// percentiles returns the nearest-rank 50th and 99th percentiles and the
// mean of lat (sorting it).
func percentiles(lat []time.Duration) (p50, p99, mean time.Duration) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return rank(lat, 0.50), rank(lat, 0.99), sum / time.Duration(len(lat))
}

// rank is the nearest-rank percentile p (0..1] of sorted lat.
func rank(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	i := int(float64(n)*p+0.999999999) - 1 // ceil(n*p) - 1
	if i < 0 {
		i = 0
	}
	if i >= n {
		i = n - 1
	}
	return sorted[i]
}

// rpcSender sends one worker's JSON-RPC requests, reusing its buffers.
type rpcSender struct {
	client  *http.Client
	url     string
	method  string
	text    string
	timeout time.Duration
	check   func(body []byte) error
	prefix  []byte // request body up to the message id
	suffix  []byte // request body after the message id
	id      int64
	body    bytes.Buffer
	reply   bytes.Buffer
}

func newRPCSender(client *http.Client, o Options, worker int) *rpcSender {
	s := &rpcSender{client: client, url: o.URL, method: o.Method, text: o.Text, timeout: o.RequestTimeout, check: o.Check}
	s.id = int64(worker) << 32
	text, _ := json.Marshal(o.Text)
	method, _ := json.Marshal(o.Method)
	// The body is prefix + "<message id>" + suffix + "<request id>}".
	if o.Method == MethodSend10 {
		s.prefix = []byte(`{"jsonrpc":"2.0","method":` + string(method) +
			`,"params":{"message":{"role":"ROLE_USER","messageId":"`)
		s.suffix = []byte(`","parts":[{"text":` + string(text) + `}]}},"id":`)
	} else {
		s.prefix = []byte(`{"jsonrpc":"2.0","method":` + string(method) +
			`,"params":{"message":{"kind":"message","role":"user","messageId":"`)
		s.suffix = []byte(`","parts":[{"kind":"text","text":` + string(text) + `}]}},"id":`)
	}
	return s
}

// Body returns the JSON-RPC request body the generator sends for method,
// with the given message id and request id. Exported for tests and docs.
func Body(method, text, messageID string, id int64) []byte {
	o := Options{URL: "x", Method: method, Text: text}
	_ = o.normalize()
	s := newRPCSender(nil, o, 0)
	s.buildBody(messageID, id)
	return bytes.Clone(s.body.Bytes())
}

func (s *rpcSender) buildBody(messageID string, id int64) {
	s.body.Reset()
	s.body.Write(s.prefix)
	s.body.WriteString(messageID)
	s.body.Write(s.suffix)
	s.body.WriteString(strconv.FormatInt(id, 10))
	s.body.WriteByte('}')
}

func (s *rpcSender) send(ctx context.Context) error {
	s.id++
	s.buildBody(uuid.NewString(), s.id)
	if err := post(ctx, s.client, s.url, s.timeout, "application/json", "application/json", s.body.Bytes(), &s.reply); err != nil {
		return err
	}
	if s.check != nil {
		return s.check(s.reply.Bytes())
	}
	return CheckReply(s.method, s.text, s.reply.Bytes())
}

// reply is the part of a JSON-RPC reply the generator checks.
type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type replyTask struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text *string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// CheckReply reports whether body is a JSON-RPC success whose result is a
// completed task with an artifact text part equal to text, in the shape of
// method's protocol version: for message/send a 0.3 Task (kind "task",
// state "completed"); for SendMessage a 1.0 SendMessageResponse
// ({"task":{...}}, state "TASK_STATE_COMPLETED").
func CheckReply(method, text string, body []byte) error {
	return checkTask(method, body, func(p string) bool { return p == text }, "no artifact echoes the text")
}

// CheckArtifactContains is CheckReply with a looser artifact test: some
// artifact text part contains substr.
func CheckArtifactContains(method, substr string, body []byte) error {
	return checkTask(method, body, func(p string) bool { return strings.Contains(p, substr) },
		fmt.Sprintf("no artifact contains %q", substr))
}

// checkTask checks that body is a completed task in method's shape with an
// artifact text part for which match holds; missing is the error text when
// none does.
func checkTask(method string, body []byte, match func(string) bool, missing string) error {
	var r reply
	if err := json.Unmarshal(body, &r); err != nil {
		return errors.New("reply is not JSON")
	}
	if r.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	}
	if r.JSONRPC != "2.0" || len(r.Result) == 0 {
		return errors.New("reply is not a JSON-RPC 2.0 result")
	}
	return checkResult(method, r.Result, match, missing)
}

// checkResult checks that result (a JSON-RPC result, or an HTTP+JSON
// reply) is a completed task in method's shape with an artifact text part
// for which match holds.
func checkResult(method string, result []byte, match func(string) bool, missing string) error {
	var t replyTask
	wantState := "completed"
	if method == MethodSend10 {
		var w struct {
			Task *replyTask `json:"task"`
		}
		if err := json.Unmarshal(result, &w); err != nil || w.Task == nil {
			return errors.New(`result is not {"task":{...}}`)
		}
		t = *w.Task
		wantState = "TASK_STATE_COMPLETED"
	} else {
		if err := json.Unmarshal(result, &t); err != nil {
			return errors.New("result is not a task")
		}
		if t.Kind != "task" {
			return fmt.Errorf("result kind %q, want \"task\"", t.Kind)
		}
	}
	if t.ID == "" {
		return errors.New("task has no id")
	}
	if t.Status.State != wantState {
		return fmt.Errorf("task state %q, want %q", t.Status.State, wantState)
	}
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			if p.Text != nil && match(*p.Text) {
				return nil
			}
		}
	}
	return errors.New(missing)
}

// sortedSamples returns r's error samples, most frequent first.
func (r Result) sortedSamples() []string {
	keys := make([]string, 0, len(r.ErrorSamples))
	for k := range r.ErrorSamples {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r.ErrorSamples[keys[i]] != r.ErrorSamples[keys[j]] {
			return r.ErrorSamples[keys[i]] > r.ErrorSamples[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%dx %s", r.ErrorSamples[k], k)
	}
	return out
}

// ErrorSummary returns the error samples, most frequent first, one per
// string ("12x JSON-RPC error -32603: ...").
func (r Result) ErrorSummary() []string { return r.sortedSamples() }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
