package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
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
// card is served, GET /agents shows it queuing, and a send is accepted
// and waits in its queue; a worker started later runs it. An operator
// then removes the agent (a2amesh remove-agent), which refuses while a
// worker is live, and from then on a send is refused as unknown.
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
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr, "--blocking-timeout", "2s")
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

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method string, params map[string]any) (map[string]any, *rpcError) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := client.Post(base+"/agents/echo", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var r struct {
			Result map[string]any `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		return r.Result, r.Error
	}
	send := func(text string) (map[string]any, *rpcError) {
		return call("message/send", map[string]any{"message": map[string]any{"kind": "message", "role": "user",
			"messageId": fmt.Sprint("m-", time.Now().UnixNano()), "parts": []any{map[string]any{"kind": "text", "text": text}}}})
	}

	// A blocking send answers at --blocking-timeout with the task queued.
	task, rerr := send("while nobody works")
	require.Nil(t, rerr, "a send to a known agent with no worker is accepted")
	assert.Equal(t, "submitted", task["status"].(map[string]any)["state"], "it waits in the queue")
	id := task["id"].(string)

	// The next worker takes it.
	w1 := startRole(t, bin, "worker1", "worker", "--nats", natsURL, "--agent", "echo")
	deadline = time.Now().Add(30 * time.Second)
	for {
		got, rerr := call("tasks/get", map[string]any{"id": id})
		require.Nil(t, rerr)
		if got["status"].(map[string]any)["state"] == "completed" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the queued task never ran on the new worker")
		time.Sleep(100 * time.Millisecond)
	}

	removeAgent := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "remove-agent", "--nats", natsURL, "echo").CombinedOutput()
		return string(out), err
	}
	out, err := removeAgent()
	require.Error(t, err, "remove-agent refuses an agent with a live worker: %s", out)
	assert.Contains(t, out, "live worker")
	_, rerr = send("still known")
	require.Nil(t, rerr)

	w1.stop(syscall.SIGTERM)
	out, err = removeAgent()
	require.NoError(t, err, out)
	assert.Contains(t, out, "removed echo")
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, rerr = send("after removal")
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
