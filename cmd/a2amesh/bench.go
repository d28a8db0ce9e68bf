package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/a2agoecho"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/tracing"
)

func init() {
	register("bench", "load-test sends to echo vs the a2a-go SDK server; also bench scale, registry, chaos", runBench)
}

// maxBenchLevels bounds how many concurrency levels one run may ask for.
const maxBenchLevels = 16

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "scale":
			return runBenchScale(ctx, args[1:])
		case "registry":
			return runBenchRegistry(ctx, args[1:])
		case "chaos":
			return runBenchChaos(ctx, args[1:])
		case "list":
			return runBenchList(ctx, args[1:])
		case "streams":
			return runBenchStreams(ctx, args[1:])
		case "ratelimit":
			return runBenchRateLimit(ctx, args[1:])
		case "memory":
			return runBenchMemory(ctx, args[1:])
		case "loadgen": // started by bench itself (bench_loadgen.go)
			return runBenchLoadgen(ctx, args[1:])
		}
	}
	fs := newFlagSet("bench", "",
		"Load-test sends to the echo agent, side by side with the a2a-go SDK's server.\n\n"+
			"Starts a dev mesh in this process (or uses --url) and an a2a-go echo server on\n"+
			"loopback, loads each with the same requests at every --concurrency level, and\n"+
			"prints tasks/s, p50 and p99 latency and errors for both.\n\n"+
			"Other benchmarks, each with its own -h:\n"+
			"  a2amesh bench scale      throughput as workers are added to one agent\n"+
			"  a2amesh bench registry   how long workers take to join and leave the registry\n"+
			"  a2amesh bench chaos      faults under load, then a check of every task\n"+
			"  a2amesh bench list       ListTasks latency as the retained tasks grow\n"+
			"  a2amesh bench streams    open SSE streams on one edge: memory, CPU, event latency\n"+
			"  a2amesh bench ratelimit  one principal's calls admitted across 1, 2, 4 edges vs the rate limit\n"+
			"  a2amesh bench memory     RSS of nats, edge and worker (or dev) and disk as tasks pass --max-tasks")
	duration := fs.Duration("duration", 10*time.Second, fmt.Sprintf("how long to load each server at each concurrency level (at most %v)", bench.MaxDuration))
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each measurement; 0: none")
	levelsFlag := fs.String("concurrency", "1,16,64", fmt.Sprintf("comma-separated numbers of concurrent clients, each in [1, %d], at most %d levels", bench.MaxConcurrency, maxBenchLevels))
	url := fs.String("url", "", "bench an existing mesh at this base URL (or an agent endpoint .../agents/NAME) instead of\nstarting a dev mesh (env A2AMESH_BENCH_URL; default: a dev mesh in this process)")
	dataDir := fs.String("data", "", "dev mesh data directory (default: a temporary directory, removed afterwards)")
	push := fs.Bool("push", true, "run the dev mesh with push delivery on, as the dev command does (--push=false: off)")
	otlpSink := fs.Bool("otlp-sink", false, "trace the dev mesh, exporting over OTLP/HTTP to a receiver on loopback that counts and drops the spans (the cost of tracing, without a Jaeger)")
	method := fs.String("method", bench.MethodSend03, `JSON-RPC method: "message/send" (0.3 body) or "SendMessage" (1.0 body); both servers get the same`)
	bindingsFlag := fs.String("binding", bench.BindingJSONRPC, `comma-separated bindings to load, each against a2a-go's server for the same binding:`+
		"\n"+`"jsonrpc", "rest" (HTTP+JSON), "grpc", or "all"; rest and grpc send 1.0 SendMessage`)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of each measured run of the mesh (not of a2a-go's) to FILE-<binding>-<clients>.pprof;\n"+
		"with the dev mesh in this process it covers the edge, the embedded NATS server, the workers and the load generator (default: none)")
	loadgen := fs.String("loadgen", "process", `"process": the load generator runs as a process of its own (the default), whose CPU use is reported;`+"\n"+
		`"inprocess": in the bench's process, beside the servers`)
	grpcURL := fs.String("grpc-url", "", "with --url and --binding grpc: the mesh's gRPC address (host:port); default: none (the dev mesh's own without --url)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bindings, err := parseBindings(*bindingsFlag)
	if err != nil {
		return err
	}
	if *loadgen != "process" && *loadgen != "inprocess" {
		return fmt.Errorf("--loadgen must be process or inprocess")
	}
	if *url == "" {
		*url = os.Getenv("A2AMESH_BENCH_URL")
	}
	levels, err := parseLevels(*levelsFlag)
	if err != nil {
		return err
	}
	if *duration <= 0 || *duration > bench.MaxDuration {
		return fmt.Errorf("--duration must be in (0, %v]", bench.MaxDuration)
	}
	if *warmup < 0 || *warmup > bench.MaxDuration {
		return fmt.Errorf("--warmup must be in [0, %v]", bench.MaxDuration)
	}
	if *method != bench.MethodSend03 && *method != bench.MethodSend10 {
		return fmt.Errorf("--method must be %q or %q", bench.MethodSend03, bench.MethodSend10)
	}

	meshURL := strings.TrimSuffix(*url, "/")
	if meshURL == "" {
		dir, cleanup, err := benchDataDir(*dataDir, "a2amesh-bench-*")
		if err != nil {
			return err
		}
		defer cleanup()
		logger := benchLogger()
		// Tracing as `dev` sets it up: from the OTEL_* variables, or at
		// the loopback sink.
		if *otlpSink {
			sink, err := startOTLPSink()
			if err != nil {
				return err
			}
			defer sink.report(os.Stdout)
			os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url)
		}
		stopTracing, err := startTracing(ctx, tracing.ServiceDev, logger)
		if err != nil {
			return err
		}
		defer stopTracing()
		// As `dev` runs by default: push delivery on (its dispatcher reads
		// every event), no auth, no rate limit.
		m, err := mesh.Start(ctx, mesh.Config{Listen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: dir, Logger: logger,
			Edge: edge.Config{Push: edge.PushConfig{Enabled: *push}}})
		if err != nil {
			return fmt.Errorf("starting dev mesh: %w", err)
		}
		defer m.Close()
		meshURL = strings.TrimSuffix(m.URL(), "/")
		*grpcURL = m.GRPCAddr()
	}
	meshEndpoint := meshURL
	if !strings.Contains(meshURL, "/agents/") {
		meshEndpoint = meshURL + "/agents/echo"
	}
	for i, b := range bindings {
		if i > 0 {
			fmt.Println()
		}
		target := benchTarget{binding: b, mesh: meshEndpoint, method: *method, profile: *cpuProfile, ownProcess: *loadgen == "process"}
		if b != bench.BindingJSONRPC {
			target.method = bench.MethodSend10
		}
		if b == bench.BindingGRPC {
			if *grpcURL == "" {
				return errors.New("--binding grpc with --url needs --grpc-url (the mesh's gRPC host:port)")
			}
			target.mesh, target.tenant = *grpcURL, "echo"
		}
		if err := benchBinding(ctx, target, levels, *duration, *warmup); err != nil {
			return err
		}
	}
	return nil
}

