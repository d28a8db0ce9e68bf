// Package tracing owns the mesh's OpenTelemetry plumbing: Setup installs a
// tracer provider exporting over OTLP when the standard OTEL_* variables ask
// for it (and a no-op one otherwise), and the helpers carry span context
// across the mesh's hops: W3C traceparent in HTTP and NATS headers, and the
// a2a.trace metadata convention ({"traceId", "spanId"}) in A2A params.
//
// It imports a2a only (of this module's packages); edge and agentrt use it.
package tracing
