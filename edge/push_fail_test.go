package edge_test

// Push delivery's failure branches, each observed three ways: what the
// receiver got, the a2amesh_push_deliveries_total outcomes, and the
// A2A_PUSH_OUT work queue (a job still there is a retry still coming).
//
//   - a webhook whose name resolves to a blocked address is refused by the
//     SSRF guard at dial time: dropped after one attempt, never retried;
//   - a receiver answering 500 is retried with growing delays, then given
//     up after MaxAttempts;
//   - a config deleted while its notification waits for a retry: the
//     retry is dropped.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// ---- a webhook receiver on loopback ----

type pushHit struct {
	Body []byte
	At   time.Time
}

type pushReceiver struct {
	*httptest.Server
	status atomic.Int64
	mu     sync.Mutex
	hits   []pushHit
}

func newPushReceiver(t *testing.T, status int) *pushReceiver {
	t.Helper()
	r := &pushReceiver{}
	r.status.Store(int64(status))
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.hits = append(r.hits, pushHit{Body: body, At: time.Now()})
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *pushReceiver) all() []pushHit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pushHit(nil), r.hits...)
}

// byEvent groups the hits by body: the attempts of one notification.
func (r *pushReceiver) byEvent() map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, h := range r.all() {
		out[string(h.Body)] = append(out[string(h.Body)], h.At)
	}
	return out
}

func (r *pushReceiver) hostPort() string { return strings.TrimPrefix(r.URL, "http://") }

// ---- the mesh side ----

// pushOutcomes reads a2amesh_push_deliveries_total by outcome.
func pushOutcomes(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "a2amesh_push_deliveries_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// pendingJobs is how many delivery jobs A2A_PUSH_OUT still holds.
func pendingJobs(t *testing.T, b *taskstore.Store) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.Bus().JetStream().Stream(ctx, "A2A_PUSH_OUT")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	return info.State.Msgs
}

// notifiable counts the events of task id's log a push config set at its
// creation notifies: all but the creation entry and the user's turns.
func notifiable(t *testing.T, b *taskstore.Store, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, _, err := b.TaskLog(ctx, id, 0, 1000)
	require.NoError(t, err)
	n := 0
	for _, e := range events {
		if ev := e.Resp; ev.Task == nil && (ev.Message == nil || ev.Message.Role != a2a.RoleUser) {
			n++
		}
	}
	return n
}

type pushMesh struct {
	*meshtest.Mesh
	metrics *metrics.Metrics
	pc      edge.PushConfig
}

func startPushMesh(t *testing.T, pc edge.PushConfig) *pushMesh {
	t.Helper()
	met := metrics.New()
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push = pc
		c.Edge.Metrics = met
	}))
	return &pushMesh{Mesh: m, metrics: met, pc: pc}
}

// rpc calls a JSON-RPC method (1.0) on the edge and returns the result,
// failing the test on an error.
func (m *pushMesh) rpc(t *testing.T, agent, method string, params any) json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *a2a.Error      `json:"error"`
	}
	// -32000 (push still starting on this edge): retry, bounded.
	for i := 0; i < 50; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/agents/"+agent, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		r.Result, r.Error = nil, nil
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		require.NoError(t, err)
		if r.Error == nil || r.Error.Code != -32000 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Nil(t, r.Error, "%s", method)
	return r.Result
}

// sendWithPush makes a blocking send to agent with a push config for url
// and returns the task.
func (m *pushMesh) sendWithPush(t *testing.T, agent, text, url string) a2a.Task {
	t.Helper()
	res := m.rpc(t, agent, "SendMessage", map[string]any{
		"message":       map[string]any{"messageId": fmt.Sprint("push-fail-", time.Now().UnixNano()), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}},
		"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"id": "hook", "url": url}},
	})
	var r struct {
		Task *a2a.Task `json:"task"`
	}
	require.NoError(t, json.Unmarshal(res, &r))
	require.NotNil(t, r.Task)
	return *r.Task
}

