package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"net"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/a2amesh/a2amesh/a2a"
)

var (
	tidA = "4bf92f3577b34da6a3ce929d0e0e4736"
	sidA = "00f067aa0ba902b7"
	tidB = "0af7651916cd43dd8448eb211c80319c"
	sidB = "b7ad6b7169203331"
)

func sc(t *testing.T, tid, sid string) trace.SpanContext {
	t.Helper()
	s, ok := ParseTraceparent("00-" + tid + "-" + sid + "-01")
	require.True(t, ok)
	return s
}

func TestFromMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   a2a.Metadata
		tid  string
		ok   bool
	}{
		{"w3c ids", a2a.Metadata{MetadataKey: map[string]any{"traceId": tidA, "spanId": sidA}}, tidA, true},
		{"upper case", a2a.Metadata{MetadataKey: map[string]any{"traceId": "4BF92F3577B34DA6A3CE929D0E0E4736", "spanId": sidA}}, tidA, true},
		{"uuid-shaped", a2a.Metadata{MetadataKey: map[string]any{"traceId": "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", "spanId": sidA}}, tidA, true},
		{"64-bit trace id", a2a.Metadata{MetadataKey: map[string]any{"traceId": "a3ce929d0e0e4736", "spanId": sidA}}, "0000000000000000a3ce929d0e0e4736", true},
		{"not hex (the seed's example)", a2a.Metadata{MetadataKey: map[string]any{"traceId": "abc123", "spanId": "def456"}}, "", false},
		{"zero ids", a2a.Metadata{MetadataKey: map[string]any{"traceId": "00000000000000000000000000000000", "spanId": sidA}}, "", false},
		{"no span id", a2a.Metadata{MetadataKey: map[string]any{"traceId": tidA}}, "", false},
		{"not an object", a2a.Metadata{MetadataKey: "00-" + tidA + "-" + sidA + "-01"}, "", false},
		{"absent", a2a.Metadata{"other": 1}, "", false},
		{"nil", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FromMetadata(tc.md)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.Equal(t, tc.tid, got.TraceID().String())
				assert.Equal(t, sidA, got.SpanID().String())
				assert.True(t, got.IsRemote())
				assert.True(t, got.IsSampled())
			}
		})
	}
}

func TestToMetadataRoundTripsAndCopies(t *testing.T) {
	in := a2a.Metadata{"keep": "me"}
	ctx := trace.ContextWithSpanContext(context.Background(), sc(t, tidA, sidA))
	out := ToMetadata(ctx, in)
	assert.Equal(t, map[string]any{"traceId": tidA, "spanId": sidA}, out[MetadataKey])
	assert.Equal(t, "me", out["keep"])
	assert.NotContains(t, in, MetadataKey, "the caller's map is not changed")
	got, ok := FromMetadata(out)
	require.True(t, ok)
	assert.Equal(t, tidA, got.TraceID().String())

	assert.Equal(t, in, ToMetadata(context.Background(), in), "no span: unchanged")
}

func TestExtractPrecedence(t *testing.T) {
	header := http.Header{}
	header.Set("traceparent", "00-"+tidA+"-"+sidA+"-01")
	md := a2a.Metadata{MetadataKey: map[string]any{"traceId": tidB, "spanId": sidB}}
	bad := http.Header{}
	bad.Set("traceparent", "garbage")
	for _, tc := range []struct {
		name string
		h    http.Header
		md   a2a.Metadata
		want string
	}{
		{"traceparent only", header, nil, tidA},
		{"metadata only", http.Header{}, md, tidB},
		{"both: traceparent wins", header, md, tidA},
		{"invalid traceparent: metadata", bad, md, tidB},
		{"neither", http.Header{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := Extract(context.Background(), tc.h, tc.md)
			assert.Equal(t, tc.want, TraceID(ctx))
			if tc.want != "" {
				assert.True(t, trace.SpanContextFromContext(ctx).IsRemote())
			}
		})
	}
}

