package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bench"
	"github.com/a2amesh/a2amesh/edge"
)

// runBenchRateLimit measures how many calls of one principal a fleet of
// edges admits, each edge limiting on its own and the edges sharing one
// budget (edge.Limits, limit_fleet.go).
func runBenchRateLimit(ctx context.Context, args []string) error {
	fs := newFlagSet("bench ratelimit", "",
		"Measure a rate limit across edges.\n\n"+
			"For each --edges count, starts an embedded NATS server on loopback and that many\n"+
			"edges in this process (each with its own NATS connection and HTTP port) with\n"+
			"--rate and --burst, then sends one principal's calls (JSON-RPC GetTask, from\n"+
			"127.0.0.1, no auth) round robin across them at --drive calls/s for --duration,\n"+
			"and prints the calls admitted per second against the rate: with each edge\n"+
			"limiting on its own (scope edge, before) and the edges sharing (scope fleet).")
	rate := fs.Float64("rate", 50, "--rate-limit of every edge: calls per second per principal")
	burst := fs.Int("burst", 50, "--rate-burst of every edge")
	edgesFlag := fs.String("edges", "1,2,4", fmt.Sprintf("comma-separated edge counts, each in [1, %d]", bench.MaxRateLimitEdges))
	scopes := fs.String("scope", "edge,fleet", `comma-separated --rate-limit-scope values to measure: "edge" (each edge on its own), "fleet" (shared)`)
	drive := fs.Float64("drive", 0, fmt.Sprintf("calls per second sent in all (default: the larger of 10×rate and 2×rate×edges; at most %d)", bench.MaxRateLimitDrive))
	duration := fs.Duration("duration", 10*time.Second, "how long calls are sent at each edge count and scope")
	shareEvery := fs.Duration("share-every", 100*time.Millisecond, "how often each edge reports what it admitted (scope fleet)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var counts []int
	for _, f := range strings.Split(*edgesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > bench.MaxRateLimitEdges {
			return fmt.Errorf("--edges: %q: want numbers in [1, %d]", f, bench.MaxRateLimitEdges)
		}
		counts = append(counts, n)
	}
	if len(counts) > maxBenchLevels {
		return fmt.Errorf("--edges: at most %d counts", maxBenchLevels)
	}
	var perEdge []bool
	for _, s := range strings.Split(*scopes, ",") {
		switch strings.TrimSpace(s) {
		case "edge":
			perEdge = append(perEdge, true)
		case "fleet":
			perEdge = append(perEdge, false)
		default:
			return fmt.Errorf("--scope: %q: want edge or fleet", s)
		}
	}
	if !(*rate > 0) || *burst < 1 || *duration <= 0 || *duration > bench.MaxDuration || *drive < 0 || *shareEvery <= 0 {
		return fmt.Errorf("--rate, --burst, --share-every must be positive, --drive not negative, --duration in (0, %v]", bench.MaxDuration)
	}
	return bench.RateLimits(ctx, os.Stdout, bench.RateLimitOptions{Drive: *drive, Duration: *duration, Logger: benchLogger(),
		Limits: edge.Limits{Rate: *rate, Burst: *burst, ShareEvery: *shareEvery}}, counts, perEdge)
}
