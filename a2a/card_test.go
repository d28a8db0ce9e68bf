package a2a

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMediaTypeMatches(t *testing.T) {
	tests := []struct {
		accepted, offered string
		want              bool
	}{
		{"text/plain", "text/plain", true},
		{"text/plain", "text/html", false},
		{"text/plain", "application/json", false},
		{"*/*", "image/png", true},
		{"image/png", "*/*", true},
		{"*", "image/png", true},
		{"image/png", "*", true},
		{"image/*", "image/png", true},
		{"image/png", "image/*", true},
		{"image/*", "image/*", true},
		{"image/*", "text/plain", false},
		{"text/*", "image/*", false},
		{"TEXT/Plain", "text/PLAIN", true},
		{"Image/*", "image/png", true},
		{"text/plain; charset=utf-8", "text/plain", true},
		{"text/plain", "text/plain;charset=utf-8", true},
		{"text/plain;charset=utf-8", "text/plain; charset=latin1", true},
		{"text/html; q=0.9", "text/plain", false},
		{" text/plain ", "text/plain", true},
		{"text / plain", "text/plain", true},
		{"application/json", "application/vnd.api+json", false},
		{"text", "text/plain", false},
		{"", "text/plain", false},
		{"text/plain", "", false},
		{"", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.accepted+"|"+tc.offered, func(t *testing.T) {
			assert.Equal(t, tc.want, MediaTypeMatches(tc.accepted, tc.offered))
			assert.Equal(t, tc.want, MediaTypeMatches(tc.offered, tc.accepted), "symmetric")
		})
	}
}

func TestModesOverlap(t *testing.T) {
	tests := []struct {
		name              string
		accepted, offered []string
		want              bool
	}{
		{"empty accepted accepts anything", nil, []string{"text/plain"}, true},
		{"empty non-nil accepted", []string{}, []string{"image/png"}, true},
		{"empty offered", []string{"text/plain"}, nil, true},
		{"both empty", nil, nil, true},
		{"exact", []string{"application/json"}, []string{"text/plain", "application/json"}, true},
		{"one of many", []string{"image/png", "text/plain"}, []string{"text/plain"}, true},
		{"none", []string{"image/png", "audio/mpeg"}, []string{"text/plain", "application/json"}, false},
		{"wildcard accepted", []string{"*/*"}, []string{"video/mp4"}, true},
		{"type wildcard", []string{"text/*"}, []string{"application/json", "text/markdown"}, true},
		{"type wildcard miss", []string{"text/*"}, []string{"application/json"}, false},
		{"parameters and case", []string{"Text/Plain; charset=UTF-8"}, []string{"text/plain"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ModesOverlap(tc.accepted, tc.offered))
		})
	}
}

func TestOutputModes(t *testing.T) {
	c := sampleCard()
	assert.Equal(t, []string{"text/plain", "application/json"}, c.OutputModes())
	assert.Nil(t, (&AgentCard{}).OutputModes())
}

func TestBool(t *testing.T) {
	p, q := Bool(true), Bool(true)
	require.NotNil(t, p)
	assert.True(t, *p)
	assert.False(t, *Bool(false))
	assert.NotSame(t, p, q)
}