// settle waits until no delivery job is left and the outcome counts have
// not moved for quiet, within budget; it returns the counts.
func (m *pushMesh) settle(t *testing.T, quiet, budget time.Duration) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(budget)
	last, since := pushOutcomes(t, m.metrics), time.Now()
	for i := 0; i < 10_000 && time.Now().Before(deadline); i++ {
		time.Sleep(50 * time.Millisecond)
		now := pushOutcomes(t, m.metrics)
		if fmt.Sprint(now) != fmt.Sprint(last) {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) >= quiet && pendingJobs(t, m.Store()) == 0 {
			return now
		}
	}
	t.Fatalf("push deliveries did not settle within %v: outcomes %v, %d jobs queued", budget, last, pendingJobs(t, m.Store()))
	return nil
}

// ---- a DNS server on loopback ----

// fakeDNS answers every A query with ip and every other query with no
// records, over UDP on loopback, and counts the A queries per name.
type fakeDNS struct {
	pc  net.PacketConn
	ip  [4]byte
	mu  sync.Mutex
	asA map[string]int
}

func startFakeDNS(t *testing.T, ip net.IP) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &fakeDNS{pc: pc, asA: map[string]int{}}
	copy(d.ip[:], ip.To4())
	go d.serve()
	t.Cleanup(func() { pc.Close() })
	return d
}

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := d.answer(buf[:n]); resp != nil {
			_, _ = d.pc.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query (nil if it is not one).
func (d *fakeDNS) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	// The question: labels up to the root, then type and class.
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qEnd := i + 5
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	name := strings.ToLower(strings.Join(labels, "."))
	resp := make([]byte, 0, qEnd+16)
	resp = append(resp, q[0], q[1], 0x81, 0x80) // id; response, RD, RA, no error
	ancount := uint16(0)
	if qtype == 1 {
		ancount = 1
		d.mu.Lock()
		d.asA[name]++
		d.mu.Unlock()
	}
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, ancount)
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, q[12:qEnd]...)
	if ancount == 1 {
		resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4) // name ptr, A, IN, TTL 1, len 4
		resp = append(resp, d.ip[:]...)
	}
	return resp
}

func (d *fakeDNS) lookups(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.asA[name]
}

// useResolver makes this process resolve names through d (only names not
// in /etc/hosts reach it) until the test ends.
func useResolver(t *testing.T, d *fakeDNS) {
	t.Helper()
	prev := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.pc.LocalAddr().String())
	}}
	t.Cleanup(func() { net.DefaultResolver = prev })
}

// ---- the tests ----

// A webhook named by a host name that resolves to loopback passes the
// URL check (names are not resolved there) but is refused by the guard at
// dial time: each notification is tried once and dropped, never retried,
// and nothing reaches the address.
func TestPushRefusedAtDialIsDropped(t *testing.T) {
	// The would-be victim: a server on the address the name resolves to.
	victim := newPushReceiver(t, http.StatusOK)
	_, port, err := net.SplitHostPort(victim.hostPort())
	require.NoError(t, err)
	dns := startFakeDNS(t, net.IPv4(127, 0, 0, 1))
	useResolver(t, dns) // before the mesh starts: its goroutines see it
	const host = "hooks.a2amesh-test.example"
	{
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		require.NoError(t, err)
		require.Equal(t, []string{"127.0.0.1"}, addrs, "the fake DNS server answers")
		require.Equal(t, 1, dns.lookups(host))
	}

	pc := edge.PushConfig{Enabled: true, Backoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
		MaxAttempts: 4, Timeout: 3 * time.Second}
	m := startPushMesh(t, pc)
	before := dns.lookups(host)
	task := m.sendWithPush(t, "echo", "refused hook", "http://"+host+":"+port+"/hook")
	require.Equal(t, a2a.StateCompleted, task.Status.State)
	n := notifiable(t, m.Store(), task.ID)
	require.Positive(t, n)

	// Quiet for longer than every retry delay together.
	outcomes := m.settle(t, 2*time.Duration(pc.MaxAttempts)*pc.MaxBackoff, 30*time.Second)
	attempts := dns.lookups(host) - before
	t.Logf("%d notifications; outcomes %v; %d dial attempts", n, outcomes, attempts)
	assert.Empty(t, victim.all(), "a refused webhook's address got requests")
	assert.Zero(t, outcomes[metrics.PushRetried], "a notification refused by the SSRF guard was retried")
	assert.Zero(t, outcomes[metrics.PushDelivered])
	assert.Equal(t, float64(n), outcomes[metrics.PushGaveUp], "each refused notification is dropped once")
	assert.Equal(t, n, attempts, "dial attempts (A lookups of the webhook's name): one per notification")
}

