package client

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2amesh/a2amesh/a2a"
)

// grpcFake is a loopback A2AService answering GetTask with err (nil: a
// task) and SubscribeToTask with two events carrying event ids, and
// recording the metadata of each call.
type grpcFake struct {
	a2apb.UnimplementedA2AServiceServer
	err  error
	mu   sync.Mutex
	mds  []metadata.MD
	addr string
}

func (f *grpcFake) note(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.mds = append(f.mds, md)
	f.mu.Unlock()
}

func (f *grpcFake) lastMD(t *testing.T) metadata.MD {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.mds)
	return f.mds[len(f.mds)-1]
}

func (f *grpcFake) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	f.note(ctx)
	if f.err != nil {
		return nil, f.err
	}
	return &a2apb.Task{Id: req.GetId(), ContextId: "c", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_WORKING}}, nil
}

func (f *grpcFake) SubscribeToTask(req *a2apb.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	f.note(ss.Context())
	if f.err != nil {
		return f.err
	}
	md, _ := structpb.NewStruct(map[string]any{grpcEventIDKey: "7", "keep": "me"})
	if err := ss.Send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{
		Id: req.GetId(), ContextId: "c", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_WORKING}, Metadata: md}}}); err != nil {
		return err
	}
	md8, _ := structpb.NewStruct(map[string]any{grpcEventIDKey: "8"})
	if err := ss.Send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
		TaskId: req.GetId(), ContextId: "c", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED}, Metadata: md8}}}); err != nil {
		return err
	}
	return nil
}

func startGRPCFake(t *testing.T, f *grpcFake) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.addr = ln.Addr().String()
	srv := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })
}

// statusWithReason is a gRPC status error with an A2A ErrorInfo.
func statusWithReason(t *testing.T, code codes.Code, reason, domain, msg string) error {
	t.Helper()
	st, err := grpcstatus.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: domain, Metadata: map[string]string{"taskId": "t-9"}})
	require.NoError(t, err)
	return st.Err()
}

// Headers go as lower-case metadata beside a2a-version; the tenant is in
// the request; Last-Event-ID is the last-event-id metadata; event ids come
// out of the events' metadata.
func TestGRPCMetadataAndEventIDs(t *testing.T) {
	f := &grpcFake{}
	startGRPCFake(t, f)
	var dialed []string
	var mu sync.Mutex
	c := New("grpc://"+f.addr, WithBinding("grpc"), WithHeader("Authorization", "Bearer k"), WithHeader("X-Api-Key", "s3"),
		WithDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	task, err := c.GetTask(ctx, "t-1", nil)
	require.NoError(t, err)
	assert.Equal(t, "t-1", task.ID)
	md := f.lastMD(t)
	assert.Equal(t, []string{"Bearer k"}, md.Get("authorization"))
	assert.Equal(t, []string{"s3"}, md.Get("x-api-key"))
	assert.Equal(t, []string{"1.0"}, md.Get("a2a-version"))
	assert.Empty(t, md.Get("last-event-id"))
	mu.Lock()
	assert.Equal(t, []string{f.addr}, dialed, "the dialer gets host:port as written")
	mu.Unlock()

	s, err := c.Subscribe(ctx, "t-1", "6")
	require.NoError(t, err)
	assert.Equal(t, []string{"6"}, f.lastMD(t).Get("last-event-id"))
	evs, err := drain(s)
	assert.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 2)
	assert.Equal(t, "7", evs[0].ID)
	assert.Equal(t, "8", evs[1].ID)
	assert.Equal(t, "8", s.LastEventID())
	assert.Equal(t, a2a.Metadata{"keep": "me"}, evs[0].Response.Task.Metadata, "the id leaves the metadata, the rest stays")
	assert.Nil(t, evs[1].Response.StatusUpdate.Metadata)
	require.NoError(t, s.Close())
	_, err = s.Next()
	assert.ErrorIs(t, err, ErrStreamClosed)
}

