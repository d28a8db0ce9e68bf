package integration

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

func quietPushLogger() *slog.Logger {
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// pushWait bounds every wait for a notification.
const pushWait = 20 * time.Second

// hit is one request a webhook receiver got.
type hit struct {
	Path   string
	Header http.Header
	Body   []byte
	Status int
	At     time.Time
}

// receiver is a webhook on loopback that records every request; a path
// can be told to fail its first N requests (or all of them).
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	hits  []hit
	fails map[string]int // path → failures left (-1: always)
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{fails: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		status := http.StatusOK
		if n := r.fails[req.URL.Path]; n != 0 {
			status = http.StatusInternalServerError
			if n > 0 {
				r.fails[req.URL.Path] = n - 1
			}
		}
		r.hits = append(r.hits, hit{Path: req.URL.Path, Header: req.Header.Clone(), Body: body, Status: status, At: time.Now()})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) failFirst(path string, n int) {
	r.mu.Lock()
	r.fails[path] = n
	r.mu.Unlock()
}

// hostPort is the receiver's 127.0.0.1:port (what the allow-list trusts).
func (r *receiver) hostPort() string { return strings.TrimPrefix(r.URL, "http://") }

func (r *receiver) all(path string) []hit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hit
	for _, h := range r.hits {
		if path == "" || h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// pushed is a notification as a receiver reads it, both versions.
type pushed struct {
	hit
	Item streamItem
}

// delivered returns the successful notifications at path.
func (r *receiver) delivered(t testing.TB, p proto, path string) []pushed {
	var out []pushed
	for _, h := range r.all(path) {
		if h.Status != http.StatusOK {
			continue
		}
		out = append(out, pushed{hit: h, Item: p.event(t, h.Body)})
	}
	return out
}

// waitState waits until path got a successful notification of task id in
// state want.
func (r *receiver) waitState(t testing.TB, p proto, path, id, want string) pushed {
	t.Helper()
	deadline := time.Now().Add(pushWait)
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		for _, n := range r.delivered(t, p, path) {
			if n.Item.TaskID == id && n.Item.State == want {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s notification of task %s at %s within %s; got %d requests", want, id, path, pushWait, len(r.all(path)))
	return pushed{}
}

func pushConfig(trusted ...string) edge.PushConfig {
	return edge.PushConfig{Enabled: true, Trusted: trusted, Backoff: 100 * time.Millisecond,
		MaxBackoff: time.Second, MaxAttempts: 5, Timeout: 3 * time.Second}
}

// jwks fetches the edge's key set.
func (m *rawMesh) jwks(t testing.TB) pushsig.JWKSet {
	t.Helper()
	status, _, body := m.getJSON(t, "/.well-known/jwks.json", nil)
	require.Equal(t, http.StatusOK, status, "jwks: %s", body)
	var set pushsig.JWKSet
	require.NoError(t, json.Unmarshal(body, &set))
	// The push key and the card signing key (docs/cards.md).
	require.Len(t, set.Keys, 2)
	return set
}

// requireSigned checks a delivery's signature the way a receiver would.
func requireSigned(t testing.TB, set pushsig.JWKSet, h hit, url, taskID string) {
	t.Helper()
	tok := h.Header.Get("X-A2A-Notification-Signature")
	require.NotEmpty(t, tok, "delivery without a signature")
	c, err := pushsig.Verify(tok, set, time.Now())
	require.NoError(t, err)
	require.Equal(t, taskID, c.TaskID)
	require.Equal(t, url, c.Audience)
	require.Equal(t, pushsig.BodyHash(h.Body), c.BodySHA256)
	require.NotEmpty(t, c.ID)
}

// Both versions, both token shapes, config inside a send and through the
// config methods: every terminal state arrives, with the token, the
// config's Authorization and a signature that verifies with the JWKS.
func TestPushBothVersionsAndTokenShapes(t *testing.T) {
	rcv := newReceiver(t)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Push = pushConfig(rcv.hostPort()) }))
	set := m.jwks(t)

	status, _, card := m.getJSON(t, "/.well-known/agent-card.json", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(card), `"pushNotifications":true`)

	shapes := []struct {
		name string
		cfg  func(url string) map[string]any
		auth string // expected Authorization, "" = the mesh's bearer JWT
	}{
		{"top-level token", func(url string) map[string]any { return map[string]any{"url": url, "token": "tok-top"} }, ""},
		{"authentication.credentials", func(url string) map[string]any {
			return map[string]any{"url": url, "authentication": map[string]any{"scheme": "Bearer", "schemes": []string{"Bearer"}, "credentials": "tok-cred"}}
		}, "Bearer tok-cred"},
	}
	for _, p := range bothProtos {
		for _, sh := range shapes {
			t.Run(p.name+"/"+sh.name+"/in send", func(t *testing.T) {
				path := "/hook/" + strings.ReplaceAll(p.name+"-"+sh.name, " ", "-") + "-send"
				url := rcv.URL + path
				cfg := map[string]any{}
				for k, v := range p.nonBlocking {
					cfg[k] = v
				}
				if p.name == v10.name {
					cfg["taskPushNotificationConfig"] = sh.cfg(url)
				} else {
					cfg["pushNotificationConfig"] = sh.cfg(url)
				}
				tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(p.msg("ping"), cfg)))
				n := rcv.waitState(t, p, path, tk.ID, p.completed)
				want := "tok-top"
				if sh.auth != "" {
					want = "tok-cred"
				}
				require.Equal(t, want, n.Header.Get("X-A2A-Notification-Token"))
				requireSigned(t, set, n.hit, url, tk.ID)
				if sh.auth != "" {
					require.Equal(t, sh.auth, n.Header.Get("Authorization"))
				} else {
					require.Equal(t, "Bearer "+n.Header.Get("X-A2A-Notification-Signature"), n.Header.Get("Authorization"))
				}
				if p.name == v03.name {
					require.NotNil(t, n.Item.Final)
					require.True(t, *n.Item.Final)
					requireKinds03(t, n.Body)
				} else {
					requireNoKind(t, n.Body)
				}
			})
		}
	}

	// Through the config methods, on a task waiting for input: set in
	// both shapes, read back without credentials, list, delete; then the
	// remaining configs get the completion and the deleted one nothing.
	for _, p := range bothProtos {
		t.Run(p.name+"/config methods", func(t *testing.T) {
			tk := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
			require.Equal(t, p.inputRequired, tk.Status.State)
			base := rcv.URL + "/hook/methods-" + strings.ReplaceAll(p.name, ".", "")
			var setM, getM, listM, delM string
			mk := func(id, url string, auth bool) map[string]any {
				c := map[string]any{"id": id, "url": url}
				if auth {
					c["authentication"] = map[string]any{"scheme": "Bearer", "schemes": []string{"Bearer"}, "credentials": "cred-" + id}
				} else {
					c["token"] = "tok-" + id
				}
				if p.name == v10.name {
					c["taskId"] = tk.ID
					return c
				}
				return map[string]any{"taskId": tk.ID, "pushNotificationConfig": c}
			}
			ids := func(cfg string) map[string]any {
				if p.name == v10.name {
					return map[string]any{"taskId": tk.ID, "id": cfg}
				}
				return map[string]any{"id": tk.ID, "pushNotificationConfigId": cfg}
			}
			if p.name == v10.name {
				setM, getM, listM, delM = "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"
			} else {
				setM, getM, listM, delM = "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"
			}
			res := m.ok(t, "/agents/ask", setM, mk("a", base+"-a", false))
			require.Contains(t, string(res), `"tok-a"`)
			m.ok(t, "/agents/ask", setM, mk("b", base+"-b", true))
			m.ok(t, "/agents/ask", setM, mk("gone", base+"-gone", false))

			got := string(m.ok(t, "/agents/ask", getM, ids("b")))
			require.Contains(t, got, base+"-b")
			require.NotContains(t, got, "cred-b", "credentials must not be read back")
			list := string(m.ok(t, "/agents/ask", listM, map[string]any{"id": tk.ID, "taskId": tk.ID}))
			for _, id := range []string{"-a", "-b", "-gone"} {
				require.Contains(t, list, base+id)
			}
			m.ok(t, "/agents/ask", delM, ids("gone"))
			m.ok(t, "/agents/ask", delM, ids("gone")) // idempotent
			m.fails(t, "/agents/ask", getM, ids("gone"), -32001)

			m.ok(t, "/agents/ask", p.send, sendParams(inTask(p.msg("Ada"), tk.ID, tk.ContextID), nil))
			a := rcv.waitState(t, p, "/hook/methods-"+strings.ReplaceAll(p.name, ".", "")+"-a", tk.ID, p.completed)
			require.Equal(t, "tok-a", a.Header.Get("X-A2A-Notification-Token"))
			requireSigned(t, set, a.hit, base+"-a", tk.ID)
			b := rcv.waitState(t, p, "/hook/methods-"+strings.ReplaceAll(p.name, ".", "")+"-b", tk.ID, p.completed)
			require.Equal(t, "Bearer cred-b", b.Header.Get("Authorization"))
			require.Equal(t, "cred-b", b.Header.Get("X-A2A-Notification-Token"))
			time.Sleep(200 * time.Millisecond)
			require.Empty(t, rcv.all("/hook/methods-"+strings.ReplaceAll(p.name, ".", "")+"-gone"), "a deleted config got notifications")
		})
	}
}

