package proxy_test

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// upstream is an A2A agent served by the a2a-go SDK on loopback: the
// "existing agent, another implementation" a proxy worker fronts.
type upstream struct {
	URL       string       // where its card is served
	Endpoint  string       // its one interface
	requests  atomic.Int64 // HTTP requests received (cards included)
	grpcCalls atomic.Int64 // gRPC calls received
}

type upstreamOpts struct {
	version   string // "1.0" or "0.3": the only interface the card offers
	binding   string // of that interface: JSON-RPC unless set
	streaming bool
	// grpcHost, when set, is the host the card names for a gRPC
	// interface (the server listens on 127.0.0.1 anyway).
	grpcHost string
	// ext, when set, is the upstream's extended card (its card declares
	// it).
	ext *goa2a.AgentCard
}

func startUpstream(t *testing.T, exec a2asrv.AgentExecutor, o upstreamOpts) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &upstream{URL: "http://" + ln.Addr().String()}
	hopts := []a2asrv.RequestHandlerOption{a2asrv.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))}
	if o.ext != nil {
		hopts = append(hopts, a2asrv.WithExtendedAgentCard(o.ext))
	}
	handler := a2asrv.NewHandler(exec, hopts...)
	iface := &goa2a.AgentInterface{URL: u.URL + "/rpc", ProtocolBinding: goa2a.TransportProtocolJSONRPC, ProtocolVersion: goa2a.Version}
	if o.version == "0.3" {
		iface.ProtocolVersion = a2av0.Version
	}
	switch o.binding {
	case a2a.BindingHTTPJSON:
		iface.URL, iface.ProtocolBinding = u.URL+"/rest", goa2a.TransportProtocolHTTPJSON
	case a2a.BindingGRPC:
		iface.URL, iface.ProtocolBinding = startGRPCUpstream(t, u, handler), goa2a.TransportProtocolGRPC
		if o.grpcHost != "" {
			_, port, _ := net.SplitHostPort(iface.URL)
			iface.URL = net.JoinHostPort(o.grpcHost, port)
		}
	}
	u.Endpoint = iface.URL
	card := &goa2a.AgentCard{
		Name: "Upstream Agent", Description: "an a2a-go agent behind a proxy worker", Version: "1.0.0",
		SupportedInterfaces: []*goa2a.AgentInterface{iface},
		Capabilities:        goa2a.AgentCapabilities{Streaming: o.streaming, ExtendedAgentCard: o.ext != nil},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []goa2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}},
	}
	mux := http.NewServeMux()
	if o.version == "0.3" {
		// A 0.3 card (url, protocolVersion 0.3.0) and a 0.3 endpoint.
		mux.Handle("GET /.well-known/agent-card.json", a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card)))
		mux.Handle("POST /rpc", a2av0.NewJSONRPCHandler(handler))
	} else {
		mux.Handle("GET /.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(card))
		mux.Handle("POST /rpc", a2asrv.NewJSONRPCHandler(handler))
		mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		mux.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
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

// startGRPCUpstream serves handler over gRPC (the SDK's a2agrpc) on a
// loopback port of its own, counting calls in u, and returns its address.
func startGRPCUpstream(t *testing.T, u *upstream, handler a2asrv.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			u.grpcCalls.Add(1)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			u.grpcCalls.Add(1)
			return h(srv, ss)
		}))
	a2agrpc.NewHandler(handler).RegisterWith(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(2 * time.Second):
			srv.Stop()
		}
		<-done
	})
	return ln.Addr().String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// turnsExecutor is a two-turn agent: the first turn streams a working
// status and two chunks of an artifact, then asks for input; the second
// completes with the text it got.
type turnsExecutor struct {
	mu          sync.Mutex
	storedTasks []bool // per Execute: whether the SDK handed it a stored task
	canceled    atomic.Int64
	block       chan struct{} // when set, the first turn waits on it (or ctx)
}

func textOf(m *goa2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.Content.(goa2a.Text); ok {
			b.WriteString(string(t))
		}
	}
	return b.String()
}

