package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `a2amesh edge` run as a process without --default-agent: a GET on its
// JSON-RPC endpoint is 405 from the moment it listens (before NATS is
// there too); a send to /a2a naming no agent says how to name one; a task
// made by naming the agent is then served on /a2a by its id alone.
func TestEdgeHTTPProcessWithoutDefaultAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL, base := "nats://"+natsAddr, "http://"+edgeAddr
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr)
	hc := &http.Client{Timeout: 10 * time.Second}

	get := func(path string) (int, http.Header, string) {
		resp, err := hc.Get(base + path)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if status, _, _ := get("/livez"); status == http.StatusOK {
			break
		}
		require.True(t, time.Now().Before(deadline), "the edge never listened")
		time.Sleep(50 * time.Millisecond)
	}
	status, h, body := get("/a2a")
	assert.Equal(t, http.StatusMethodNotAllowed, status, "before NATS: %s", body)
	assert.Equal(t, "POST", h.Get("Allow"))
	assert.Contains(t, body, `"code":-32600`)

	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "worker", "worker", "--nats", natsURL, "--agent", "ask")
	waitAgent(t, base, "ask")

	status, h, body = get("/agents/ask")
	assert.Equal(t, http.StatusMethodNotAllowed, status, body)
	assert.Equal(t, "POST", h.Get("Allow"))
	assert.Contains(t, body, "/agents/ask/.well-known/agent-card.json")

	type reply struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	call := func(params map[string]any) reply {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params})
		req, _ := http.NewRequest(http.MethodPost, base+"/a2a", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var r reply
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		return r
	}
	r := call(map[string]any{"message": v10.msg("hi")})
	require.NotNil(t, r.Error, "%s", r.Result)
	assert.Equal(t, -32602, r.Error.Code)
	assert.Contains(t, r.Error.Message, "this edge has no default agent: POST to /agents/<name>")

	r = call(map[string]any{"tenant": "ask", "message": v10.msg("hi")})
	require.Nil(t, r.Error)
	tk := v10.sendTask(t, r.Result)
	require.Equal(t, v10.inputRequired, tk.Status.State)
	r = call(map[string]any{"message": inTask(v10.msg("Ada"), tk.ID, "")})
	require.Nil(t, r.Error, "a reply by task id on /a2a")
	done := v10.sendTask(t, r.Result)
	assert.Equal(t, v10.completed, done.Status.State)
	assert.Equal(t, "Hello, Ada!", done.artifactText())
}
