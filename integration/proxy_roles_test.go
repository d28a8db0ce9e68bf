package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// An agent served by another implementation (the a2a-go SDK, in this test
// binary) joins the mesh through `a2amesh worker --proxy`, as separate
// processes: clients reach it through the edge in either protocol version.
func TestProxyWorkerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	upURL, stopUp, err := a2agoecho.Start(ctx)
	require.NoError(t, err)
	defer stopUp()

	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr)

	// Without trust, a loopback upstream is refused, and the worker says why.
	refused := startRole(t, bin, "refused", "worker", "--nats", natsURL, "--proxy", upURL, "--name", "nope")
	select {
	case <-refused.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a worker proxying to a refused address must exit")
	}
	assert.NotZero(t, refused.cmd.ProcessState.ExitCode())
	assert.Contains(t, refused.out.String(), "blocked")
	assert.Contains(t, refused.out.String(), "--trusted-agents")

	startRole(t, bin, "proxy", "worker", "--nats", natsURL, "--proxy", upURL, "--name", "sdk-echo",
		"--trusted-agents", "127.0.0.1", "--concurrency", "8")
	base := "http://" + edgeAddr
	waitAgent(t, base, "sdk-echo")

	// The card is the upstream's, pointing at the edge only.
	resp, err := http.Get(base + "/agents/sdk-echo/.well-known/agent-card.json")
	require.NoError(t, err)
	var card map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	resp.Body.Close()
	assert.Equal(t, "a2a-go SDK echo agent (benchmark baseline)", card["description"])
	raw, _ := json.Marshal(card)
	assert.NotContains(t, string(raw), strings.TrimPrefix(upURL, "http://"), "the card must not reveal the upstream")

	call := func(method string, params map[string]any) map[string]any {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/agents/sdk-echo", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var r struct {
			Result map[string]any `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Nil(t, r.Error)
		return r.Result
	}
	for i := 0; i < 10; i++ {
		text := fmt.Sprint("through the proxy ", i)
		// 0.3 client wire in, 1.0 to the SDK upstream.
		v03 := call("message/send", map[string]any{"message": map[string]any{"kind": "message", "role": "user",
			"messageId": fmt.Sprint("p03-", i), "parts": []any{map[string]any{"kind": "text", "text": text}}}})
		assert.Equal(t, "completed", v03["status"].(map[string]any)["state"])
		assert.Contains(t, fmt.Sprint(v03["artifacts"]), text)
		// And 1.0.
		v10 := call("SendMessage", map[string]any{"message": map[string]any{"role": "ROLE_USER",
			"messageId": fmt.Sprint("p10-", i), "parts": []any{map[string]any{"text": text}}}})
		task := v10["task"].(map[string]any)
		assert.Equal(t, "TASK_STATE_COMPLETED", task["status"].(map[string]any)["state"])
		assert.Contains(t, fmt.Sprint(task["artifacts"]), text)
	}
}