func (e *turnsExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	e.mu.Lock()
	e.storedTasks = append(e.storedTasks, ec.StoredTask != nil)
	e.mu.Unlock()
	return func(yield func(goa2a.Event, error) bool) {
		text := textOf(ec.Message)
		if ec.StoredTask == nil {
			if !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if !yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateWorking, nil), nil) {
				return
			}
			if text == "fail" {
				yield(nil, errors.New("database password is hunter2"))
				return
			}
			if e.block != nil {
				// Say so, then wait: the test cancels once the mesh task
				// shows this artifact.
				if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("started")), nil) {
					return
				}
				select {
				case <-e.block:
				case <-ctx.Done():
					return
				}
			}
			art := goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("chunk1:"+text))
			if !yield(art, nil) {
				return
			}
			more := goa2a.NewArtifactUpdateEvent(ec, art.Artifact.ID, goa2a.NewTextPart("chunk2"))
			more.Append = true
			if !yield(more, nil) {
				return
			}
			ask := goa2a.NewMessageForTask(goa2a.MessageRoleAgent, ec, goa2a.NewTextPart("more?"))
			yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateInputRequired, ask), nil)
			return
		}
		if !yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("got:"+text)), nil) {
			return
		}
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCompleted, nil), nil)
	}
}

func (e *turnsExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	e.canceled.Add(1)
	return func(yield func(goa2a.Event, error) bool) {
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

func (e *turnsExecutor) stored() []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bool(nil), e.storedTasks...)
}

// runProxy starts a proxy worker for the upstream at url in mesh m under
// name and waits until the mesh routes it.
func runProxy(t *testing.T, m *meshtest.Mesh, url, name string) *proxy.Agent {
	t.Helper()
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := proxy.New(ctx, proxy.Config{URL: url, Name: name, Guard: guard, Store: m.Store()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: m.Store(), Agent: p, Concurrency: 4, Timeout: 20 * time.Second}
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(m.URL + "/agents/" + name + "/.well-known/agent-card.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		require.True(t, time.Now().Before(deadline), "proxied agent %s never became routable", name)
		time.Sleep(20 * time.Millisecond)
	}
}

func send(t *testing.T, c *client.Client, text, taskID string) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	msg := client.TextMessage(text)
	msg.TaskID = taskID
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: msg})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	return res.Task
}

func artifactTexts(task *a2a.Task) []string {
	var out []string
	for _, a := range task.Artifacts {
		var b strings.Builder
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
		out = append(out, b.String())
	}
	return out
}

func TestProxyA2AGoUpstream(t *testing.T) {
	m := meshtest.Start(t)
	for _, tc := range []struct {
		name string
		opts upstreamOpts
	}{
		{"v10-stream", upstreamOpts{version: "1.0", streaming: true}},
		{"v10-send", upstreamOpts{version: "1.0"}},
		{"v03-stream", upstreamOpts{version: "0.3", streaming: true}},
		{"v03-send", upstreamOpts{version: "0.3"}},
		{"rest-stream", upstreamOpts{version: "1.0", binding: a2a.BindingHTTPJSON, streaming: true}},
		{"rest-send", upstreamOpts{version: "1.0", binding: a2a.BindingHTTPJSON}},
		{"grpc-stream", upstreamOpts{version: "1.0", binding: a2a.BindingGRPC, streaming: true}},
		{"grpc-send", upstreamOpts{version: "1.0", binding: a2a.BindingGRPC}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &turnsExecutor{}
			up := startUpstream(t, exec, tc.opts)
			p := runProxy(t, m, up.URL, "up-"+tc.name)
			url, binding, version := p.Endpoint()
			assert.Equal(t, up.Endpoint, url)
			assert.Equal(t, cmp.Or(tc.opts.binding, a2a.BindingJSONRPC), binding)
			assert.Equal(t, tc.opts.version, version)

			c := client.New(m.URL + "/agents/up-" + tc.name)
			card, err := c.Card(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "up-"+tc.name, card.Name)
			for _, in := range card.SupportedInterfaces {
				assert.NotContains(t, in.URL, up.URL, "the card must not reveal the upstream address")
			}

			first := send(t, c, "hello", "")
			require.Equal(t, a2a.StateInputRequired, first.Status.State)
			require.NotNil(t, first.Status.Message)
			assert.Equal(t, "more?", first.Status.Message.Text())
			assert.Equal(t, []string{"chunk1:hellochunk2"}, artifactTexts(first))

			second := send(t, c, "world", first.ID)
			assert.Equal(t, first.ID, second.ID)
			assert.Equal(t, a2a.StateCompleted, second.Status.State)
			assert.Equal(t, []string{"chunk1:hellochunk2", "got:world"}, artifactTexts(second))
			assert.Equal(t, []bool{false, true}, exec.stored(), "the second turn must continue the same upstream task")
		})
	}
}

