package edge_test

// The gRPC binding's server span, request metrics, and its gate.

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// grpcServerSpan waits for the ended server span of trace tid named name.
func grpcServerSpan(t *testing.T, sr *tracetest.SpanRecorder, tid trace.TraceID, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range sr.Ended() {
			if s.SpanContext().TraceID() == tid && s.Name() == name && s.SpanKind() == trace.SpanKindServer {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no server span %s in trace %s", name, tid)
	return nil
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// The server span of a gRPC call is a child of the client's span, named
// by traceparent metadata or, for a send without it, by the a2a.trace
// entry of the request's metadata; it names the method, the agent and
// the task, and carries the status of a failure.
func TestGRPCServerSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracing.Install(tp)
	t.Cleanup(tracing.Reset)
	m := meshtest.Start(t, meshtest.WithGRPC())
	cl := grpcClient(t, m)
	tracer := tp.Tracer("grpc-test-client")

	ctx, parent := tracer.Start(context.Background(), "client")
	parent.End()
	res, err := cl.SendMessage(grpcCtx(t, "traceparent", tracing.Traceparent(parent.SpanContext())),
		&a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("grpc-span-1", "traced")})
	require.NoError(t, err)
	s := grpcServerSpan(t, sr, parent.SpanContext().TraceID(), "SendMessage")
	require.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
	a := spanAttrs(s)
	require.Equal(t, "grpc", a["rpc.system"].AsString())
	require.Equal(t, "lf.a2a.v1.A2AService", a["rpc.service"].AsString())
	require.Equal(t, "SendMessage", a["rpc.method"].AsString())
	require.Equal(t, "echo", a[tracing.AttrAgent].AsString())
	require.Equal(t, res.GetTask().GetId(), a[tracing.AttrTaskID].AsString())
	require.EqualValues(t, codes.OK, a["rpc.grpc.status_code"].AsInt64())

	// Without traceparent: the a2a.trace entry of the send's metadata.
	md, err := structpb.NewStruct(map[string]any(tracing.ToMetadata(ctx, nil)))
	require.NoError(t, err)
	s2, err := cl.SendStreamingMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("grpc-span-2", "traced"), Metadata: md})
	require.NoError(t, err)
	_, err = drainGRPC(t, s2, 20)
	require.NoError(t, err)
	s = grpcServerSpan(t, sr, parent.SpanContext().TraceID(), "SendStreamingMessage")
	require.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())

	// A failure: the status code on the span.
	_, err = cl.GetTask(grpcCtx(t, "traceparent", tracing.Traceparent(parent.SpanContext())), &a2apb.GetTaskRequest{Id: "no-such-task"})
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	s = grpcServerSpan(t, sr, parent.SpanContext().TraceID(), "GetTask")
	require.Equal(t, otelcodes.Error, s.Status().Code)
	require.EqualValues(t, codes.NotFound, spanAttrs(s)["rpc.grpc.status_code"].AsInt64())
}

// gRPC calls count in a2amesh_edge_requests_total by method and A2A code.
func TestGRPCRequestMetrics(t *testing.T) {
	mt := metrics.New()
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Metrics = mt }))
	cl := grpcClient(t, m)
	_, err := cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("grpc-metrics-1", "x")})
	require.NoError(t, err)
	for range 2 {
		_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Id: "no-such-task"})
		requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	}
	count := func(method, code string) float64 {
		mfs, err := mt.Registry().Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != "a2amesh_edge_requests_total" {
				continue
			}
			for _, mm := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range mm.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["binding"] == "grpc" && l["method"] == method && l["code"] == code {
					return mm.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	require.Equal(t, 1.0, count("SendMessage", "ok"))
	require.Equal(t, 2.0, count("GetTask", "-32001"))
}

// A gate's gRPC server answers UNAVAILABLE until its edge is built (the
// edge process listens before NATS answers), for unary calls and
// streams alike.
func TestGRPCGateClosed(t *testing.T) {
	gate := edge.NewGate()
	srv := gate.GRPCServer(edge.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-served)
	}()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	cl := a2apb.NewA2AServiceClient(conn)
	_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Id: "t"})
	st := requireGRPCStatus(t, err, codes.Unavailable, "SERVER_ERROR")
	require.Contains(t, st.Message(), "NATS")
	s, err := cl.SubscribeToTask(grpcCtx(t), &a2apb.SubscribeToTaskRequest{Id: "t"})
	require.NoError(t, err)
	_, err = drainGRPC(t, s, 3)
	requireGRPCStatus(t, err, codes.Unavailable, "SERVER_ERROR")
}