// A 1.0 config set through the shared endpoint keeps the tenant it was
// set under: the read-back equals what the client sent.
func TestPushConfigKeepsTenant(t *testing.T) {
	rcv := newReceiver(t)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Push = pushConfig(rcv.hostPort()) }))
	tk := v10.sendTask(t, m.ok(t, "/agents/ask", v10.send, sendParams(v10.msg("hi"), nil)))
	cfg := map[string]any{"tenant": "ask", "taskId": tk.ID, "id": "t1", "url": rcv.URL + "/hook/tenant", "token": "tok"}
	var set, got a2a.TaskPushNotificationConfig
	require.NoError(t, json.Unmarshal(m.ok(t, "/a2a", "CreateTaskPushNotificationConfig", cfg), &set))
	assert.Equal(t, "ask", set.Tenant)
	require.NoError(t, json.Unmarshal(m.ok(t, "/a2a", "GetTaskPushNotificationConfig",
		map[string]any{"tenant": "ask", "taskId": tk.ID, "id": "t1"}), &got))
	assert.Equal(t, set, got)

	// Inside a send, a tenant naming another agent is not kept.
	other := map[string]any{"tenant": "echo", "url": rcv.URL + "/hook/tenant2", "token": "tok"}
	tk2 := v10.sendTask(t, m.ok(t, "/agents/ask", v10.send, sendParams(v10.msg("hi"), map[string]any{"taskPushNotificationConfig": other})))
	var list struct {
		Configs []a2a.TaskPushNotificationConfig `json:"configs"`
	}
	require.NoError(t, json.Unmarshal(m.ok(t, "/agents/ask", "ListTaskPushNotificationConfigs", map[string]any{"taskId": tk2.ID}), &list))
	require.Len(t, list.Configs, 1)
	assert.Empty(t, list.Configs[0].Tenant)
}