// upstreamBindings are the bindings an upstream may offer alone.
var upstreamBindings = []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC}

// bindingName is a binding as a mesh agent name may spell it.
func bindingName(b string) string { return strings.ToLower(strings.ReplaceAll(b, "+", "")) }

func TestProxyStreamsUpstreamEvents(t *testing.T) {
	m := meshtest.Start(t)
	for _, binding := range upstreamBindings {
		t.Run(binding, func(t *testing.T) {
			name := "streamer-" + bindingName(binding)
			up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "1.0", binding: binding, streaming: true})
			runProxy(t, m, up.URL, name)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			s, err := client.New(m.URL+"/agents/"+name).Stream(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("x")})
			require.NoError(t, err)
			defer s.Close()
			var kinds []string
			for i := 0; i < 20; i++ {
				ev, err := s.Next()
				if err != nil {
					break
				}
				switch r := ev.Response; {
				case r.Task != nil:
					kinds = append(kinds, "task")
				case r.StatusUpdate != nil:
					kinds = append(kinds, "status:"+strings.TrimPrefix(string(r.StatusUpdate.Status.State), "TASK_STATE_"))
				case r.ArtifactUpdate != nil:
					kinds = append(kinds, "artifact")
				}
			}
			assert.Equal(t, []string{"task", "status:WORKING", "artifact", "artifact", "status:INPUT_REQUIRED"}, kinds)
		})
	}
}

func TestProxyFailureIsSanitized(t *testing.T) {
	m := meshtest.Start(t)
	for _, binding := range upstreamBindings {
		t.Run(binding, func(t *testing.T) {
			name := "failing-" + bindingName(binding)
			up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "1.0", binding: binding, streaming: true})
			runProxy(t, m, up.URL, name)
			task := send(t, client.New(m.URL+"/agents/"+name), "fail", "")
			assert.Equal(t, a2a.StateFailed, task.Status.State)
			if task.Status.Message != nil {
				assert.NotContains(t, task.Status.Message.Text(), "hunter2")
			}
		})
	}
}

func TestProxyCancelReachesUpstream(t *testing.T) {
	m := meshtest.Start(t)
	for _, binding := range upstreamBindings {
		t.Run(binding, func(t *testing.T) { testCancelReachesUpstream(t, m, binding) })
	}
}

