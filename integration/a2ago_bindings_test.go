package integration

// Interop over the other bindings: the official Go SDK
// (github.com/a2aproject/a2a-go/v2 v2.4.0) resolves each agent's card,
// picks its HTTP+JSON interface (by path, then by tenant) or its gRPC
// interface (a2agrpc/v1), and runs the flows a2ago_interop_test.go runs
// over JSON-RPC: send, stream, get, list, cancel, subscribe, multi-turn,
// errors, push configs, and calls with the SDK's auth interceptor.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// gosdkWire records what the SDK sent: HTTP requests (method and path)
// and gRPC calls (method and metadata).
type gosdkWire struct {
	mu   sync.Mutex
	http []string // "POST /agents/echo/message:send"
	grpc []gosdkGRPCCall
	base http.RoundTripper
}

type gosdkGRPCCall struct {
	Method string
	MD     metadata.MD
}

func (w *gosdkWire) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	if len(w.http) < 10000 {
		w.http = append(w.http, req.Method+" "+req.URL.Path)
	}
	w.mu.Unlock()
	return w.base.RoundTrip(req)
}

func (w *gosdkWire) recordGRPC(ctx context.Context, method string) {
	md, _ := metadata.FromOutgoingContext(ctx)
	w.mu.Lock()
	if len(w.grpc) < 10000 {
		w.grpc = append(w.grpc, gosdkGRPCCall{Method: method, MD: md.Copy()})
	}
	w.mu.Unlock()
}

