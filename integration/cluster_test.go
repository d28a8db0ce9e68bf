package integration

// A 3-node JetStream cluster (R3 streams and buckets), with an edge and two
// workers on it, loses in the middle of traffic the node that leads every
// raft group the mesh uses. The test is strict: every send must be
// acknowledged (a send answered -32000, "retry shortly", may be retried with
// the same messageId; any other error, -32603 above all, fails the test, as
// does a hang); every acknowledged task must complete exactly once (one
// COMPLETED event in its log); no task may end otherwise; and the bus,
// listed after the fact, must hold exactly one task per messageId and no
// other. A stepdown that fails and a GetTask error fail it too. The dead
// node then restarts on its data and must catch up.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

const (
	clusterName = "a2amesh-it"
	// clusterTasks sends go out clusterPace apart from clusterClients
	// concurrent clients; the node dies before send clusterKillAt.
	clusterTasks   = 60
	clusterKillAt  = 20
	clusterPace    = 40 * time.Millisecond
	clusterClients = 8
	// clusterAttempts bounds the tries of one send (same messageId) answered
	// clusterRetryCode; clusterBackoff is the pause after the first, doubling.
	clusterAttempts = 6
	clusterBackoff  = 300 * time.Millisecond
	// clusterRetryCode is the only error a send may get during a node loss:
	// -32000, the mesh's "unavailable, retry shortly" (bus.ErrUnavailable).
	clusterRetryCode = -32000
	// clusterCallTimeout bounds one HTTP call; past it the call hung. A
	// send may wait out an election (bus: up to 15s), a lost work item's
	// redelivery (AckWait 3s) and a worker's pull (5s).
	clusterCallTimeout = 25 * time.Second
	// clusterSlowText makes each task three artifact chunks 30ms apart.
	clusterSlowText = "chunks=3 delay=30ms"
	clusterWant     = "chunk 1/3\nchunk 2/3\nchunk 3/3\n"
)

// clusterNoAgent classifies a send refused with "unknown agent". The
// edge's registry.Table follows the registry bucket with a KV watcher (a
// nats.go ordered push consumer); when the node hosting it dies, nats.go
// recreates it only after two missed idle heartbeats (10s), so the table
// used to prune every agent after RegistryTTL and refuse sends for up to
// ~10s. The table now replaces a watcher quiet for TTL/2 and prunes nothing
// meanwhile: the agent must never go missing.
const clusterNoAgent = "unknown agent"

// clusterRegistryWatch samples the edge's registry table from the kill on:
// when it first shows a heartbeat written after the kill, and for how long
// agent slow was missing from it.
type clusterRegistryWatch struct {
	done, caught, finished chan struct{}
	// Written by the sampler, read after finished is closed.
	caughtUp time.Duration // 0 until seen
	missing  time.Duration
}

