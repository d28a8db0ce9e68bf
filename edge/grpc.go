package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/pbconv"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/tokens"
	"github.com/a2amesh/a2amesh/tracing"
)

// The gRPC binding (spec §10): lf.a2a.v1.A2AService on a listener of its
// own, a codec over the same service as JSON-RPC. Each method decodes its
// request (internal/pbconv), calls one method of the service and encodes
// what it returns. The request's tenant names the agent; without one the
// call goes where a call on /a2a goes (the default agent, or the agent of
// the task it names).
//
// The interceptors run the edge's HTTP middleware in the same order:
// request metrics, authentication (metadata x-api-key or authorization:
// Bearer), the per-principal rate limit, then the A2A version check and
// the server span. The message size bound (Config.MaxBodyBytes) is the
// server's MaxRecvMsgSize: gRPC refuses a larger request itself
// (RESOURCE_EXHAUSTED), before the interceptors see a unary call.
//
// Streams carry each event's position in the event log, which SSE sends
// as the event id, in the event's metadata under GRPCEventIDKey; a client
// resumes a stream cut short by calling SubscribeToTask (or repeating its
// SendStreamingMessage) with the metadata last-event-id set to the last
// one it read, as it would set Last-Event-ID over HTTP.

// GRPCEventIDKey is the metadata entry of a streamed event (of its task,
// message, statusUpdate or artifactUpdate) that holds the event's id, the
// decimal position in the event log a client resumes after.
const GRPCEventIDKey = pbconv.EventIDKey

// Metadata keys of a gRPC call the edge reads (lower case, as gRPC
// spells them).
const (
	grpcMDAPIKey        = "x-api-key"
	grpcMDAuthorization = "authorization"
	grpcMDVersion       = "a2a-version"
	grpcMDLastEventID   = "last-event-id"
)

// errGRPCVersion answers a call whose a2a-version is not 1.x: the gRPC
// binding is 1.0's.
var errGRPCVersion = a2a.ErrVersionNotSupported

// GRPCServer returns a gRPC server serving lf.a2a.v1.A2AService over e,
// with the edge's interceptors, its message size bound and keep-alive
// settings; opts come after them (and so may change them). Its host
// listens, calls Serve, and GracefulStop (then Stop, past a bound) when it
// shuts down.
func (e *Edge) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	return newGRPCServer(func() *Edge { return e }, e.cfg, opts...)
}

// GRPCServer returns a gRPC server over the gate's edge, for a host that
// listens before it can build its Edge: until Open every call answers
// UNAVAILABLE (the edge is waiting for NATS). cfg is the configuration
// the edge will be built from (its message size bound and keep-alive
// interval apply from the start).
func (g *Gate) GRPCServer(cfg Config, opts ...grpc.ServerOption) *grpc.Server {
	return newGRPCServer(g.e.Load, cfg, opts...)
}

// grpcService implements a2apb.A2AServiceServer over the edge edge()
// returns (nil while a gate is closed: the interceptors refuse every call
// then, so the methods always find one).
type grpcService struct {
	a2apb.UnimplementedA2AServiceServer
	edge func() *Edge
}

func newGRPCServer(edge func() *Edge, cfg Config, opts ...grpc.ServerOption) *grpc.Server {
	maxMsg := cfg.MaxBodyBytes
	if maxMsg <= 0 {
		maxMsg = 1 << 20
	}
	ka := cfg.KeepAlive
	if ka <= 0 {
		ka = 15 * time.Second
	}
	s := &grpcService{edge: edge}
	base := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(maxMsg, math.MaxInt32))),
		// The server pings a connection quiet for the keep-alive interval
		// (where SSE writes a comment: proxies and NATs keep it open), and
		// lets clients ping as often as every 10 s, even between calls.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: ka, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
	}
	srv := grpc.NewServer(append(base, opts...)...)
	a2apb.RegisterA2AServiceServer(srv, s)
	return srv
}

// grpcMethod splits a full method name (/lf.a2a.v1.A2AService/GetTask).
func grpcMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "", full
}

