package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// limitBurst is the burst of the limit tests. Their rate is so low (one
// call per 100 s) that no token comes back while a test runs, however
// slowly the machine runs it: the call after the burst is refused.
const (
	limitBurst = 10
	limitRate  = 0.01
)

// postLimited POSTs a JSON-RPC body and returns the decoded reply with its
// HTTP status and headers, whatever the status.
func (m *rawMesh) postLimited(t *testing.T, path string, body []byte, hdr map[string]string) *rpcReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	resp := m.postRaw(ctx, t, path, strings.NewReader(string(body)), hdr)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return decodeReply(t, resp, data)
}

// requireRateLimited checks a refusal: 429, Retry-After of at least a
// second, a JSON-RPC error in the server range with id null.
func requireRateLimited(t *testing.T, r *rpcReply) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, r.Status, "body %s", trimBody(r.Body))
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
	assert.GreaterOrEqual(t, ra, 1)
	requireEnvelope(t, r)
	assert.Equal(t, "null", string(r.ID))
	require.NotNil(t, r.Error)
	assert.Equal(t, -32029, r.Error.Code)
	assert.True(t, r.Error.Code <= -32000 && r.Error.Code >= -32099, "code %d is in the server-error range", r.Error.Code)
	requireCleanMessage(t, r.Error.Message)
}

// Two principals are limited independently: each has its own burst, the
// call past it gets 429 + Retry-After, a stream is one call when opened,
// and cards are never limited.
func TestLimitRatePerPrincipal(t *testing.T) {
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Limits = edge.Limits{Rate: limitRate, Burst: limitBurst}
	}))
	get := func() []byte {
		return rpcBody(t, m.newReqID(), "GetTask", map[string]any{"id": uuid.NewString()})
	}

	// Alice spends her burst; the 11th call is refused.
	for i := 0; i < limitBurst; i++ {
		m.fails(t, "/agents/echo", "GetTask", map[string]any{"id": uuid.NewString()}, -32001, asAlice)
	}
	requireRateLimited(t, m.postLimited(t, "/agents/echo", get(), asAlice))
	// Her bearer token is the same principal, and a body that is not even
	// JSON is refused before it is read.
	requireRateLimited(t, m.postLimited(t, "/a2a", get(), asAliceBearer))
	requireRateLimited(t, m.postLimited(t, "/agents/echo", []byte("{not json"), asAlice))
	// A refused stream is a plain JSON answer, not an SSE stream.
	s, r := m.openStream(t, "/agents/echo", rpcBody(t, m.newReqID(), "SendStreamingMessage", sendParams(v10.msg("over"), nil)), asAlice)
	require.Nil(t, s, "a refused stream call opens no stream")
	require.NotNil(t, r)
	require.NotNil(t, r.Error)
	assert.Equal(t, -32029, r.Error.Code)

	// Bob is not touched by Alice's calls: a whole stream counts as one
	// call, then nine more fit his burst, and the next is refused.
	st, id := m.stream(t, "/agents/echo", "SendStreamingMessage", sendParams(v10.msg("one stream"), nil), asBob)
	frames := st.readAll(t, v10, id, 50)
	require.NotEmpty(t, frames)
	requireStreamOrder(t, frames, 0)
	for i := 1; i < limitBurst; i++ {
		m.fails(t, "/agents/echo", "GetTask", map[string]any{"id": uuid.NewString()}, -32001, asBob)
	}
	requireRateLimited(t, m.postLimited(t, "/agents/echo", get(), asBob))

	// Unauthenticated calls are answered 401 before any limit applies.
	assert.Equal(t, http.StatusUnauthorized, m.postLimited(t, "/agents/echo", get(), nil).Status)

	// Cards, the agent list and health are not limited, with or without
	// a (drained) principal's key.
	for i := 0; i < 3*limitBurst; i++ {
		for _, path := range []string{"/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json", "/agents", "/healthz"} {
			for _, hdr := range []map[string]string{nil, asAlice} {
				code, _, _ := m.getJSON(t, path, hdr)
				require.Equal(t, http.StatusOK, code, "GET %s (round %d)", path, i)
			}
		}
	}
}

// Without auth the bucket is the client's address (the loopback here);
// X-Forwarded-For does not buy a new one.
func TestLimitByClientAddressWithoutAuth(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Limits = edge.Limits{Rate: limitRate, Burst: limitBurst}
	}))
	for i := 0; i < limitBurst; i++ {
		res := m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("hi "+strconv.Itoa(i)), nil),
			map[string]string{"X-Forwarded-For": "198.51.100." + strconv.Itoa(i)})
		require.True(t, json.Valid(res))
	}
	body := rpcBody(t, m.newReqID(), "SendMessage", sendParams(v10.msg("one too many"), nil))
	requireRateLimited(t, m.postLimited(t, "/agents/echo", body, map[string]string{"X-Forwarded-For": "203.0.113.7"}))
	code, _, _ := m.getJSON(t, "/.well-known/agent-card.json", nil)
	assert.Equal(t, http.StatusOK, code)
}

// Past MaxTasks the least recently changed tasks are evicted whole: the
// edge answers -32001 for them, in both versions, and serves the rest.
func TestRetentionEvictedTaskIsNotFound(t *testing.T) {
	const maxTasks, n = 5, 12
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus.MaxTasks = maxTasks }))
	ids := make([]string, n)
	for i := range ids {
		tk := v10.sendTask(t, m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("keep "+strconv.Itoa(i)), nil)))
		require.Equal(t, v10.completed, tk.Status.State)
		ids[i] = tk.ID
		ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
		_, err := m.Store().Trim(ctx) // what every process does every few seconds
		cancel()
		require.NoError(t, err)
	}
	for i, id := range ids {
		if i < n-(maxTasks-1) {
			m.fails(t, "/agents/echo", "GetTask", map[string]any{"id": id}, -32001)
			m.fails(t, "/agents/echo", "tasks/get", map[string]any{"id": id}, -32001)
			m.fails(t, "/agents/echo", "SendMessage", sendParams(inTask(v10.msg("more"), id, ""), nil), -32001)
			continue
		}
		tk := m.getTask(t, v10, "/agents/echo", id, nil)
		assert.Equal(t, v10.completed, tk.Status.State)
		assert.Equal(t, "keep "+strconv.Itoa(i), tk.artifactText())
	}
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	// A task is its log: the events stream's subjects are the tasks kept.
	events, err := m.Bus().JetStream().Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	info, err := events.Info(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, info.State.NumSubjects, uint64(maxTasks-1), "task logs kept")
}
