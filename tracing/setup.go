package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Service names of the mesh's roles (OTEL_SERVICE_NAME overrides them).
const (
	ServiceEdge = "a2amesh-edge"
	ServiceDev  = "a2amesh-dev"
)

// ServiceWorker is the service name of a worker of agent.
func ServiceWorker(agent string) string { return "a2amesh-worker-" + agent }

// enabled is set while a recording provider is installed: hooks that cost
// something even when no span records (a store read to find a link) skip
// their work when it is false.
var enabled atomic.Bool

// Enabled reports whether spans are being recorded and exported.
func Enabled() bool { return enabled.Load() }

// Configured reports whether the environment asks for trace export: an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, or OTEL_TRACES_EXPORTER is
// "otlp"; and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none
// turns it off.
func Configured() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the global tracer provider and the W3C trace-context
// propagator. When the environment asks for export (see Configured) spans
// go to an OTLP/HTTP exporter configured by the standard OTEL_EXPORTER_OTLP_*
// variables (OTLP/HTTP, or gRPC when OTEL_EXPORTER_OTLP_PROTOCOL=grpc), batched (OTEL_BSP_*), sampled per OTEL_TRACES_SAMPLER, with
// service.name set to service unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise. Otherwise tracing stays off: the
// provider is a no-op, and only context that arrived with a request is
// passed on. shutdown flushes what is buffered.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagator)
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	switch p := otlpProtocol(); p {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported; use http/protobuf (port 4318) or grpc (port 4317)", p)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// otlpProtocol is the OTLP transport the environment asks for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default).
func otlpProtocol() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.ToLower(strings.TrimSpace(os.Getenv(k))); v != "" {
			return v
		}
	}
	return "http/protobuf"
}

// propagator is W3C trace context plus baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Install makes tp the global tracer provider (tests install one backed by
// the SDK's in-memory recorder) along with the W3C propagator.
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	enabled.Store(true)
}

// Tracer returns the tracer of an instrumentation scope of the mesh
// (for example "github.com/a2amesh/a2amesh/edge").
func Tracer(scope string) trace.Tracer {
	return otel.GetTracerProvider().Tracer(scope)
}

// Reset puts back a no-op tracer provider (tests that installed a
// recording one call it when they end).
func Reset() {
	enabled.Store(false)
	otel.SetTracerProvider(noop.NewTracerProvider())
}
