package edge_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// With authentication configured, the extended agent card is refused to
// a caller without valid credentials (none, an unknown key, a scheme
// other than Bearer) on every binding and both versions: JSON-RPC 1.0
// GetExtendedAgentCard (on the agent's endpoint and on /a2a with the
// tenant), 0.3 agent/getAuthenticatedExtendedCard, HTTP+JSON
// /extendedAgentCard under /agents/{name} and /{tenant}, and gRPC. The
// refusal is the authentication one (401 with challenges; gRPC
// UNAUTHENTICATED) and carries nothing of the card. The public card stays
// public, and with a key the same calls return the extended card.
func TestExtendedCardRefusedWithoutCredentials(t *testing.T) {
	const aliceKey = "alice-secret-0123456789"
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	hc := &http.Client{Timeout: 20 * time.Second}

	do := func(method, path string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, m.URL+path, rd)
		require.NoError(t, err)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, b
	}
	rpc := func(method string, params any) []byte {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		require.NoError(t, err)
		return b
	}
	type httpCall struct {
		name, method, path string
		body               []byte
		hdr                map[string]string
		result             bool // JSON-RPC: the card is the result
	}
	v10 := map[string]string{"A2A-Version": "1.0"}
	calls := []httpCall{
		{"JSON-RPC 1.0 on the agent", http.MethodPost, "/agents/echo", rpc("GetExtendedAgentCard", map[string]any{}), v10, true},
		{"JSON-RPC 1.0 by tenant", http.MethodPost, "/a2a", rpc("GetExtendedAgentCard", map[string]any{"tenant": "echo"}), v10, true},
		{"JSON-RPC 0.3", http.MethodPost, "/agents/echo", rpc("agent/getAuthenticatedExtendedCard", nil), nil, true},
		{"HTTP+JSON on the agent", http.MethodGet, "/agents/echo/extendedAgentCard", nil, nil, false},
		{"HTTP+JSON by tenant", http.MethodGet, "/echo/extendedAgentCard", nil, nil, false},
	}
	with := func(base, extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	noCreds := map[string]map[string]string{
		"no credentials":   nil,
		"an unknown key":   {edge.APIKeyHeader: "not-a-known-secret-at-all"},
		"an unknown token": {"Authorization": "Bearer not-a-known-secret-at-all"},
		"basic auth":       {"Authorization": "Basic YWxpY2U6YWxpY2Utc2VjcmV0LTAxMjM0NTY3ODk="},
	}

	for _, c := range calls {
		for how, creds := range noCreds {
			status, hdr, body := do(c.method, c.path, c.body, with(c.hdr, creds))
			require.Equalf(t, http.StatusUnauthorized, status, "%s with %s: not refused as unauthenticated: %s", c.name, how, body)
			assert.NotEmpty(t, hdr.Values("WWW-Authenticate"), "%s with %s: challenges", c.name, how)
			assert.NotContains(t, string(body), agents.EchoDataSkill, "%s with %s: nothing of the card", c.name, how)
			if c.result {
				var r struct {
					Result json.RawMessage `json:"result"`
					Error  *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(body, &r), "%s", body)
				require.NotNil(t, r.Error, "%s with %s: %s", c.name, how, body)
				assert.Equal(t, -32000, r.Error.Code, "%s with %s", c.name, how)
				assert.Empty(t, r.Result)
			} else {
				requireRESTStatus(t, restResp{Status: status, Header: hdr, Body: body}, 401, "UNAUTHENTICATED", "UNAUTHENTICATED")
			}
		}
	}
	cl := grpcClient(t, m)
	for _, md := range [][]string{nil, {"x-api-key", "not-a-known-secret-at-all"}, {"authorization", "Basic YWxpY2U6eA=="}} {
		card, err := cl.GetExtendedAgentCard(grpcCtx(t, md...), &a2apb.GetExtendedAgentCardRequest{Tenant: "echo"})
		requireGRPCStatus(t, err, codes.Unauthenticated, "")
		assert.Nil(t, card, "gRPC with %v", md)
	}

	// The public card stays public, and says there is an extended one.
	status, _, body := do(http.MethodGet, "/agents/echo/.well-known/agent-card.json", nil, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.NotContains(t, string(body), agents.EchoDataSkill)
	assert.Contains(t, string(body), `"extendedAgentCard":true`)

	// With a key, each call gets the extended card.
	skills := func(raw []byte) []string {
		var c struct {
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		require.NoError(t, json.Unmarshal(raw, &c), "%s", raw)
		var ids []string
		for _, s := range c.Skills {
			ids = append(ids, s.ID)
		}
		return ids
	}
	for _, c := range calls {
		for _, creds := range []map[string]string{{edge.APIKeyHeader: aliceKey}, {"Authorization": "Bearer " + aliceKey}} {
			status, _, body := do(c.method, c.path, c.body, with(c.hdr, creds))
			require.Equal(t, http.StatusOK, status, "%s: %s", c.name, body)
			raw := body
			if c.result {
				var r struct {
					Result json.RawMessage `json:"result"`
				}
				require.NoError(t, json.Unmarshal(body, &r), "%s", body)
				require.NotEmpty(t, r.Result, "%s: %s", c.name, body)
				raw = r.Result
			}
			assert.Contains(t, skills(raw), agents.EchoDataSkill, "%s: the extended card", c.name)
		}
	}
	card, err := cl.GetExtendedAgentCard(grpcCtx(t, "x-api-key", aliceKey), &a2apb.GetExtendedAgentCardRequest{Tenant: "echo"})
	require.NoError(t, err)
	var ids []string
	for _, s := range card.GetSkills() {
		ids = append(ids, s.GetId())
	}
	assert.Contains(t, ids, agents.EchoDataSkill, "gRPC: the extended card")
}
