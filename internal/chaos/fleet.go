package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clusterName is the NATS cluster's name.
const clusterName = "a2amesh-chaos"

// fleet is the mesh under test: NATS nodes, edges and workers, all
// processes of one a2amesh binary on loopback.
type fleet struct {
	cfg     *Config
	t0      time.Time
	sp      *spawner
	dir     string
	nats    []*member
	edges   []*member
	workers []*member
	extra   []*member // workers the caller starts and stops (addWorker)
	all     []*member
	urls    []string // NATS client URLs
	proxies *routeProxies
	admin   *admin
	// nodeAdmin[i] is connected to node i only: the cluster as the
	// other nodes see it while one is cut off.
	nodeAdmin []*admin
	hc        *http.Client

	stopping atomic.Bool
	serving  atomic.Bool // the fleet started (the load may begin)
	restarts sync.WaitGroup

	mu    sync.Mutex
	exits []RoleExit
}

// RoleExit is a role process that ended without the harness killing or
// stopping it: a role that gave up.
type RoleExit struct {
	Member string
	Pid    int
	At     time.Duration // since the harness started
	Uptime time.Duration
	Status string
	Tail   string // the end of its output
	Last   string // the last line the process wrote
	// AtStart: the fleet was still starting (before the load).
	AtStart bool
}

// freeAddrs reserves n distinct loopback ports (all listening at once, so
// they differ), then frees them for the roles to take.
func freeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// newFleet lays the fleet out: ports, data directories, arguments.
func newFleet(cfg *Config, dir string, t0 time.Time) (*fleet, error) {
	f := &fleet{cfg: cfg, t0: t0, dir: dir, sp: newSpawner(),
		hc: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableKeepAlives: true}}}
	nNATS := 3
	addrs, err := freeAddrs(2*nNATS + cfg.Edges)
	if err != nil {
		return nil, err
	}
	clientAddrs, routeAddrs, edgeAddrs := addrs[:nNATS], addrs[nNATS:2*nNATS], addrs[2*nNATS:]
	for _, a := range clientAddrs {
		f.urls = append(f.urls, "nats://"+a)
	}
	// With partitions, every route goes through a proxy of the harness:
	// node i reaches node j at proxy (i,j), which the harness can cut.
	routeOf := func(i, j int) string { return routeAddrs[j] }
	if cfg.hasFault(FaultPartition) {
		if f.proxies, err = newRouteProxies(routeAddrs); err != nil {
			return nil, err
		}
		routeOf = f.proxies.addr
	}
	logLevel := cfg.LogLevel
	for i := 0; i < nNATS; i++ {
		var routes []string
		for j := 0; j < nNATS; j++ {
			if j != i {
				routes = append(routes, "nats-route://"+routeOf(i, j))
			}
		}
		data := filepath.Join(dir, fmt.Sprintf("nats-%d", i))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		m := &member{Name: fmt.Sprintf("nats-%d", i), Role: RoleNATS, bin: cfg.Bin, clientAddr: clientAddrs[i], routeAddr: routeAddrs[i],
			serverName: fmt.Sprintf("n%d", i),
			args: []string{"nats", "--name", fmt.Sprintf("n%d", i), "--listen", clientAddrs[i], "--data", data,
				"--cluster", clusterName, "--listen-cluster", routeAddrs[i], "--routes", strings.Join(routes, ","), "--log-level", logLevel}}
		f.nats = append(f.nats, m)
	}
	natsList := f.natsList
	replicas := fmt.Sprint(cfg.Replicas)
	for i := 0; i < cfg.Edges; i++ {
		m := &member{Name: fmt.Sprintf("edge-%d", i), Role: RoleEdge, bin: cfg.Bin, baseURL: "http://" + edgeAddrs[i],
			args: append([]string{"edge", "--nats", natsList(i), "--replicas", replicas, "--listen", edgeAddrs[i], "--log-level", logLevel}, cfg.EdgeArgs...)}
		f.edges = append(f.edges, m)
	}
	k := 0
	for _, agent := range []string{"echo", "slow"} {
		n := cfg.EchoWorkers
		if agent == "slow" {
			n = cfg.SlowWorkers
		}
		for i := 0; i < n; i++ {
			m := &member{Name: fmt.Sprintf("worker-%s-%d", agent, i), Role: RoleWorker, Agent: agent, bin: cfg.Bin,
				args: []string{"worker", "--agent", agent, "--nats", natsList(k), "--replicas", replicas, "--log-level", logLevel}}
			f.workers = append(f.workers, m)
			k++
		}
	}
	f.all = append(append(append(f.all, f.nats...), f.edges...), f.workers...)
	for _, m := range f.all {
		m.log = newLogSink(t0, cfg.TailBytes)
	}
	return f, nil
}