// A receiver answering 500 gets each notification MaxAttempts times, the
// delays growing (Backoff, doubling, up to MaxBackoff), then no more.
func TestPushRetriesWithBackoffThenGivesUp(t *testing.T) {
	rcv := newPushReceiver(t, http.StatusInternalServerError)
	pc := edge.PushConfig{Enabled: true, Trusted: []string{rcv.hostPort()}, Backoff: 200 * time.Millisecond,
		MaxBackoff: 400 * time.Millisecond, MaxAttempts: 4, Timeout: 3 * time.Second}
	m := startPushMesh(t, pc)
	task := m.sendWithPush(t, "echo", "failing hook", rcv.URL+"/hook")
	require.Equal(t, a2a.StateCompleted, task.Status.State)
	n := notifiable(t, m.Store(), task.ID)
	require.Positive(t, n)

	outcomes := m.settle(t, 3*pc.MaxBackoff, 20*time.Second)
	events := rcv.byEvent()
	t.Logf("%d notifications; outcomes %v", n, outcomes)
	assert.Len(t, events, n, "notifications the receiver got")
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond}
	for body, at := range events {
		if !assert.Lenf(t, at, pc.MaxAttempts, "attempts of %s", body) {
			continue
		}
		for i := 1; i < len(at); i++ {
			gap := at[i].Sub(at[i-1])
			// Only a lower bound: delays are JetStream's, the machine busy.
			assert.GreaterOrEqualf(t, gap, want[i-1]*3/4, "delay before attempt %d of %s (want about %v)", i+1, body, want[i-1])
		}
	}
	assert.Equal(t, float64(n*(pc.MaxAttempts-1)), outcomes[metrics.PushRetried], "retried attempts")
	assert.Equal(t, float64(n), outcomes[metrics.PushGaveUp], "notifications given up")
	assert.Zero(t, outcomes[metrics.PushDelivered])
}

// A config deleted while its notification waits to be retried: the retry
// finds no config and is dropped, without a request.
func TestPushRetryOfDeletedConfigIsDropped(t *testing.T) {
	rcv := newPushReceiver(t, http.StatusInternalServerError)
	pc := edge.PushConfig{Enabled: true, Trusted: []string{rcv.hostPort()}, Backoff: 2 * time.Second,
		MaxBackoff: 2 * time.Second, MaxAttempts: 5, Timeout: 3 * time.Second}
	m := startPushMesh(t, pc)
	// ask stops at input-required: one notification, then nothing.
	task := m.sendWithPush(t, "ask", "hi", rcv.URL+"/hook")
	require.Equal(t, a2a.StateInputRequired, task.Status.State)
	n := notifiable(t, m.Store(), task.ID)
	require.Positive(t, n)
	deadline := time.Now().Add(10 * time.Second)
	for len(rcv.byEvent()) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.Len(t, rcv.byEvent(), n, "first attempts")
	m.rpc(t, "ask", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": task.ID, "id": "hook"})
	hits := len(rcv.all())

	outcomes := m.settle(t, 2*pc.Backoff, 30*time.Second)
	t.Logf("%d notifications; outcomes %v", n, outcomes)
	assert.Len(t, rcv.all(), hits, "requests after the config was deleted")
	assert.GreaterOrEqual(t, outcomes[metrics.PushDropped], 1.0, "retries of a deleted config dropped")
	assert.Zero(t, outcomes[metrics.PushGaveUp])
}
