package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentStatusOf reads GET /agents' status of agent (ok false: not listed).
func agentStatusOf(t *testing.T, base, agent string) (workers int, queuing, ok bool) {
	t.Helper()
	resp, err := http.Get(base + "/agents")
	if err != nil {
		return 0, false, false
	}
	defer resp.Body.Close()
	var doc struct {
		Status map[string]struct {
			Workers  int       `json:"workers"`
			LastSeen time.Time `json:"lastSeen"`
			Queuing  bool      `json:"queuing"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&doc) != nil {
		return 0, false, false
	}
	s, ok := doc.Status[agent]
	return s.Workers, s.Queuing, ok
}

// TestAgentOutlivesItsWorkers runs nats, an edge and an echo worker as
// processes. With the worker killed (kill -9) the agent stays known: its
// card is served and GET /agents shows it queuing. It takes 50 sends, half
// blocking and half not, all accepted and queued; a worker started then
// completes every one of them, each exactly once, the blocking ones within
// their bound. An operator then removes the agent (a2amesh agents remove),
// which is refused while a worker is live, and from then on a send is
// refused as unknown.
func TestAgentOutlivesItsWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	bin := durBuild(t)
	natsAddr := durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	edgeAddr := durFreeAddr(t)
	base := "http://" + edgeAddr
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr, "--blocking-timeout", "60s")
	w0 := startRole(t, bin, "worker0", "worker", "--nats", natsURL, "--agent", "echo")
	waitAgent(t, base, "echo")

	w0.stop(syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		workers, queuing, ok := agentStatusOf(t, base, "echo")
		require.True(t, ok, "GET /agents still lists echo after its only worker died")
		if workers == 0 && queuing {
			break
		}
		require.True(t, time.Now().Before(deadline), "GET /agents never showed echo with no worker")
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get(base + "/agents/echo/.well-known/agent-card.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the card of an agent with no worker is served")

	client := &http.Client{Timeout: 90 * time.Second}
	call := func(method string, params map[string]any) (map[string]any, *rpcError, error) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := client.Post(base+"/agents/echo", "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		var r struct {
			Result map[string]any `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return nil, nil, err
		}
		return r.Result, r.Error, nil
	}
	ctxID := fmt.Sprint("scale-", time.Now().UnixNano())
	send := func(i int, blocking bool) (map[string]any, *rpcError, error) {
		return call("message/send", map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprint(ctxID, "-", i), "contextId": ctxID,
				"parts": []any{map[string]any{"kind": "text", "text": fmt.Sprint("turn ", i)}}},
			"configuration": map[string]any{"blocking": blocking}})
	}
	state := func(task map[string]any) string {
		st, _ := task["status"].(map[string]any)
		s, _ := st["state"].(string)
		return s
	}

	// 50 sends with no worker: the non-blocking ones answer at once with
	// the task submitted, the blocking ones wait.
	const n = 50
	type answer struct {
		task map[string]any
		rerr *rpcError
		err  error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		blocking := i%2 == 0
		if !blocking {
			task, rerr, err := send(i, false)
			answers[i] = answer{task, rerr, err}
			require.NoError(t, err)
			require.Nil(t, rerr, "send %d to a known agent with no worker is accepted", i)
			assert.Equal(t, "submitted", state(task), "send %d waits in the queue", i)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, rerr, err := send(i, true)
			answers[i] = answer{task, rerr, err}
		}()
	}
	// Every send queued: the fleet view counts them, nothing runs them.
	deadline = time.Now().Add(20 * time.Second)
	for pendingOf(t, base, "echo") < n {
		require.True(t, time.Now().Before(deadline), "the 50 sends never all queued (pending %d)", pendingOf(t, base, "echo"))
		time.Sleep(50 * time.Millisecond)
	}

	// What an autoscaler reads: work waiting, no worker.
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metricsText), `a2amesh_agent_workers{agent="echo"} 0`)
	assert.Contains(t, string(metricsText), fmt.Sprintf(`a2amesh_agent_pending{agent="echo"} %d`, n))

	// A worker starts: it takes the queue.
	started := time.Now()
	w1 := startRole(t, bin, "worker1", "worker", "--nats", natsURL, "--agent", "echo")
	wg.Wait()
	t.Logf("the blocking sends answered %v after the worker was started", time.Since(started).Round(time.Millisecond))
	ids := map[string]int{}
	for i, a := range answers {
		require.NoError(t, a.err, "send %d", i)
		require.Nil(t, a.rerr, "send %d", i)
		id, _ := a.task["id"].(string)
		ids[id]++
		if i%2 == 0 {
			assert.Equal(t, "completed", state(a.task), "blocking send %d completes within its bound", i)
		}
	}
	require.Len(t, ids, n, "50 sends, 50 tasks")
	deadline = time.Now().Add(30 * time.Second)
	for i, a := range answers {
		id := a.task["id"].(string)
		for {
			task, rerr, err := call("tasks/get", map[string]any{"id": id})
			require.NoError(t, err)
			require.Nil(t, rerr)
			if state(task) == "completed" {
				arts, _ := task["artifacts"].([]any)
				require.Len(t, arts, 1, "task %s (send %d) ran once: one answer", id, i)
				agentTurns := 0
				for _, m := range task["history"].([]any) {
					if m.(map[string]any)["role"] == "agent" {
						agentTurns++
					}
				}
				assert.LessOrEqual(t, agentTurns, 1, "task %s (send %d) ran once", id, i)
				break
			}
			require.True(t, time.Now().Before(deadline), "task %s (send %d) never completed: %s", id, i, state(task))
			time.Sleep(50 * time.Millisecond)
		}
	}
	listed, rerr, err := call("ListTasks", map[string]any{"contextId": ctxID, "pageSize": 100})
	require.NoError(t, err)
	require.Nil(t, rerr)
	assert.Len(t, listed["tasks"], n, "the context holds the 50 tasks and no other")

	removeAgent := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "agents", "remove", "echo", "--nats", natsURL).CombinedOutput()
		return string(out), err
	}
	out, err := removeAgent()
	require.Error(t, err, "agents remove refuses an agent with a live worker: %s", out)
	assert.Contains(t, out, "live worker")

	w1.stop(syscall.SIGTERM)
	listOut, err := exec.Command(bin, "agents", "--nats", natsURL).CombinedOutput()
	require.NoError(t, err, string(listOut))
	assert.Regexp(t, `(?m)^echo\s+0\s+0\s+0\s+\S+\s+queuing: no live worker$`, string(listOut), "agents lists echo, queuing")
	out, err = removeAgent()
	require.NoError(t, err, out)
	assert.Contains(t, out, "removed echo")
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, rerr, err = send(n, false)
		require.NoError(t, err)
		if rerr != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "a removed agent is still accepted")
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, -32602, rerr.Code)
	assert.Contains(t, rerr.Message, "unknown agent")
	_, _, ok := agentStatusOf(t, base, "echo")
	assert.False(t, ok, "GET /agents no longer lists a removed agent")
}

// pendingOf reads the tasks queued for agent from GET /ops/v1/fleet (-1
// when it cannot be read).
func pendingOf(t *testing.T, base, agent string) int {
	t.Helper()
	resp, err := http.Get(base + "/ops/v1/fleet")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var doc struct {
		Agents []struct {
			Name  string `json:"name"`
			Queue struct {
				Pending int `json:"pending"`
			} `json:"queue"`
		} `json:"agents"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&doc) != nil {
		return -1
	}
	for _, a := range doc.Agents {
		if a.Name == agent {
			return a.Queue.Pending
		}
	}
	return -1
}