func (f *fleet) since() time.Duration { return time.Since(f.t0) }

// natsList lists every node's URL starting at node k: each role starts at
// a different one, so their connections spread over the cluster.
func (f *fleet) natsList(k int) string {
	var l []string
	for i := range f.urls {
		l = append(l, f.urls[(k+i)%len(f.urls)])
	}
	return strings.Join(l, ",")
}

// addWorker adds a worker slot that the fleet does not start: the caller
// starts and stops it. args follow "worker --nats ... --replicas ...".
func (f *fleet) addWorker(name, agent string, args ...string) *member {
	m := &member{Name: name, Role: RoleWorker, Agent: agent, bin: f.cfg.Bin,
		args: append([]string{"worker", "--nats", f.natsList(len(f.workers)), "--replicas", fmt.Sprint(f.cfg.Replicas),
			"--log-level", f.cfg.LogLevel}, args...)}
	m.log = newLogSink(f.t0, f.cfg.TailBytes)
	f.extra = append(f.extra, m)
	f.all = append(f.all, m)
	return m
}

// onExit records a role that ended on its own and starts it again (the
// run goes on: one exit is one violation, not the end of the test).
func (f *fleet) onExit(m *member, p *proc, expected bool) {
	if expected || f.stopping.Load() {
		return
	}
	status := "exit status 0"
	if p.exitErr != nil {
		status = p.exitErr.Error()
	}
	f.mu.Lock()
	f.exits = append(f.exits, RoleExit{Member: m.Name, Pid: p.pid, At: p.exitAt.Sub(f.t0), Uptime: p.exitAt.Sub(p.started),
		Status: status, Tail: lastLines(m.log.Tail(), 40), Last: m.log.lastOf(p.pid), AtStart: !f.serving.Load()})
	f.mu.Unlock()
	f.cfg.logf("ROLE EXIT: %s (pid %d) %s after %v; restarting it", m.Name, p.pid, status, p.exitAt.Sub(p.started).Round(time.Millisecond))
	f.restarts.Add(1)
	go func() {
		defer f.restarts.Done()
		time.Sleep(time.Second)
		if f.stopping.Load() {
			return
		}
		if _, err := m.start(f.sp, f.onExit); err != nil {
			f.cfg.logf("restart of %s after its exit: %v", m.Name, err)
		}
	}()
}

func (f *fleet) roleExits() []RoleExit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RoleExit(nil), f.exits...)
}

// start brings the whole fleet up and waits until it serves: every node
// listening, the cluster's streams current, every edge healthy and
// knowing both agents, every worker registered.
func (f *fleet) start(ctx context.Context) error {
	// The nodes together: each waits for its routes before JetStream
	// settles.
	for _, m := range f.nats {
		if _, err := m.start(f.sp, f.onExit); err != nil {
			return err
		}
	}
	for _, m := range f.nats {
		if err := f.waitListening(ctx, m, 30*time.Second); err != nil {
			return err
		}
	}
	var err error
	if f.admin, err = dialAdmin(f.urls); err != nil {
		return fmt.Errorf("chaos: harness connection to NATS: %w", err)
	}
	for _, u := range f.urls {
		a, err := dialAdmin([]string{u})
		if err != nil {
			return fmt.Errorf("chaos: harness connection to NATS: %w", err)
		}
		f.nodeAdmin = append(f.nodeAdmin, a)
	}
	// The roles start once the cluster has elected its meta leader; they
	// are all started at once, in no particular order.
	if err := f.admin.jetStreamReady(ctx, 60*time.Second); err != nil {
		return err
	}
	for _, m := range append(append([]*member(nil), f.edges...), f.workers...) {
		if _, err := m.start(f.sp, f.onExit); err != nil {
			return err
		}
	}
	for _, m := range f.edges {
		if _, err := f.waitHealthy(ctx, m, 60*time.Second); err != nil {
			return err
		}
	}
	if err := f.waitAgents(ctx, 60*time.Second); err != nil {
		return err
	}
	if _, err := f.admin.waitCaughtUp(ctx, f.cfg.Replicas, 60*time.Second); err != nil {
		return fmt.Errorf("chaos: fleet started but %w", err)
	}
	f.serving.Store(true)
	return nil
}