func TestWithEndpoint(t *testing.T) {
	orig := sampleCard()
	orig.SupportedInterfaces = []AgentInterface{{URL: "https://old", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}}

	c := orig.WithEndpoint("https://mesh.test/a2a", "https://mesh.test/t/acme/a2a", "acme")
	assert.Equal(t, []AgentInterface{
		{URL: "https://mesh.test/a2a", ProtocolBinding: BindingJSONRPC, ProtocolVersion: "1.0"},
		{URL: "https://mesh.test/t/acme/a2a", ProtocolBinding: BindingJSONRPC, Tenant: "acme", ProtocolVersion: "1.0"},
		{URL: "https://mesh.test/a2a", ProtocolBinding: BindingJSONRPC, ProtocolVersion: "0.3"},
	}, c.SupportedInterfaces)
	assert.Equal(t, "0.3.0", c.ProtocolVersion)
	assert.Equal(t, "https://mesh.test/a2a", c.URL)
	assert.Equal(t, BindingJSONRPC, c.PreferredTransport)
	require.Len(t, c.AdditionalInterfaces, 1)
	assert.Equal(t, "https://mesh.test/a2a", c.AdditionalInterfaces[0].URL)
	assert.Equal(t, BindingJSONRPC, c.AdditionalInterfaces[0].Transport)

	// Receiver untouched.
	assert.Equal(t, []AgentInterface{{URL: "https://old", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}}, orig.SupportedInterfaces)
	assert.Empty(t, orig.URL)
	assert.Empty(t, orig.AdditionalInterfaces)
	// Everything else carried over.
	assert.Equal(t, orig.Name, c.Name)
	assert.Equal(t, orig.Skills, c.Skills)
	assert.Equal(t, orig.Capabilities, c.Capabilities)

	for _, tc := range []struct{ tenantURL, tenant string }{{"", ""}, {"https://t", ""}, {"", "acme"}} {
		c := orig.WithEndpoint("https://mesh.test/a2a", tc.tenantURL, tc.tenant)
		require.Len(t, c.SupportedInterfaces, 2, "no tenant interface without both tenantURL and tenant")
		assert.Equal(t, "1.0", c.SupportedInterfaces[0].ProtocolVersion)
		assert.Equal(t, "0.3", c.SupportedInterfaces[1].ProtocolVersion)
		for _, i := range c.SupportedInterfaces {
			assert.Empty(t, i.Tenant)
		}
	}
}

// The served card is one JSON document for both protocol versions: the 1.0
// reader finds supportedInterfaces, the 0.3 reader url/protocolVersion/
// preferredTransport/additionalInterfaces.
func TestCardJSONBothVersions(t *testing.T) {
	c := sampleCard().WithEndpoint("https://mesh.test/a2a", "", "")
	var m map[string]any
	require.NoError(t, json.Unmarshal(mustMarshal(t, c), &m))
	for _, k := range []string{"name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
		assert.Contains(t, m, k, "1.0 required %s", k)
	}
	for _, k := range []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces"} {
		assert.Contains(t, m, k, "0.3 field %s", k)
	}
	ifs := m["supportedInterfaces"].([]any)
	first := ifs[0].(map[string]any)
	assert.Equal(t, map[string]any{"url": "https://mesh.test/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}, first)

	// Required-but-empty lists are [] or null, never absent.
	empty := AgentCard{Name: "n"}
	em := keysOf(t, empty)
	for _, k := range []string{"supportedInterfaces", "defaultInputModes", "defaultOutputModes", "skills", "capabilities", "version", "description"} {
		assert.Contains(t, em, k)
	}
	for _, k := range []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "provider", "iconUrl", "documentationUrl"} {
		assert.NotContains(t, em, k, "optional %s omitted when empty", k)
	}
}

func TestStrict10DropsOnlyThe03Fields(t *testing.T) {
	c := AgentCard{Name: "n", Description: "d", Version: "1", Skills: []AgentSkill{}}.WithEndpoint("http://x/agents/n", "http://x/a2a", "n").Strict10()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"url", "protocolVersion", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard"} {
		assert.NotContains(t, m, k)
	}
	assert.Len(t, c.SupportedInterfaces, 3, "the interfaces, 0.3 included, stay")
}

func TestWithBindings(t *testing.T) {
	c := sampleCard().WithEndpoint("http://x/agents/n", "http://x/a2a", "n").WithBindings(
		AgentInterface{URL: "http://x/agents/n", ProtocolBinding: BindingHTTPJSON, ProtocolVersion: string(V10)},
		AgentInterface{URL: "x:9090", ProtocolBinding: BindingGRPC, Tenant: "n", ProtocolVersion: string(V10)},
	)
	var got []string
	for _, i := range c.SupportedInterfaces {
		got = append(got, i.ProtocolBinding+" "+i.ProtocolVersion+" "+i.Tenant)
	}
	assert.Equal(t, []string{"JSONRPC 1.0 ", "JSONRPC 1.0 n", "HTTP+JSON 1.0 ", "GRPC 1.0 n", "JSONRPC 0.3 "}, got)
	assert.Equal(t, []AgentInterfaceV03{{URL: "http://x/agents/n", Transport: BindingJSONRPC}}, c.AdditionalInterfaces)
}