func (w *clusterRegistryWatch) start(table *registry.Table, killedAt time.Time) {
	w.done, w.caught, w.finished = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.finished)
		const every = 50 * time.Millisecond
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; i < 2000; i++ { // 100s at most
			fresh, present := false, false
			for _, e := range table.Agents() {
				if e.Agent == "slow" {
					present, fresh = true, e.Beat.After(killedAt)
				}
			}
			if !present {
				w.missing += every
			}
			if fresh && w.caughtUp == 0 {
				w.caughtUp = time.Since(killedAt)
				close(w.caught)
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
}

// stop waits up to budget for the table to catch up, stops the sampler and
// returns what it saw.
func (w *clusterRegistryWatch) stop(budget time.Duration) (caughtUp, missing time.Duration) {
	if w.done == nil {
		return 0, 0
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-w.caught:
	case <-w.finished:
	case <-t.C:
	}
	close(w.done)
	<-w.finished
	return w.caughtUp, w.missing
}

// clusterAssets are the replicated streams of the layout (KV buckets are
// streams named KV_<bucket>).
var clusterAssets = []string{bus.StreamWork, taskstore.StreamLog, bus.StreamDead, taskstore.StreamCounts, taskstore.StreamDelegations, "KV_" + bus.BucketRegistry, "KV_" + bus.BucketLeases}

// clusterNode is one nats-server of the cluster: embedded in this process,
// or (bin set) an `a2amesh nats` child process, so it can be SIGKILLed.
type clusterNode struct {
	name, clientAddr, routeAddr, dataDir, routes string
	bin                                          string
	srv                                          *natsnode.Server // embedded, nil while down
	proc                                         *roleProc        // child, nil while down
}

func (n *clusterNode) url() string { return "nats://" + n.clientAddr }

func (n *clusterNode) start(t *testing.T) error {
	if n.bin != "" {
		n.proc = startRole(t, n.bin, n.name, "nats", "--name", n.name, "--listen", n.clientAddr, "--data", n.dataDir,
			"--cluster", clusterName, "--listen-cluster", n.routeAddr, "--routes", n.routes, "--log-level", "warn")
		deadline := time.Now().Add(15 * time.Second)
		for i := 0; i < 300 && time.Now().Before(deadline); i++ {
			c, err := net.DialTimeout("tcp", n.clientAddr, time.Second)
			if err == nil {
				c.Close()
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		return fmt.Errorf("%s: child nats-server not listening on %s after 15s", n.name, n.clientAddr)
	}
	_, portStr, err := net.SplitHostPort(n.clientAddr)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return err
	}
	srv, err := natsnode.StartServer(natsnode.ServerConfig{
		DataDir: n.dataDir, Host: "127.0.0.1", Port: port, ServerName: n.name,
		ClusterName: clusterName, ClusterListen: n.routeAddr, Routes: n.routes,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	n.srv = srv
	return nil
}

// kill stops the node: Shutdown when embedded (which first steps down
// the raft groups it leads), SIGKILL when a child.
func (n *clusterNode) kill() {
	if n.proc != nil {
		n.proc.stop(syscall.SIGKILL)
		n.proc = nil
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv = nil
	}
}

// startCluster starts three routed nodes on loopback, each with its own
// data dir, and stops them when the test ends. With bin set, the last node
// is a child process.
func startCluster(t *testing.T, bin string) []*clusterNode {
	t.Helper()
	nodes := make([]*clusterNode, 3)
	for i := range nodes {
		nodes[i] = &clusterNode{name: fmt.Sprintf("n%d", i), clientAddr: durFreeAddr(t), routeAddr: durFreeAddr(t),
			dataDir: filepath.Join(t.TempDir(), "js")}
	}
	nodes[2].bin = bin
	for i, n := range nodes {
		var routes []string
		for j, o := range nodes {
			if j != i {
				routes = append(routes, "nats-route://"+o.routeAddr)
			}
		}
		n.routes = strings.Join(routes, ",")
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.kill()
		}
	})
	// Together: a node waits for its routes before JetStream settles.
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		if n.bin != "" {
			continue // startRole needs the test goroutine
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.start(t)
		}()
	}
	if bin != "" {
		errs[2] = nodes[2].start(t)
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return nodes
}

// clusterMoveLeaders asks every asset (and the slow agent's consumer) to
// elect node as leader, so killing node is the hardest case: every raft
// group the mesh writes to loses its leader at once. A stepdown refused
// (an API error in the answer) and a group still led elsewhere at the end
// fail the test: its premise would not hold.
func clusterMoveLeaders(t *testing.T, nc *nats.Conn, js jetstream.JetStream, node string) []string {
	t.Helper()
	req := []byte(`{"placement":{"preferred":"` + node + `"}}`)
	subjects := map[string]string{"consumer " + bus.ConsumerName("slow"): "$JS.API.CONSUMER.LEADER.STEPDOWN." + bus.StreamWork + "." + bus.ConsumerName("slow")}
	for _, a := range clusterAssets {
		subjects[a] = "$JS.API.STREAM.LEADER.STEPDOWN." + a
	}
	leader := func(asset string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var ci *jetstream.ClusterInfo
		if name, ok := strings.CutPrefix(asset, "consumer "); ok {
			c, err := js.Consumer(ctx, bus.StreamWork, name)
			if err != nil {
				return ""
			}
			ci = c.CachedInfo().Cluster
		} else {
			s, err := js.Stream(ctx, asset)
			if err != nil {
				return ""
			}
			ci = s.CachedInfo().Cluster
		}
		if ci == nil {
			return ""
		}
		return ci.Leader
	}
	var led []string
	deadline := time.Now().Add(10 * time.Second)
	for asset, subj := range subjects {
		moved := false
		for i := 0; i < 10 && time.Now().Before(deadline); i++ {
			if leader(asset) == node {
				led, moved = append(led, asset), true
				break
			}
			msg, err := nc.Request(subj, req, 5*time.Second)
			if err != nil {
				// Unanswered (the group may be electing): asked again; the
				// leader check below decides.
				t.Logf("stepdown of %s: %v", asset, err)
			} else {
				var r struct {
					Success bool `json:"success"`
					Error   *struct {
						Code        int    `json:"code"`
						ErrCode     int    `json:"err_code"`
						Description string `json:"description"`
					} `json:"error"`
				}
				if err := json.Unmarshal(msg.Data, &r); err != nil {
					t.Errorf("stepdown of %s: undecodable answer %q", asset, msg.Data)
				} else if r.Error != nil && strings.Contains(r.Error.Description, "is already leader") {
					// An earlier request, unanswered in time, did it.
				} else if r.Error != nil && r.Error.ErrCode == 10008 {
					// "JetStream system temporarily unavailable": the
					// meta layer is busy (an election just held, a loaded
					// machine); asked again, as for no answer.
					t.Logf("stepdown of %s: %s", asset, r.Error.Description)
				} else if r.Error != nil || !r.Success {
					t.Errorf("stepdown of %s refused: %s", asset, msg.Data)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !moved {
			t.Errorf("%s is led by %q, not %s, after its stepdowns: the kill would not take every leader", asset, leader(asset), node)
		}
	}
	sort.Strings(led)
	return led
}

// clusterEvents records connection events for the test log.
type clusterEvents struct {
	mu  sync.Mutex
	log []string
	t0  time.Time
}

func (e *clusterEvents) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf("+%v ", time.Since(e.t0).Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

func (e *clusterEvents) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

// clusterDial connects to every node, trying nodes[first] first (no
// shuffling), reconnecting for ever as the mesh's own Dial does.
func clusterDial(t *testing.T, name string, nodes []*clusterNode, first int, ev *clusterEvents) *nats.Conn {
	t.Helper()
	var urls []string
	for i := range nodes {
		urls = append(urls, nodes[(first+i)%len(nodes)].url())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name(name), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Timeout(2*time.Second),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) { ev.add("%s disconnected: %v", name, err) }),
		nats.ReconnectHandler(func(c *nats.Conn) { ev.add("%s reconnected to %s", name, c.ConnectedServerName()) }),
		nats.ErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			ev.add("%s async error (subscription %q): %v", name, subj, err)
		}))
	require.NoError(t, err, name)
	t.Cleanup(nc.Close)
	return nc
}

// clusterOpen opens the bus R3, retrying while the cluster has no meta
// leader or too few JetStream peers yet.
func clusterOpen(t *testing.T, nc *nats.Conn, cfg bus.Config, budget time.Duration) *taskstore.Store {
	t.Helper()
	deadline := time.Now().Add(budget)
	var lastErr error
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := bustest.OpenStoreOn(ctx, nc, cfg)
		cancel()
		if err == nil {
			return b
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("bus did not open on the cluster within %s: %v", budget, lastErr)
	return nil
}

// clusterLeaders waits until every asset has a leader and all its peers
// (want of them, leader included) are current; it returns the leaders.
func clusterLeaders(t *testing.T, js jetstream.JetStream, want int, budget time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(budget)
	var why string
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		leaders, err := clusterLeadersNow(js, want)
		if err == nil {
			return leaders
		}
		why = err.Error()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("cluster not healthy within %s: %s", budget, why)
	return nil
}

func clusterLeadersNow(js jetstream.JetStream, want int) (map[string]string, error) {
	leaders := map[string]string{}
	for _, name := range clusterAssets {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := js.Stream(ctx, name)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ci := s.CachedInfo().Cluster
		if ci == nil || ci.Leader == "" {
			return nil, fmt.Errorf("%s: no leader", name)
		}
		if len(ci.Replicas)+1 != want {
			return nil, fmt.Errorf("%s: %d peers besides leader %s", name, len(ci.Replicas), ci.Leader)
		}
		for _, p := range ci.Replicas {
			if !p.Current || p.Offline {
				return nil, fmt.Errorf("%s: peer %s not current (offline %v, lag %d)", name, p.Name, p.Offline, p.Lag)
			}
		}
		leaders[name] = ci.Leader
	}
	return leaders, nil
}

// clusterSend is one client send and what became of it.
type clusterSend struct {
	i        int
	msgID    string
	blocking bool
	taskID   string // set once a send was acknowledged
	state    string // state in the send's answer
	errs     []string
	hung     int
	start    time.Time
	latency  time.Duration
}

// clusterClient speaks JSON-RPC to the edge with plain net/http.
type clusterClient struct {
	base string
	hc   *http.Client
}

// call posts one JSON-RPC request. err is a transport failure (a hang when
// the call outlived clusterCallTimeout).
func (c *clusterClient) call(method string, params any) (json.RawMessage, *rpcError, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/agents/slow", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, nil, fmt.Errorf("HTTP %d, not JSON-RPC: %s", resp.StatusCode, trimBody(data))
	}
	if r.Error == nil && len(r.Result) == 0 {
		return nil, nil, fmt.Errorf("HTTP %d, neither result nor error: %s", resp.StatusCode, trimBody(data))
	}
	return r.Result, r.Error, nil
}

// send makes one send. Only a clear -32000 is retried, with the same
// messageId (the same task), a bounded number of times; any other error (an
// internal error, a client-error code, a transport failure, a hang) ends
// the send unacknowledged.
func (c *clusterClient) send(s *clusterSend) {
	params := map[string]any{"message": map[string]any{"messageId": s.msgID, "role": "ROLE_USER",
		"parts": []any{map[string]any{"text": clusterSlowText}}}}
	if !s.blocking {
		params["configuration"] = map[string]any{"returnImmediately": true}
	}
	s.start = time.Now()
	defer func() { s.latency = time.Since(s.start) }()
	backoff := clusterBackoff
	for attempt := 0; attempt < clusterAttempts; attempt++ {
		if attempt > 0 {
			time.Sleep(backoff)
			backoff *= 2
		}
		res, rerr, err := c.call("SendMessage", params)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			s.hung++
			s.errs = append(s.errs, "hang: no answer within "+clusterCallTimeout.String())
			return
		case err != nil:
			s.errs = append(s.errs, "transport: "+err.Error())
			return
		case rerr != nil:
			s.errs = append(s.errs, fmt.Sprintf("%d: %s", rerr.Code, rerr.Message))
			if rerr.Code == clusterRetryCode {
				continue
			}
			return
		}
		var r struct {
			Task *wTask `json:"task"`
		}
		if json.Unmarshal(res, &r) != nil || r.Task == nil || r.Task.ID == "" {
			s.errs = append(s.errs, "bad result: "+trimBody(res))
			return
		}
		s.taskID, s.state = r.Task.ID, r.Task.Status.State
		return
	}
}

// getState reads a task's state with GetTask ("" and the error text when
// the call failed).
func (c *clusterClient) getState(id string) (string, string) {
	res, rerr, err := c.call("GetTask", map[string]any{"id": id})
	switch {
	case err != nil:
		return "", "transport: " + err.Error()
	case rerr != nil:
		return "", fmt.Sprintf("%d: %s", rerr.Code, rerr.Message)
	}
	var tk wTask
	if json.Unmarshal(res, &tk) != nil || tk.Status.State == "" {
		return "", "bad result: " + trimBody(res)
	}
	return tk.Status.State, ""
}

// clusterTimeline describes task id's event log for the test log: each
// event's position, time, kind and the worker run that wrote it (a
// message of the log may hold several events: they share its time and run).
func clusterTimeline(b *taskstore.Store, id string, t0 time.Time) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, err := b.Bus().JetStream().Stream(ctx, taskstore.StreamLog)
	if err != nil {
		return err.Error()
	}
	subj, err := logSubject(ctx, b.Bus().JetStream(), id)
	if err != nil {
		return err.Error()
	}
	var out []string
	next := uint64(1)
	for i := 0; i < 50; i++ {
		m, err := events.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subj))
		if err != nil {
			break
		}
		next = m.Sequence + 1
		evs, err := taskstore.EventsOf(m.Sequence, m.Header, m.Data)
		if err != nil {
			out = append(out, fmt.Sprintf("message %d: %v", m.Sequence, err))
			continue
		}
		for _, ev := range evs {
			what := "?"
			switch {
			case ev.Resp.Task != nil:
				what = "task"
			case ev.Resp.StatusUpdate != nil:
				what = string(ev.Resp.StatusUpdate.Status.State)
			case ev.Resp.ArtifactUpdate != nil:
				what = "artifact"
			case ev.Resp.Message != nil:
				what = "message"
			}
			out = append(out, fmt.Sprintf("%d@+%v %s run=%s", ev.Seq, m.Time.Sub(t0).Round(time.Millisecond), what, m.Header.Get("A2a-Run")))
		}
	}
	return strings.Join(out, ", ")
}

