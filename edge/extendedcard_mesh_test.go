package edge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// The extended card's interfaces point at --public-url, as the public
// card's do, through every binding; the answer is not cacheable by
// shared caches; an edge with --strict-cards drops the 0.3 field.
func TestExtendedCardAtPublicURL(t *testing.T) {
	const public = "https://mesh.example"
	atPublic := func(u string) bool { return u == public || strings.HasPrefix(u, public+"/") }
	for _, strict := range []bool{false, true} {
		m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
			c.Edge.PublicURL = public
			c.Edge.StrictCards = strict
		}))
		check := func(what string, raw []byte) {
			t.Helper()
			var c struct {
				Name       string `json:"name"`
				Interfaces []struct {
					URL string `json:"url"`
				} `json:"supportedInterfaces"`
				URL    *string `json:"url"`
				Compat *bool   `json:"supportsAuthenticatedExtendedCard"`
			}
			require.NoError(t, json.Unmarshal(raw, &c), "%s: %s", what, raw)
			assert.Equal(t, "echo", c.Name, what)
			require.NotEmpty(t, c.Interfaces, what)
			for _, in := range c.Interfaces {
				if !strings.Contains(in.URL, "://") { // gRPC: host:port
					continue
				}
				assert.True(t, atPublic(in.URL), "%s: %s", what, in.URL)
			}
			if strict {
				assert.Nil(t, c.Compat, "%s: strict cards carry no 0.3 field", what)
				assert.Nil(t, c.URL, what)
			} else {
				require.NotNil(t, c.Compat, what)
				assert.True(t, *c.Compat, what)
				require.NotNil(t, c.URL, what)
				assert.Equal(t, public+"/agents/echo", *c.URL, what)
			}
		}

		body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`)
		resp, err := http.Post(m.URL+"/agents/echo", "application/json", body)
		require.NoError(t, err)
		var rpc struct {
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&rpc))
		resp.Body.Close()
		assert.Equal(t, "private, no-store", resp.Header.Get("Cache-Control"))
		check("JSON-RPC", rpc.Result)

		resp, err = http.Get(m.URL + "/agents/echo/extendedAgentCard")
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Equal(t, "private, no-store", resp.Header.Get("Cache-Control"))
		check("HTTP+JSON", raw)

		pb, err := grpcClient(t, m).GetExtendedAgentCard(grpcCtx(t), &a2apb.GetExtendedAgentCardRequest{Tenant: "echo"})
		require.NoError(t, err)
		for _, in := range pb.GetSupportedInterfaces() {
			if in.GetProtocolBinding() != "GRPC" {
				assert.True(t, atPublic(in.GetUrl()), "gRPC: %s", in.GetUrl())
			}
		}
	}
}
