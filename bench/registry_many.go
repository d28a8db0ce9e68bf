package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/registry"
)

// The registry at scale ("many agents"): Agents agent names registered on
// one mesh, spread over Conns worker connections (each a bus of its own,
// as a worker process serving Agents/Conns agents would have), watched by
// every edge given. It measures what the registry costs an edge (memory,
// CPU at rest, GET /agents, a route lookup) and how long a new agent takes
// to show a live worker at every edge, and a crashed one to show none at
// every edge (by GET /agents' status), with that many agents registered.
// A crashed agent stays known (registry/agents.go): listed, its sends
// queued, with no live worker.
//
// The agents are registered with registry.Publish, as agentrt.Worker
// does, without running a worker per name: the registry is what is
// measured, not a thousand work consumers.

// RegistryProbeEvery is how often an edge probes each worker connection.
const RegistryProbeEvery = registry.DefaultProbeEvery

// Limits of the many-agents run.
const (
	MaxManyAgents = 20_000
	MaxManyConns  = 1_000
	// manyPoll is how often each edge is asked about the new agent.
	manyPoll = 2 * time.Millisecond
	// manySettle is how long the loaded mesh runs before it is measured
	// (three heartbeats at the default TTL), and the window CPU use is
	// measured over (CPU time is counted in 10ms ticks).
	manySettle = 10 * time.Second
	// agentsGETs is how many GET /agents are timed per edge.
	agentsGETs = 50
)

// ManyOptions configures a many-agents run.
type ManyOptions struct {
	// NATSURL is the mesh's NATS (required).
	NATSURL string
	// Bus is the layout configuration (RegistryTTL: the entries' TTL).
	Bus bus.Config
	// EdgeURLs are the edges watched (at least one); Edges, if given, are
	// their processes, whose memory and CPU are measured.
	EdgeURLs []string
	Edges    []*Proc
	// Agents is how many agent names are registered (default 1000), over
	// Conns connections (default 10).
	Agents, Conns int
	// Card is the card every agent registers, under its own name.
	Card a2a.AgentCard
	// Rounds is the number of join-and-crash rounds of a new agent on a
	// connection of its own (default 10).
	Rounds int
	// Progress, if set, is told about each step.
	Progress func(msg string)
}

// ManyResult holds the figures of a many-agents run.
type ManyResult struct {
	Agents, Conns int
	TTL           time.Duration
	// Register is the first registration to every agent shown live
	// (a live worker in GET /agents' status) by every edge.
	Register time.Duration
	// RSSBefore and RSSAfter are each edge's resident memory with no agent
	// and with all of them; CPUIdle and CPULoaded each edge's CPU use, in
	// cores, over manySettle before and after.
	RSSBefore, RSSAfter []uint64
	CPUIdle, CPULoaded  []float64
	// TableHeap is the Go heap a registry.Table holding every agent takes
	// (in this process, after GC).
	TableHeap int64
	// LookupNs is the cost of one Table.Lookup of a random agent (the
	// route lookup of every send), in this process.
	LookupNs float64
	// AgentsGET are the times of GET /agents on the edges, AgentsBytes
	// the size of one answer.
	AgentsGET   []time.Duration
	AgentsBytes int
	// Join: a new agent's Publish to a live worker of it counted by every
	// edge's GET /agents (JoinEach: by each edge, every sample). Crash:
	// its connection closed to every edge's GET /agents counting none.
	Join, JoinEach, Crash []time.Duration
	// ProbesPerSec is what the edges' connection probes send, in all, at
	// the default probe period (registry.DefaultProbeEvery, capped at
	// registry.MaxProbeRate per edge).
	ProbesPerSec float64
}

func (o *ManyOptions) normalize() error {
	if o.NATSURL == "" || len(o.EdgeURLs) == 0 {
		return errors.New("bench: many agents needs NATSURL and at least one edge")
	}
	if o.Agents == 0 {
		o.Agents = 1000
	}
	if o.Conns == 0 {
		o.Conns = 10
	}
	if o.Rounds == 0 {
		o.Rounds = 10
	}
	switch {
	case o.Agents < 1 || o.Agents > MaxManyAgents:
		return fmt.Errorf("bench: agents must be in [1, %d]", MaxManyAgents)
	case o.Conns < 1 || o.Conns > MaxManyConns || o.Conns > o.Agents:
		return fmt.Errorf("bench: connections must be in [1, min(agents, %d)]", MaxManyConns)
	case o.Rounds < 0 || o.Rounds > MaxRegistryRounds:
		return fmt.Errorf("bench: rounds must be in [0, %d]", MaxRegistryRounds)
	}
	if len(o.Edges) != 0 && len(o.Edges) != len(o.EdgeURLs) {
		return errors.New("bench: give a process for every edge or none")
	}
	for i, u := range o.EdgeURLs {
		o.EdgeURLs[i] = strings.TrimSuffix(u, "/")
	}
	return nil
}