// logSubject is the subject of task id's log (stream taskstore.StreamLog):
// computed from an id the mesh minted, else read from the task's alias
// (stream taskstore.StreamAliases, taskstore/ids.go).
func logSubject(ctx context.Context, js jetstream.JetStream, id string) (string, error) {
	if subj, ok := taskstore.LogSubject(id); ok {
		return subj, nil
	}
	aliases, err := js.Stream(ctx, taskstore.StreamAliases)
	if err != nil {
		return "", fmt.Errorf("task %s: %w", id, err)
	}
	m, err := aliases.GetLastMsgForSubject(ctx, "a2a.alias."+id)
	if err != nil {
		return "", fmt.Errorf("task %s: alias: %w", id, err)
	}
	subj := m.Header.Get("A2a-Alias")
	if _, ok := taskstore.TaskIDOf(subj); !ok {
		return "", fmt.Errorf("task %s: its alias names no log (%q)", id, subj)
	}
	return subj, nil
}

// clusterLog is what a task's event log says about how it ended.
type clusterLog struct {
	events, completed, otherTerminal int
}

// readClusterLog reads task id's whole event log (up to its last event now)
// a page at a time, as the console's task log does, within 5s.
func readClusterLog(b *taskstore.Store, id string) (clusterLog, error) {
	var out clusterLog
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	last, err := b.LastEventSeq(ctx, id)
	if err != nil {
		return out, fmt.Errorf("last event: %w", err)
	}
	if last == 0 {
		return out, errors.New("last event: the log is empty")
	}
	for after := uint64(0); ; {
		page, more, err := b.TaskLog(ctx, id, after, 256)
		if err != nil {
			return out, err
		}
		for _, ev := range page {
			out.events++
			var st a2a.TaskState
			switch {
			case ev.Resp.StatusUpdate != nil:
				st = ev.Resp.StatusUpdate.Status.State
			case ev.Resp.Task != nil:
				st = ev.Resp.Task.Status.State
			}
			switch {
			case st == a2a.StateCompleted:
				out.completed++
			case st.Terminal():
				out.otherTerminal++
			}
			after = ev.Seq
			if ev.Seq >= last {
				return out, nil
			}
		}
		if !more {
			return out, fmt.Errorf("log ended before position %d", last)
		}
	}
}