// A status with an A2A ErrorInfo is that A2A error; one without is what
// its code says, or internal; a stream refused at once fails the call.
func TestGRPCErrors(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code int
		msg  string
	}{
		{"task not found", statusWithReason(t, codes.NotFound, "TASK_NOT_FOUND", a2a.ErrorDomain, "no t-9"), a2a.CodeTaskNotFound, "no t-9"},
		{"not cancelable", statusWithReason(t, codes.FailedPrecondition, "TASK_NOT_CANCELABLE", a2a.ErrorDomain, "done"), a2a.CodeTaskNotCancelable, "done"},
		{"busy", statusWithReason(t, codes.Unavailable, "SERVER_ERROR", a2a.ErrorDomain, "failover"), a2a.CodeServerBusy, "failover"},
		{"version", statusWithReason(t, codes.FailedPrecondition, "VERSION_NOT_SUPPORTED", a2a.ErrorDomain, "v?"), a2a.CodeVersionNotSupported, "v?"},
		{"foreign domain", statusWithReason(t, codes.NotFound, "TASK_NOT_FOUND", "example.com", "gone"), a2a.CodeInternalError, "gone"},
		{"bare invalid argument", grpcstatus.Error(codes.InvalidArgument, "bad"), a2a.CodeInvalidParams, "bad"},
		{"bare unimplemented", grpcstatus.Error(codes.Unimplemented, ""), a2a.CodeMethodNotFound, "Method not found"},
		{"bare resource exhausted", grpcstatus.Error(codes.ResourceExhausted, "slow down"), a2a.CodeRateLimited, "slow down"},
		{"bare internal", grpcstatus.Error(codes.Internal, "oops"), a2a.CodeInternalError, "oops"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &grpcFake{err: tc.err}
			startGRPCFake(t, f)
			c := New(f.addr, WithBinding(a2a.BindingGRPC))
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.GetTask(ctx, "t-9", nil)
			var ae *a2a.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.code, ae.Code)
			assert.Equal(t, tc.msg, ae.Message)
			_, err = c.Subscribe(ctx, "t-9", "")
			require.ErrorAs(t, err, &ae, "a stream refused before any event fails the call")
			assert.Equal(t, tc.code, ae.Code)
		})
	}
}

// Nothing listening: an error wrapping the dial's failure (as
// errors.As(*net.OpError) finds), not an A2A error; a canceled context is
// the context's error.
func TestGRPCTransportFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := New(addr, WithBinding(a2a.BindingGRPC))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.GetTask(ctx, "t", nil)
	require.Error(t, err)
	var opErr *net.OpError
	assert.ErrorAs(t, err, &opErr)
	var ae *a2a.Error
	assert.False(t, errors.As(err, &ae), "a connection failure is no A2A error: %v", err)

	dead, stop := context.WithCancel(ctx)
	stop()
	_, err = c.GetTask(dead, "t", nil)
	assert.ErrorIs(t, err, context.Canceled)

	require.NoError(t, c.Close())
	_, err = c.GetTask(ctx, "t", nil)
	assert.Error(t, err, "a closed client")
}

func TestGRPCTarget(t *testing.T) {
	for in, want := range map[string]struct {
		hostPort string
		tls      bool
	}{
		"127.0.0.1:9090":          {"127.0.0.1:9090", false},
		"[::1]:9090":              {"[::1]:9090", false},
		"grpc://h.example:9090":   {"h.example:9090", false},
		"http://h.example":        {"h.example:80", false},
		"grpcs://h.example:9443":  {"h.example:9443", true},
		"https://h.example/a2a":   {"h.example:443", true},
		" HTTPS://h.example:8443": {"h.example:8443", true},
	} {
		hp, tls, err := grpcTarget(in)
		require.NoError(t, err, in)
		assert.Equal(t, want.hostPort, hp, in)
		assert.Equal(t, want.tls, tls, in)
	}
	for _, bad := range []string{"", "h.example", "ftp://h.example:21", "grpc://:9090", "h.example:"} {
		_, _, err := grpcTarget(bad)
		assert.Error(t, err, bad)
		c := New(bad, WithBinding(a2a.BindingGRPC))
		_, err = c.GetTask(context.Background(), "t", nil)
		assert.Error(t, err, bad)
	}
}