func testCancelReachesUpstream(t *testing.T, m *meshtest.Mesh, binding string) {
	exec := &turnsExecutor{block: make(chan struct{})}
	defer close(exec.block)
	name := "blocker-" + bindingName(binding)
	up := startUpstream(t, exec, upstreamOpts{version: "1.0", binding: binding, streaming: true})
	runProxy(t, m, up.URL, name)
	c := client.New(m.URL + "/agents/" + name)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("x"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	id := res.Task.ID
	// Wait until the upstream is working on it and the proxy knows its
	// upstream task (it records the ids before any event).
	require.Eventually(t, func() bool {
		task, err := c.GetTask(ctx, id, nil)
		return err == nil && len(task.Artifacts) == 1
	}, 10*time.Second, 20*time.Millisecond)
	task, err := c.Cancel(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCanceled, task.Status.State)
	assert.Eventually(t, func() bool { return exec.canceled.Load() == 1 }, 10*time.Second, 20*time.Millisecond,
		"the upstream task must be canceled too")
}

func TestProxyRefusesLoopbackUnlessTrusted(t *testing.T) {
	m := meshtest.Start(t)
	up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "1.0"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{up.URL, strings.Replace(up.URL, "127.0.0.1", "localhost", 1)} {
		_, err := proxy.New(ctx, proxy.Config{URL: url, Store: m.Store()})
		require.Error(t, err, url)
		assert.ErrorIs(t, err, ssrf.ErrBlocked, url)
		assert.NotErrorIs(t, err, proxy.ErrUnavailable, url)
	}
	for _, url := range []string{"file:///etc/passwd", "ftp://127.0.0.1/", "http://169.254.169.254/latest/meta-data/"} {
		_, err := proxy.New(ctx, proxy.Config{URL: url, Store: m.Store()})
		assert.ErrorIs(t, err, ssrf.ErrBlocked, url)
	}
	assert.Zero(t, up.requests.Load(), "a refused upstream must receive no request")
}

// A gRPC upstream is held to the SSRF guard like an HTTP one: its address
// is vetted before any call, and every connection is dialed through the
// guard, so a name the guard does not trust that resolves to a refused
// address gets no call either.
func TestProxyRefusesGRPCUpstreamUnlessTrusted(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	trustCard := func(up *upstream, more ...string) *ssrf.Guard {
		g, err := ssrf.New(append([]string{strings.TrimPrefix(up.URL, "http://")}, more...))
		require.NoError(t, err)
		return g
	}

	// A private or loopback address the card names: refused at New.
	for _, host := range []string{"", "10.1.2.3", "169.254.169.254"} {
		up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "1.0", binding: a2a.BindingGRPC, grpcHost: host})
		_, err := proxy.New(ctx, proxy.Config{URL: up.URL, Guard: trustCard(up), Store: m.Store()})
		require.Error(t, err, up.Endpoint)
		assert.ErrorIs(t, err, ssrf.ErrBlocked, up.Endpoint)
		assert.NotErrorIs(t, err, proxy.ErrUnavailable, up.Endpoint)
		assert.Contains(t, err.Error(), a2a.BindingGRPC)
		assert.Zero(t, up.grpcCalls.Load(), "a refused upstream must receive no call")
	}

	// "localhost": allowed by the URL check (one of its loopback addresses,
	// [::1] on the port, is trusted), refused where it is dialed
	// (127.0.0.1 is not trusted there).
	up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "1.0", binding: a2a.BindingGRPC, grpcHost: "localhost"})
	_, port, err := net.SplitHostPort(up.Endpoint)
	require.NoError(t, err)
	p, err := proxy.New(ctx, proxy.Config{URL: up.URL, Name: "grpc-dial", Guard: trustCard(up, "[::1]:"+port), Store: m.Store()})
	require.NoError(t, err)
	defer p.Close()
	url, binding, _ := p.Endpoint()
	require.Equal(t, "localhost:"+port, url)
	require.Equal(t, a2a.BindingGRPC, binding)
	req := &agentrt.Request{TaskID: "task-grpc-dial", ContextID: "ctx-grpc-dial", Message: *client.TextMessage("x"), Attempt: 1}
	err = p.Run(ctx, req, &recorder{})
	require.Error(t, err)
	assert.Zero(t, up.grpcCalls.Load(), "the dial must go through the guard: %v", err)
}

func TestProxyUnreachableUpstreamIsUnavailable(t *testing.T) {
	m := meshtest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = proxy.New(ctx, proxy.Config{URL: "http://" + addr, Guard: guard, Store: m.Store()})
	assert.ErrorIs(t, err, proxy.ErrUnavailable)
}

func TestMeshName(t *testing.T) {
	for in, want := range map[string]string{
		"Currency Agent":     "currency-agent",
		"  weird__Name!! v2": "weird__name-v2",
		"échec":              "chec",
		"---":                "",
	} {
		assert.Equal(t, want, proxy.MeshName(in), in)
	}
}

// recorder is an EventWriter keeping what a run recorded.
type recorder struct {
	mu     sync.Mutex
	events []*a2a.StreamResponse
}

func (r *recorder) add(ev *a2a.StreamResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}
func (r *recorder) status(s a2a.TaskState) error {
	return r.add(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: s}}})
}
func (r *recorder) Working(string) error       { return r.status(a2a.StateWorking) }
func (r *recorder) InputRequired(string) error { return r.status(a2a.StateInputRequired) }
func (r *recorder) Complete(string) error      { return r.status(a2a.StateCompleted) }
func (r *recorder) Fail(string) error          { return r.status(a2a.StateFailed) }
func (r *recorder) Reject(string) error        { return r.status(a2a.StateRejected) }
func (r *recorder) Artifact(a a2a.Artifact, appendChunk, last bool) error {
	return r.add(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{Artifact: a, Append: appendChunk, LastChunk: last}})
}
func (r *recorder) Event(ev *a2a.StreamResponse) error { return r.add(ev) }

