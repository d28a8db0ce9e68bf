package edge_test

// The audit log (package audit) as an edge writes it: state-changing calls
// and denials through every binding, read back from the stream and through
// GET /ops/v1/audit by an auditor only.

import (
	"context"
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

	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/policy"
)

func TestAuditLog(t *testing.T) {
	creds, err := edge.ParseAuthText("alice " + aliceKey + "\nolga " + olgaKey + " roles=operators\nada ada-secret-0123456789 roles=auditors\n")
	require.NoError(t, err)
	auth, err := edge.NewAuthFrom(creds)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy")
	require.NoError(t, os.WriteFile(path, []byte(testPolicy+"allow role:auditors * audit\n"), 0o600))
	pf, err := policy.Load(path, nil)
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth, c.Edge.Policy = auth, pf
		c.Audit = true
	}))

	_, res := keyRPC(t, m.URL+"/agents/echo", aliceKey, "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "aud-1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "a secret plan"}}}})
	require.Nil(t, res.Error)
	_, res = keyRPC(t, m.URL+"/agents/upper", aliceKey, "SendMessage", sendParams("aud-2"))
	require.NotNil(t, res.Error)
	_, err = grpcClient(t, m).SendMessage(grpcCtx(t, "x-api-key", aliceKey), &a2apb.SendMessageRequest{Tenant: "upper", Message: grpcUserMsg("aud-3", "hi")})
	requireGRPCStatus(t, err, codes.PermissionDenied, "")
	resp, err := http.Post(m.URL+"/agents/echo", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, res = keyRPC(t, m.URL+"/agents/echo", aliceKey, "GetTask", map[string]any{"id": "no-such-task"})
	require.NotNil(t, res.Error) // a read: not audited

	// The entries reach the stream in the background, within a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var entries []audit.Entry
	for i := 0; i < 200; i++ {
		entries, _, err = audit.Read(ctx, m.Bus(), audit.Filter{Limit: 100}, nil)
		require.NoError(t, err)
		if len(entries) >= 4 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Len(t, entries, 4, "%+v", entries)
	byMethod := map[string][]audit.Entry{}
	for _, e := range entries {
		byMethod[e.Binding+" "+e.Method] = append(byMethod[e.Binding+" "+e.Method], e)
	}
	sent := map[string]audit.Entry{} // by agent: batches of different agents may be stored in any order
	for _, e := range byMethod["jsonrpc SendMessage"] {
		sent[e.Agent] = e
	}
	require.Len(t, sent, 2)
	assert.Equal(t, audit.OK, sent["echo"].Outcome)
	assert.Equal(t, "alice", sent["echo"].Principal)
	assert.NotEmpty(t, sent["echo"].Task)
	assert.Contains(t, sent["echo"].From, "127.0.0.1:")
	assert.Equal(t, audit.Denied, sent["upper"].Outcome)
	require.Len(t, byMethod["grpc SendMessage"], 1)
	assert.Equal(t, audit.Denied, byMethod["grpc SendMessage"][0].Outcome)
	require.Len(t, byMethod["jsonrpc POST /agents/echo"], 1)
	assert.True(t, strings.HasPrefix(byMethod["jsonrpc POST /agents/echo"][0].Outcome, audit.Unauthenticated))

	// No content and no credential in what was stored.
	s, err := m.Bus().JetStream().Stream(ctx, audit.Stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		assert.NotContains(t, string(msg.Data), "secret plan")
		assert.NotContains(t, string(msg.Data), aliceKey)
	}

	// An auditor reads it over HTTP, with filters; alice may not.
	status, _, body := opsGet(t, m.URL, "/ops/v1/audit?outcome=denied&since=1h", "ada-secret-0123456789")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var doc struct {
		Entries []audit.Entry `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.Len(t, doc.Entries, 2)
	status, _, _ = opsGet(t, m.URL, "/ops/v1/audit", aliceKey)
	assert.Equal(t, http.StatusForbidden, status)
}