// unary runs a unary call through the edge's pipeline (see admit and
// begin) and ends its span with the call's outcome.
func (s *grpcService) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	svc, method := grpcMethod(info.FullMethod)
	e := s.edge()
	defer s.count(e, method, &err)
	if ctx, err = s.admit(ctx, e); err != nil {
		return nil, err
	}
	ctx, c := e.beginGRPC(ctx, svc, method, req)
	defer endGRPCSpan(c, &err)
	if resp, err = handler(ctx, req); err == nil {
		grpcEchoExtensions(ctx) // extensions.go
	}
	return resp, err
}

// stream runs a streaming call through the pipeline; its span starts when
// the request arrives (its metadata may carry the trace context), in the
// handler's first RecvMsg.
func (s *grpcService) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	svc, method := grpcMethod(info.FullMethod)
	e := s.edge()
	defer s.count(e, method, &err)
	ctx, err := s.admit(ss.Context(), e)
	if err != nil {
		return err
	}
	w := &grpcStream{ServerStream: ss, ctx: ctx}
	w.begin = func(ctx context.Context, req any) context.Context {
		ctx, w.c = e.beginGRPC(ctx, svc, method, req)
		return ctx
	}
	defer func() {
		if w.c != nil {
			endGRPCSpan(w.c, &err)
		}
	}()
	return handler(srv, w)
}

// grpcStream is a server stream whose context becomes the call's (span,
// service.Call) once its request is read.
type grpcStream struct {
	grpc.ServerStream
	ctx   context.Context
	begin func(context.Context, any) context.Context
	c     *call
}

func (w *grpcStream) Context() context.Context { return w.ctx }

func (w *grpcStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if w.c == nil {
		w.ctx = w.begin(w.ctx, m)
	}
	return nil
}

// count records the call in the request metrics once it is answered, and
// answers a panic of the call with INTERNAL (logged) rather than letting
// it end the process.
func (s *grpcService) count(e *Edge, method string, err *error) {
	if p := recover(); p != nil {
		if e != nil {
			e.log.Error("panic serving gRPC call", "method", method, "panic", p)
		}
		*err = grpcError(a2a.ErrInternal)
	}
	if e == nil {
		return
	}
	code := "ok"
	var se *grpcStatusError
	switch {
	case errors.As(*err, &se):
		code = strconv.Itoa(se.code)
	case *err != nil:
		code = status.Code(*err).String()
	}
	e.countCall(method, code)
}

// admit lets a call in, or refuses it as the HTTP middleware would: the
// edge not built yet (UNAVAILABLE), no valid credentials
// (UNAUTHENTICATED), over its principal's rate (RESOURCE_EXHAUSTED), an
// a2a-version other than 1.x (FAILED_PRECONDITION). The context it
// returns carries the principal.
func (s *grpcService) admit(ctx context.Context, e *Edge) (context.Context, error) {
	if e == nil {
		return ctx, grpcError(errEdgeStarting)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	principal := ""
	if e.id.on() {
		c, err := e.id.identify(ctx, first(md, grpcMDAPIKey), first(md, grpcMDAuthorization), peerTLS(ctx))
		var bad *badToken
		switch {
		case errors.Is(err, tokens.ErrUnavailable):
			e.log.Warn("auth: the token issuer cannot be reached", "err", err)
			return ctx, grpcError(a2a.ErrServerBusy.With("the token issuer cannot be reached to verify the bearer token; retry shortly"))
		case errors.As(err, &bad):
			e.auditRefusal(bindingGRPC, peerAddr(ctx), "gRPC call", bad.reason)
			return ctx, &grpcStatusError{code: codeUnauthenticated, st: status.New(codes.Unauthenticated,
				"Authentication failed: the bearer token is not valid ("+bad.reason+")")}
		case err != nil:
			e.auditRefusal(bindingGRPC, peerAddr(ctx), "gRPC call", "no valid credential")
			return ctx, &grpcStatusError{code: codeUnauthenticated, st: status.New(codes.Unauthenticated,
				"Authentication required: "+strings.ReplaceAll(e.id.wanted(), APIKeyHeader, "metadata x-api-key"))}
		}
		principal = c.Principal
		ctx = withCaller(ctx, c)
	}
	if ok, wait := e.takeToken(limitKeyAddr(peerAddr(ctx), principal)); !ok {
		secs := max(1, int(math.Ceil(wait.Seconds())))
		st := status.New(codes.ResourceExhausted, "Rate limit exceeded: retry after "+strconv.Itoa(secs)+"s")
		if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)}); err == nil {
			st = d
		}
		return ctx, &grpcStatusError{code: a2a.CodeRateLimited, st: st}
	}
	if v := strings.TrimSpace(first(md, grpcMDVersion)); v != "" && v != "1" && !strings.HasPrefix(v, "1.") {
		return ctx, grpcError(errGRPCVersion.With("A2A version %s is not supported over gRPC; this service speaks 1.0", strconv.Quote(trunc(v, 40))))
	}
	return ctx, nil
}