func (r *recorder) lastState() a2a.TaskState {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s a2a.TaskState
	for _, ev := range r.events {
		switch {
		case ev.StatusUpdate != nil:
			s = ev.StatusUpdate.Status.State
		case ev.Task != nil:
			s = ev.Task.Status.State
		}
	}
	return s
}

func (r *recorder) artifacts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.ArtifactUpdate != nil || ev.Task != nil && len(ev.Task.Artifacts) > 0 {
			n++
		}
	}
	return n
}

// A turn whose worker stopped mid-run is picked up by the next run, which
// follows the upstream task it started instead of sending the message
// again.
func TestProxyRerunFollowsUpstreamTask(t *testing.T) {
	m := meshtest.Start(t)
	for _, tc := range []struct {
		binding   string
		streaming bool
	}{
		{a2a.BindingJSONRPC, true}, {a2a.BindingJSONRPC, false},
		{a2a.BindingHTTPJSON, true}, {a2a.BindingHTTPJSON, false},
		{a2a.BindingGRPC, true}, {a2a.BindingGRPC, false},
	} {
		streaming := tc.streaming
		name := map[bool]string{true: "stream", false: "send"}[streaming] + "-" + bindingName(tc.binding)
		t.Run(name, func(t *testing.T) {
			exec := &turnsExecutor{block: make(chan struct{})}
			up := startUpstream(t, exec, upstreamOpts{version: "1.0", binding: tc.binding, streaming: streaming})
			guard, err := ssrf.New([]string{"127.0.0.1"})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			p, err := proxy.New(ctx, proxy.Config{URL: up.URL, Name: "rerun-" + name, Guard: guard, Store: m.Store()})
			require.NoError(t, err)
			defer p.Close()
			msg := client.TextMessage("again")
			req := &agentrt.Request{TaskID: "task-rerun-" + name, ContextID: "ctx-rerun-" + name, Message: *msg, Attempt: 1}

			// First run: stopped (not canceled) once the upstream said it started.
			rec1 := &recorder{}
			run1, stop := context.WithCancelCause(ctx)
			done := make(chan error, 1)
			go func() { done <- p.Run(run1, req, rec1) }()
			require.Eventually(t, func() bool { return rec1.artifacts() > 0 }, 10*time.Second, 10*time.Millisecond)
			stop(errors.New("worker stopping"))
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("run did not stop")
			}
			close(exec.block)

			// Second run of the same turn: follows.
			rec2 := &recorder{}
			req.Attempt = 2
			require.NoError(t, p.Run(ctx, req, rec2))
			assert.Equal(t, a2a.StateInputRequired, rec2.lastState())
			assert.Len(t, exec.stored(), 1, "the message must reach the upstream once")
		})
	}
}

// A refreshed card changes what the mesh registers, not where the worker
// forwards.
func TestProxyRefreshCard(t *testing.T) {
	m := meshtest.Start(t)
	var desc atomic.Value
	desc.Store("first")
	var base string
	srv := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"Card Agent","description":"` + desc.Load().(string) + `","version":"1",` +
			`"supportedInterfaces":[{"url":"` + base + `/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
			`"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base = "http://" + ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := proxy.New(ctx, proxy.Config{URL: base, Guard: guard, Store: m.Store()})
	require.NoError(t, err)
	assert.Equal(t, "first", p.Card().Description)
	assert.Equal(t, "card-agent", p.Card().Name)

	desc.Store("second")
	require.NoError(t, p.RefreshCard(ctx))
	assert.Equal(t, "second", p.Card().Description)
	assert.Equal(t, "card-agent", p.Card().Name, "the mesh name stays")
	assert.Empty(t, p.Card().SupportedInterfaces, "the upstream's address is still not registered")
	url, binding, version := p.Endpoint()
	assert.Equal(t, base+"/rpc", url)
	assert.Equal(t, a2a.BindingJSONRPC, binding)
	assert.Equal(t, "1.0", version)

	require.NoError(t, srv.Close())
	assert.Error(t, p.RefreshCard(ctx), "an unreachable upstream")
	assert.Equal(t, "second", p.Card().Description, "a failed refresh keeps the card")
}
