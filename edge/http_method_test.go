package edge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
)

// do sends a request without a body and returns status, headers and body.
func (m *httpMesh) do(t *testing.T, method, path string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, m.URL+path, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

// A JSON-RPC endpoint asked with another method than POST answers 405,
// Allow: POST, and a JSON-RPC error (id null, -32600) that says to POST,
// not the catch-all 404 (which reads as "no such agent"). The resources
// beside them keep answering GET, and take no other method.
func TestHTTPWrongMethod(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo")

	for _, path := range []string{"/", "/a2a", "/a2a/", "/agents/echo", "/agents/echo/", "/agents/nobody"} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions, http.MethodHead} {
			status, h, body := m.do(t, method, path, nil)
			require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s: %s", method, path, body)
			assert.Equal(t, "POST", h.Get("Allow"), "%s %s", method, path)
			if method == http.MethodHead {
				assert.Empty(t, body)
				continue
			}
			assert.True(t, strings.HasPrefix(h.Get("Content-Type"), "application/json"), "%s %s: %s", method, path, h.Get("Content-Type"))
			var r struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      *json.RawMessage `json:"id"`
				Error   *rpcErr          `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &r), "%s %s: %s", method, path, body)
			var keys map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &keys))
			assert.Contains(t, keys, "id")
			assert.Equal(t, "null", string(keys["id"]), "%s %s: id must be null", method, path)
			assert.Equal(t, "2.0", r.JSONRPC)
			require.NotNil(t, r.Error, "%s %s: %s", method, path, body)
			assert.Equal(t, -32600, r.Error.Code)
			assert.Contains(t, r.Error.Message, "POST a JSON-RPC 2.0 request")
			assert.Contains(t, r.Error.Message, method)
		}
	}
	// The message points at the card of the endpoint asked.
	_, _, body := m.do(t, http.MethodGet, "/agents/echo", nil)
	assert.Contains(t, string(body), "/agents/echo/.well-known/agent-card.json")
	_, _, body = m.do(t, http.MethodGet, "/a2a", nil)
	assert.Contains(t, string(body), "GET /.well-known/agent-card.json")

	// POST still serves JSON-RPC on every endpoint.
	for _, path := range []string{"/", "/a2a", "/a2a/", "/agents/echo", "/agents/echo/"} {
		r := m.post(t, path, "GetTask", map[string]any{"id": "no-such-task"})
		require.NotNil(t, r.Error, path)
		assert.Equal(t, -32001, r.Error.Code, path)
	}

	// The resources keep working with GET (and HEAD) ...
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json", "/agents", "/agents/",
		"/agents/echo/.well-known/agent-card.json", "/agents/echo/.well-known/agent.json", "/healthz", "/livez"} {
		status, _, body := m.do(t, http.MethodGet, path, nil)
		assert.Equal(t, http.StatusOK, status, "GET %s: %s", path, body)
		status, _, _ = m.do(t, http.MethodHead, path, nil)
		assert.Equal(t, http.StatusOK, status, "HEAD %s", path)
	}
	// ... and answer another method with 405 and Allow: GET, HEAD.
	for _, path := range []string{"/.well-known/agent-card.json", "/agents", "/agents/echo/.well-known/agent-card.json", "/healthz", "/livez", "/metrics"} {
		status, h, body := m.do(t, http.MethodPost, path, nil)
		assert.Equal(t, http.StatusMethodNotAllowed, status, "POST %s: %s", path, body)
		assert.Equal(t, "GET, HEAD", h.Get("Allow"), "POST %s", path)
		var r map[string]string
		require.NoError(t, json.Unmarshal(body, &r), "POST %s: %s", path, body)
		assert.Contains(t, r["error"], "POST is not allowed", path)
	}
	_, _, body = m.do(t, http.MethodPost, "/agents", nil)
	assert.Contains(t, string(body), "POST JSON-RPC to /agents/<name>")

	// A path that is neither stays 404.
	for _, path := range []string{"/nothing", "/a2a/x", "/agents/echo/x"} {
		status, _, body := m.do(t, http.MethodGet, path, nil)
		assert.Equal(t, http.StatusNotFound, status, "GET %s: %s", path, body)
	}
}

// With CORS origins configured, a preflight from an allowed origin on a
// JSON-RPC endpoint is answered by the CORS policy, and a plain OPTIONS
// gets 204 with Allow; a wrong method still gets 405, with the CORS
// headers a browser needs to read it.
func TestHTTPWrongMethodWithCORS(t *testing.T) {
	const origin = "https://app.example"
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", CORSOrigins: []string{origin}}, "echo")

	status, h, body := m.do(t, http.MethodOptions, "/a2a", map[string]string{
		"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	assert.Equal(t, http.StatusNoContent, status, "%s", body)
	assert.Equal(t, origin, h.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, h.Get("Access-Control-Allow-Methods"), "POST")

	status, h, _ = m.do(t, http.MethodOptions, "/agents/echo", nil)
	assert.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, "OPTIONS, POST", h.Get("Allow"))

	status, h, body = m.do(t, http.MethodGet, "/a2a", map[string]string{"Origin": origin})
	assert.Equal(t, http.StatusMethodNotAllowed, status, "%s", body)
	assert.Equal(t, "OPTIONS, POST", h.Get("Allow"))
	assert.Equal(t, origin, h.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, string(body), `"code":-32600`)

	// A preflight from an origin not allowed gets no CORS headers, and no
	// success.
	status, h, _ = m.do(t, http.MethodOptions, "/a2a", map[string]string{
		"Origin": "https://other.example", "Access-Control-Request-Method": "POST"})
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.Empty(t, h.Get("Access-Control-Allow-Origin"))
}