// benchTarget is what one binding's run loads: the mesh's endpoint for
// the binding (and the tenant that names echo there), and the method.
type benchTarget struct {
	binding, mesh, tenant, method string
	// profile, when set, is the prefix of the CPU profile files of the
	// mesh's runs.
	profile string
	// ownProcess runs the load generator as a process of its own.
	ownProcess bool
}

// profiled runs run under a CPU profile written to path ("": none).
func profiled(path string, run func() (bench.Result, error)) (bench.Result, error) {
	if path == "" {
		return run()
	}
	f, err := os.Create(path)
	if err != nil {
		return bench.Result{}, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return bench.Result{}, err
	}
	defer pprof.StopCPUProfile()
	return run()
}

// goBinding is a2agoecho's name of a bench binding.
var goBinding = map[string]string{
	bench.BindingJSONRPC: "JSONRPC",
	bench.BindingREST:    "HTTP+JSON",
	bench.BindingGRPC:    "GRPC",
}

// benchBinding loads the mesh and a2a-go's server for the same binding at
// each level, alternately, and prints a table and the ratio at the top
// level.
func benchBinding(ctx context.Context, t benchTarget, levels []int, duration, warmup time.Duration) error {
	var goEndpoint string
	if t.binding == bench.BindingJSONRPC {
		goURL, stopGo, err := a2agoecho.Start(ctx)
		if err != nil {
			return fmt.Errorf("starting a2a-go echo server: %w", err)
		}
		defer stopGo()
		goEndpoint = bench.A2AGoEndpoint(goURL, t.method)
	} else {
		srv, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{Binding: goBinding[t.binding]})
		if err != nil {
			return fmt.Errorf("starting a2a-go echo server: %w", err)
		}
		defer srv.Stop()
		goEndpoint = srv.Endpoint
	}

	fmt.Printf("bench %s: %s, %v per level (+%v warmup)\n  mesh:   %s\n  a2a-go: %s\n",
		t.binding, t.method, duration, warmup, t.mesh, goEndpoint)

	type row struct {
		clients     int
		mesh, a2ago bench.Result
		meshE, a2aE error
		// meshGen and goGen are the load generator's CPU use in each
		// run (with ownProcess).
		meshGen, goGen loadgenReport
	}
	rows := make([]row, 0, len(levels))
	for _, n := range levels {
		r := row{clients: n}
		// Alternate which server goes first so slow drift (thermal,
		// GC of the previous run) does not always favour the same one.
		var gen loadgenReport
		runOne := func(endpoint, tenant string) (bench.Result, error) {
			o := bench.Options{
				URL: endpoint, Concurrency: n, Duration: duration, Method: t.method,
				Binding: t.binding, Tenant: tenant,
			}
			if t.ownProcess {
				var err error
				gen, err = runLoadgen(ctx, o, warmup)
				return gen.Result, err
			}
			o.Warmup = warmup
			return bench.Run(ctx, o)
		}
		runMesh := func() (bench.Result, error) {
			path := ""
			if t.profile != "" {
				path = fmt.Sprintf("%s-%s-%d.pprof", t.profile, t.binding, n)
			}
			return profiled(path, func() (bench.Result, error) { return runOne(t.mesh, t.tenant) })
		}
		if len(rows)%2 == 0 {
			r.mesh, r.meshE = runMesh()
			r.meshGen = gen
			r.a2ago, r.a2aE = runOne(goEndpoint, "")
			r.goGen = gen
		} else {
			r.a2ago, r.a2aE = runOne(goEndpoint, "")
			r.goGen = gen
			r.mesh, r.meshE = runMesh()
			r.meshGen = gen
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.meshE != nil || r.a2aE != nil {
			return fmt.Errorf("%s at %d clients: %w", t.binding, n, errors.Join(r.meshE, r.a2aE))
		}
		reportErrors(os.Stderr, "mesh", n, r.mesh)
		reportErrors(os.Stderr, "a2a-go", n, r.a2ago)
		rows = append(rows, r)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	gen := ""
	if t.ownProcess {
		gen = "load gen CPU\t"
	}
	fmt.Fprintln(tw, "clients\tmesh tasks/s\tp50\tp99\terrors\t"+gen+"a2a-go tasks/s\tp50\tp99\terrors\t"+gen)
	for _, r := range rows {
		mg, gg := "", ""
		if t.ownProcess {
			mg, gg = fmtGen(r.meshGen)+"\t", fmtGen(r.goGen)+"\t"
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%d\t%s%.0f\t%s\t%s\t%d\t%s\n", r.clients,
			r.mesh.Throughput, fmtLatency(r.mesh.P50), fmtLatency(r.mesh.P99), r.mesh.Errors, mg,
			r.a2ago.Throughput, fmtLatency(r.a2ago.P50), fmtLatency(r.a2ago.P99), r.a2ago.Errors, gg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if t.ownProcess {
		fmt.Println("load gen CPU: the load generator's own CPU use during the run, in cores and as a share of the machine's CPU time")
	}

	// The last line: the ratio at the highest level.
	top := rows[0]
	for _, r := range rows {
		if r.clients > top.clients {
			top = r
		}
	}
	ratio := "n/a"
	if top.a2ago.Throughput > 0 {
		ratio = fmt.Sprintf("%.2fx", top.mesh.Throughput/top.a2ago.Throughput)
	}
	fmt.Printf("ratio mesh/a2a-go (%s) at %d clients: %s\n", t.binding, top.clients, ratio)
	return nil
}

// parseBindings reads --binding: names of bench bindings, or "all".
func parseBindings(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "":
			continue
		case "all":
			return []string{bench.BindingJSONRPC, bench.BindingREST, bench.BindingGRPC}, nil
		case "http+json":
			f = bench.BindingREST
		case bench.BindingJSONRPC, bench.BindingREST, bench.BindingGRPC:
		default:
			return nil, fmt.Errorf("--binding: %q is not jsonrpc, rest, grpc or all", f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--binding: no binding given")
	}
	return out, nil
}

// parseLevels reads "1,16,64" into distinct positive levels, in order.
func parseLevels(s string) ([]int, error) {
	var levels []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > bench.MaxConcurrency {
			return nil, fmt.Errorf("--concurrency: %q is not a number in [1, %d]", f, bench.MaxConcurrency)
		}
		if !seen[n] {
			seen[n] = true
			levels = append(levels, n)
		}
	}
	if len(levels) == 0 {
		return nil, errors.New("--concurrency: no levels given")
	}
	if len(levels) > maxBenchLevels {
		return nil, fmt.Errorf("--concurrency: at most %d levels", maxBenchLevels)
	}
	return levels, nil
}

// benchDataDir is the data directory of a bench's dev mesh: dir, or a
// temporary one named by pattern that cleanup removes.
func benchDataDir(dir, pattern string) (_ string, cleanup func(), _ error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// benchLogger logs a bench's dev mesh at warn level and up only, as for
// the a2a-go server: per-request logging would be measured too.
func benchLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// fmtGen renders a load generator's CPU use: cores, and its share of the
// machine's CPU time where known.
func fmtGen(r loadgenReport) string {
	s := fmt.Sprintf("%.2f cores", r.Cores())
	if sh := r.Share(); sh > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*sh)
	}
	return s
}

func fmtLatency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func reportErrors(w io.Writer, who string, clients int, r bench.Result) {
	if r.Errors == 0 {
		return
	}
	fmt.Fprintf(w, "%s at %d clients: %d errors\n", who, clients, r.Errors)
	for _, s := range r.ErrorSummary() {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

// benchBinary is the a2amesh binary a bench starts processes of: bin when
// given, else this one.
func benchBinary(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w", err)
	}
	return exe, nil
}

// runBenchScale measures how throughput grows with the workers of one agent
// (bench.RunScale).
func runBenchScale(ctx context.Context, args []string) error {
	fs := newFlagSet("bench scale", "",
		"Measure how throughput grows as workers are added to one agent.\n\n"+
			"For each --workers count, starts a fresh mesh on loopback whose slow agent waits\n"+
			"--work per task, loads it with --clients blocking senders, and prints tasks/s\n"+
			"against the ideal, latency, in-flight counts and memory. Fails if a worker ever\n"+
			"ran more tasks at once than its --concurrency.")
	workersFlag := fs.String("workers", "1,2,4", fmt.Sprintf("comma-separated worker counts, each in [1, %d] and measured on a fresh mesh", bench.MaxScaleWorkers))
	concurrency := fs.Int("concurrency", 8, "each worker's task limit (worker --concurrency)")
	work := fs.Duration("work", 100*time.Millisecond, fmt.Sprintf("how long the slow agent waits per task (at most %v)", bench.MaxScaleWork))
	clients := fs.Int("clients", 64, "concurrent clients, each with one blocking send in flight")
	duration := fs.Duration("duration", 10*time.Second, "measurement per worker count")
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each measurement; 0: none")
	method := fs.String("method", bench.MethodSend10, `JSON-RPC method: "SendMessage" (1.0 body) or "message/send" (0.3 body)`)
	edgeMode := fs.String("edge", "process", `"process": the edge runs as an 'a2amesh edge' process of this binary (its memory is measured);`+"\n"+`"inprocess": in the bench's process`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var edgeBin string
	switch *edgeMode {
	case "process":
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--edge process: finding this binary: %w", err)
		}
		edgeBin = exe
	case "inprocess":
	default:
		return fmt.Errorf(`--edge must be "process" or "inprocess"`)
	}
	workers, err := parseList("--workers", *workersFlag, bench.MaxScaleWorkers)
	if err != nil {
		return err
	}
	o := bench.ScaleOptions{
		Workers: workers, Concurrency: *concurrency, Work: *work, Clients: *clients,
		Duration: *duration, Warmup: *warmup, Method: *method, EdgeBin: edgeBin,
		Progress: func(msg string) { fmt.Fprintln(os.Stderr, "bench scale:", msg) },
	}
	rows, err := bench.RunScale(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("bench scale: agent slow (waits %v per task), %s, %d clients, worker concurrency %d, %v per count (+%v warmup), edge %s\n",
		*work, *method, *clients, *concurrency, *duration, *warmup, *edgeMode)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tideal/s\ttasks/s\tvs 1\tefficiency\tp50\tp99\terrors\tmax in-flight per worker\tmax in-flight\tmax acked-pending\tmax queued\tbench heap peak\tedge RSS start / 1st / 2nd half / peak\t")
	for _, r := range rows {
		edgeMem := "-"
		if r.EdgeRSSPeak > 0 {
			edgeMem = fmt.Sprintf("%s / %s / %s / %s", fmtMiB(r.EdgeRSSStart), fmtMiB(r.EdgeRSSFirstHalf), fmtMiB(r.EdgeRSSSecondHalf), fmtMiB(r.EdgeRSSPeak))
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.2fx\t%.0f%%\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t\n",
			r.Workers, r.Ideal, r.Result.Throughput, r.Speedup, 100*r.Efficiency,
			fmtLatency(r.Result.P50), fmtLatency(r.Result.P99), r.Result.Errors,
			bench.FormatInFlight(r.MaxInFlight), r.MaxInFlightTotal, r.MaxAckPending, r.MaxQueued,
			fmtMiB(r.PeakHeap), edgeMem)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Println("ideal = min(workers×concurrency, clients) / work; efficiency = tasks/s ÷ ideal; vs 1 = tasks/s ÷ tasks/s of 1 worker (of the first count when 1 is not measured)")
	fmt.Println("max in-flight: agent runs at once (counted in the agent); acked-pending and queued: the agent's consumer, sampled every 100ms")
	fmt.Println("bench heap: Go heap of this process (load generator, NATS, workers, and the edge with --edge inprocess)")
	for _, r := range rows {
		if r.Workers*r.Concurrency > r.Clients {
			fmt.Fprintf(os.Stderr, "note: at %d workers there are fewer clients (%d) than slots (%d): the clients, not the workers, bound throughput\n",
				r.Workers, r.Clients, r.Workers*r.Concurrency)
		}
		reportErrors(os.Stderr, fmt.Sprintf("%d workers", r.Workers), *clients, r.Result)
		if m := bench.MaxOf(r.MaxInFlight); m > int64(*concurrency) {
			return fmt.Errorf("backpressure violated: a worker ran %d tasks at once, above its concurrency %d", m, *concurrency)
		}
	}
	return nil
}

func fmtMiB(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// parseList reads "1,2,4" into distinct numbers in [1, maxN], in order.
func parseList(flagName, s string, maxN int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > maxN {
			return nil, fmt.Errorf("%s: %q is not a number in [1, %d]", flagName, f, maxN)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: nothing given", flagName)
	}
	if len(out) > maxBenchLevels {
		return nil, fmt.Errorf("%s: at most %d values", flagName, maxBenchLevels)
	}
	return out, nil
}

// runBenchRegistry measures how long workers take to join and leave the
// registry as the edges see it (bench.RunRegistry).
func runBenchRegistry(ctx context.Context, args []string) error {
	fs := newFlagSet("bench registry", "",
		"Measure how long workers take to join and leave the registry, as edges see it.\n\n"+
			"Starts a mesh on loopback, then, round after round, starts a worker, waits until\n"+
			"it is listed, stops it (or kills it, in crash rounds) and waits until it is gone;\n"+
			"prints min, median, p90 and max of each step as a markdown table.")
	rounds := fs.Int("rounds", 20, fmt.Sprintf("graceful rounds, in [0, %d]: start a worker, wait until it is listed, stop it, wait until it is gone", bench.MaxRegistryRounds))
	crashRounds := fs.Int("crash-rounds", -1, "crash rounds: start a worker, wait until it is listed, kill it, wait until the edges refuse sends to it;\n-1: as many as --rounds")
	mode := fs.String("mode", "process", `"process": 'a2amesh nats', 'a2amesh edge' and each worker are processes of this binary;`+"\n"+`"inprocess": embedded NATS, edge and agentrt.Workers in this process, each with its own NATS connection`)
	agent := fs.String("agent", "echo", "built-in agent the workers run")
	ttl := fs.Duration("ttl", 0, fmt.Sprintf("registry TTL, --mode inprocess only; 0: the bus default (%v)", bus.DefaultConfig.RegistryTTL))
	bin := fs.String("bin", "", "a2amesh binary for --mode process (default: this one)")
	many := fs.Int("agents", 0, fmt.Sprintf("many agents, --mode process only: register this many agents (e.g. 1000, at most %d) over --conns connections\n"+
		"on a mesh with two edges, measure the edges' memory and CPU, GET /agents and route lookups, then\n"+
		"--rounds times a new agent's join and crash at that scale; 0: the join and leave rounds", bench.MaxManyAgents))
	conns := fs.Int("conns", 10, "with --agents: the worker connections (processes) the agents are spread over")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *many != 0 {
		if *mode != "process" || *ttl != 0 {
			return errors.New("--agents works with --mode process and the default TTL only")
		}
		return runBenchRegistryMany(ctx, *bin, *many, *conns, *rounds, *agent)
	}
	if *crashRounds < 0 {
		*crashRounds = *rounds
	}
	if *rounds < 0 || *rounds > bench.MaxRegistryRounds || *crashRounds > bench.MaxRegistryRounds || *rounds+*crashRounds == 0 {
		return fmt.Errorf("--rounds and --crash-rounds must be in [0, %d], not both 0", bench.MaxRegistryRounds)
	}
	a, ok := agents.Builtin()[*agent]
	if !ok {
		return fmt.Errorf("--agent must name a built-in agent, got %q", *agent)
	}
	o := bench.RegistryOptions{Agent: *agent, Rounds: *rounds, CrashRounds: *crashRounds,
		Progress: func(msg string) { fmt.Fprintln(os.Stderr, "bench registry:", msg) }}
	switch *mode {
	case "process":
		if *ttl != 0 {
			return errors.New("--ttl works with --mode inprocess only (a worker process uses the bus default)")
		}
		path, err := benchBinary(*bin)
		if err != nil {
			return err
		}
		m, err := bench.StartProcMesh(ctx, path, "")
		if err != nil {
			return err
		}
		defer m.Close()
		o.NATSURL, o.EdgeURL = m.NATSURL, m.EdgeURL
		// A second edge with the default lost grace: a known crash skips it.
		ge, geURL, err := bench.StartEdgeProc(ctx, path, m.NATSURL)
		if err != nil {
			return err
		}
		defer ge.Stop(5 * time.Second)
		o.GraceEdgeURL = geURL
		o.Launcher = bench.ProcessLauncher{Path: path,
			Args: []string{"worker", "--nats", m.NATSURL, "--agent", *agent, "--log-level", "warn"}}
	case "inprocess":
		cfg := bus.Config{RegistryTTL: *ttl}
		m, err := bench.StartInProcMesh(ctx, "", cfg, nil)
		if err != nil {
			return err
		}
		defer m.Close()
		o.NATSURL, o.EdgeURL, o.Bus = m.NATSURL, m.EdgeURL, cfg
		o.Launcher = bench.InProcessLauncher{NATSURL: m.NATSURL, Name: *agent, Agent: a, Bus: cfg}
	default:
		return errors.New(`--mode must be "process" or "inprocess"`)
	}
	res, err := bench.RunRegistry(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("bench registry: --mode %s, agent %s, registry TTL %v, heartbeat every %v (TTL/3); edges probe each worker connection every %v\n\n",
		*mode, *agent, res.TTL, res.Heartbeat.Round(time.Millisecond), bench.RegistryProbeEvery)
	start := "process start"
	stop, kill := "SIGTERM", "SIGKILL"
	if *mode == "inprocess" {
		start, stop, kill = "Worker.Run", "context cancel", "connection closed, then cancel"
	}
	fmt.Println("| measure | n | min | median | p90 | max |")
	fmt.Println("|---|---|---|---|---|---|")
	row := func(name string, v []time.Duration) {
		if len(v) == 0 {
			return
		}
		s := bench.Summarize(v)
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", name, s.N, fmtDur(s.Min), fmtDur(s.Median), fmtDur(s.P90), fmtDur(s.Max))
	}
	row("join: "+start+" → listed by a Table", res.JoinTable)
	row("join: "+start+" → listed by the edge's GET /agents", res.JoinEdge)
	row("leave, graceful: "+stop+" → gone from a Table", res.LeaveTable)
	row("leave, graceful: "+stop+" → the edge refuses sends", res.LeaveEdge)
	row("leave, graceful: "+stop+" → worker exited", res.StopExit)
	row("leave, crash: "+kill+" → gone from a Table", res.CrashTable)
	row("leave, crash: "+kill+" → the edge refuses sends", res.CrashEdge)
	row("join: "+start+" → listed by the edge with a 30s lost grace", res.JoinGraceEdge)
	row("leave, graceful: "+stop+" → the edge with a 30s lost grace refuses sends", res.LeaveGraceEdge)
	row("leave, crash: "+kill+" → the edge with a 30s lost grace refuses sends", res.CrashGraceEdge)
	return nil
}

// fmtDur renders d with three significant digits or so, in µs, ms or s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}