func (w *gosdkWire) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			w.recordGRPC(ctx, method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			w.recordGRPC(ctx, method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// requireWent checks the last call went over the binding under test:
// an HTTP request whose path ends in restSuffix (HTTP+JSON) or the gRPC
// method grpcMethod, and nothing over the other wires since mark.
func (w *gosdkWire) requireWent(t *testing.T, binding a2a.TransportProtocol, mark [2]int, restSuffix, grpcMethod string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	newHTTP, newGRPC := w.http[mark[0]:], w.grpc[mark[1]:]
	switch binding {
	case a2a.TransportProtocolHTTPJSON:
		require.Emptyf(t, newGRPC, "the HTTP+JSON client made gRPC calls")
		for _, r := range newHTTP {
			if strings.HasSuffix(r, restSuffix) {
				require.NotContainsf(t, r, "/a2a", "an HTTP+JSON call went to the JSON-RPC endpoint: %s", r)
				return
			}
		}
		t.Fatalf("no HTTP+JSON request ending in %s; the SDK sent %v", restSuffix, newHTTP)
	case a2a.TransportProtocolGRPC:
		for _, r := range newHTTP {
			require.Truef(t, strings.HasPrefix(r, "GET ") && strings.Contains(r, "/.well-known/"), "the gRPC client made an HTTP call: %s", r)
		}
		for _, c := range newGRPC {
			if c.Method == "/lf.a2a.v1.A2AService/"+grpcMethod {
				return
			}
		}
		t.Fatalf("no gRPC call of %s; the SDK called %v", grpcMethod, newGRPC)
	}
}

func (w *gosdkWire) mark() [2]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return [2]int{len(w.http), len(w.grpc)}
}

// gosdkSecuredParser parses a card with the SDK's 1.0 parser, around
// a2a-go issue #430 (see withoutSecurityRequirements), and then puts the
// card's security requirements back, read from their ProtoJSON form, so
// that the SDK's AuthInterceptor finds them.
func gosdkSecuredParser(body []byte) (*a2a.AgentCard, error) {
	card, err := withoutSecurityRequirements(agentcard.DefaultCardParser)(body)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Reqs []struct {
			Schemes map[string]struct {
				List []string `json:"list"`
			} `json:"schemes"`
		} `json:"securityRequirements"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	for _, r := range raw.Reqs {
		req := a2a.SecurityRequirements{}
		for name, scopes := range r.Schemes {
			req[a2a.SecuritySchemeName(name)] = a2a.SecuritySchemeScopes(scopes.List)
		}
		card.SecurityRequirements = append(card.SecurityRequirements, req)
	}
	return card, nil
}

// gosdkBinding is one way the SDK reaches an agent.
type gosdkBinding struct {
	name     string
	protocol a2a.TransportProtocol
	// byTenant keeps only the card's interface of this binding that names
	// the agent as its tenant (HTTP+JSON at the edge's base).
	byTenant bool
	// scheme is the kind of credential the session holds (the SDK's auth
	// interceptor sends the first requirement it has a credential for).
	bearer bool
}

var gosdkBindings = []gosdkBinding{
	{name: "HTTP+JSON", protocol: a2a.TransportProtocolHTTPJSON},
	{name: "HTTP+JSON by tenant", protocol: a2a.TransportProtocolHTTPJSON, byTenant: true, bearer: true},
	{name: "GRPC", protocol: a2a.TransportProtocolGRPC},
}

// gosdkBindingEnv is the SDK's side of one binding's run.
type gosdkBindingEnv struct {
	base  string
	b     gosdkBinding
	wire  *gosdkWire
	hc    *http.Client
	creds *a2aclient.InMemoryCredentialsStore
}

// client resolves agent's card and builds a client of the binding
// under test, whose calls carry the session's credential.
func (e *gosdkBindingEnv) client(t *testing.T, ctx context.Context, agent string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	resolver := &agentcard.Resolver{Client: e.hc, CardParser: gosdkSecuredParser}
	card, err := resolver.Resolve(ctx, gosdkAgentURL(e.base, agent))
	require.NoErrorf(t, err, "resolving the %s card", agent)
	// The card must list the binding; for the by-tenant run, keep only
	// the interface that names the agent as its tenant.
	var found *a2a.AgentInterface
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding != e.b.protocol {
			continue
		}
		if !e.b.byTenant || i.Tenant != "" {
			found = i // the first, as the SDK picks
			break
		}
	}
	ifaces, _ := json.Marshal(card.SupportedInterfaces)
	require.NotNilf(t, found, "the %s card lists no %s interface (by tenant: %v): %s", agent, e.b.protocol, e.b.byTenant, ifaces)
	if e.b.byTenant {
		require.Equal(t, agent, found.Tenant)
		c := *card
		c.SupportedInterfaces = []*a2a.AgentInterface{found}
		card = &c
	}
	factory := a2aclient.NewFactory(
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{e.b.protocol}}),
		a2aclient.WithJSONRPCTransport(e.hc),
		a2aclient.WithRESTTransport(e.hc),
		a2agrpc.WithGRPCTransport(e.wire.dialOptions()...),
		a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: e.creds}),
	)
	client, err := factory.CreateFromCard(ctx, card)
	require.NoErrorf(t, err, "creating the %s client for %s", e.b.name, agent)
	t.Cleanup(func() { client.Destroy() })
	return client, card
}

// as is a step's context calling as principal ("alice", "bob"; "" for no
// credentials).
func (e *gosdkBindingEnv) as(t *testing.T, principal string) context.Context {
	ctx := gosdkStepContext(t)
	if principal == "" {
		return ctx
	}
	return a2aclient.AttachSessionID(ctx, a2aclient.SessionID(principal))
}

func TestA2AGoBindings(t *testing.T) {
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	rcv := newReceiver(t)
	m := meshtest.Start(t, bindingsGRPCOption(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Push = pushConfig(rcv.hostPort())
	}))
	for _, b := range gosdkBindings {
		t.Run(b.name, func(t *testing.T) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Proxy = nil
			t.Cleanup(tr.CloseIdleConnections)
			wire := &gosdkWire{base: tr}
			e := &gosdkBindingEnv{base: m.URL, b: b, wire: wire, hc: &http.Client{Transport: wire}, creds: a2aclient.NewInMemoryCredentialsStore()}
			// The session's credential, under the scheme the card names.
			_, card := e.client(t, gosdkStepContext(t), "echo")
			for name, s := range card.SecuritySchemes {
				_, isKey := s.(a2a.APIKeySecurityScheme)
				_, isHTTP := s.(a2a.HTTPAuthSecurityScheme)
				if (isKey && !b.bearer) || (isHTTP && b.bearer) {
					e.creds.Set("alice", name, aliceKey)
					e.creds.Set("bob", name, bobKey)
				}
			}
			gosdkBindingFlows(t, e, rcv)
		})
	}
}

func gosdkBindingFlows(t *testing.T, e *gosdkBindingEnv, rcv *receiver) {
	proto := e.b.protocol

	t.Run("SendMessage/echo", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "echo")
		mark := e.wire.mark()
		text := "hello over " + e.b.name + " " + uuid.NewString()
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		require.NoError(t, err, "SendMessage")
		task := gosdkAsTask(t, res)
		require.Equal(t, a2a.TaskStateCompleted, task.Status.State)
		require.Equal(t, text, gosdkArtifactText(task))
		e.wire.requireWent(t, proto, mark, "/message:send", "SendMessage")

		got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		require.NoError(t, err, "GetTask")
		require.Equal(t, task.ID, got.ID)
		require.Equal(t, text, gosdkArtifactText(got))
		zero := 0
		got, err = client.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: &zero})
		require.NoError(t, err, "GetTask historyLength 0")
		require.Empty(t, got.History)

		list, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID, PageSize: 10})
		require.NoError(t, err, "ListTasks")
		require.Len(t, list.Tasks, 1)
		require.Equal(t, task.ID, list.Tasks[0].ID)
		require.Equal(t, 1, list.TotalSize)
		e.wire.requireWent(t, proto, mark, "/tasks", "ListTasks")
	})

	t.Run("ListTasks/paging", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "echo")
		ctxID := "gosdk-" + uuid.NewString()
		want := map[a2a.TaskID]bool{}
		for i := 0; i < 3; i++ {
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("page"))
			msg.ContextID = ctxID
			res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
			require.NoError(t, err)
			want[gosdkAsTask(t, res).ID] = true
		}
		got := map[a2a.TaskID]bool{}
		first, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID, PageSize: 2})
		require.NoError(t, err)
		require.Len(t, first.Tasks, 2)
		require.NotEmpty(t, first.NextPageToken)
		second, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID, PageSize: 2, PageToken: first.NextPageToken})
		require.NoError(t, err)
		require.Len(t, second.Tasks, 1)
		require.Empty(t, second.NextPageToken)
		for _, tk := range append(first.Tasks, second.Tasks...) {
			got[tk.ID] = true
		}
		require.Equal(t, want, got)
		done, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID, Status: a2a.TaskStateWorking})
		require.NoError(t, err)
		require.Empty(t, done.Tasks, "status filter")
		// The SDK's HTTP+JSON client sends StatusTimestampAfter as
		// lastUpdatedAfter, not statusTimestampAfter (§11.5); the edge
		// reads both.
		later := time.Now().Add(time.Hour)
		after, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID, StatusTimestampAfter: &later})
		require.NoError(t, err)
		require.Empty(t, after.Tasks, "statusTimestampAfter filter")
		earlier := time.Now().Add(-time.Hour)
		after, err = client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID, StatusTimestampAfter: &earlier})
		require.NoError(t, err)
		require.Len(t, after.Tasks, 3, "statusTimestampAfter filter")
	})

	t.Run("SendStreamingMessage/slow", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "slow")
		mark := e.wire.mark()
		events, err := gosdkCollect(client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=3 delay=50ms")),
		}))
		require.NoErrorf(t, err, "SendStreamingMessage; events so far:\n%s", gosdkDescribe(events))
		gosdkCheckStream(t, events, gosdkStreamCheck{taskFirst: true, minArtifacts: 3, maxArtifacts: 3, final: a2a.TaskStateCompleted})
		e.wire.requireWent(t, proto, mark, "/message:stream", "SendStreamingMessage")
	})

	t.Run("SubscribeToTask/slow", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=5 delay=150ms")
		mark := e.wire.mark()
		events, err := gosdkCollect(client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
		require.NoErrorf(t, err, "SubscribeToTask; events so far:\n%s", gosdkDescribe(events))
		gosdkCheckStream(t, events, gosdkStreamCheck{taskFirst: true, taskID: task.ID, minArtifacts: 1, maxArtifacts: 5, final: a2a.TaskStateCompleted})
		e.wire.requireWent(t, proto, mark, ":subscribe", "SubscribeToTask")
	})

	t.Run("CancelTask/slow", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=100 delay=200ms")
		mark := e.wire.mark()
		canceled, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		require.NoError(t, err, "CancelTask")
		require.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)
		e.wire.requireWent(t, proto, mark, ":cancel", "CancelTask")
		gosdkRecancel(t, ctx, client, task.ID)

		echo, _ := e.client(t, ctx, "echo")
		res, err := echo.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("done"))})
		require.NoError(t, err)
		_, err = echo.CancelTask(ctx, &a2a.CancelTaskRequest{ID: gosdkAsTask(t, res).ID})
		require.Truef(t, errors.Is(err, a2a.ErrTaskNotCancelable), "canceling a completed task: %v, want %v", err, a2a.ErrTaskNotCancelable)
	})

	t.Run("MultiTurn/ask", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "ask")
		gosdkMultiTurn(t, ctx, client)
	})

	t.Run("UnknownTask", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "echo")
		gosdkUnknownTask(t, ctx, client, "1.0")
	})

	t.Run("PushConfigs/slow", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=3 delay=150ms")
		path := "/gosdk-" + strings.ReplaceAll(strings.ToLower(e.b.name), " ", "-")
		mark := e.wire.mark()
		cfg, err := client.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "hook-1", URL: rcv.URL + path, Token: "sdk-token"})
		require.NoError(t, err, "CreateTaskPushConfig")
		require.Equal(t, rcv.URL+path, cfg.URL)
		require.Equal(t, "hook-1", cfg.ID)
		e.wire.requireWent(t, proto, mark, "/pushNotificationConfigs", "CreateTaskPushNotificationConfig")
		got, err := client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"})
		require.NoError(t, err, "GetTaskPushConfig")
		require.Equal(t, rcv.URL+path, got.URL)
		list, err := client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		require.NoError(t, err, "ListTaskPushConfigs")
		require.Len(t, list, 1)
		n := rcv.waitState(t, v10, path, string(task.ID), v10.completed)
		require.Equal(t, "sdk-token", n.Header.Get("X-A2A-Notification-Token"))
		require.NoError(t, client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"}), "DeleteTaskPushConfig")
		list, err = client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		require.NoError(t, err)
		require.Empty(t, list)
	})

	t.Run("Auth", func(t *testing.T) {
		ctx := e.as(t, "alice")
		client, _ := e.client(t, ctx, "ask")
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
		require.NoError(t, err)
		mine := gosdkAsTask(t, res)

		bob := e.as(t, "bob")
		_, err = client.GetTask(bob, &a2a.GetTaskRequest{ID: mine.ID})
		require.Truef(t, errors.Is(err, a2a.ErrTaskNotFound), "bob reads alice's task: %v, want %v", err, a2a.ErrTaskNotFound)
		_, err = client.CancelTask(bob, &a2a.CancelTaskRequest{ID: mine.ID})
		require.Truef(t, errors.Is(err, a2a.ErrTaskNotFound), "bob cancels alice's task: %v, want %v", err, a2a.ErrTaskNotFound)

		anon := e.as(t, "")
		_, err = client.GetTask(anon, &a2a.GetTaskRequest{ID: mine.ID})
		require.Truef(t, errors.Is(err, a2a.ErrUnauthenticated), "a call without credentials: %v, want %v", err, a2a.ErrUnauthenticated)
		events, err := gosdkCollect(client.SendStreamingMessage(anon, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))}))
		require.Truef(t, errors.Is(err, a2a.ErrUnauthenticated) && len(events) == 0, "a stream without credentials: %d events, %v; want %v", len(events), err, a2a.ErrUnauthenticated)
	})
}
