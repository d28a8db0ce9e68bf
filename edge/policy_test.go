package edge_test

// The access policy (package policy) through every binding: JSON-RPC,
// HTTP+JSON and gRPC ask the same question of the same policy in the
// service, and answer a denial in their own shape, before any work is
// recorded; the listings and the operator API show each caller what it
// may see.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/registry"
)

const (
	aliceKey = "alice-secret-0123456789"
	bobKey   = "bob-secret-0123456789"
	olgaKey  = "olga-secret-0123456789"
)

const testPolicy = `
allow principal:alice  echo    send,read,cancel
allow role:operators   *       ops,remove
allow principal:bob    *       *
`

func policyMesh(t *testing.T) (*meshtest.Mesh, *policy.File, string) {
	t.Helper()
	creds, err := edge.ParseAuthText("alice " + aliceKey + "\nbob " + bobKey + "\nolga " + olgaKey + " roles=operators\n")
	require.NoError(t, err)
	auth, err := edge.NewAuthFrom(creds)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte(testPolicy), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Policy = pf
	}))
	return m, pf, path
}

// rpcAnswer is a JSON-RPC answer with its result undecoded.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *a2a.Error      `json:"error"`
}

// keyRPC posts a JSON-RPC call with an API key and decodes the answer.
func keyRPC(t *testing.T, url, key, method string, params any) (int, *rpcAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(rpcBody(t, method, params)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, &out
}

func sendParams(id string) map[string]any {
	return map[string]any{"message": map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}}
}

func TestPolicyThroughEveryBinding(t *testing.T) {
	m, pf, path := policyMesh(t)

	// JSON-RPC: alice may send to echo, not to upper, and may not
	// configure push for her echo task.
	code, res := keyRPC(t, m.URL+"/agents/echo", aliceKey, "SendMessage", sendParams("pol-1"))
	require.Equal(t, http.StatusOK, code)
	require.Nil(t, res.Error)
	var sent struct {
		Task a2a.Task `json:"task"`
	}
	require.NoError(t, json.Unmarshal(res.Result, &sent))

	code, res = keyRPC(t, m.URL+"/agents/upper", aliceKey, "SendMessage", sendParams("pol-2"))
	require.Equal(t, http.StatusOK, code, "a JSON-RPC error travels in a 200, where JSON-RPC clients read it")
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodePermissionDenied, res.Error.Code)
	assert.Contains(t, res.Error.Message, `principal "alice" may not send to agent "upper"`)

	_, res = keyRPC(t, m.URL+"/agents/echo", aliceKey, "CreateTaskPushNotificationConfig",
		map[string]any{"taskId": sent.Task.ID, "url": "https://example.com/hook"})
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodePermissionDenied, res.Error.Code)

	// A name nobody registered is denied like a real one: a caller the
	// policy does not allow learns nothing of which agents exist.
	_, res = keyRPC(t, m.URL+"/agents/no-such-agent", aliceKey, "SendMessage", sendParams("pol-3"))
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodePermissionDenied, res.Error.Code)

	// HTTP+JSON: 403 PERMISSION_DENIED.
	r := restDo(t, http.DefaultClient, m.URL, http.MethodPost, "/agents/upper/message:send",
		map[string]any{"message": map[string]any{"messageId": "pol-4", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}},
		map[string]string{"X-Api-Key": aliceKey})
	assert.Equal(t, http.StatusForbidden, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "PERMISSION_DENIED")

	// gRPC: PERMISSION_DENIED.
	cl := grpcClient(t, m)
	_, err := cl.SendMessage(grpcCtx(t, "x-api-key", aliceKey), &a2apb.SendMessageRequest{Tenant: "upper", Message: grpcUserMsg("pol-5", "hi")})
	requireGRPCStatus(t, err, codes.PermissionDenied, "")
	_, err = cl.SendMessage(grpcCtx(t, "x-api-key", aliceKey), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("pol-6", "hi")})
	require.NoError(t, err)

	// The denied sends recorded nothing: once the policy lets alice read
	// upper's tasks (the file changed, then reloaded), she has none there.
	require.NoError(t, os.WriteFile(path, []byte(testPolicy+"allow principal:alice upper read\n"), 0o600))
	require.NoError(t, pf.Reload())
	_, res = keyRPC(t, m.URL+"/agents/upper", aliceKey, "ListTasks", map[string]any{})
	require.Nil(t, res.Error)
	var list a2a.ListTasksResponse
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Empty(t, list.Tasks, "a denial comes before any work is recorded")

	// ListTasks across agents (the mesh endpoint) lists only what the
	// policy lets her read: her two echo tasks.
	_, res = keyRPC(t, m.URL+"/a2a", aliceKey, "ListTasks", map[string]any{})
	require.Nil(t, res.Error)
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Len(t, list.Tasks, 2)
}

func agentNames(t *testing.T, url, key string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/agents", nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Agents []a2a.AgentCard `json:"agents"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	var names []string
	for _, c := range doc.Agents {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

func TestPolicyListingsAndOperatorAPI(t *testing.T) {
	m, _, _ := policyMesh(t)
	assert.Equal(t, []string{"echo"}, agentNames(t, m.URL, aliceKey), "alice sees the agents the policy names for her")
	assert.Empty(t, agentNames(t, m.URL, ""), "no rule names the anonymous caller")
	assert.Greater(t, len(agentNames(t, m.URL, bobKey)), 3, "bob may do everything")

	fleet := func(key string) (int, []string) {
		status, _, body := opsGet(t, m.URL, "/ops/v1/fleet", key)
		var doc struct {
			Agents []struct {
				Name string `json:"name"`
			} `json:"agents"`
		}
		_ = json.Unmarshal(body, &doc)
		var names []string
		for _, a := range doc.Agents {
			names = append(names, a.Name)
		}
		return status, names
	}
	status, _ := fleet(aliceKey)
	assert.Equal(t, http.StatusForbidden, status, "alice has no ops action")
	status, names := fleet(olgaKey)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, names, "upper", "an operator sees the fleet")

	// Removing an agent is the remove action's: refused to alice, and to
	// olga while the agent has a live worker unless she forces it.
	del := func(key, path string) int {
		req, err := http.NewRequest(http.MethodDelete, m.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, del(aliceKey, "/ops/v1/agents/upper"))
	assert.Equal(t, http.StatusConflict, del(olgaKey, "/ops/v1/agents/upper"), "upper's worker runs")
	known, err := registry.IsKnown(context.Background(), m.Bus(), "upper")
	require.NoError(t, err)
	require.True(t, known)
	assert.Equal(t, http.StatusOK, del(olgaKey, "/ops/v1/agents/upper?force=true"))
	known, err = registry.IsKnown(context.Background(), m.Bus(), "upper")
	require.NoError(t, err)
	assert.False(t, known, "removed from the agents bucket")
	assert.Equal(t, http.StatusNotFound, del(olgaKey, "/ops/v1/agents/no-such-agent"))

	// An agent's card stays public: clients read it to learn how to
	// authenticate.
	resp, err := http.Get(m.URL + "/agents/upper/.well-known/agent-card.json")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
