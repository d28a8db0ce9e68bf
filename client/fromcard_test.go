package client

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

func TestFromCard(t *testing.T) {
	card := &a2a.AgentCard{Name: "a", SupportedInterfaces: []a2a.AgentInterface{
		{URL: "http://h/soap", ProtocolBinding: "SOAP", ProtocolVersion: "1.0"},
		{URL: "http://h/v2", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "2.0"},
		{URL: "http://h/rest", ProtocolBinding: "http+json", Tenant: "t1", ProtocolVersion: "1.0"},
		{URL: "h:9090", ProtocolBinding: a2a.BindingGRPC, Tenant: "t2", ProtocolVersion: "1.0"},
		{URL: "http://h/rest03", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "0.3"},
		{URL: "http://h/rpc03", ProtocolBinding: a2a.BindingJSONRPC, Tenant: "ignored", ProtocolVersion: "0.3"},
		{URL: "http://h/rpc", ProtocolBinding: a2a.BindingJSONRPC, Tenant: "t3", ProtocolVersion: "1.0"},
	}}
	for _, tc := range []struct {
		prefer                        []string
		url, binding, tenant, version string
	}{
		{nil, "http://h/rest", a2a.BindingHTTPJSON, "t1", "1.0"},
		{[]string{"grpc"}, "h:9090", a2a.BindingGRPC, "t2", "1.0"},
		{[]string{"SOAP", a2a.BindingJSONRPC}, "http://h/rpc03", a2a.BindingJSONRPC, "", "0.3"},
	} {
		c, err := FromCard(card, tc.prefer)
		require.NoError(t, err)
		assert.Equal(t, tc.url, c.URL(), tc.prefer)
		assert.Equal(t, tc.binding, c.Binding(), tc.prefer)
		assert.Equal(t, tc.tenant, c.tenant, tc.prefer)
		assert.Equal(t, tc.version == "0.3", c.v03, tc.prefer)
		require.NoError(t, c.Close())
	}

	// A 0.3 card: url and additionalInterfaces, JSON-RPC only.
	v03 := &a2a.AgentCard{Name: "old", URL: "http://h/grpc", PreferredTransport: "GRPC",
		AdditionalInterfaces: []a2a.AgentInterfaceV03{{URL: "http://h/grpc", Transport: "GRPC"}, {URL: "http://h/rpc", Transport: "JSONRPC"}}}
	c, err := FromCard(v03, nil)
	require.NoError(t, err)
	assert.Equal(t, "http://h/rpc", c.URL())
	assert.True(t, c.v03)

	for _, bad := range []*a2a.AgentCard{
		{Name: "none"},
		{Name: "soap", SupportedInterfaces: []a2a.AgentInterface{{URL: "http://h", ProtocolBinding: "SOAP", ProtocolVersion: "1.0"}}},
		{Name: "grpc 0.3", SupportedInterfaces: []a2a.AgentInterface{{URL: "h:1", ProtocolBinding: "GRPC", ProtocolVersion: "0.3"}}},
	} {
		_, err := FromCard(bad, nil)
		assert.True(t, errors.Is(err, ErrNoInterface), bad.Name)
	}
	_, err = FromCard(card, []string{"SOAP"})
	assert.ErrorIs(t, err, ErrNoInterface)
	_, err = FromCard(nil, nil)
	assert.Error(t, err)
}
