package edge_test

// OpenID Connect against a real identity provider: Ory Hydra on loopback
// (internal/hydratest) issues client-credentials access tokens, and they
// call an agent through JSON-RPC, HTTP+JSON and gRPC; expired tokens,
// tokens for another audience, tokens signed by a key Hydra's key set does
// not hold, and alg none tokens are refused through each.

import (
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
	"github.com/a2amesh/a2amesh/internal/hydratest"
	"github.com/a2amesh/a2amesh/internal/oidctest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/tokens"
)

func TestHydraTokensThroughEveryBinding(t *testing.T) {
	h := hydratest.Start(t)
	reporting := hydratest.Client{ID: "reporting", Secret: "reporting-secret-0123456789", Audience: []string{"a2amesh"}, Scope: "a2a.call"}
	short := hydratest.Client{ID: "short-lived", Secret: "short-secret-0123456789", Audience: []string{"a2amesh"}, Scope: "a2a.call", Lifespan: "1s"}
	elsewhere := hydratest.Client{ID: "elsewhere", Secret: "elsewhere-secret-0123456789", Audience: []string{"another-service"}, Scope: "a2a.call"}
	for _, c := range []hydratest.Client{reporting, short, elsewhere} {
		h.CreateClient(t, c)
	}
	// A 1 s skew, so that a token of the 1 s client is expired 2.5 s on.
	v, err := tokens.New(tokens.Config{Issuer: h.Issuer, Audience: "a2amesh", Skew: time.Second})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte("allow scope:a2a.call echo send,read\n"), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Tokens, c.Edge.Policy = v, pf
	}))
	cl := grpcClient(t, m)

	tok := h.Token(t, reporting, "a2amesh", "a2a.call")
	resp, res := bearerRPC(t, m.URL+"/agents/echo", tok, "SendMessage", sendParams("hydra-1"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Nil(t, res.Error, "%+v", res.Error)
	r := restDo(t, http.DefaultClient, m.URL, http.MethodPost, "/agents/echo/message:send",
		map[string]any{"message": map[string]any{"messageId": "hydra-2", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}},
		map[string]string{"Authorization": "Bearer " + tok})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	_, err = cl.SendMessage(grpcCtx(t, "authorization", "Bearer "+tok), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("hydra-3", "hi")})
	require.NoError(t, err)
	// The client is the principal (sub): its three tasks are its own.
	_, res = bearerRPC(t, m.URL+"/agents/echo", tok, "ListTasks", map[string]any{})
	require.Nil(t, res.Error)
	assert.Contains(t, string(res.Result), `"hydra-3"`)

	expiring := h.Token(t, short, "a2amesh", "a2a.call")
	fake := oidctest.Start(t) // only its keys: a key Hydra's key set does not hold
	claims := oidctest.Claims{"iss": h.Issuer, "sub": "reporting", "aud": []string{"a2amesh"}, "scp": []string{"a2a.call"}}
	refused := map[string]struct{ tok, reason string }{
		"for another audience":           {h.Token(t, elsewhere, "another-service", "a2a.call"), "not for this audience"},
		"signed by a key not in the set": {fake.TokenFromOtherKey(t, claims), "signature does not verify"},
		"alg none":                       {fake.UnsignedToken(t, claims), "malformed, or signed with an algorithm not accepted"},
	}
	time.Sleep(2500 * time.Millisecond)
	refused["expired"] = struct{ tok, reason string }{expiring, "expired"}
	for name, tc := range refused {
		resp, _ := bearerRPC(t, m.URL+"/agents/echo", tc.tok, "SendMessage", sendParams("hydra-bad"))
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "JSON-RPC: %s", name)
		assert.Contains(t, strings.Join(resp.Header.Values("WWW-Authenticate"), "\n"), tc.reason, name)
		r := restDo(t, http.DefaultClient, m.URL, http.MethodPost, "/agents/echo/message:send",
			map[string]any{"message": map[string]any{"messageId": "hydra-bad", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}},
			map[string]string{"Authorization": "Bearer " + tc.tok})
		assert.Equal(t, http.StatusUnauthorized, r.Status, "HTTP+JSON: %s", name)
		_, err := cl.SendMessage(grpcCtx(t, "authorization", "Bearer "+tc.tok), &a2apb.SendMessageRequest{Tenant: "echo", Message: grpcUserMsg("hydra-bad", "hi")})
		requireGRPCStatus(t, err, codes.Unauthenticated, "")
	}

	// The token's scope is what the policy matches: a token without it
	// is denied the send.
	bare := hydratest.Client{ID: "no-scope", Secret: "no-scope-secret-0123456789", Audience: []string{"a2amesh"}, Scope: "profile"}
	h.CreateClient(t, bare)
	_, res = bearerRPC(t, m.URL+"/agents/echo", h.Token(t, bare, "a2amesh", "profile"), "SendMessage", sendParams("hydra-4"))
	require.NotNil(t, res.Error)
	assert.Equal(t, a2a.CodePermissionDenied, res.Error.Code)
}
