package proxy_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// failingUpstream is a hand-written agent offering only HTTP+JSON or only
// gRPC whose SendMessage fails with the A2A error reason names and the
// secret as its message.
type failingUpstream struct {
	URL   string
	calls atomic.Int64 // SendMessage calls received
}

func startFailingUpstream(t *testing.T, binding string, st *a2a.Error) *failingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &failingUpstream{URL: "http://" + ln.Addr().String()}
	reason := st.Status().Reason
	iface := a2a.AgentInterface{ProtocolBinding: binding, ProtocolVersion: "1.0"}
	mux := http.NewServeMux()
	switch binding {
	case a2a.BindingHTTPJSON:
		iface.URL = u.URL + "/rest"
		mux.HandleFunc("POST /rest/message:send", func(w http.ResponseWriter, r *http.Request) {
			u.calls.Add(1)
			w.Header().Set("Content-Type", "application/a2a+json")
			w.WriteHeader(st.Status().HTTP)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"code": st.Status().HTTP, "status": st.Status().GRPC, "message": st.Message,
				"details": []any{map[string]any{"@type": a2a.ErrorInfoType, "reason": reason, "domain": a2a.ErrorDomain}},
			}})
		})
	case a2a.BindingGRPC:
		gln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		iface.URL = gln.Addr().String()
		code := map[string]codes.Code{"INVALID_ARGUMENT": codes.InvalidArgument, "NOT_FOUND": codes.NotFound, "INTERNAL": codes.Internal}[st.Status().GRPC]
		s, err := grpcstatus.New(code, st.Message).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: a2a.ErrorDomain})
		require.NoError(t, err)
		srv := grpc.NewServer()
		a2apb.RegisterA2AServiceServer(srv, &failingGRPC{calls: &u.calls, err: s.Err()})
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(gln) }()
		t.Cleanup(func() { srv.Stop(); <-done })
	}
	card := a2a.AgentCard{
		Name: "Failing " + binding, Description: "fails on purpose", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{iface},
		Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(false)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}},
	}
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(card)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	})
	return u
}

type failingGRPC struct {
	a2apb.UnimplementedA2AServiceServer
	calls *atomic.Int64
	err   error
}

func (f *failingGRPC) SendMessage(context.Context, *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	f.calls.Add(1)
	return nil, f.err
}

// The error of an HTTP+JSON or gRPC upstream is read back to its A2A code
// and sanitized as a JSON-RPC upstream's is: an internal error by its code
// only, a client error (invalid params) with its message.
func TestProxyUpstreamErrorIsSanitizedOverBindings(t *testing.T) {
	m := meshtest.Start(t)
	for _, binding := range []string{a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		for _, tc := range []struct {
			name string
			err  *a2a.Error
			want string
		}{
			{"internal", a2a.ErrInternal.With("%s", upstreamSecret), "the upstream agent failed (error -32603)"},
			{"invalid-params", a2a.ErrInvalidParams.With("part 0 is empty"), "the upstream agent answered with error -32602: part 0 is empty"},
		} {
			t.Run(binding+"/"+tc.name, func(t *testing.T) {
				up := startFailingUpstream(t, binding, tc.err)
				name := "failing-" + bindingName(binding) + "-" + tc.name
				runProxy(t, m, up.URL, name)
				task := send(t, client.New(m.URL+"/agents/"+name), "go", "")
				assert.Equal(t, a2a.StateFailed, task.Status.State)
				require.NotNil(t, task.Status.Message)
				assert.Equal(t, tc.want, task.Status.Message.Text())
				assert.Positive(t, up.calls.Load(), "the upstream was called")
			})
		}
	}
}
