package a2agoecho

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// RESTPath is where StartBinding serves the HTTP+JSON binding, relative
// to the server's URL: its interface URL is URL+RESTPath.
const RESTPath = "/a2a"

// Options says what StartBinding serves.
type Options struct {
	// Binding is the one binding the agent offers, as its card names
	// it: "JSONRPC", "HTTP+JSON" or "GRPC" (A2A 1.0 in each).
	Binding string
	// Executor runs the agent's tasks; nil is the echo agent.
	Executor a2asrv.AgentExecutor
	// Streaming is what the card says of streaming.
	Streaming bool
	// Name is the card's name; "" is "echo".
	Name string
	// Logger gets the SDK's logs; nil logs warnings and worse to stderr.
	Logger *slog.Logger
	// ExtendedCard, when set, is served by GetExtendedAgentCard
	// (a2asrv.WithExtendedAgentCard), and the card declares it.
	ExtendedCard *a2a.AgentCard
	// Authorization, when set, is the Authorization header value every
	// A2A call must carry (the card stays public); others get 401.
	Authorization string
}

// Server is an agent StartBinding serves.
type Server struct {
	// URL is the server's base URL: its card is at
	// URL/.well-known/agent-card.json.
	URL string
	// Endpoint is the URL of the card's one interface: URL+V1Path for
	// JSON-RPC, URL+RESTPath for HTTP+JSON, and host:port of a listener
	// of its own for gRPC.
	Endpoint string
	stop     func()
}

// Stop shuts the server down, waiting up to 5s for calls in flight; it is
// safe to call more than once.
func (s *Server) Stop() { s.stop() }

// StartBinding serves an agent built on the a2a-go v2 SDK's server stack
// (a2asrv.NewHandler with its in-memory task store) over one binding, on
// 127.0.0.1 at free ports, with a card listing that binding only: the
// SDK's own JSON-RPC, HTTP+JSON (a2asrv.NewRESTHandler) or gRPC
// (a2agrpc.Handler) transport. The server stops when ctx ends or Stop is
// called.
func StartBinding(ctx context.Context, o Options) (*Server, error) {
	if o.Executor == nil {
		o.Executor = echoExecutor{}
	}
	if o.Name == "" {
		o.Name = "echo"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("a2agoecho: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	hopts := []a2asrv.RequestHandlerOption{a2asrv.WithLogger(o.Logger)}
	if o.ExtendedCard != nil {
		hopts = append(hopts, a2asrv.WithExtendedAgentCard(o.ExtendedCard))
	}
	handler := a2asrv.NewHandler(o.Executor, hopts...)
	mux := http.NewServeMux()
	var gsrv *grpc.Server
	var gln net.Listener
	binding := a2a.TransportProtocol(o.Binding)
	switch binding {
	case a2a.TransportProtocolJSONRPC:
		s.Endpoint = s.URL + V1Path
		mux.Handle("POST "+V1Path, a2asrv.NewJSONRPCHandler(handler))
	case a2a.TransportProtocolHTTPJSON:
		s.Endpoint = s.URL + RESTPath
		mux.Handle(RESTPath+"/", http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(handler)))
	case a2a.TransportProtocolGRPC:
		if gln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("a2agoecho: listen: %w", err)
		}
		s.Endpoint = gln.Addr().String()
		var gopts []grpc.ServerOption
		if o.Authorization != "" {
			gopts = append(gopts, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("authorization")) == 0 || md.Get("authorization")[0] != o.Authorization {
					return nil, status.Error(codes.Unauthenticated, "authorization required")
				}
				return h(ctx, req)
			}))
		}
		gsrv = grpc.NewServer(gopts...)
		a2agrpc.NewHandler(handler).RegisterWith(gsrv)
	default:
		_ = ln.Close()
		return nil, fmt.Errorf("a2agoecho: binding %q is not JSONRPC, HTTP+JSON or GRPC", o.Binding)
	}
	card := &a2a.AgentCard{
		Name:        o.Name,
		Description: "a2a-go SDK agent over " + o.Binding,
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: s.Endpoint, ProtocolBinding: binding, ProtocolVersion: a2a.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: o.Streaming, ExtendedAgentCard: o.ExtendedCard != nil},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID: "echo", Name: "echo", Description: "replies with the text it got", Tags: []string{"echo"},
		}},
	}
	mux.Handle("GET /.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(card))
	var h http.Handler = mux
	if o.Authorization != "" {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/.well-known/agent-card.json" && r.Header.Get("Authorization") != o.Authorization {
				http.Error(w, "authorization required", http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}

	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("a2agoecho: server stopped", "error", err)
		}
	}()
	if gsrv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := gsrv.Serve(gln); err != nil {
				o.Logger.Error("a2agoecho: gRPC server stopped", "error", err)
			}
		}()
	}

	stopped := make(chan struct{})
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			defer close(stopped)
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if gsrv != nil {
				graceful := make(chan struct{})
				go func() { gsrv.GracefulStop(); close(graceful) }()
				select {
				case <-graceful:
				case <-sctx.Done():
					gsrv.Stop()
					<-graceful
				}
			}
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			wg.Wait()
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			s.stop()
		case <-stopped:
		}
	}()
	return s, nil
}