// peerAddr is the gRPC client's address ("" when unknown).
func peerAddr(ctx context.Context) string {
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		return pr.Addr.String()
	}
	return ""
}

// peerTLS is the gRPC connection's TLS state (nil without TLS).
func peerTLS(ctx context.Context) *tls.ConnectionState {
	if pr, ok := peer.FromContext(ctx); ok {
		if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok {
			return &info.State
		}
	}
	return nil
}

// first is the first value of key in md ("" for none).
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// beginGRPC starts the call's server span, under the caller's trace
// context (metadata traceparent/tracestate, else the a2a.trace entry of a
// send's metadata), and puts the service.Call in the context.
func (e *Edge) beginGRPC(ctx context.Context, svc, method string, req any) (context.Context, *call) {
	md, _ := metadata.FromIncomingContext(ctx)
	carrier := http.Header{}
	for _, k := range []string{"traceparent", "tracestate"} {
		for _, v := range md.Get(k) {
			carrier.Add(k, v)
		}
	}
	var meta a2a.Metadata
	if carrier.Get("traceparent") == "" {
		if r, ok := req.(*a2apb.SendMessageRequest); ok {
			if v, ok := r.GetMetadata().GetFields()[tracing.MetadataKey]; ok {
				meta = a2a.Metadata{tracing.MetadataKey: v.AsInterface()}
			}
		}
	}
	ctx, span := startRPCSpan(ctx, carrier, method, meta,
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", svc),
		attribute.String("rpc.method", method),
	)
	c := &call{span: span, version: a2a.V10}
	caller := callerFrom(ctx)
	c.sc = &service.Call{Principal: caller.Principal, Grants: caller.Grants, Binding: bindingGRPC, From: peerAddr(ctx), Version: a2a.V10, Extensions: grpcRequestedExtensions(md),
		Log: e.log.With("method", method, "binding", "grpc"), OnAgent: c.traced, OnTask: c.taskTraced}
	return service.WithCall(ctx, c.sc), c
}

// endGRPCSpan ends the call's span with the gRPC status it answered.
func endGRPCSpan(c *call, err *error) {
	code := status.Code(*err)
	if c.span.IsRecording() {
		c.span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
		if code != codes.OK {
			c.span.SetStatus(otelcodes.Error, "gRPC "+code.String())
		}
	}
	c.span.End()
}

// grpcStatusError is a call's failure as a gRPC status, with the A2A
// error code it stands for (for the request metrics).
type grpcStatusError struct {
	code int
	st   *status.Status
}

func (e *grpcStatusError) Error() string              { return e.st.Err().Error() }
func (e *grpcStatusError) GRPCStatus() *status.Status { return e.st }

// grpcError is the gRPC status of an A2A error (spec §5.4, §10.6): the
// code a2a.Error.Status names, the error's message, and a
// google.rpc.ErrorInfo with its reason in the a2a-protocol.org domain.
func grpcError(ae *a2a.Error) error {
	st := ae.Status()
	var code codes.Code
	if err := code.UnmarshalJSON([]byte(strconv.Quote(st.GRPC))); err != nil {
		code = codes.Internal
	}
	s := status.New(code, ae.Message)
	if st.Reason != "" {
		if d, err := s.WithDetails(&errdetails.ErrorInfo{Reason: st.Reason, Domain: a2a.ErrorDomain}); err == nil {
			s = d
		}
	}
	return &grpcStatusError{code: ae.Code, st: s}
}

// grpcFailure is the answer to a call the service failed (service.ToError:
// never internal text); a call whose client went away gets its context's
// status (no one reads it).
func grpcFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return grpcError(service.ToError(err))
}

