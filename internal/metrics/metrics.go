// Package metrics holds the mesh's Prometheus metrics: every family is
// defined here, registered on a registry of its own (not the global one,
// so several meshes in one process, and tests, do not collide). Edges and
// workers record through nil-safe methods: a nil *Metrics records nothing.
package metrics

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a push delivery attempt (PushDelivery).
const (
	PushDelivered = "delivered" // the receiver answered 2xx
	PushRetried   = "retried"   // failed; another attempt follows
	PushGaveUp    = "gave_up"   // failed for the last time, or refused by the SSRF guard
	PushDropped   = "dropped"   // nothing to deliver any more (config deleted, event expired, job malformed)
)

// Outcomes of a worker run (RunStarted).
const (
	RunSettled    = "settled"     // the turn's state was recorded; the work acked
	RunHandedBack = "handed_back" // the worker stopped; the work went back to the queue
	RunRetried    = "retried"     // the bus failed; the work goes back to run again
	RunSuperseded = "superseded"  // a redelivery of the same work owns the task now
)

// ScrapeTimeout bounds the JetStream requests one scrape makes for the
// consumer statistics.
const ScrapeTimeout = 2 * time.Second

// Metrics is the set of collectors of one process (or of one dev mesh).
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec
	sse      prometheus.Gauge
	push     *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
	duration *prometheus.HistogramVec
	latency  *prometheus.HistogramVec
	runs     *prometheus.CounterVec

	dyn *dynamic
}

// New returns the edge's and the worker's metrics together (a dev mesh's
// process runs both), registered on a fresh registry with the Go runtime
// and process collectors.
func New() *Metrics { return build(true, true) }

// NewEdge returns an edge's metrics only: its a2amesh_edge_* and push
// series, the registry's size and the consumer statistics it reads. A
// worker's recording methods work on it and are not exposed.
func NewEdge() *Metrics { return build(true, false) }

// NewWorker returns a worker's metrics only: its a2amesh_worker_* series
// and the statistics of its consumer. An edge's recording methods work on
// it and are not exposed.
func NewWorker() *Metrics { return build(false, true) }

func build(edge, worker bool) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "a2amesh_edge_requests_total",
			Help: "A2A calls served by the edge, by binding (jsonrpc, rest, grpc), method and result code (the A2A error code, or ok).",
		}, []string{"binding", "method", "code"}),
		sse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "a2amesh_edge_sse_connections",
			Help: "SSE streams the edge has open (message/stream, tasks/resubscribe).",
		}),
		push: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "a2amesh_push_deliveries_total",
			Help: "Push notification delivery attempts, by outcome (delivered, retried, gave_up, dropped).",
		}, []string{"outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "a2amesh_worker_tasks_in_flight",
			Help: "Task runs in progress in the worker, by agent.",
		}, []string{"agent"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "a2amesh_worker_task_duration_seconds",
			Help:    "Duration of one run of an agent, by agent and the state it left the task in (or handed_back).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"agent", "state"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "a2amesh_worker_turn_latency_seconds",
			Help:    "Time from a turn's enqueue to the run that settled it (queue wait and any earlier runs included), by agent and the state it left the task in.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"agent", "state"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "a2amesh_worker_runs_total",
			Help: "Runs of an agent, by agent and outcome (settled, handed_back, retried, superseded).",
		}, []string{"agent", "outcome"}),
		dyn: newDynamic(),
	}
	m.reg.MustRegister(m.dyn, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	if edge {
		m.reg.MustRegister(m.requests, m.sse, m.push)
	}
	if worker {
		m.reg.MustRegister(m.inFlight, m.duration, m.latency, m.runs)
	}
	return m
}

// Registry is the registry the metrics are registered on, for adding more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// EdgeRequest counts one A2A call over binding ("jsonrpc", "rest" or
// "grpc"). method must come from a bounded set (the caller maps unknown
// methods to "unknown").
func (m *Metrics) EdgeRequest(binding, method, code string) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(binding, method, code).Inc()
}

// SSEOpened counts an SSE stream opened; call the returned func when it
// closes.
func (m *Metrics) SSEOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.sse.Inc()
	return m.sse.Dec
}

// PushDelivery counts one push delivery attempt by outcome (Push*).
func (m *Metrics) PushDelivery(outcome string) {
	if m == nil {
		return
	}
	m.push.WithLabelValues(outcome).Inc()
}

// RunStarted records a run of agent starting, for a turn enqueued at
// queued (zero if unknown); call the returned func when it ends, with the
// state it left the task in and its outcome (Run*). A settled run also
// observes the turn's latency.
func (m *Metrics) RunStarted(agent string, queued time.Time) (ended func(state, outcome string)) {
	if m == nil {
		return func(string, string) {}
	}
	start := time.Now()
	g := m.inFlight.WithLabelValues(agent)
	g.Inc()
	return func(state, outcome string) {
		g.Dec()
		now := time.Now()
		m.duration.WithLabelValues(agent, state).Observe(now.Sub(start).Seconds())
		m.runs.WithLabelValues(agent, outcome).Inc()
		if outcome == RunSettled && !queued.IsZero() {
			m.latency.WithLabelValues(agent, state).Observe(max(now.Sub(queued), 0).Seconds())
		}
	}
}

