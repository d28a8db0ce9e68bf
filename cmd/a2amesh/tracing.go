package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2amesh/a2amesh/tracing"
)

// startTracing sets up OpenTelemetry for this process from the standard
// OTEL_* variables (off unless an OTLP endpoint is set) and returns what
// flushes it at exit.
func startTracing(ctx context.Context, service string, log *slog.Logger) (func(), error) {
	shutdown, err := tracing.Setup(ctx, service)
	if err != nil {
		return nil, err
	}
	if tracing.Enabled() {
		log.Info("tracing on: exporting spans over OTLP", "service", service)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: flushing spans failed", "err", err)
		}
	}, nil
}