// grpcBadRequest answers a request that does not convert to the service's
// types: the a2a decoders' own error (a missing role, a bad part), else
// INVALID_ARGUMENT saying what is wrong.
func grpcBadRequest(err error) error {
	var ae *a2a.Error
	var fe *a2a.FieldError
	if errors.As(err, &ae) || errors.As(err, &fe) {
		return grpcError(a2a.AsError(err))
	}
	return grpcError(a2a.ErrInvalidParams.With("Invalid parameters: %s", trunc(strings.TrimPrefix(err.Error(), "pbconv: "), 200)))
}

// grpcEncodeFailed answers a call whose result could not be encoded (a
// bug: the service's types always convert).
func (e *Edge) grpcEncodeFailed(ctx context.Context, err error) error {
	service.CallFrom(ctx).Log.Error("gRPC answer not encodable", "err", err)
	return grpcError(a2a.ErrInternal)
}

func (s *grpcService) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	e := s.edge()
	r, err := pbconv.FromSendMessageRequest(req)
	if err != nil {
		return nil, grpcBadRequest(err)
	}
	res, err := e.svc.SendMessage(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	out, err := pbconv.SendMessageResponse(res)
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

func (s *grpcService) SendStreamingMessage(req *a2apb.SendMessageRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	e, ctx := s.edge(), ss.Context()
	r, err := pbconv.FromSendMessageRequest(req)
	if err != nil {
		return grpcBadRequest(err)
	}
	stream, err := e.svc.SendStreamingMessage(ctx, r, lastEventID(ctx))
	if err != nil {
		return grpcFailure(ctx, err)
	}
	return e.relayGRPC(ctx, stream, ss)
}

func (s *grpcService) SubscribeToTask(req *a2apb.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	e, ctx := s.edge(), ss.Context()
	r, err := pbconv.FromSubscribeToTaskRequest(req)
	if err != nil {
		return grpcBadRequest(err)
	}
	stream, err := e.svc.SubscribeToTask(ctx, r, lastEventID(ctx))
	if err != nil {
		return grpcFailure(ctx, err)
	}
	return e.relayGRPC(ctx, stream, ss)
}

// lastEventID is the call's last-event-id metadata: the id of the last
// event a client read of a stream it resumes ("" for none).
func lastEventID(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return first(md, grpcMDLastEventID)
}

// relayGRPC sends a stream's events, each with its id in its metadata
// (GRPCEventIDKey). Keep-alives send nothing: the server's HTTP/2 pings
// keep the connection alive. An error ends the call with its status. The
// activated extensions go in the header metadata, and what the agent
// activated by the end in the trailer (extensions.go).
func (e *Edge) relayGRPC(ctx context.Context, stream service.Stream, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	sc := service.CallFrom(ctx)
	if act := sc.ActivatedExtensions(); len(act) > 0 {
		_ = ss.SetHeader(metadata.Pairs(mdExtensions, strings.Join(act, ",")))
	}
	exts := &streamExtensions{sc: sc}
	defer func() {
		if md := exts.trailer(); md != nil {
			ss.SetTrailer(md)
		}
	}()
	for ev, err := range stream {
		if err != nil {
			return grpcFailure(ctx, err)
		}
		if ev.Resp == nil {
			continue
		}
		exts.note(ev.Resp)
		out, err := pbconv.StreamResponse(ev.Resp)
		if err != nil {
			return e.grpcEncodeFailed(ctx, err)
		}
		pbconv.SetEventID(out, ev.Seq)
		if err := ss.Send(out); err != nil {
			return err // the client went away
		}
	}
	return nil
}

func (s *grpcService) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	e := s.edge()
	r, err := pbconv.FromGetTaskRequest(req)
	if err != nil {
		return nil, grpcBadRequest(err)
	}
	t, err := e.svc.GetTask(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	return e.grpcTask(ctx, t)
}

func (e *Edge) grpcTask(ctx context.Context, t *a2a.Task) (*a2apb.Task, error) {
	out, err := pbconv.Task(t)
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

func (s *grpcService) ListTasks(ctx context.Context, req *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	e := s.edge()
	r, err := pbconv.FromListTasksRequest(req)
	if err != nil {
		return nil, grpcBadRequest(err)
	}
	if r.PageSize != nil && *r.PageSize == 0 {
		// Proto clients send 0 for "not given" (the official Go SDK sets
		// page_size always): the default page, not a refusal.
		r.PageSize = nil
	}
	res, err := e.svc.ListTasks(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	out, err := pbconv.ListTasksResponse(res)
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

func (s *grpcService) CancelTask(ctx context.Context, req *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	e := s.edge()
	r, err := pbconv.FromCancelTaskRequest(req)
	if err != nil {
		return nil, grpcBadRequest(err)
	}
	t, err := e.svc.CancelTask(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	return e.grpcTask(ctx, t)
}

func (s *grpcService) CreateTaskPushNotificationConfig(ctx context.Context, req *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	e := s.edge()
	r, err := pbconv.FromPushConfig(req)
	if err != nil {
		return nil, grpcBadRequest(err)
	}
	if r.TaskID == "" {
		return nil, grpcError(a2a.ErrInvalidParams.With("Invalid parameters: task_id is required"))
	}
	out, err := e.svc.CreateTaskPushNotificationConfig(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	return e.grpcPushConfig(ctx, out)
}

func (e *Edge) grpcPushConfig(ctx context.Context, c *a2a.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	out, err := pbconv.PushConfig(c)
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

// pushConfigIDs checks the ids of a get or delete: both the task's and
// the config's are required in 1.0.
func pushConfigIDs(taskID, id string) error {
	switch {
	case taskID == "":
		return grpcError(a2a.ErrInvalidParams.With("Invalid parameters: task_id is required"))
	case id == "":
		return grpcError(a2a.ErrInvalidParams.With("Invalid parameters: id is required (the push notification config's id)"))
	}
	return nil
}

func (s *grpcService) GetTaskPushNotificationConfig(ctx context.Context, req *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	e := s.edge()
	if err := pushConfigIDs(req.GetTaskId(), req.GetId()); err != nil {
		return nil, err
	}
	out, err := e.svc.GetTaskPushNotificationConfig(ctx, &service.PushConfigRequest{Tenant: req.GetTenant(), TaskID: req.GetTaskId(), ID: req.GetId()})
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	return e.grpcPushConfig(ctx, out)
}

func (s *grpcService) ListTaskPushNotificationConfigs(ctx context.Context, req *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	e := s.edge()
	if req.GetTaskId() == "" {
		return nil, grpcError(a2a.ErrInvalidParams.With("Invalid parameters: task_id is required"))
	}
	r := &service.ListPushConfigsRequest{Tenant: req.GetTenant(), TaskID: req.GetTaskId(), PageToken: req.GetPageToken()}
	if n := int(req.GetPageSize()); n != 0 { // proto3: 0 is unset, the default page
		r.PageSize = &n
	}
	res, err := e.svc.ListTaskPushNotificationConfigs(ctx, r)
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	out, err := pbconv.ListPushConfigsResponse(res.Configs, res.NextPageToken)
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

func (s *grpcService) DeleteTaskPushNotificationConfig(ctx context.Context, req *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	e := s.edge()
	if err := pushConfigIDs(req.GetTaskId(), req.GetId()); err != nil {
		return nil, err
	}
	if err := e.svc.DeleteTaskPushNotificationConfig(ctx, &service.PushConfigRequest{Tenant: req.GetTenant(), TaskID: req.GetTaskId(), ID: req.GetId()}); err != nil {
		return nil, grpcFailure(ctx, err)
	}
	return &emptypb.Empty{}, nil
}

func (s *grpcService) GetExtendedAgentCard(ctx context.Context, req *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	e := s.edge()
	c, err := e.svc.GetExtendedAgentCard(ctx, &service.GetExtendedAgentCardRequest{Tenant: req.GetTenant()})
	if err != nil {
		return nil, grpcFailure(ctx, err)
	}
	out, err := pbconv.AgentCard(e.extendedCard(ctx, e.grpcBaseURL(ctx), c))
	if err != nil {
		return nil, e.grpcEncodeFailed(ctx, err)
	}
	return out, nil
}

// StopGRPC stops a gRPC server as its host shuts down: gracefully (calls
// in progress finish) within grace, then at once (open streams are cut;
// their clients resume them elsewhere with last-event-id). It returns
// when the server has stopped.
func StopGRPC(srv *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		srv.Stop()
		<-done
	}
}
