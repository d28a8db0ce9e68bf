package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/pbconv"
)

// Dialer dials a network connection, as net.Dialer.DialContext does.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// WithDialer makes a gRPC client open its connections with dial (for
// example an SSRF guard's), given the host:port of the client's URL
// unresolved. It has no effect on the HTTP bindings, whose connections
// are their HTTP client's (WithHTTPClient).
func WithDialer(dial Dialer) Option {
	return func(c *Client) { c.dial = dial }
}

// WithGRPCDialOptions adds options to a gRPC client's connection (for
// example interceptors); the client's own (credentials, dialer) come
// first, so these may override them.
func WithGRPCDialOptions(opts ...grpc.DialOption) Option {
	return func(c *Client) { c.grpcOpts = append(c.grpcOpts, opts...) }
}

// grpcLastEventID is the metadata key of the event a SubscribeToTask
// call resumes after, as Last-Event-ID is in the HTTP bindings.
const grpcLastEventID = "last-event-id"

// grpcTransport speaks the gRPC binding (spec §10) over one connection.
type grpcTransport struct {
	c    *Client
	conn *grpc.ClientConn
	pb   a2apb.A2AServiceClient

	mu      sync.Mutex
	dialErr error // the last dial's failure; nil after a dial succeeds
}

// grpcTarget reads a gRPC interface URL: host:port, or a URL whose scheme
// says whether to use TLS (https, grpcs) or not (http, grpc).
func grpcTarget(raw string) (hostPort string, useTLS bool, err error) {
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil {
			return "", false, fmt.Errorf("client: gRPC address %q: %v", raw, err)
		}
		port := u.Port()
		switch strings.ToLower(u.Scheme) {
		case "https", "grpcs":
			useTLS = true
			if port == "" {
				port = "443"
			}
		case "http", "grpc":
			if port == "" {
				port = "80"
			}
		default:
			return "", false, fmt.Errorf("client: gRPC address %q: scheme %q is not http, https, grpc or grpcs", raw, u.Scheme)
		}
		if u.Hostname() == "" {
			return "", false, fmt.Errorf("client: gRPC address %q: no host", raw)
		}
		return net.JoinHostPort(u.Hostname(), port), useTLS, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" {
		return "", false, fmt.Errorf("client: gRPC address %q: want host:port", raw)
	}
	return s, false, nil
}

func newGRPCTransport(c *Client) transport {
	target, useTLS, err := grpcTarget(c.url)
	if err != nil {
		return failing{err}
	}
	t := &grpcTransport{c: c}
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	dial := c.dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := dial(ctx, "tcp", addr)
			t.mu.Lock()
			t.dialErr = err
			t.mu.Unlock()
			return conn, err
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(min(c.maxBody, 1<<30)))),
		grpc.WithUserAgent("a2amesh-client"),
	}
	// passthrough: the dialer gets host:port as written, and resolves it
	// itself (so a guard checks the addresses it actually connects to).
	conn, err := grpc.NewClient("passthrough:///"+target, append(opts, c.grpcOpts...)...)
	if err != nil {
		return failing{fmt.Errorf("client: gRPC address %q: %w", c.url, err)}
	}
	t.conn, t.pb = conn, a2apb.NewA2AServiceClient(conn)
	return t
}

