package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/registry"
)

// testTTL is the registry TTL of the tests' meshes: the default, so a
// crash round that waited for the TTL would take seconds more than the
// connection probes (registry/proc.go) let it.
const testTTL = 10 * time.Second

// Environment of TestHelperWorker when it runs as a worker process.
const (
	helperEnv     = "A2AMESH_BENCH_HELPER_NATS"
	helperTTLEnv  = "A2AMESH_BENCH_HELPER_TTL"
	helperTestArg = "-test.run=^TestHelperWorker$"
)

// TestHelperWorker is not a test: run by TestRegistryProcesses as a child
// process of the test binary, it is a worker process of the echo agent
// (what `a2amesh worker --agent echo` does, with a short registry TTL),
// stopped by SIGTERM.
func TestHelperWorker(t *testing.T) {
	url := os.Getenv(helperEnv)
	if url == "" {
		return
	}
	ttl, _ := time.ParseDuration(os.Getenv(helperTTLEnv))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, nc, err := openBus(ctx, url, "a2amesh-bench-helper", bus.Config{RegistryTTL: ttl}, 30*time.Second)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	w := &agentrt.Worker{Store: b, Agent: agents.Echo{}, Name: "echo", Concurrency: 1, Logger: quietLogger(nil)}
	err = w.Run(ctx)
	_ = nc.Drain()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// checkRegistryResult checks res's samples; edge and grace say whether an
// edge and an edge with a lost grace were timed.
func checkRegistryResult(t *testing.T, res RegistryResult, rounds, crashRounds int, edge, grace bool) {
	t.Helper()
	edgeRounds := func(n int) int {
		if edge {
			return n
		}
		return 0
	}
	graceRounds := func(n int) int {
		if grace {
			return n
		}
		return 0
	}
	for _, c := range []struct {
		name string
		v    []time.Duration
		want int
	}{
		{"JoinTable", res.JoinTable, rounds + crashRounds},
		{"JoinEdge", res.JoinEdge, edgeRounds(rounds + crashRounds)},
		{"LeaveTable", res.LeaveTable, rounds},
		{"LeaveEdge", res.LeaveEdge, edgeRounds(rounds)},
		{"StopExit", res.StopExit, rounds},
		{"CrashTable", res.CrashTable, crashRounds},
		{"CrashEdge", res.CrashEdge, edgeRounds(crashRounds)},
		{"JoinGrace", res.JoinGraceEdge, graceRounds(rounds + crashRounds)},
		{"LeaveGrace", res.LeaveGraceEdge, graceRounds(rounds)},
		{"CrashGrace", res.CrashGraceEdge, graceRounds(crashRounds)},
	} {
		if len(c.v) != c.want {
			t.Errorf("%s: %d samples, want %d", c.name, len(c.v), c.want)
		}
		for _, d := range c.v {
			if d <= 0 || d > 30*time.Second {
				t.Errorf("%s: implausible %v", c.name, d)
			}
		}
		t.Logf("%-10s %+v", c.name, Summarize(c.v))
	}
	if res.TTL != testTTL || res.Heartbeat != testTTL/3 {
		t.Errorf("TTL %v heartbeat %v, want %v and a third of it", res.TTL, res.Heartbeat, testTTL)
	}
	// A crashed worker is dropped once probes of its connection find it
	// gone (about 0.6s), long before its last heartbeat is a TTL old; the
	// edge's GET /agents then shows its agent with no live worker (still
	// listed: the agent stays known). The lost grace delays nothing: it
	// keeps only an agent with no record routable, and the edge with one
	// counts listed instances as the other does.
	crash := append(slices.Clone(res.CrashTable), res.CrashEdge...)
	for _, d := range append(crash, res.CrashGraceEdge...) {
		if d > 3*time.Second {
			t.Errorf("crash leave %v, want within 3s (the TTL is %v)", d, testTTL)
		}
	}
	// A graceful stop deletes the entry: nothing waits for the TTL.
	for _, d := range append(slices.Clone(res.LeaveTable), res.LeaveGraceEdge...) {
		if d >= testTTL-res.Heartbeat {
			t.Errorf("graceful leave %v looks like a TTL expiry", d)
		}
	}
}

// startRegistryMesh starts an in-process mesh with the tests' registry
// TTL, and a context bounding the test; both end with it.
func startRegistryMesh(t *testing.T) (context.Context, bus.Config, *InProcMesh) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cfg := bus.Config{RegistryTTL: testTTL}
	m, err := StartInProcMesh(ctx, t.TempDir(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return ctx, cfg, m
}

// startGraceEdge starts a second in-process edge against natsURL, whose
// table keeps the default lost grace (the mesh's edge has none), and
// returns its URL; it stops with the test.
func startGraceEdge(ctx context.Context, t *testing.T, natsURL string, cfg bus.Config) string {
	t.Helper()
	b, nc, err := openBus(ctx, natsURL, "a2amesh-bench-grace-edge", cfg, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log := quietLogger(nil)
	table := registry.NewTable(b.Bus()) // LostGrace 0: registry.DefaultLostGrace
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var srv *http.Server
	t.Cleanup(func() {
		if srv != nil {
			_ = srv.Close()
		}
		cancel()
		wg.Wait()
		nc.Close()
	})
	wg.Add(2)
	go func() { defer wg.Done(); _ = b.Run(rctx) }()
	go func() { defer wg.Done(); _ = table.Run(rctx) }()
	select {
	case <-table.Ready():
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = edge.NewServer(edge.New(edge.Config{Store: b, Registry: table, Logger: log}), log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("grace edge: %v", err)
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestRegistryProcesses runs two graceful rounds and one crash round with
// worker processes (this test binary as TestHelperWorker) against an
// embedded NATS, an in-process edge, and a second one with the default
// lost grace.
func TestRegistryProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	ctx, cfg, m := startRegistryMesh(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	graceURL := startGraceEdge(ctx, t, m.NATSURL, cfg)
	res, err := RunRegistry(ctx, RegistryOptions{
		NATSURL: m.NATSURL, EdgeURL: m.EdgeURL, GraceEdgeURL: graceURL, Bus: cfg, Agent: "echo", Rounds: 2, CrashRounds: 1,
		Launcher: ProcessLauncher{Path: exe, Args: []string{helperTestArg, "-test.count=1"},
			// A race-enabled child otherwise sleeps 1s at exit.
			Env: []string{helperEnv + "=" + m.NATSURL, helperTTLEnv + "=" + testTTL.String(), "GORACE=atexit_sleep_ms=0"}},
		Progress: func(msg string) { t.Log(msg) },
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRegistryResult(t, res, 2, 1, true, true)
}

// TestRegistryInProcess runs one round of each kind with in-process
// workers, watching the table only.
func TestRegistryInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mesh")
	}
	ctx, cfg, m := startRegistryMesh(t)
	res, err := RunRegistry(ctx, RegistryOptions{
		NATSURL: m.NATSURL, Bus: cfg, Agent: "echo", Rounds: 1, CrashRounds: 1,
		Launcher: InProcessLauncher{NATSURL: m.NATSURL, Name: "echo", Agent: agents.Echo{}, Bus: cfg},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRegistryResult(t, res, 1, 1, false, false)
}

// TestRegistryRefusesLiveAgent: a round cannot start while another worker
// serves the agent (the table counts a live worker of it), since its
// figures would be meaningless.
func TestRegistryRefusesLiveAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mesh")
	}
	ctx, cfg, m := startRegistryMesh(t)
	l := InProcessLauncher{NATSURL: m.NATSURL, Name: "echo", Agent: agents.Echo{}, Bus: cfg}
	other, _, err := l.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = other.Stop()
		_, _ = other.Wait(10 * time.Second)
	}()
	// Start returns before the worker registers: wait until it serves
	// the agent (the edge counts a live worker of it), or the round could
	// start first.
	probe := &registryBench{o: RegistryOptions{Agent: "echo"}, client: &http.Client{Timeout: 2 * time.Second}}
	t0 := time.Now()
	if _, err := pollUntil(ctx, edgePoll, func() bool { return probe.edgeLive(ctx, m.EdgeURL, true) }); err != nil {
		t.Fatalf("the other worker never served echo: %v", err)
	}
	t.Logf("the other worker served echo after %v", time.Since(t0).Round(time.Millisecond))
	_, err = RunRegistry(ctx, RegistryOptions{NATSURL: m.NATSURL, Bus: cfg, Agent: "echo", Rounds: 1,
		Launcher: l, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "still has a live worker") {
		t.Fatalf("RunRegistry with a live agent: %v", err)
	}
}

// TestRegistryManyAgents registers a few dozen agents over a few
// connections on an in-process mesh and runs one join-and-crash round.
func TestRegistryManyAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a mesh")
	}
	ctx, cfg, m := startRegistryMesh(t)
	res, err := RunManyAgents(ctx, ManyOptions{NATSURL: m.NATSURL, Bus: cfg, EdgeURLs: []string{m.EdgeURL},
		Agents: 40, Conns: 4, Card: agents.Echo{}.Card(), Rounds: 1, Progress: func(msg string) { t.Log(msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Join) != 1 || len(res.JoinEach) != 1 || len(res.Crash) != 1 || len(res.AgentsGET) != agentsGETs {
		t.Fatalf("samples: %+v", res)
	}
	if res.Crash[0] > 3*time.Second {
		t.Errorf("crash leave %v, want within 3s (the TTL is %v)", res.Crash[0], testTTL)
	}
	if res.TableHeap <= 0 || res.LookupNs <= 0 || res.AgentsBytes <= 0 || res.TTL != testTTL {
		t.Errorf("figures: %+v", res)
	}
}

func TestSummarize(t *testing.T) {
	var v []time.Duration
	for i := 10; i >= 1; i-- {
		v = append(v, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(v)
	if s.N != 10 || s.Min != time.Millisecond || s.Median != 5*time.Millisecond || s.P90 != 9*time.Millisecond || s.Max != 10*time.Millisecond {
		t.Fatalf("Summarize: %+v", s)
	}
	if v[0] != 10*time.Millisecond {
		t.Fatal("Summarize sorted its argument")
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("Summarize(nil) not zero")
	}
}
