package edge

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/cardcheck"
)

// The gRPC interface of a card is a host:port target on the host the
// client reached the card by, unless the edge was given a public one.
func TestGRPCInterfaceFollowsTheRequestHost(t *testing.T) {
	for _, tc := range []struct{ configured, base, want string }{
		{"127.0.0.1:9090", "http://localhost:8080", "localhost:9090"},
		{"127.0.0.1:9090", "http://127.0.0.1:8080", "127.0.0.1:9090"},
		{"[::1]:9090", "http://localhost:8080", "localhost:9090"},
		{"localhost:9090", "http://mesh.internal:8080", "mesh.internal:9090"},
		{"0.0.0.0:9090", "https://mesh.example", "mesh.example:9090"},
		{":9090", "http://[::1]:8080", "[::1]:9090"},
		{"grpc.mesh.example:443", "http://localhost:8080", "grpc.mesh.example:443"},
		{"", "http://localhost:8080", ""},
	} {
		e := &Edge{cfg: Config{GRPCURL: tc.configured}}
		assert.Equal(t, tc.want, e.grpcURL(tc.base), "%s from %s", tc.configured, tc.base)
	}
}

// The checker the console shows agrees with the gRPC interface the edge
// serves: no issue for it.
func TestGRPCInterfacePassesTheCardCheck(t *testing.T) {
	e := &Edge{cfg: Config{GRPCURL: "127.0.0.1:9090"}}
	for _, iface := range e.moreBindings("http://localhost:8080", "echo") {
		if iface.ProtocolBinding != a2a.BindingGRPC {
			continue
		}
		c := a2a.AgentCard{Name: "echo", Description: "d", Version: "1", DefaultInputModes: []string{"text/plain"},
			DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}}}
		c = c.WithEndpoint("http://localhost:8080/agents/echo", "", "").WithBindings(iface)
		assert.Empty(t, cardcheck.Check(&c), "%+v", iface)
		return
	}
	t.Fatal("no gRPC interface")
}
