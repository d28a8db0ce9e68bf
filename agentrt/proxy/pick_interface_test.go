package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// The proxy calls JSON-RPC when the card offers it (1.0, then 0.3), else
// HTTP+JSON 1.0, else gRPC 1.0, whatever order the card lists them in.
func TestPickInterface(t *testing.T) {
	rest := a2a.AgentInterface{URL: "http://h/rest", ProtocolBinding: a2a.BindingHTTPJSON, Tenant: "tr", ProtocolVersion: "1.0"}
	grpc := a2a.AgentInterface{URL: "h:9090", ProtocolBinding: "grpc", Tenant: "tg", ProtocolVersion: "1.0"}
	rpc10 := a2a.AgentInterface{URL: "http://h/rpc", ProtocolBinding: a2a.BindingJSONRPC, Tenant: "tj", ProtocolVersion: "1.0"}
	rpc03 := a2a.AgentInterface{URL: "http://h/rpc03", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3"}
	rest03 := a2a.AgentInterface{URL: "http://h/rest03", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "0.3"}
	for _, tc := range []struct {
		name string
		ifs  []a2a.AgentInterface
		want upstreamInterface
	}{
		{"JSON-RPC 1.0 first", []a2a.AgentInterface{grpc, rest, rpc03, rpc10}, upstreamInterface{"http://h/rpc", a2a.BindingJSONRPC, "1.0", "tj"}},
		{"JSON-RPC 0.3 before the others", []a2a.AgentInterface{grpc, rest, rpc03}, upstreamInterface{"http://h/rpc03", a2a.BindingJSONRPC, "0.3", ""}},
		{"HTTP+JSON before gRPC", []a2a.AgentInterface{grpc, rest03, rest}, upstreamInterface{"http://h/rest", a2a.BindingHTTPJSON, "1.0", "tr"}},
		{"gRPC alone", []a2a.AgentInterface{rest03, grpc}, upstreamInterface{"h:9090", a2a.BindingGRPC, "1.0", "tg"}},
	} {
		got, err := pickInterface(&a2a.AgentCard{Name: "a", SupportedInterfaces: tc.ifs})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, err := pickInterface(&a2a.AgentCard{Name: "a", SupportedInterfaces: []a2a.AgentInterface{rest03,
		{URL: "h:1", ProtocolBinding: "GRPC", ProtocolVersion: "0.3"}, {URL: "http://h", ProtocolBinding: "SOAP", ProtocolVersion: "1.0"}}})
	assert.Error(t, err)
}

// The address the SSRF guard vets for each interface.
func TestCheckURL(t *testing.T) {
	for in, want := range map[upstreamInterface]string{
		{URL: "http://h/rpc", Binding: a2a.BindingJSONRPC}:    "http://h/rpc",
		{URL: "https://h/rest", Binding: a2a.BindingHTTPJSON}: "https://h/rest",
		{URL: "10.0.0.1:9090", Binding: a2a.BindingGRPC}:      "http://10.0.0.1:9090",
		{URL: "grpc://h:9090", Binding: a2a.BindingGRPC}:      "http://h:9090",
		{URL: "grpcs://h:9443", Binding: a2a.BindingGRPC}:     "https://h:9443",
		{URL: "https://h", Binding: a2a.BindingGRPC}:          "https://h",
		{URL: "unix:///run/a.sock", Binding: a2a.BindingGRPC}: "unix:///run/a.sock",
	} {
		assert.Equal(t, want, in.checkURL(), in.URL)
	}
}