func TestNATSCarrierPrecedence(t *testing.T) {
	ctx := trace.ContextWithSpanContext(context.Background(), sc(t, tidA, sidA))
	h := nats.Header{}
	InjectNATS(ctx, h)
	assert.Equal(t, "00-"+tidA+"-"+sidA+"-01", h.Get("traceparent"))
	md := a2a.Metadata{MetadataKey: map[string]any{"traceId": tidB, "spanId": sidB}}
	assert.Equal(t, tidA, TraceID(ExtractNATS(context.Background(), h, md)), "the header wins")
	assert.Equal(t, tidB, TraceID(ExtractNATS(context.Background(), nats.Header{}, md)), "else the metadata")
	assert.Equal(t, "", TraceID(ExtractNATS(context.Background(), nil, nil)))

	empty := nats.Header{}
	InjectNATS(context.Background(), empty)
	assert.Empty(t, empty, "no span, no header")
}

func TestTraceparentRoundTrip(t *testing.T) {
	s := sc(t, tidA, sidA)
	assert.Equal(t, "00-"+tidA+"-"+sidA+"-01", Traceparent(s))
	assert.Equal(t, "", Traceparent(trace.SpanContext{}))
	for _, bad := range []string{"", "00-" + tidA + "-" + sidA, "ff-" + tidA + "-" + sidA + "-01", "00-" + tidA + "-0000000000000000-01", "00x" + tidA + "-" + sidA + "-01"} {
		_, ok := ParseTraceparent(bad)
		assert.False(t, ok, bad)
	}
}

func TestTransportInjectsAClientSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	Install(tp)
	t.Cleanup(Reset)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: Transport(nil)}

	// Without a span in the context: untouched, no span.
	resp, err := hc.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()

	ctx, parent := tp.Tracer("t").Start(context.Background(), "parent")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/x?secret=1", nil)
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	parent.End()
	assert.Empty(t, req.Header.Get("traceparent"), "the caller's request is not changed")

	require.Len(t, got, 2)
	assert.Equal(t, "", got[0])
	ended := sr.Ended()
	require.Len(t, ended, 2)
	client := ended[0]
	assert.Equal(t, trace.SpanKindClient, client.SpanKind())
	assert.Equal(t, parent.SpanContext().SpanID(), client.Parent().SpanID())
	assert.Equal(t, Traceparent(client.SpanContext()), got[1], "the server sees the client span")
	for _, kv := range client.Attributes() {
		assert.NotContains(t, kv.Value.Emit(), "secret", "no query in the recorded URL")
	}
}

func TestConfigured(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
				t.Setenv(k, tc.env[k])
			}
			assert.Equal(t, tc.want, Configured())
		})
	}
}

func TestSetupOffIsNoop(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	shutdown, err := Setup(context.Background(), "test")
	require.NoError(t, err)
	assert.False(t, Enabled())
	_, span := Tracer("t").Start(context.Background(), "x")
	assert.False(t, span.IsRecording())
	assert.NoError(t, shutdown(context.Background()))
}

func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Path:
		default:
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "")
	shutdown, err := Setup(context.Background(), "a2amesh-test")
	require.NoError(t, err)
	t.Cleanup(Reset)
	assert.True(t, Enabled())
	_, span := Tracer("t").Start(context.Background(), "x")
	assert.True(t, span.IsRecording())
	span.End()
	require.NoError(t, shutdown(context.Background())) // flushes
	require.NotZero(t, len(got), "the exporter posted the span")
	assert.Equal(t, "/v1/traces", <-got)
}

// traceCollector is an OTLP gRPC trace receiver on loopback that keeps the
// names of the spans it gets.
type traceCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	names chan string
}

func (c *traceCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				select {
				case c.names <- s.Name:
				default:
				}
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func TestSetupExportsOverOTLPGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	col := &traceCollector{names: make(chan string, 16)}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	shutdown, err := Setup(context.Background(), "a2amesh-test")
	require.NoError(t, err)
	t.Cleanup(Reset)
	_, span := Tracer("t").Start(context.Background(), "over-grpc")
	span.End()
	require.NoError(t, shutdown(context.Background())) // flushes
	select {
	case name := <-col.names:
		assert.Equal(t, "over-grpc", name)
	default:
		t.Fatal("the collector got no span")
	}
}

func TestSetupRefusesUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
	_, err := Setup(context.Background(), "a2amesh-test")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"http/json" is not supported`)
	assert.False(t, Enabled())
}
