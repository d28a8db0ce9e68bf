package edge_test

// Bearer tokens of an OpenID Connect issuer (package tokens) through every
// binding, against a test issuer on loopback (internal/oidctest); the
// Hydra test (integration) does the same against a real identity provider.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/oidctest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/tokens"
)

func tokenMesh(t *testing.T, is *oidctest.Issuer) *meshtest.Mesh {
	t.Helper()
	v, err := tokens.New(tokens.Config{Issuer: is.URL, Audience: "a2amesh", Algorithms: []string{"ES256"}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow scope:a2a.call echo send,read\n"), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	return meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Tokens = v
		c.Edge.Policy = pf
	}))
}

// bearerRPC posts a JSON-RPC call with Authorization: Bearer tok.
func bearerRPC(t *testing.T, url, tok, method string, params any) (*http.Response, *rpcAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(rpcBody(t, method, params)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out rpcAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp, &out
}

func TestBearerTokensThroughEveryBinding(t *testing.T) {
	is := oidctest.Start(t)
	m := tokenMesh(t, is)
	good := is.Token(t, oidctest.Claims{"sub": "svc-reporting", "aud": "a2amesh", "scope": "a2a.call"})

	resp, res := bearerRPC(t, m.URL+"/agents/echo", good, "SendMessage", sendParams("tok-1"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, res.Error, "%+v", res.Error)

	r := restDo(t, http.DefaultClient, m.URL, http.MethodPost, "/agents/echo/message:send",
		map[string]any{"message": map[string]any{"messageId": "tok-2", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}},
		map[string]string{"Authorization": "Bearer " + good})
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

	cl := grpcClient(t, m)
	_, err := cl.SendMessage(grpcCtx(t, "authorization", "Bearer "+good), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("tok-3", "hi")})
	require.NoError(t, err)

	// The token's principal owns its tasks: the same subject reads them
	// through any binding, with any of its tokens.
	again := is.Token(t, oidctest.Claims{"sub": "svc-reporting", "aud": "a2amesh", "scope": "a2a.call"})
	_, res = bearerRPC(t, m.URL+"/agents/echo", again, "ListTasks", map[string]any{})
	require.Nil(t, res.Error)
	var list a2a.ListTasksResponse
	require.NoError(t, json.Unmarshal(res.Result, &list))
	assert.Len(t, list.Tasks, 3)

	// Refused, each with its reason, in every binding.
	for name, tc := range map[string]struct{ tok, reason string }{
		"expired":        {is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "scope": "a2a.call", "exp": time.Now().Add(-time.Hour).Unix()}), "expired"},
		"other audience": {is.Token(t, oidctest.Claims{"sub": "x", "aud": "not-the-mesh", "scope": "a2a.call"}), "not for this audience"},
		"unknown key":    {is.TokenFromOtherKey(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "scope": "a2a.call"}), "signature does not verify"},
		"alg none":       {is.UnsignedToken(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "scope": "a2a.call"}), "malformed, or signed with an algorithm not accepted"},
	} {
		resp, _ := bearerRPC(t, m.URL+"/agents/echo", tc.tok, "SendMessage", sendParams("tok-bad"))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		assert.Contains(t, strings.Join(resp.Header.Values("WWW-Authenticate"), "\n"), `error="invalid_token"`, name)
		assert.Contains(t, strings.Join(resp.Header.Values("WWW-Authenticate"), "\n"), tc.reason, name)
		r := restDo(t, http.DefaultClient, m.URL, http.MethodPost, "/agents/echo/message:send",
			map[string]any{"message": map[string]any{"messageId": "tok-bad", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}},
			map[string]string{"Authorization": "Bearer " + tc.tok})
		assert.Equal(t, http.StatusUnauthorized, r.Status, name)
		_, err := cl.SendMessage(grpcCtx(t, "authorization", "Bearer "+tc.tok), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("tok-bad", "hi")})
		requireGRPCStatus(t, err, codes.Unauthenticated, "")
	}

	// A valid token without the scope the policy asks for is denied.
	noScope := is.Token(t, oidctest.Claims{"sub": "svc-other", "aud": "a2amesh", "scope": "profile"})
	_, res = bearerRPC(t, m.URL+"/agents/echo", noScope, "SendMessage", sendParams("tok-4"))
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodePermissionDenied, res.Error.Code)

	// Cards name the issuer: an openIdConnect scheme with its discovery URL.
	cresp, err := http.Get(m.URL + "/agents/echo/.well-known/agent-card.json")
	require.NoError(t, err)
	var card map[string]any
	require.NoError(t, json.NewDecoder(cresp.Body).Decode(&card))
	cresp.Body.Close()
	schemes, _ := card["securitySchemes"].(map[string]any)
	oidcScheme, _ := schemes["openIdConnect"].(map[string]any)
	require.NotNil(t, oidcScheme, "%v", card["securitySchemes"])
	inner, _ := oidcScheme["openIdConnectSecurityScheme"].(map[string]any)
	assert.Equal(t, is.URL+"/.well-known/openid-configuration", inner["openIdConnectUrl"])
	assert.Equal(t, "openIdConnect", oidcScheme["type"], "the 0.3 form beside the 1.0 one")
}

// An issuer that cannot be reached is a retryable answer (503, gRPC
// UNAVAILABLE), not a 401 that tells a client its token is bad.
func TestBearerTokensIssuerDown(t *testing.T) {
	is := oidctest.Start(t)
	m := tokenMesh(t, is)
	tok := is.Token(t, oidctest.Claims{"sub": "x", "aud": "a2amesh", "scope": "a2a.call"})
	is.Close()
	resp, res := bearerRPC(t, m.URL+"/agents/echo", tok, "SendMessage", sendParams("down-1"))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodeServerBusy, res.Error.Code)
	_, err := grpcClient(t, m).SendMessage(grpcCtx(t, "authorization", "Bearer "+tok), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("down-2", "hi")})
	requireGRPCStatus(t, err, codes.Unavailable, "SERVER_ERROR")
}