// SetRegistrySize makes a2amesh_registry_agents report what size returns
// (the known agents in an edge's registry table).
func (m *Metrics) SetRegistrySize(size func() int) {
	if m == nil {
		return
	}
	m.dyn.mu.Lock()
	m.dyn.registrySize = size
	m.dyn.mu.Unlock()
}

// SetAgentWorkers makes a2amesh_agent_workers report what workers returns:
// the live workers of every known agent, 0 for one with none.
func (m *Metrics) SetAgentWorkers(workers func() map[string]int) {
	if m == nil {
		return
	}
	m.dyn.mu.Lock()
	m.dyn.agentWorkers = workers
	m.dyn.mu.Unlock()
}

// AddConsumers adds a source of JetStream consumer statistics, read at
// each scrape (within ScrapeTimeout). A consumer several sources report is
// reported once.
func (m *Metrics) AddConsumers(src ConsumerSource) {
	if m == nil {
		return
	}
	m.dyn.mu.Lock()
	m.dyn.sources = append(m.dyn.sources, src)
	m.dyn.mu.Unlock()
}

// ConsumerStats are the counts of one JetStream consumer.
type ConsumerStats = bus.ConsumerStats

// ConsumerSource reports consumer statistics; it should give up when ctx
// ends, returning what it has.
type ConsumerSource func(ctx context.Context) []ConsumerStats

// dynamic collects at scrape time what is read from elsewhere: the
// registry table's size and the consumers' statistics.
type dynamic struct {
	mu           sync.Mutex
	registrySize func() int
	agentWorkers func() map[string]int
	sources      []ConsumerSource

	agents, pending, ackPending, redelivered *prometheus.Desc
	// Per agent: what an autoscaler acts on.
	agentLive, agentPending, agentInFlight *prometheus.Desc
}

func newDynamic() *dynamic {
	return &dynamic{
		agents: prometheus.NewDesc("a2amesh_registry_agents",
			"Live agents in the edge's registry table.", nil, nil),
		pending: prometheus.NewDesc("a2amesh_consumer_pending",
			"Messages of the JetStream consumer not yet delivered.", []string{"consumer"}, nil),
		ackPending: prometheus.NewDesc("a2amesh_consumer_ack_pending",
			"Messages of the JetStream consumer delivered and not yet acknowledged.", []string{"consumer"}, nil),
		redelivered: prometheus.NewDesc("a2amesh_consumer_redelivered",
			"Messages of the JetStream consumer delivered more than once and not yet acknowledged.", []string{"consumer"}, nil),
		agentLive: prometheus.NewDesc("a2amesh_agent_workers",
			"Live workers of each known agent (0: none; its sends queue).", []string{"agent"}, nil),
		agentPending: prometheus.NewDesc("a2amesh_agent_pending",
			"Tasks queued for the agent that no worker has taken yet.", []string{"agent"}, nil),
		agentInFlight: prometheus.NewDesc("a2amesh_agent_in_flight",
			"Tasks of the agent a worker holds and has not finished.", []string{"agent"}, nil),
	}
}

func (d *dynamic) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.agents
	ch <- d.pending
	ch <- d.ackPending
	ch <- d.redelivered
	ch <- d.agentLive
	ch <- d.agentPending
	ch <- d.agentInFlight
}

func (d *dynamic) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	size, workers, sources := d.registrySize, d.agentWorkers, append([]ConsumerSource(nil), d.sources...)
	d.mu.Unlock()
	if size != nil {
		ch <- prometheus.MustNewConstMetric(d.agents, prometheus.GaugeValue, float64(size()))
	}
	if workers != nil {
		for agent, n := range workers() {
			ch <- prometheus.MustNewConstMetric(d.agentLive, prometheus.GaugeValue, float64(n), agent)
		}
	}
	if len(sources) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	seen := map[string]bool{}
	for _, src := range sources {
		for _, s := range src(ctx) {
			if seen[s.Consumer] {
				continue
			}
			seen[s.Consumer] = true
			ch <- prometheus.MustNewConstMetric(d.pending, prometheus.GaugeValue, float64(s.Pending), s.Consumer)
			ch <- prometheus.MustNewConstMetric(d.ackPending, prometheus.GaugeValue, float64(s.AckPending), s.Consumer)
			ch <- prometheus.MustNewConstMetric(d.redelivered, prometheus.GaugeValue, float64(s.Redelivered), s.Consumer)
			if agent, ok := strings.CutPrefix(s.Consumer, bus.ConsumerName("")); ok {
				ch <- prometheus.MustNewConstMetric(d.agentPending, prometheus.GaugeValue, float64(s.Pending), agent)
				ch <- prometheus.MustNewConstMetric(d.agentInFlight, prometheus.GaugeValue, float64(s.AckPending), agent)
			}
		}
	}
}
