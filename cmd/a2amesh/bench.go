package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/internal/bench"
	"github.com/a2amesh/a2amesh/internal/devmesh"
)

func init() {
	register("bench", "load-test message/send against echo, vs the a2a-go SDK server", runBench)
}

// maxBenchLevels bounds how many concurrency levels one run may ask for.
const maxBenchLevels = 16

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	duration := fs.Duration("duration", 10*time.Second, "how long to load each server at each concurrency level")
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each measurement")
	levelsFlag := fs.String("concurrency", "1,16,64", "comma-separated numbers of concurrent clients")
	url := fs.String("url", envOr("A2AMESH_BENCH_URL", ""), "bench an existing edge at this base URL instead of starting a dev mesh")
	dataDir := fs.String("data", "", "dev mesh data directory (default: a temporary directory, removed afterwards)")
	method := fs.String("method", bench.MethodSend03, `JSON-RPC method: "message/send" (0.3 body) or "SendMessage" (1.0 body); both servers get the same`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
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
		dir := *dataDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "a2amesh-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		// Warn level and up only, as for the a2a-go server: per-request
		// logging would be measured too.
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		m, err := devmesh.Start(ctx, devmesh.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: logger})
		if err != nil {
			return fmt.Errorf("starting dev mesh: %w", err)
		}
		defer m.Close()
		meshURL = strings.TrimSuffix(m.URL(), "/")
	}
	meshEndpoint := meshURL
	if !strings.Contains(meshURL, "/agents/") {
		meshEndpoint = meshURL + "/agents/echo"
	}

	goURL, stopGo, err := bench.StartA2AGoEcho(ctx)
	if err != nil {
		return fmt.Errorf("starting a2a-go echo server: %w", err)
	}
	defer stopGo()
	goEndpoint := bench.A2AGoEndpoint(goURL, *method)

	fmt.Printf("bench: %s, %v per level (+%v warmup)\n  mesh:   %s\n  a2a-go: %s\n",
		*method, *duration, *warmup, meshEndpoint, goEndpoint)

	type row struct {
		clients     int
		mesh, a2ago bench.Result
		meshE, a2aE error
	}
	rows := make([]row, 0, len(levels))
	for _, n := range levels {
		r := row{clients: n}
		// Alternate which server goes first so slow drift (thermal,
		// GC of the previous run) does not always favour the same one.
		runOne := func(endpoint string) (bench.Result, error) {
			return bench.Run(ctx, bench.Options{
				URL: endpoint, Concurrency: n, Duration: *duration, Warmup: *warmup, Method: *method,
			})
		}
		if len(rows)%2 == 0 {
			r.mesh, r.meshE = runOne(meshEndpoint)
			r.a2ago, r.a2aE = runOne(goEndpoint)
		} else {
			r.a2ago, r.a2aE = runOne(goEndpoint)
			r.mesh, r.meshE = runOne(meshEndpoint)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.meshE != nil || r.a2aE != nil {
			return fmt.Errorf("at %d clients: %w", n, errors.Join(r.meshE, r.a2aE))
		}
		reportErrors(os.Stderr, "mesh", n, r.mesh)
		reportErrors(os.Stderr, "a2a-go", n, r.a2ago)
		rows = append(rows, r)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tmesh tasks/s\tp50\tp99\terrors\ta2a-go tasks/s\tp50\tp99\terrors\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%d\t%.0f\t%s\t%s\t%d\t\n", r.clients,
			r.mesh.Throughput, fmtLatency(r.mesh.P50), fmtLatency(r.mesh.P99), r.mesh.Errors,
			r.a2ago.Throughput, fmtLatency(r.a2ago.P50), fmtLatency(r.a2ago.P99), r.a2ago.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
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
	fmt.Printf("ratio mesh/a2a-go at %d clients: %s\n", top.clients, ratio)
	return nil
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