// manyBench is a running many-agents measurement.
type manyBench struct {
	o      ManyOptions
	client *http.Client
	log    *slog.Logger
}

func (mb *manyBench) progress(format string, args ...any) {
	if mb.o.Progress != nil {
		mb.o.Progress(fmt.Sprintf(format, args...))
	}
}

// RunManyAgents registers o.Agents agents, measures the edges and a Table
// holding them, then runs o.Rounds join-and-crash rounds, and stops their
// registrations (their live entries are deleted; the agents stay known,
// as any agent whose workers stopped does).
func RunManyAgents(ctx context.Context, o ManyOptions) (ManyResult, error) {
	res := ManyResult{Agents: o.Agents, Conns: o.Conns}
	if err := o.normalize(); err != nil {
		return res, err
	}
	res.Agents, res.Conns = o.Agents, o.Conns
	mb := &manyBench{o: o, client: &http.Client{Timeout: 10 * time.Second}, log: quietLogger(nil)}
	defer mb.client.CloseIdleConnections()

	// The edges at rest, with no agent.
	res.RSSBefore = mb.rss()
	res.CPUIdle = mb.cpu(ctx)
	mb.progress("edges at rest: RSS %v, CPU %v", mib(res.RSSBefore), cores(res.CPUIdle))

	// Register them all.
	names := make([]string, o.Agents)
	for i := range names {
		names[i] = fmt.Sprintf("many-%05d", i)
	}
	pubs, err := mb.publishAll(ctx, names)
	defer pubs.stop()
	if err != nil {
		return res, err
	}
	start := pubs.started
	for _, u := range o.EdgeURLs {
		if err := mb.waitCount(ctx, u, o.Agents, 2*time.Minute); err != nil {
			return res, err
		}
	}
	res.Register = time.Since(start)
	mb.progress("%d agents on %d connections shown live by %d edges %v after the first registration", o.Agents, o.Conns, len(o.EdgeURLs),
		res.Register.Round(time.Millisecond))

	// The loaded edges, once past a few heartbeats.
	if len(o.Edges) > 0 {
		sleepCtx(ctx, manySettle)
	}
	res.CPULoaded = mb.cpu(ctx)
	res.RSSAfter = mb.rss()
	mb.progress("edges with %d agents: RSS %v, CPU %v", o.Agents, mib(res.RSSAfter), cores(res.CPULoaded))
	// Every edge probes each connection every DefaultProbeEvery, at most
	// MaxProbeRate a second in all (the new round's connection aside).
	res.ProbesPerSec = float64(len(o.EdgeURLs)) * min(float64(o.Conns)*float64(time.Second)/float64(registry.DefaultProbeEvery), registry.MaxProbeRate)

	if res.AgentsGET, res.AgentsBytes, err = mb.timeAgentsGET(ctx); err != nil {
		return res, err
	}
	if res.TableHeap, res.LookupNs, res.TTL, err = mb.table(ctx, names); err != nil {
		return res, err
	}
	mb.progress("a Table of %d agents: %d KiB of heap, Lookup %.0f ns", o.Agents, res.TableHeap>>10, res.LookupNs)

	for i := range o.Rounds {
		if err := mb.round(ctx, i, &res); err != nil {
			return res, fmt.Errorf("round %d: %w", i+1, err)
		}
		mb.progress("round %d/%d: new agent shown live by every edge after %v, with no live worker by every edge %v after its connection closed", i+1, o.Rounds,
			res.Join[len(res.Join)-1].Round(10*time.Microsecond), res.Crash[len(res.Crash)-1].Round(10*time.Microsecond))
	}
	return res, ctx.Err()
}

func cores(v []float64) string {
	s := make([]string, len(v))
	for i, c := range v {
		s[i] = fmt.Sprintf("%.3f cores", c)
	}
	return strings.Join(s, ", ")
}