// TestClusterNodeLossUnderLoad runs the fault twice: "shutdown" stops an
// embedded node (nats-server's Shutdown steps its raft leaders down first,
// a polite death); "sigkill" runs that node as a child process and kills
// it with SIGKILL, so its groups lose their leader without a word.
func TestClusterNodeLossUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster fault test")
	}
	// In parallel: each has its own ports, data dirs and mesh.
	t.Run("shutdown", func(t *testing.T) {
		t.Parallel()
		clusterFault(t, "")
	})
	t.Run("sigkill", func(t *testing.T) {
		t.Parallel()
		clusterFault(t, durBuild(t))
	})
}

// clusterFault runs the mesh on a 3-node cluster, kills the node leading
// the mesh's raft groups mid-traffic and checks what became of every send.
// With bin set, node n2 is a child process and dies by SIGKILL.
func clusterFault(t *testing.T, bin string) {
	t0 := time.Now()
	ev := &clusterEvents{t0: t0}
	logs := &durBuffer{max: durOutputCap}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("A2AMESH_TEST_LOG") != "" {
			t.Logf("--- mesh log:\n%s", logs.String())
		}
	})

	nodes := startCluster(t, bin)
	byName := map[string]int{}
	for i, n := range nodes {
		byName[n.name] = i
	}
	cfg := bus.Config{Replicas: 3, AckWait: 3 * time.Second}
	adminNC := clusterDial(t, "admin", nodes, 0, ev)
	admin := clusterOpen(t, adminNC, cfg, 20*time.Second)
	leaders := clusterLeaders(t, admin.Bus().JetStream(), 3, 15*time.Second)
	victim := byName[leaders[bus.StreamWork]]
	if bin != "" {
		victim = 2 // the child process
	}
	other := (victim + 1) % 3
	t.Logf("cluster up in %v; leaders %v; victim %s", time.Since(t0).Round(time.Millisecond), leaders, nodes[victim].name)

	// The edge and one worker sit on the node that will die, the other
	// worker on a survivor: each connection knows all three nodes.
	edgeBus := clusterOpen(t, clusterDial(t, "edge", nodes, victim, ev), cfg, 10*time.Second)
	workerBus := []*taskstore.Store{
		clusterOpen(t, clusterDial(t, "worker0", nodes, victim, ev), cfg, 10*time.Second),
		clusterOpen(t, clusterDial(t, "worker1", nodes, other, ev), cfg, 10*time.Second),
	}

	runCtx, cancelRun := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	table := registry.NewTable(edgeBus.Bus())
	tableErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := table.Run(runCtx); err != nil && runCtx.Err() == nil {
			tableErr <- err
		}
	}()
	for i, b := range workerBus {
		w := &agentrt.Worker{Store: b, Agent: agents.Slow{}, Name: "slow", Instance: fmt.Sprint("w", i),
			Concurrency: 16, Timeout: 20 * time.Second, Logger: logger}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(runCtx); err != nil {
				logger.Error("worker stopped", "err", err)
			}
		}()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := edge.NewServer(edge.New(edge.Config{Store: edgeBus, Registry: table, Logger: logger}), logger)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		cancel()
		cancelRun()
		wg.Wait()
	})
	base := "http://" + ln.Addr().String()
	waitAgent(t, base, "slow")

	led := clusterMoveLeaders(t, adminNC, admin.Bus().JetStream(), nodes[victim].name)

	tr := &http.Transport{MaxIdleConnsPerHost: clusterClients}
	t.Cleanup(tr.CloseIdleConnections)
	client := &clusterClient{base: base, hc: &http.Client{Transport: tr}}

	// Traffic: sends paced over ~2.4s from concurrent clients; the node
	// goes down a third of the way in, and sending goes on.
	sends := make([]*clusterSend, clusterTasks)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	next := make(chan *clusterSend)
	var cwg sync.WaitGroup
	for c := 0; c < clusterClients; c++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for s := range next {
				client.send(s)
			}
		}()
	}
	trafficStart := time.Now()
	regWatch := &clusterRegistryWatch{}
	var killedAt time.Time
	var killTook time.Duration
	for i := range sends {
		if i == clusterKillAt {
			killedAt = time.Now()
			nodes[victim].kill()
			killTook = time.Since(killedAt)
			ev.add("killed %s", nodes[victim].name)
			regWatch.start(table, killedAt)
			t.Logf("killed %s after %d sends (%v into traffic, stopping took %v); it led %v",
				nodes[victim].name, i, killedAt.Sub(trafficStart).Round(time.Millisecond), killTook.Round(time.Millisecond), led)
		}
		sends[i] = &clusterSend{i: i, msgID: fmt.Sprintf("cluster-%s-%d", run, i), blocking: i%2 == 0}
		next <- sends[i]
		time.Sleep(clusterPace)
	}
	close(next)
	cwg.Wait()
	t.Logf("all sends answered %v after the kill", time.Since(killedAt).Round(time.Millisecond))

	// Poll acknowledged tasks not yet completed (non-blocking sends).
	pending := map[string]bool{}
	for _, s := range sends {
		if s.taskID != "" && s.state != "TASK_STATE_COMPLETED" {
			pending[s.taskID] = true
		}
	}
	var getErrs []string
	pollDeadline := time.Now().Add(20 * time.Second)
	for round := 0; round < 400 && len(pending) > 0 && time.Now().Before(pollDeadline); round++ {
		for id := range pending {
			st, e := client.getState(id)
			if e != "" {
				getErrs = append(getErrs, e)
			}
			if st == "TASK_STATE_COMPLETED" {
				delete(pending, id)
			} else if st != "" && st != "TASK_STATE_SUBMITTED" && st != "TASK_STATE_WORKING" {
				t.Errorf("task %s ended %s, want completed", id, st)
				delete(pending, id)
			}
		}
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for id := range pending {
		t.Errorf("acknowledged task %s not completed within the poll budget", id)
	}
	for i, e := range getErrs {
		if i == 5 {
			t.Errorf("... %d GetTask errors in all", len(getErrs))
			break
		}
		t.Errorf("GetTask of an acknowledged task failed: %s", e)
	}
	t.Logf("tasks settled %v after the kill", time.Since(killedAt).Round(time.Millisecond))

	// What the clients saw.
	acked, ackedAfterKill, hung := 0, 0, 0
	failedSends, errKinds := 0, map[string]int{}
	var maxLatency time.Duration
	for _, s := range sends {
		hung += s.hung
		maxLatency = max(maxLatency, s.latency)
		for _, e := range s.errs {
			kind := e
			if code, _, ok := strings.Cut(e, ":"); ok {
				kind = code
			}
			if strings.HasPrefix(e, "-32602: unknown agent") {
				kind = clusterNoAgent
			}
			errKinds[kind]++
		}
		if len(s.errs) > 0 {
			t.Logf("send %d (blocking %v): %d failed attempts: %s", s.i, s.blocking, len(s.errs), strings.Join(s.errs, " | "))
		}
		if s.latency > 8*time.Second && s.taskID != "" {
			t.Logf("send %d (blocking %v) took %v from +%v: %s", s.i, s.blocking, s.latency.Round(time.Millisecond),
				s.start.Sub(t0).Round(time.Millisecond), clusterTimeline(admin, s.taskID, t0))
		}
		if s.taskID == "" {
			failedSends++
			continue
		}
		acked++
		if s.i >= clusterKillAt {
			ackedAfterKill++
		}
		if s.blocking {
			assert.Equalf(t, "TASK_STATE_COMPLETED", s.state, "blocking send %d answered task %s", s.i, s.taskID)
		}
	}
	t.Logf("%d/%d sends acknowledged (%d of them sent after the kill), %d gave up; failed attempts by kind %v; GetTask errors %d; slowest send %v",
		acked, clusterTasks, ackedAfterKill, failedSends, errKinds, len(getErrs), maxLatency.Round(time.Millisecond))
	assert.Zero(t, hung, "calls that hung past %s", clusterCallTimeout)
	for kind, n := range errKinds {
		switch kind {
		case strconv.Itoa(clusterRetryCode):
		case clusterNoAgent:
			t.Errorf("%d send attempts were refused: the edge's registry lost agent slow", n)
		default:
			t.Errorf("%d send attempts answered %q: during a node loss a send may only be answered -32000 (retry)", n, kind)
		}
	}
	assert.Equal(t, clusterTasks, acked, "sends acknowledged (a -32000 retried at most %d times)", clusterAttempts-1)
	assert.Positive(t, ackedAfterKill, "no send acknowledged after the kill")

	// What the bus says: each acknowledged task completed exactly once,
	// and each messageId made at most one task.
	byMsg := map[string][]string{}
	// A bucket scan started just after the node loss could stall until
	// nats.go replaced its ordered consumer (~10s); scans now start over
	// after 2s without an entry (bus/scan.go). The retry stays, logged,
	// should a scan still fail.
	var all []*taskstore.TaskRecord
	for attempt := 1; attempt <= 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		all, err = admin.ListTasks(ctx, func(r *taskstore.TaskRecord) bool { return r.Agent == "slow" })
		cancel()
		if err == nil {
			break
		}
		t.Logf("listing tasks after the node loss failed, attempt %d: %v", attempt, err)
	}
	require.NoError(t, err)
	sentIDs := map[string]bool{}
	for _, s := range sends {
		sentIDs[s.msgID] = true
	}
	for _, r := range all {
		if r.Task.Status.State != a2a.StateCompleted {
			t.Errorf("task %s is %s: no task may end otherwise than completed (%s)", r.Task.ID, r.Task.Status.State, clusterTimeline(admin, r.Task.ID, t0))
		}
		if len(r.Task.History) == 0 {
			t.Errorf("task %s has no history: which send made it?", r.Task.ID)
			continue
		}
		mid := r.Task.History[0].MessageID
		if !sentIDs[mid] {
			t.Errorf("task %s was made from messageId %q, which no client sent", r.Task.ID, mid)
		}
		byMsg[mid] = append(byMsg[mid], r.Task.ID)
	}
	assert.Equal(t, clusterTasks, len(all), "tasks on the bus: one per send")
	for _, s := range sends {
		tasks := byMsg[s.msgID]
		assert.LessOrEqualf(t, len(tasks), 1, "send %d (messageId %s) made tasks %v", s.i, s.msgID, tasks)
		if s.taskID == "" {
			if len(tasks) == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				rec, err := admin.LoadTask(ctx, tasks[0])
				cancel()
				if err == nil {
					t.Logf("send %d was never acknowledged but made task %s, now %s", s.i, tasks[0], rec.Task.Status.State)
				}
			}
			continue
		}
		assert.Equalf(t, []string{s.taskID}, tasks, "send %d", s.i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rec, err := admin.LoadTask(ctx, s.taskID)
		cancel()
		if !assert.NoErrorf(t, err, "load task %s of send %d", s.taskID, s.i) {
			continue
		}
		assert.Equalf(t, a2a.StateCompleted, rec.Task.Status.State, "task %s of send %d", s.taskID, s.i)
		var text strings.Builder
		for _, a := range rec.Task.Artifacts {
			for _, p := range a.Parts {
				text.WriteString(p.Text)
			}
		}
		assert.Equalf(t, clusterWant, text.String(), "artifacts of task %s", s.taskID)
		lg, err := readClusterLog(admin, s.taskID)
		if err != nil {
			t.Errorf("event log of %s: %v (the log: %s)", s.taskID, err, clusterTimeline(admin, s.taskID, t0))
			continue
		}
		assert.Equalf(t, 1, lg.completed, "COMPLETED events in the log of task %s (send %d)", s.taskID, s.i)
		assert.Zerof(t, lg.otherTerminal, "other terminal events in the log of task %s", s.taskID)
	}

	select {
	case err := <-tableErr:
		t.Errorf("the edge's registry watcher stopped: %v", err)
	default:
	}
	// The edge's registry watcher must see heartbeats written after the
	// kill: it recovered (bounded wait, see clusterNoAgent).
	caughtUp, missing := regWatch.stop(25 * time.Second)
	if assert.Positivef(t, caughtUp, "the edge's registry showed no heartbeat written after the kill") {
		t.Logf("the edge's registry showed a post-kill heartbeat %v after the kill; agent slow was missing from it for %v",
			caughtUp.Round(time.Millisecond), missing.Round(time.Millisecond))
	}
	assert.Zero(t, missing, "agent slow went missing from the edge's registry after the kill")

	// The dead node comes back with its data and catches up.
	restart := time.Now()
	require.NoError(t, nodes[victim].start(t))
	after := clusterLeaders(t, admin.Bus().JetStream(), 3, 15*time.Second)
	t.Logf("%s rejoined, every asset current on 3 peers, %v after restart; leaders now %v",
		nodes[victim].name, time.Since(restart).Round(time.Millisecond), after)

	t.Logf("connection events:\n  %s", strings.Join(ev.lines(), "\n  "))
	t.Logf("test body took %v", time.Since(t0).Round(time.Millisecond))
}