// outgoing returns ctx carrying the client's headers and the A2A version
// as gRPC metadata (keys in lower case).
func (t *grpcTransport) outgoing(ctx context.Context, lastEventID string) context.Context {
	md := metadata.MD{}
	for k, vs := range t.c.header {
		k = strings.ToLower(k)
		switch k {
		case "content-type", "accept", "user-agent", "a2a-version", grpcLastEventID, "te", "connection", "host":
			continue // the protocol's own, or HTTP/2's
		}
		md[k] = append(md[k], vs...)
	}
	md.Set("a2a-version", ProtocolVersion)
	grpcExtensions(ctx, md) // extensions.go
	if lastEventID != "" {
		md.Set(grpcLastEventID, lastEventID)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// callError turns a failed call's error into the client's: an A2A error
// (a status whose details name an A2A reason, or a status the server
// chose) as *a2a.Error; a connection failure, a cancellation or a
// deadline as an error wrapping its cause (the dial's error, the
// context's).
func (t *grpcTransport) callError(ctx context.Context, op string, err error) error {
	st, ok := grpcstatus.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	reason := ""
	var data []any
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok {
			continue
		}
		if reason == "" && isA2AErrorInfo("google.rpc.ErrorInfo", info.GetDomain()) {
			reason = info.GetReason()
		}
		data = append(data, a2a.ErrorInfo{Type: a2a.ErrorInfoType, Reason: info.GetReason(), Domain: info.GetDomain(), Metadata: info.GetMetadata()})
	}
	if reason == "" {
		switch st.Code() {
		case codes.Canceled, codes.DeadlineExceeded:
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", op, ctx.Err())
			}
		case codes.Unavailable:
			t.mu.Lock()
			dialErr := t.dialErr
			t.mu.Unlock()
			if dialErr != nil {
				return fmt.Errorf("%s: %w", op, dialErr)
			}
			return fmt.Errorf("%s: gRPC unavailable: %s", op, st.Message())
		}
	}
	e := &a2a.Error{Code: statusCode(reason, grpcCodeName(st.Code())), Message: st.Message()}
	if e.Message == "" {
		if s := sentinelFor(e.Code); s != nil {
			e.Message = s.Message
		} else {
			e.Message = grpcCodeName(st.Code())
		}
	}
	if len(data) > 0 {
		e.Data = data
	}
	return e
}

// grpcCodeName is a status code's name as google.rpc.Status JSON spells
// it, for the codes statusCode reads.
func grpcCodeName(c codes.Code) string {
	switch c {
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	}
	return strings.ToUpper(c.String())
}

// badRequest wraps a conversion failure of a request: the client's own
// fault, nothing was sent.
func badRequest(op string, err error) error {
	return fmt.Errorf("%s: encoding request: %w", op, err)
}

// badResult wraps a conversion failure of a result.
func badResult(op string, err error) error {
	return fmt.Errorf("%s: %w: %v", op, ErrInvalidResponse, err)
}

func (t *grpcTransport) send(ctx context.Context, req *a2a.SendMessageRequest) (*a2a.StreamResponse, error) {
	in, err := pbconv.SendMessageRequest(req)
	if err != nil {
		return nil, badRequest(methodSend, err)
	}
	var hdr, trl metadata.MD
	out, err := t.pb.SendMessage(t.outgoing(ctx, ""), in, grpc.Header(&hdr), grpc.Trailer(&trl))
	if err != nil {
		return nil, t.callError(ctx, methodSend, err)
	}
	noteGRPCExtensions(ctx, hdr)
	noteGRPCExtensions(ctx, trl) // where a2a-go servers put them
	res, err := pbconv.FromSendMessageResponse(out)
	if err != nil {
		return nil, badResult(methodSend, err)
	}
	return res, nil
}

func (t *grpcTransport) stream(ctx context.Context, req *a2a.SendMessageRequest) (*Stream, error) {
	in, err := pbconv.SendMessageRequest(req)
	if err != nil {
		return nil, badRequest(methodStream, err)
	}
	return t.openStream(ctx, methodStream, "", func(ctx context.Context) (grpc.ServerStreamingClient[a2apb.StreamResponse], error) {
		return t.pb.SendStreamingMessage(ctx, in)
	})
}

func (t *grpcTransport) subscribe(ctx context.Context, req *a2a.TaskIDRequest, lastEventID string) (*Stream, error) {
	in, err := pbconv.SubscribeToTaskRequest(req)
	if err != nil {
		return nil, badRequest(methodSubscribe, err)
	}
	return t.openStream(ctx, methodSubscribe, lastEventID, func(ctx context.Context) (grpc.ServerStreamingClient[a2apb.StreamResponse], error) {
		return t.pb.SubscribeToTask(ctx, in)
	})
}

