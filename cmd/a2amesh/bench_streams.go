package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bench"
)

// runBenchStreams holds many SSE streams open on one edge and measures
// what they cost (bench.RunStreams).
func runBenchStreams(ctx context.Context, args []string) error {
	fs := newFlagSet("bench streams", "",
		"Hold N SSE streams (SubscribeToTask) open on one edge and measure what they cost.\n\n"+
			"Starts `a2amesh nats`, `a2amesh edge` and `a2amesh worker --agent slow` as processes\n"+
			"of this binary (or uses --url), starts N/--per-task slow tasks emitting a chunk every\n"+
			"--chunk-delay, opens --streams streams on them, holds them --hold, then cancels the\n"+
			"tasks and checks every stream (every chunk once, in order, to the task's final state).\n"+
			"Reports the edge's and the NATS server's RSS and CPU, memory per stream, the time to\n"+
			"open the streams, and event latency (append to SSE delivery). Raises the open-files\n"+
			"limit to its hard limit (the processes it starts inherit it).")
	streams := fs.Int("streams", 1000, fmt.Sprintf("streams to hold open (1 to %d)", bench.MaxStreams))
	perTask := fs.Int("per-task", 10, "streams per task")
	delay := fs.Duration("chunk-delay", time.Second, "the slow agent's delay between chunks")
	hold := fs.Duration("hold", 30*time.Second, "how long the streams stay open once all are open (measured)")
	openConc := fs.Int("open-concurrency", 64, "streams being opened at once")
	url := fs.String("url", "", "use the mesh at this base URL (it must serve the slow agent) instead of starting processes; no RSS or CPU then")
	natsURL := fs.String("nats", "", "with --url: its NATS server, for event latency (default: none)")
	edgeArgs := fs.String("edge-args", "", "extra arguments for the edge process, space-separated")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o := bench.StreamsOptions{Streams: *streams, PerTask: *perTask, ChunkDelay: *delay, Hold: *hold, OpenConcurrency: *openConc,
		URL: *url, NATSURL: *natsURL, EdgeArgs: strings.Fields(*edgeArgs),
		Progress: func(msg string) { fmt.Fprintln(os.Stderr, "bench streams:", msg) }}
	if *url == "" {
		bin, err := benchBinary("")
		if err != nil {
			return err
		}
		o.Bin = bin
	}
	r, err := bench.RunStreams(ctx, o)
	if err != nil {
		return err
	}
	return bench.ReportStreams(os.Stdout, r, *hold)
}
