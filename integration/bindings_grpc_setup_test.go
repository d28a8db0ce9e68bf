package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// bindingsGRPCOption has the test mesh serve gRPC on a free loopback port.
func bindingsGRPCOption() meshtest.Option {
	return meshtest.WithGRPC()
}

// bindingsGRPCClient dials the gRPC interface the echo card lists (a
// client finds the address the same way). When the card lists none, the
// client points at a closed port, so every gRPC case fails saying so.
func bindingsGRPCClient(t *testing.T, m *rawMesh) a2apb.A2AServiceClient {
	t.Helper()
	status, _, body := m.getJSON(t, "/agents/echo/.well-known/agent-card.json", nil)
	require.Equal(t, http.StatusOK, status, "echo card: %s", body)
	var card wCard
	require.NoError(t, json.Unmarshal(body, &card))
	addr := ""
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == "GRPC" {
			addr = strings.TrimPrefix(strings.TrimPrefix(i.URL, "grpc://"), "http://")
			require.Equal(t, "echo", i.Tenant, "the gRPC interface names the agent as its tenant")
			break
		}
	}
	if addr == "" {
		t.Logf("the echo card lists no GRPC interface (%s): the gRPC column will fail", body)
		addr = "127.0.0.1:1"
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}