func mib(v []uint64) string {
	s := make([]string, len(v))
	for i, b := range v {
		s[i] = fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return strings.Join(s, ", ")
}

// rss is every edge process's resident memory (none without processes).
func (mb *manyBench) rss() []uint64 {
	var out []uint64
	for _, p := range mb.o.Edges {
		rss, _, err := p.RSS()
		if err != nil {
			return nil
		}
		out = append(out, rss)
	}
	return out
}

// cpu is every edge process's CPU use over manySettle, in cores.
func (mb *manyBench) cpu(ctx context.Context) []float64 {
	if len(mb.o.Edges) == 0 {
		return nil
	}
	before := make([]time.Duration, len(mb.o.Edges))
	for i, p := range mb.o.Edges {
		before[i] = procCPU(p)
	}
	t0 := time.Now()
	sleepCtx(ctx, manySettle)
	el := time.Since(t0)
	out := make([]float64, len(mb.o.Edges))
	for i, p := range mb.o.Edges {
		out[i] = float64(procCPU(p)-before[i]) / float64(el)
	}
	return out
}

// publishers are the connections registering the agents.
type publishers struct {
	started time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	conns   []*nats.Conn
}

// stop ends every registration (each Publish deletes its entry: the
// agent shows no live worker, and stays known) and closes the
// connections.
func (p *publishers) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
	for _, nc := range p.conns {
		nc.Close()
	}
}

// publishAll opens o.Conns connections and registers names over them,
// round robin.
func (mb *manyBench) publishAll(ctx context.Context, names []string) (*publishers, error) {
	p := &publishers{}
	buses := make([]*bus.Bus, mb.o.Conns)
	for i := range buses {
		b, nc, err := openBus(ctx, mb.o.NATSURL, fmt.Sprintf("a2amesh-bench-many-%d", i), mb.o.Bus, 30*time.Second)
		if err != nil {
			return p, err
		}
		buses[i] = b.Bus()
		p.conns = append(p.conns, nc)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.started = time.Now()
	for i, name := range names {
		mb.publish(pctx, &p.wg, buses[i%len(buses)], name, mb.log)
	}
	return p, nil
}

// publish registers name on b until ctx ends, logging to log.
func (mb *manyBench) publish(ctx context.Context, wg *sync.WaitGroup, b *bus.Bus, name string, log *slog.Logger) {
	card := mb.o.Card
	card.Name = name
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = registry.Publish(ctx, b, registry.Entry{Agent: name, Instance: "w", Card: card}, nil, log)
	}()
}

// waitCount waits until the edge at url shows at least n agents live.
func (mb *manyBench) waitCount(ctx context.Context, url string, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := pollUntil(ctx, 50*time.Millisecond, func() bool {
		got, _, err := mb.agents(ctx, url)
		return err == nil && got >= n
	})
	if err != nil {
		return fmt.Errorf("edge %s does not show %d agents live: %w", url, n, err)
	}
	return nil
}

// agents is GET /agents: how many agents its status shows with a live
// worker (known agents with none are listed too), and the answer's size.
func (mb *manyBench) agents(ctx context.Context, url string) (int, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/agents", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := mb.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAgentsBytes))
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET /agents: %s", resp.Status)
	}
	var body agentsDoc
	if err := json.Unmarshal(data, &body); err != nil {
		return 0, 0, err
	}
	live := 0
	for _, st := range body.Status {
		if st.Workers > 0 {
			live++
		}
	}
	return live, len(data), nil
}

// timeAgentsGET times agentsGETs GET /agents on every edge, one after
// another.
func (mb *manyBench) timeAgentsGET(ctx context.Context) ([]time.Duration, int, error) {
	var out []time.Duration
	size := 0
	for _, u := range mb.o.EdgeURLs {
		for range agentsGETs {
			t0 := time.Now()
			n, sz, err := mb.agents(ctx, u)
			if err != nil {
				return out, size, err
			}
			out = append(out, time.Since(t0))
			if n < mb.o.Agents {
				return out, size, fmt.Errorf("edge %s shows %d agents live, want %d", u, n, mb.o.Agents)
			}
			size = sz
		}
	}
	return out, size, nil
}

