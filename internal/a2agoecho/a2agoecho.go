// Package a2agoecho serves an echo agent built on the a2a-go v2 SDK's
// server stack: the baseline `a2amesh bench` measures the mesh against,
// and an upstream agent of another implementation for the proxy tests.
package a2agoecho

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// V1Path is where Start serves the SDK's A2A 1.0 JSON-RPC handler
// (SendMessage, GetTask, ...), relative to the URL it returns. The URL
// itself serves the SDK's A2A 0.3 compat handler (message/send, ...).
const V1Path = "/v1"

// echoExecutor is an a2asrv.AgentExecutor doing what the mesh's built-in
// echo agent does: the task is created, the text parts of the message come
// back as one artifact, and the task completes.
type echoExecutor struct{}

func (echoExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		var parts []*a2a.Part
		if ec.Message != nil {
			for _, p := range ec.Message.Parts {
				if t, ok := p.Content.(a2a.Text); ok {
					parts = append(parts, a2a.NewTextPart(string(t)))
				}
			}
		}
		if len(parts) == 0 {
			parts = append(parts, a2a.NewTextPart(""))
		}
		if !yield(a2a.NewArtifactEvent(ec, parts...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echoExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Start serves an echo agent built on the a2a-go v2 SDK's server
// stack (a2asrv.NewHandler with its default in-memory task store and event
// queues) on 127.0.0.1 at a free port. The returned url takes A2A 0.3
// JSON-RPC (message/send, via the SDK's a2av0 compat handler);
// url+V1Path takes A2A 1.0 JSON-RPC (SendMessage); both share one
// request handler and task store. url/.well-known/agent-card.json is the
// agent card. stop shuts the server down (waiting up to 5s for requests in
// flight); it is safe to call more than once. The server also stops when
// ctx ends.
func Start(ctx context.Context) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("a2agoecho: listen: %w", err)
	}
	base := "http://" + ln.Addr().String()

	// Quiet logger: the SDK logs only problems, and those go to stderr
	// at warn level and above.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler := a2asrv.NewHandler(echoExecutor{}, a2asrv.WithLogger(logger))

	card := &a2a.AgentCard{
		Name:        "echo",
		Description: "a2a-go SDK echo agent (benchmark baseline)",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: base + V1Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID: "echo", Name: "echo", Description: "replies with the text it got", Tags: []string{"echo"},
		}},
	}

	mux := http.NewServeMux()
	mux.Handle("GET /.well-known/agent-card.json", a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
	mux.Handle("POST "+V1Path, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("POST /{$}", a2av0.NewJSONRPCHandler(handler))

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("a2agoecho: a2a-go echo server stopped", "error", err)
		}
	}()

	stopped := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			defer close(stopped)
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			<-done
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	return base, stop, nil
}