// openStream starts a server-streaming call and waits for its headers, so
// a call the server refuses at once fails here, as it does over HTTP.
func (t *grpcTransport) openStream(ctx context.Context, op, lastEventID string,
	call func(context.Context) (grpc.ServerStreamingClient[a2apb.StreamResponse], error)) (*Stream, error) {
	sctx, cancel := context.WithCancel(t.outgoing(ctx, lastEventID))
	st, err := call(sctx)
	if err != nil {
		cancel()
		return nil, t.callError(ctx, op, err)
	}
	s := &Stream{done: cancel}
	md, err := st.Header()
	if err != nil {
		cancel()
		return nil, t.callError(ctx, op, err)
	}
	noteGRPCExtensions(ctx, md)
	ended := false
	if md == nil {
		// Ended without headers: the status says why; a success is a
		// stream without events.
		_, err := st.Recv()
		cancel()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, t.callError(ctx, op, err)
		}
		ended = true
	}
	s.recv = func() (Event, error) {
		if ended {
			return Event{}, io.EOF
		}
		msg, err := st.Recv()
		if err != nil {
			ended = true
			noteGRPCExtensions(ctx, st.Trailer())
			cancel()
			if errors.Is(err, io.EOF) {
				return Event{}, io.EOF
			}
			return Event{}, t.callError(ctx, op, err)
		}
		id := grpcEventID(msg)
		if id == "" {
			id = s.lastID // as SSE keeps the last id
		}
		res, err := pbconv.FromStreamResponse(msg)
		if err != nil {
			return Event{}, fmt.Errorf("stream event: %w: %v", ErrInvalidResponse, err)
		}
		return Event{ID: id, Response: res}, nil
	}
	return s, nil
}

// grpcEventIDKey is where the mesh's edge sends a gRPC stream event's id
// (pbconv.EventIDKey); the client moves it to Event.ID.
const grpcEventIDKey = pbconv.EventIDKey

// grpcEventID takes the event id out of a gRPC stream event's metadata:
// "" when the server gave none.
func grpcEventID(ev *a2apb.StreamResponse) string { return pbconv.TakeEventID(ev) }

func (t *grpcTransport) extendedCard(ctx context.Context, tenant string) (*a2a.AgentCard, error) {
	out, err := t.pb.GetExtendedAgentCard(t.outgoing(ctx, ""), &a2apb.GetExtendedAgentCardRequest{Tenant: tenant})
	if err != nil {
		return nil, t.callError(ctx, methodExtCard, err)
	}
	card, err := pbconv.FromAgentCard(out)
	if err != nil {
		return nil, badResult(methodExtCard, err)
	}
	return card, nil
}

func (t *grpcTransport) getTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	in, err := pbconv.GetTaskRequest(req)
	if err != nil {
		return nil, badRequest(methodGet, err)
	}
	out, err := t.pb.GetTask(t.outgoing(ctx, ""), in)
	if err != nil {
		return nil, t.callError(ctx, methodGet, err)
	}
	task, err := pbconv.FromTask(out)
	if err != nil {
		return nil, badResult(methodGet, err)
	}
	return task, nil
}

func (t *grpcTransport) listTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	in, err := pbconv.ListTasksRequest(req)
	if err != nil {
		return nil, badRequest(methodList, err)
	}
	out, err := t.pb.ListTasks(t.outgoing(ctx, ""), in)
	if err != nil {
		return nil, t.callError(ctx, methodList, err)
	}
	res, err := pbconv.FromListTasksResponse(out)
	if err != nil {
		return nil, badResult(methodList, err)
	}
	return res, nil
}

func (t *grpcTransport) cancel(ctx context.Context, req *a2a.TaskIDRequest) (*a2a.Task, error) {
	in, err := pbconv.CancelTaskRequest(req)
	if err != nil {
		return nil, badRequest(methodCancel, err)
	}
	out, err := t.pb.CancelTask(t.outgoing(ctx, ""), in)
	if err != nil {
		return nil, t.callError(ctx, methodCancel, err)
	}
	task, err := pbconv.FromTask(out)
	if err != nil {
		return nil, badResult(methodCancel, err)
	}
	return task, nil
}

func (t *grpcTransport) close() error { return t.conn.Close() }