// table loads a Table of its own and measures its heap and Lookup.
func (mb *manyBench) table(ctx context.Context, names []string) (heap int64, lookupNs float64, ttl time.Duration, err error) {
	b, nc, err := openBus(ctx, mb.o.NATSURL, "a2amesh-bench-many-table", mb.o.Bus, 30*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	defer nc.Close()
	heapNow := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heapNow()
	table := registry.NewTable(b.Bus())
	table.ProbeEvery = -1 // the table's own size, not probes in flight
	tctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = table.Run(tctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-table.Ready():
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	case <-time.After(time.Minute):
		return 0, 0, 0, errors.New("bench: table not loaded within a minute")
	}
	if n := len(table.Agents()); n < len(names) {
		return 0, 0, 0, fmt.Errorf("bench: the table holds %d agents, want %d", n, len(names))
	}
	heap = heapNow() - before
	for _, e := range table.Agents() {
		if e.TTL > 0 { // a live instance's entry, not an agent's record
			ttl = e.TTL
			break
		}
	}
	// Lookups of random names, as sends to them would.
	const lookups = 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]string, 4096)
	for i := range order {
		order[i] = names[rng.IntN(len(names))]
	}
	t0 := time.Now()
	hits := 0
	for i := range lookups {
		if _, ok := table.Lookup(order[i%len(order)]); ok {
			hits++
		}
	}
	el := time.Since(t0)
	if hits != lookups {
		return 0, 0, 0, fmt.Errorf("bench: %d of %d lookups missed", lookups-hits, lookups)
	}
	return heap, float64(el.Nanoseconds()) / lookups, ttl, nil
}

// round registers a new agent on a connection of its own, times it until
// every edge's GET /agents counts a live worker of it, closes the
// connection (a crash: nothing is deleted), and times it until every edge
// counts none (the agent stays listed, known, with no live worker). GET
// /agents is the only place an edge shows an agent's live workers, so the
// figures are as fine as one GET /agents of every agent (AgentsGET), and
// the polling loads the edges meanwhile.
func (mb *manyBench) round(ctx context.Context, i int, res *ManyResult) error {
	name := fmt.Sprintf("many-new-%d-%d", time.Now().UnixNano()%1_000_000, i)
	b, nc, err := openBus(ctx, mb.o.NATSURL, "a2amesh-bench-many-new", mb.o.Bus, 30*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	pctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	t0 := time.Now()
	// Its heartbeats fail once its connection is closed: not worth a line.
	mb.publish(pctx, &wg, b.Bus(), name, slog.New(slog.DiscardHandler))
	at, err := mb.everyEdge(ctx, t0, func(ctx context.Context, u string) bool {
		n, ok := agentWorkers(ctx, mb.client, u, name)
		return ok && n > 0
	})
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	res.JoinEach = append(res.JoinEach, at...)
	res.Join = append(res.Join, slicesMax(at))
	sleepCtx(ctx, time.Duration(rand.Int64N(int64(time.Second)))) // a crash lands anywhere
	nc.Close()
	t1 := time.Now()
	at, err = mb.everyEdge(ctx, t1, func(ctx context.Context, u string) bool {
		n, ok := agentWorkers(ctx, mb.client, u, name)
		return ok && n == 0
	})
	if err != nil {
		return fmt.Errorf("crash: %w", err)
	}
	res.Crash = append(res.Crash, slicesMax(at))
	return nil
}

func slicesMax(v []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range v {
		m = max(m, d)
	}
	return m
}

// everyEdge polls cond on every edge at once until it holds on each, and
// returns how long after t0 each first held.
func (mb *manyBench) everyEdge(ctx context.Context, t0 time.Time, cond func(context.Context, string) bool) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out := make([]time.Duration, len(mb.o.EdgeURLs))
	errs := make([]error, len(mb.o.EdgeURLs))
	var wg sync.WaitGroup
	for i, u := range mb.o.EdgeURLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at, err := pollUntil(ctx, manyPoll, func() bool { return cond(ctx, u) })
			out[i], errs[i] = at.Sub(t0), err
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// RunManyAgentsOnProcs runs RunManyAgents on a mesh of processes of the
// a2amesh binary bin: an `a2amesh nats` and two `a2amesh edge`, one with
// --lost-grace 0 and one with the default, both watched and measured
// (o's NATSURL, EdgeURLs and Edges are set here; the grace delays neither
// edge's count of live workers); the agents are registered by this
// process.
func RunManyAgentsOnProcs(ctx context.Context, bin string, o ManyOptions) (ManyResult, error) {
	m, err := StartProcMesh(ctx, bin, "")
	if err != nil {
		return ManyResult{}, err
	}
	defer m.Close()
	ge, geURL, err := StartEdgeProc(ctx, bin, m.NATSURL)
	if err != nil {
		return ManyResult{}, err
	}
	defer ge.Stop(5 * time.Second)
	o.NATSURL, o.EdgeURLs, o.Edges = m.NATSURL, []string{m.EdgeURL, geURL}, []*Proc{m.Edge, ge}
	return RunManyAgents(ctx, o)
}
