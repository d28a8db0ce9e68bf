package integration

// Extensions with the official Go SDK's clients (a2a-go v2.4.0): its
// a2aext activator requests the extensions the agent's card declares,
// through A2A-Extensions (1.0 JSON-RPC and HTTP+JSON), gRPC metadata, and
// X-A2A-Extensions (its 0.3 JSON-RPC transport). The agent sees them, the
// answer echoes the activated one, and without the activator the SDK
// gets its own ErrExtensionSupportRequired from the strict agent.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2aext"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/tracing"
)

// extEchoes records the extensions the server echoed to the SDK: HTTP
// response headers and gRPC header metadata.
type extEchoes struct {
	mu   sync.Mutex
	seen []string
	base http.RoundTripper
}

func (e *extEchoes) add(v ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range v {
		e.seen = append(e.seen, splitExts(s)...)
	}
}

func (e *extEchoes) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.seen
	e.seen = nil
	return s
}

func (e *extEchoes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.base.RoundTrip(req)
	if err == nil {
		e.add(append(resp.Header.Values("A2A-Extensions"), resp.Header.Values("X-A2A-Extensions")...)...)
	}
	return resp, err
}

func (e *extEchoes) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var hdr metadata.MD
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&hdr))...)
	e.add(hdr.Get("a2a-extensions")...)
	return err
}

func TestA2AGoExtensions(t *testing.T) {
	m := startExtMesh(t)
	type sdkBinding struct {
		name     string
		v03      bool
		protocol a2a.TransportProtocol
	}
	for _, b := range []sdkBinding{
		{name: "JSON-RPC 1.0", protocol: a2a.TransportProtocolJSONRPC},
		{name: "JSON-RPC 0.3", v03: true},
		{name: "HTTP+JSON", protocol: a2a.TransportProtocolHTTPJSON},
		{name: "gRPC", protocol: a2a.TransportProtocolGRPC},
	} {
		t.Run(b.name, func(t *testing.T) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			t.Cleanup(tr.CloseIdleConnections)
			echoes := &extEchoes{base: tr}
			hc := &http.Client{Transport: echoes}
			newClient := func(ctx context.Context, interceptors ...a2aclient.CallInterceptor) *a2aclient.Client {
				resolver := &agentcard.Resolver{Client: hc}
				var f *a2aclient.Factory
				if b.v03 {
					resolver.CardParser = a2av0.NewAgentCardParser()
					f = a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(),
						a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
						a2aclient.WithCallInterceptors(interceptors...))
				} else {
					f = a2aclient.NewFactory(
						a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{b.protocol}}),
						a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
						a2agrpc.WithGRPCTransport(grpc.WithUnaryInterceptor(echoes.unary)),
						a2aclient.WithCallInterceptors(interceptors...))
				}
				card, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "ext-strict"))
				require.NoError(t, err)
				c, err := f.CreateFromCard(ctx, card)
				require.NoError(t, err)
				t.Cleanup(func() { c.Destroy() })
				return c
			}
			send := func(ctx context.Context, c *a2aclient.Client) (string, error) {
				id := "m-" + uuid.NewString()
				msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))
				msg.ID = id
				_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
				return id, err
			}

			ctx := gosdkStepContext(t)
			// The activator requests the extensions the card declares:
			// not extOther.
			c := newClient(ctx, a2aext.NewActivator(extActive, extMust, extOther, tracing.ExtensionURI))
			id, err := send(ctx, c)
			require.NoError(t, err)
			seen, ok := m.seen.get(id)
			require.True(t, ok, "the agent never ran the turn")
			assert.Equal(t, []string{extActive, extMust, tracing.ExtensionURI}, seen)
			got := echoes.take()
			assert.ElementsMatch(t, []string{tracing.ExtensionURI, extActive}, got, "echoed: %s", strings.Join(got, ","))

			// Without the activator the required extension is missing.
			_, err = send(ctx, newClient(ctx))
			require.Error(t, err)
			assert.Truef(t, errors.Is(err, a2a.ErrExtensionSupportRequired), "the SDK reads %v as ErrExtensionSupportRequired", err)
		})
	}
}
