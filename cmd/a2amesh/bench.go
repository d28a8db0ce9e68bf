package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bench"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
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
		case "fleet":
			return runBenchFleet(ctx, args[1:])
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
			"  a2amesh bench fleet      scale from zero, registry across NATS restarts, rolling restarts\n"+
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
	auditOn := fs.Bool("audit", true, "run the dev mesh with the audit log on, as the dev command does (--audit=false: off, to measure its cost)")
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

	o := bench.CompareOptions{MeshURL: *url, GRPCAddr: *grpcURL, Bindings: bindings, Method: *method,
		Levels: levels, Duration: *duration, Warmup: *warmup, CPUProfile: *cpuProfile}
	if *loadgen == "process" {
		if o.LoadgenBin, err = benchBinary(""); err != nil {
			return err
		}
	}
	if o.MeshURL == "" {
		dir, cleanup, err := benchDataDir(*dataDir, "a2amesh-bench-*")
		if err != nil {
			return err
		}
		defer cleanup()
		logger := benchLogger()
		// Tracing as `dev` sets it up: from the OTEL_* variables, or at
		// the loopback sink.
		if *otlpSink {
			sink, err := bench.StartOTLPSink()
			if err != nil {
				return err
			}
			defer sink.Report(os.Stdout)
			os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
		}
		stopTracing, err := startTracing(ctx, tracing.ServiceDev, logger)
		if err != nil {
			return err
		}
		defer stopTracing()
		// As `dev` runs by default: push delivery on (its dispatcher reads
		// every event), the audit log on, no auth, no rate limit.
		m, err := mesh.Start(ctx, mesh.Config{Listen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0", DataDir: dir, Logger: logger,
			Edge: edge.Config{Push: edge.PushConfig{Enabled: *push}}, Audit: *auditOn})
		if err != nil {
			return fmt.Errorf("starting dev mesh: %w", err)
		}
		defer m.Close()
		o.MeshURL, o.GRPCAddr = m.URL(), m.GRPCAddr()
	}
	return bench.Compare(ctx, o)
}

// runBenchLoadgen is `a2amesh bench loadgen`, not listed: the load
// generator as a process of its own, which bench starts
// (bench.RunLoadgen). It prints its bench.LoadgenReport as JSON.
func runBenchLoadgen(ctx context.Context, args []string) error {
	fs := newFlagSet("bench loadgen", "", "The load generator of a2amesh bench, as a process of its own (bench starts it).")
	var o bench.Options
	fs.StringVar(&o.URL, "url", "", "endpoint to load")
	fs.StringVar(&o.Binding, "binding", bench.BindingJSONRPC, "jsonrpc, rest or grpc")
	fs.StringVar(&o.Tenant, "tenant", "", "tenant of every request (default: none)")
	fs.StringVar(&o.Method, "method", "", "JSON-RPC method (default: the binding's)")
	fs.IntVar(&o.Concurrency, "concurrency", 1, "concurrent clients")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured load")
	warmup := fs.Duration("warmup", 0, "unmeasured load first; 0: none")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rep, err := bench.Loadgen(ctx, o, *warmup)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
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
	return bench.ReportScale(os.Stdout, os.Stderr, o, rows)
}

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
			"the agent shows a live worker, stops it (or kills it, in crash rounds) and waits\n"+
			"until the agent shows none (it stays known, listed by GET /agents with 0 workers);\n"+
			"prints min, median, p90 and max of each step as a markdown table.")
	rounds := fs.Int("rounds", 20, fmt.Sprintf("graceful rounds, in [0, %d]: start a worker, wait until it is counted live, stop it, wait until it is not", bench.MaxRegistryRounds))
	crashRounds := fs.Int("crash-rounds", -1, "crash rounds: start a worker, wait until it is counted live, kill it, wait until the edges show its agent with no live worker;\n-1: as many as --rounds")
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
	a, ok := agents.Builtin()[*agent]
	if !ok {
		return fmt.Errorf("--agent must name a built-in agent, got %q", *agent)
	}
	if *mode == bench.RegistryProcess || *many != 0 {
		path, err := benchBinary(*bin)
		if err != nil {
			return err
		}
		*bin = path
	}
	progress := func(msg string) { fmt.Fprintln(os.Stderr, "bench registry:", msg) }
	if *many != 0 {
		if *mode != bench.RegistryProcess || *ttl != 0 {
			return errors.New("--agents works with --mode process and the default TTL only")
		}
		res, err := bench.RunManyAgentsOnProcs(ctx, *bin, bench.ManyOptions{
			Agents: *many, Conns: *conns, Card: a.Card(), Rounds: *rounds, Progress: progress})
		if err != nil {
			return err
		}
		bench.PrintManyAgents(os.Stdout, *many, *agent, res)
		return nil
	}
	if *crashRounds < 0 {
		*crashRounds = *rounds
	}
	if *rounds < 0 || *rounds > bench.MaxRegistryRounds || *crashRounds > bench.MaxRegistryRounds || *rounds+*crashRounds == 0 {
		return fmt.Errorf("--rounds and --crash-rounds must be in [0, %d], not both 0", bench.MaxRegistryRounds)
	}
	res, err := bench.RunRegistryOn(ctx, *mode, *bin, a, *ttl,
		bench.RegistryOptions{Agent: *agent, Rounds: *rounds, CrashRounds: *crashRounds, Progress: progress})
	if err != nil {
		return err
	}
	bench.PrintRegistry(os.Stdout, *mode, *agent, res)
	return nil
}
