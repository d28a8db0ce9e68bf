package agentrt_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// recordSpans installs a tracer provider that keeps every ended span in
// memory, until the test ends.
func recordSpans(t *testing.T) (*tracetest.SpanRecorder, trace.Tracer) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracing.Install(tp)
	t.Cleanup(tracing.Reset)
	return sr, tp.Tracer("test-client")
}

// coordinatorMesh records spans and starts a mesh with the coordinator
// agent (which delegates to echo) routable.
func coordinatorMesh(t *testing.T) (*tracetest.SpanRecorder, trace.Tracer, *meshtest.Mesh) {
	sr, tracer := recordSpans(t)
	m := meshtest.Start(t)
	startWorker(t, m.Store(), &coordinator{})
	waitRoutable(t, m, "coordinator")
	return sr, tracer, m
}

// spanTree indexes the ended spans of one trace.
type spanTree struct {
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
	spans []sdktrace.ReadOnlySpan
}

func treeOf(sr *tracetest.SpanRecorder, tid trace.TraceID) *spanTree {
	st := &spanTree{byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range sr.Ended() {
		if s.SpanContext().TraceID() == tid {
			st.byID[s.SpanContext().SpanID()] = s
			st.spans = append(st.spans, s)
		}
	}
	return st
}

// find returns the one span named name whose parent is parent.
func (st *spanTree) find(name string, parent trace.SpanID) (sdktrace.ReadOnlySpan, bool) {
	for _, s := range st.spans {
		if s.Name() == name && s.Parent().SpanID() == parent {
			return s, true
		}
	}
	return nil, false
}

func (st *spanTree) String() string {
	var b strings.Builder
	for _, s := range st.spans {
		b.WriteString(s.Name() + " " + s.SpanContext().SpanID().String() + " <- " + s.Parent().SpanID().String() + "\n")
	}
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// chain is the expected path from the client's span down to the delegated
// agent's run: each span a child of the one before.
var chain = []struct {
	name string
	kind trace.SpanKind
}{
	{"", trace.SpanKindServer}, // the edge's span: named for the method
	{"send a2a.work.coordinator.>", trace.SpanKindProducer},
	{"process a2a.work.coordinator.>", trace.SpanKindConsumer},
	{"run coordinator", trace.SpanKindInternal},
	{"delegate echo", trace.SpanKindClient},
	{"send a2a.work.echo.>", trace.SpanKindProducer},
	{"process a2a.work.echo.>", trace.SpanKindConsumer},
	{"run echo", trace.SpanKindInternal},
}

// waitChain waits until the whole chain under root has ended (spans end
// after the client has its answer) and returns its spans in order.
func waitChain(t *testing.T, sr *tracetest.SpanRecorder, root trace.SpanContext, method string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	var st *spanTree
	ok := assert.Eventually(t, func() bool {
		st = treeOf(sr, root.TraceID())
		got = got[:0]
		parent := root.SpanID()
		for _, c := range chain {
			name := c.name
			if name == "" {
				name = method
			}
			s, ok := st.find(name, parent)
			if !ok || s.SpanKind() != c.kind {
				return false
			}
			got = append(got, s)
			parent = s.SpanContext().SpanID()
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("trace %s lacks the chain; it holds:\n%s", root.TraceID(), st)
	}
	return got
}

func TestTraceAcrossDelegationFromTraceparent(t *testing.T) {
	sr, tracer, m := coordinatorMesh(t)

	ctx, root := tracer.Start(context.Background(), "client")
	tp := tracing.Traceparent(root.SpanContext())
	res, err := client.New(m.URL+"/agents/coordinator", client.WithHeader("traceparent", tp)).
		Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("echo hi")})
	root.End()
	require.NoError(t, err)
	require.Equal(t, a2a.StateCompleted, res.Task.Status.State)

	spans := waitChain(t, sr, root.SpanContext(), "SendMessage")
	server := spans[0]
	assert.Equal(t, "coordinator", attr(server, "a2a.agent"))
	assert.Equal(t, res.Task.ID, attr(server, "a2a.task.id"))
	assert.Equal(t, res.Task.ContextID, attr(server, "a2a.context.id"))
	assert.Equal(t, "1.0", attr(server, "a2a.protocol.version"))
	assert.Equal(t, "jsonrpc", attr(server, "rpc.system"))
	assert.True(t, server.Parent().IsRemote(), "the client's span arrived over HTTP")

	publish, consume := spans[1], spans[2]
	assert.Equal(t, "nats", attr(publish, "messaging.system"))
	assert.Equal(t, "a2a.work.coordinator."+res.Task.ID, attr(publish, "messaging.destination.name"))
	assert.Equal(t, "process", attr(consume, "messaging.operation.type"))
	assert.Equal(t, "a2a.work.coordinator."+res.Task.ID, attr(consume, "messaging.destination.name"))
	assert.True(t, consume.Parent().IsRemote(), "the consumer's parent came in NATS headers")
	assert.Equal(t, res.Task.ID, attr(consume, "a2a.task.id"))

	delegate, childRun := spans[4], spans[7]
	childID := attr(delegate, "a2a.task.id")
	assert.NotEmpty(t, childID)
	assert.Equal(t, string(a2a.StateCompleted), attr(delegate, "a2a.task.state"))
	assert.Equal(t, childID, attr(childRun, "a2a.task.id"))

	// Both tasks remember the span that created them.
	rec, err := m.Store().LoadTask(context.Background(), res.Task.ID)
	require.NoError(t, err)
	assert.Equal(t, tracing.Traceparent(server.SpanContext()), rec.Trace)
	child, err := m.Store().LoadTask(context.Background(), childID)
	require.NoError(t, err)
	assert.Equal(t, tracing.Traceparent(delegate.SpanContext()), child.Trace)
}

func TestTraceAcrossDelegationFromMetadata(t *testing.T) {
	sr, tracer, m := coordinatorMesh(t)

	ctx, root := tracer.Start(context.Background(), "client")
	root.End()
	// No traceparent header: the a2a.trace metadata entry is the parent.
	res, err := client.New(m.URL+"/agents/coordinator", client.WithProtocolVersion("0.3")).Send(ctx, &a2a.SendMessageRequest{
		Message:  client.TextMessage("echo hi"),
		Metadata: tracing.ToMetadata(ctx, nil),
	})
	require.NoError(t, err)
	require.Equal(t, a2a.StateCompleted, res.Task.Status.State)

	spans := waitChain(t, sr, root.SpanContext(), "message/send")
	assert.Equal(t, "0.3", attr(spans[0], "a2a.protocol.version"))
}

func TestTraceparentWinsOverMetadata(t *testing.T) {
	sr, tracer, m := coordinatorMesh(t)

	hctx, fromHeader := tracer.Start(context.Background(), "header")
	fromHeader.End()
	mctx, fromMeta := tracer.Start(context.Background(), "metadata")
	fromMeta.End()
	res, err := client.New(m.URL+"/agents/coordinator", client.WithHeader("traceparent", tracing.Traceparent(fromHeader.SpanContext()))).
		Send(hctx, &a2a.SendMessageRequest{Message: client.TextMessage("echo hi"), Metadata: tracing.ToMetadata(mctx, nil)})
	require.NoError(t, err)
	require.Equal(t, a2a.StateCompleted, res.Task.Status.State)

	waitChain(t, sr, fromHeader.SpanContext(), "SendMessage")
	for _, s := range sr.Ended() {
		if s.SpanContext().SpanID() == fromMeta.SpanContext().SpanID() {
			continue
		}
		assert.NotEqual(t, fromMeta.SpanContext().TraceID(), s.SpanContext().TraceID(), "span %s joined the metadata's trace", s.Name())
	}
}

func TestTraceOfStreamAndResubscribe(t *testing.T) {
	sr, tracer, m := coordinatorMesh(t)

	ctx, root := tracer.Start(context.Background(), "client")
	root.End()
	cl := client.New(m.URL+"/agents/coordinator", client.WithHeader("traceparent", tracing.Traceparent(root.SpanContext())))
	s, err := cl.Stream(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("echo hi")})
	require.NoError(t, err)
	var taskID string
	var final a2a.TaskState
	for i := 0; i < 100; i++ {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch r := ev.Response; {
		case r.Task != nil:
			taskID = r.Task.ID
		case r.StatusUpdate != nil:
			final = r.StatusUpdate.Status.State
		}
	}
	_ = s.Close()
	require.Equal(t, a2a.StateCompleted, final)
	spans := waitChain(t, sr, root.SpanContext(), "SendStreamingMessage")
	origin := spans[0].SpanContext()
	assert.Equal(t, taskID, attr(spans[0], "a2a.task.id"))

	// A resubscription, without any trace context of its own, is a new
	// trace that links to the span that created the task.
	sub, err := client.New(m.URL+"/agents/coordinator").Subscribe(context.Background(), taskID, "")
	if err == nil {
		for i := 0; i < 100; i++ {
			if _, err := sub.Next(); err != nil {
				break
			}
		}
		_ = sub.Close()
	}
	var linked sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, s := range sr.Ended() {
			if s.Name() == "SubscribeToTask" {
				linked = s
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, linked.Links(), 1)
	assert.Equal(t, origin.TraceID(), linked.Links()[0].SpanContext.TraceID())
	assert.Equal(t, origin.SpanID(), linked.Links()[0].SpanContext.SpanID())
	assert.NotEqual(t, origin.TraceID(), linked.SpanContext().TraceID())
}
