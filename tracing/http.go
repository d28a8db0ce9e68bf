package tracing

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Transport wraps base (http.DefaultTransport when nil) so that every
// request made with a context holding a span gets a client span of its
// own, and carries it in a traceparent header. Requests without a span in
// their context pass through untouched.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

const scopeHTTP = "github.com/a2amesh/a2amesh/tracing/http"

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return t.base.RoundTrip(r)
	}
	ctx, span := Tracer(scopeHTTP).Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("server.address", r.URL.Hostname()),
			attribute.String("url.full", redactURL(r)),
		)
	}
	r = r.Clone(ctx) // a RoundTripper must not change the caller's request
	Inject(ctx, r.Header)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "transport error")
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}

// redactURL is the request's URL without user info or query (which may
// hold credentials).
func redactURL(r *http.Request) string {
	u := *r.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// CloseIdleConnections closes the idle connections of the wrapped
// transport (http.Client.CloseIdleConnections reaches it through here).
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