// waitListening waits until m's NATS client port accepts connections.
func (f *fleet) waitListening(ctx context.Context, m *member, budget time.Duration) error {
	return pollUntil(ctx, budget, 50*time.Millisecond, func() error {
		if m.current() == nil {
			return fmt.Errorf("%s is not running", m.Name)
		}
		c, err := net.DialTimeout("tcp", m.clientAddr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	}, m.Name+" listening")
}

// waitHealthy waits until the edge answers GET /healthz with 200.
func (f *fleet) waitHealthy(ctx context.Context, m *member, budget time.Duration) (time.Duration, error) {
	start := time.Now()
	err := pollUntil(ctx, budget, 50*time.Millisecond, func() error {
		if m.current() == nil {
			return fmt.Errorf("%s is not running", m.Name)
		}
		return f.get(ctx, m.baseURL+"/healthz", nil)
	}, m.Name+" /healthz")
	return time.Since(start), err
}

// waitAgents waits until every edge lists echo and slow, and the registry
// holds an entry per worker.
func (f *fleet) waitAgents(ctx context.Context, budget time.Duration) error {
	want := map[string]int{}
	for _, w := range f.workers {
		want[w.Agent]++
	}
	return pollUntil(ctx, budget, 100*time.Millisecond, func() error {
		for _, e := range f.edges {
			var body struct {
				Agents []struct {
					Name string `json:"name"`
				} `json:"agents"`
			}
			if err := f.get(ctx, e.baseURL+"/agents", &body); err != nil {
				return err
			}
			seen := map[string]bool{}
			for _, a := range body.Agents {
				seen[a.Name] = true
			}
			for agent := range want {
				if !seen[agent] {
					return fmt.Errorf("%s does not list agent %s yet", e.Name, agent)
				}
			}
		}
		keys, err := f.admin.registryKeys(ctx)
		if err != nil {
			return err
		}
		for agent, n := range want {
			got := 0
			for k := range keys {
				if strings.HasPrefix(k, agent+".") {
					got++
				}
			}
			if got < n {
				return fmt.Errorf("registry has %d of %d %s workers", got, n, agent)
			}
		}
		return nil
	}, "agents registered")
}

// waitNewRegistration waits until the registry holds a key of agent that
// was not in before (a restarted worker's new instance).
func (f *fleet) waitNewRegistration(ctx context.Context, m *member, before map[string]bool, budget time.Duration) (time.Duration, error) {
	start := time.Now()
	err := pollUntil(ctx, budget, 100*time.Millisecond, func() error {
		if m.current() == nil {
			return fmt.Errorf("%s is not running", m.Name)
		}
		keys, err := f.admin.registryKeys(ctx)
		if err != nil {
			return err
		}
		for k := range keys {
			if strings.HasPrefix(k, m.Agent+".") && !before[k] {
				return nil
			}
		}
		return errors.New("no new registry entry yet")
	}, m.Name+" registered")
	return time.Since(start), err
}

func (f *fleet) get(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if into != nil {
		return json.Unmarshal(data, into)
	}
	return nil
}

// close stops every role (SIGTERM, then SIGKILL after a grace period),
// the proxies and the harness's connection.
func (f *fleet) close() {
	f.stopping.Store(true)
	f.restarts.Wait()
	var wg sync.WaitGroup
	// Edges and workers first, so they do not log a cluster going away.
	for _, group := range [][]*member{append(append(append([]*member(nil), f.edges...), f.workers...), f.extra...), f.nats} {
		for _, m := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.stop(5 * time.Second)
			}()
		}
		wg.Wait()
	}
	if f.admin != nil {
		f.admin.close()
	}
	for _, a := range f.nodeAdmin {
		a.close()
	}
	if f.proxies != nil {
		f.proxies.close()
	}
	f.sp.close()
}

// pollUntil runs check every every until it returns nil, ctx ends or
// budget passes; what names the wait in the error.
func pollUntil(ctx context.Context, budget, every time.Duration, check func() error, what string) error {
	deadline := time.Now().Add(budget)
	var last error
	for i := 0; i < 1_000_000; i++ {
		if last = check(); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			break
		}
		sleepCtx(ctx, every)
	}
	return fmt.Errorf("chaos: %s: not within %v: %v", what, budget, last)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