// Bad configs get clear errors; a private address that is not on the
// allow-list is refused at set time and never contacted.
func TestPushRefusals(t *testing.T) {
	rcv := newReceiver(t)
	untrusted := newReceiver(t) // loopback too, but not allow-listed
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Push = pushConfig(rcv.hostPort()) }))
	tk := v10.sendTask(t, m.ok(t, "/agents/ask", "SendMessage", sendParams(v10.msg("hi"), nil)))

	for _, c := range []struct {
		name string
		cfg  map[string]any
	}{
		{"loopback not allow-listed", map[string]any{"url": untrusted.URL + "/x"}},
		{"private", map[string]any{"url": "http://10.1.2.3/hook"}},
		{"metadata", map[string]any{"url": "http://169.254.169.254/latest"}},
		{"localhost", map[string]any{"url": "http://localhost:9/x"}},
		{"scheme", map[string]any{"url": "file:///etc/passwd"}},
		{"no url", map[string]any{"token": "x"}},
		{"bad id", map[string]any{"url": rcv.URL + "/x", "id": "a.b"}},
		{"header injection", map[string]any{"url": rcv.URL + "/x", "token": "a\r\nX-Evil: 1"}},
		{"bad scheme", map[string]any{"url": rcv.URL + "/x", "authentication": map[string]any{"scheme": "Bear er", "credentials": "c"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg["taskId"] = tk.ID
			m.fails(t, "/agents/ask", "CreateTaskPushNotificationConfig", c.cfg, -32602)
			delete(c.cfg, "taskId")
			m.fails(t, "/agents/echo", "SendMessage", sendParams(v10.msg("x"), map[string]any{"taskPushNotificationConfig": c.cfg}), -32602)
		})
	}
	e := m.fails(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "url": untrusted.URL + "/x"}, -32602)
	require.Contains(t, e.Message, "loopback")
	m.fails(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": "no-such-task", "url": rcv.URL + "/x"}, -32001)
	m.fails(t, "/agents/ask", "GetTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "nope"}, -32001)
	m.fails(t, "/agents/ask", "CreateTaskPushNotificationConfig", "not an object", -32602)
	m.fails(t, "/agents/ask", "ListTaskPushNotificationConfigs", map[string]any{"taskId": 7}, -32602)

	// The limit of configs per task.
	for i := 0; i < 10; i++ {
		m.ok(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "url": rcv.URL + "/lim"})
	}
	m.fails(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "url": rcv.URL + "/lim"}, -32602)
	// A continuing send with one more config is refused before its turn
	// is recorded: the task still takes the next turn.
	m.fails(t, "/agents/ask", "SendMessage", sendParams(inTask(v10.msg("Bob"), tk.ID, tk.ContextID),
		map[string]any{"taskPushNotificationConfig": map[string]any{"url": rcv.URL + "/lim"}}), -32602)
	require.Equal(t, v10.inputRequired, decodeTask(t, m.ok(t, "/agents/ask", "GetTask", map[string]any{"id": tk.ID})).Status.State)

	m.ok(t, "/agents/ask", "SendMessage", sendParams(inTask(v10.msg("Ada"), tk.ID, tk.ContextID), nil))
	rcv.waitState(t, v10, "/lim", tk.ID, v10.completed)
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, untrusted.all(""), "a non-allow-listed address was contacted")
}

// Another principal's push-config calls see -32001, in both versions.
func TestPushOtherPrincipal(t *testing.T) {
	rcv := newReceiver(t)
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Push = pushConfig(rcv.hostPort())
	}))
	tk := v10.sendTask(t, m.ok(t, "/agents/ask", "SendMessage", sendParams(v10.msg("hi"), nil), asAlice))
	m.ok(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "c1", "url": rcv.URL + "/a"}, asAlice)
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "url": rcv.URL + "/b"}},
		{"GetTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "c1"}},
		{"ListTaskPushNotificationConfigs", map[string]any{"taskId": tk.ID}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "c1"}},
		{"tasks/pushNotificationConfig/set", map[string]any{"taskId": tk.ID, "pushNotificationConfig": map[string]any{"url": rcv.URL + "/b"}}},
		{"tasks/pushNotificationConfig/get", map[string]any{"id": tk.ID, "pushNotificationConfigId": "c1"}},
		{"tasks/pushNotificationConfig/list", map[string]any{"id": tk.ID}},
		{"tasks/pushNotificationConfig/delete", map[string]any{"id": tk.ID, "pushNotificationConfigId": "c1"}},
	} {
		m.fails(t, "/agents/ask", c.method, c.params, -32001, asBob)
	}
	// alice's config is intact.
	require.Contains(t, string(m.ok(t, "/agents/ask", "GetTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "c1"}, asAlice)), rcv.URL+"/a")
}

// pushEdge is an extra edge process, in-process: its own NATS connection,
// registry watcher, HTTP server and push machinery.
type pushEdge struct {
	URL    string
	stop   context.CancelFunc
	closed chan struct{}
}

func startPushEdge(t *testing.T, natsURL string, pc edge.PushConfig) *pushEdge {
	t.Helper()
	nc, err := bus.Dial(bus.DialConfig{URL: natsURL, Name: "push-test-edge"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{})
	require.NoError(t, err)
	table := registry.NewTable(b.Bus())
	regDone := make(chan struct{})
	go func() {
		defer close(regDone)
		_ = table.Run(ctx)
	}()
	// Push delivery runs beside the edge, as a host runs it (mesh, the
	// edge role); the edge serves the push-config methods from it.
	ecfg := edge.Config{Store: b, Registry: table, Push: pc, Logger: quietPushLogger()}
	pusher, err := edge.NewPushDeliverer(ecfg)
	require.NoError(t, err)
	ecfg.PushDeliverer = pusher
	e := edge.New(ecfg)
	pushDone := make(chan struct{})
	if pusher == nil {
		close(pushDone)
	} else {
		ran := make(chan error, 1)
		go func() {
			defer close(pushDone)
			ran <- pusher.Run(ctx)
		}()
		select {
		case <-pusher.Ready():
		case err := <-ran:
			require.NoError(t, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	pe := &pushEdge{URL: "http://" + ln.Addr().String(), stop: cancel, closed: make(chan struct{})}
	stopOnce := sync.OnceFunc(func() {
		cancel()
		<-pushDone
		_ = srv.Close()
		<-regDone
		nc.Close()
		close(pe.closed)
	})
	pe.stop = stopOnce
	t.Cleanup(stopOnce)
	return pe
}

// Delivery is durable: a receiver that fails twice before it succeeds gets
// every terminal state although the only push edge is stopped between the
// failures and another one started; retries are bounded for a receiver
// that never answers 2xx.
func TestPushRetriesSurviveEdgeRestart(t *testing.T) {
	rcv := newReceiver(t)
	// The mesh's own edge does not deliver push: edges A and B do.
	mesh := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.NATSListen = "127.0.0.1:0" }))
	pc := pushConfig(rcv.hostPort())
	pc.Backoff, pc.MaxAttempts = 300*time.Millisecond, 5
	edgeA := startPushEdge(t, mesh.NATSURL(), pc)
	viaA := &rawMesh{Mesh: &meshtest.Mesh{Mesh: mesh.Mesh, URL: edgeA.URL}, hc: &http.Client{Timeout: rawCallTimeout}}
	viaMesh := &rawMesh{Mesh: mesh, hc: &http.Client{Timeout: rawCallTimeout}}

	rcv.failFirst("/flaky", 2)
	rcv.failFirst("/dead", -1)
	tk := v10.sendTask(t, viaA.ok(t, "/agents/ask", "SendMessage", sendParams(v10.msg("hi"), map[string]any{
		"taskPushNotificationConfig": map[string]any{"url": rcv.URL + "/flaky", "token": "t-flaky"}})))
	require.Equal(t, v10.inputRequired, tk.Status.State)
	viaA.ok(t, "/agents/ask", "CreateTaskPushNotificationConfig", map[string]any{"taskId": tk.ID, "id": "dead", "url": rcv.URL + "/dead"})

	// Edge A makes the first attempt, which fails; then it stops.
	deadline := time.Now().Add(pushWait)
	for len(rcv.all("/flaky")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.NotEmpty(t, rcv.all("/flaky"), "edge A never tried")
	edgeA.stop()
	stoppedAt := time.Now()

	// With no push edge running, the task completes (through the mesh's
	// own edge): its events wait in the durable consumer.
	viaMesh.ok(t, "/agents/ask", "SendMessage", sendParams(inTask(v10.msg("Ada"), tk.ID, tk.ContextID), nil))
	viaMesh.waitState(t, v10, "/agents/ask", tk.ID, v10.completed)
	time.Sleep(200 * time.Millisecond)
	for _, h := range rcv.all("") {
		require.False(t, h.At.After(stoppedAt.Add(50*time.Millisecond)), "a delivery happened while no push edge ran")
	}

	// Edge B takes over: the failed notification is retried, the
	// completion dispatched and delivered.
	startPushEdge(t, mesh.NATSURL(), pc)
	rcv.waitState(t, v10, "/flaky", tk.ID, v10.inputRequired)
	done := rcv.waitState(t, v10, "/flaky", tk.ID, v10.completed)
	require.Equal(t, "t-flaky", done.Header.Get("X-A2A-Notification-Token"))

	flaky := rcv.all("/flaky")
	failed := 0
	for _, h := range flaky {
		if h.Status != http.StatusOK {
			failed++
		}
	}
	require.Equal(t, 2, failed, "the receiver failed twice")

	// /dead never answers 2xx: each of its notifications is tried exactly
	// MaxAttempts times, then given up.
	perEvent := func() map[string]int {
		n := map[string]int{}
		for _, h := range rcv.all("/dead") {
			var ev map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(h.Body, &ev))
			n[string(h.Body)]++
		}
		return n
	}
	deadline = time.Now().Add(pushWait)
	for time.Now().Before(deadline) {
		counts := perEvent()
		all := len(counts) >= 2
		for _, c := range counts {
			all = all && c >= pc.MaxAttempts
		}
		if all {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * pc.MaxBackoff) // longer than any retry delay
	counts := perEvent()
	require.GreaterOrEqual(t, len(counts), 2, "the dead receiver got the input-required and the terminal notifications")
	for body, c := range counts {
		require.Equalf(t, pc.MaxAttempts, c, "attempts of %s", body)
	}
}
