package cardcheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// good is a card that breaks nothing: the shape the mesh serves.
func good() a2a.AgentCard {
	c := a2a.AgentCard{Name: "echo", Description: "echoes", Version: "1.0.0",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "says it back", Tags: []string{"test"},
			InputModes: []string{"text/plain; charset=utf-8"}}},
		SecuritySchemes: map[string]map[string]any{
			"apiKey": {"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X-Api-Key"}},
		},
		SecurityReqs: []map[string]any{{"schemes": map[string]any{"apiKey": map[string]any{"list": []any{}}}}},
		Security:     []map[string][]string{{"apiKey": {}}},
	}
	return c.WithEndpoint("http://127.0.0.1:8080/agents/echo", "", "")
}

func TestCheckGoodCard(t *testing.T) {
	c := good()
	require.Empty(t, Check(&c))
	c = c.WithBindings(a2a.AgentInterface{URL: "mesh.example:443", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0"},
		a2a.AgentInterface{URL: "localhost:9090", ProtocolBinding: a2a.BindingGRPC, Tenant: "echo", ProtocolVersion: "1.0"})
	require.Empty(t, Check(&c))
}

// A gRPC interface is a target the SDKs' gRPC clients dial: host:port. A
// URL with a scheme is a warning (they fail on it); anything else an
// error.
func TestCheckGRPCTarget(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want Severity // "" for none
	}{
		{"127.0.0.1:9090", ""}, {"[::1]:9090", ""}, {"dns:///mesh.example:443", ""},
		{"https://mesh.example/agents/echo", Warning}, {"mesh.example", Error}, {":9090", Error}, {"mesh.example:http", Error},
	} {
		c := good().WithBindings(a2a.AgentInterface{URL: tc.url, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0"})
		issues := Check(&c)
		if tc.want == "" {
			require.Empty(t, issues, tc.url)
			continue
		}
		require.Len(t, issues, 1, tc.url)
		require.Equal(t, tc.want, issues[0].Severity, tc.url)
		require.True(t, strings.HasSuffix(issues[0].Field, ".url"), tc.url)
	}
}

// Each case breaks one thing of a good card and must yield exactly the
// issue named, on the field named.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(c *a2a.AgentCard)
		severity Severity
		field    string
		says     string
	}{
		{"no name", func(c *a2a.AgentCard) { c.Name = " " }, Error, "name", "required"},
		{"no description", func(c *a2a.AgentCard) { c.Description = "" }, Error, "description", "required"},
		{"no version", func(c *a2a.AgentCard) { c.Version = "" }, Error, "version", "required"},
		{"no interfaces", func(c *a2a.AgentCard) { c.SupportedInterfaces, c.URL, c.ProtocolVersion = nil, "", "" },
			Error, "supportedInterfaces", "required"},
		{"relative interface url", func(c *a2a.AgentCard) { c.SupportedInterfaces[1].URL = "/agents/echo" },
			Error, "supportedInterfaces[1].url", "not an absolute http(s) URL"},
		{"ftp interface url", func(c *a2a.AgentCard) { c.SupportedInterfaces[1].URL = "ftp://host/x" },
			Error, "supportedInterfaces[1].url", "not an absolute http(s) URL"},
		{"plain http abroad", func(c *a2a.AgentCard) { c.SupportedInterfaces[1].URL = "http://mesh.example/x" },
			Warning, "supportedInterfaces[1].url", "https in production"},
		{"no binding", func(c *a2a.AgentCard) { c.SupportedInterfaces[0].ProtocolBinding = "" },
			Error, "supportedInterfaces[0].protocolBinding", "required"},
		{"unknown binding", func(c *a2a.AgentCard) { c.SupportedInterfaces[0].ProtocolBinding = "jsonrpc" },
			Warning, "supportedInterfaces[0].protocolBinding", "none of the specification's bindings"},
		{"no protocol version", func(c *a2a.AgentCard) { c.SupportedInterfaces[1].ProtocolVersion = "" },
			Error, "supportedInterfaces[1].protocolVersion", "required"},
		{"bad protocol version", func(c *a2a.AgentCard) { c.SupportedInterfaces[1].ProtocolVersion = "v0.3" },
			Error, "supportedInterfaces[1].protocolVersion", "not a protocol version"},
		{"no 1.x interface", func(c *a2a.AgentCard) { c.SupportedInterfaces = c.SupportedInterfaces[1:] },
			Warning, "supportedInterfaces", "no interface of protocol version 1.x"},
		{"twice the same interface", func(c *a2a.AgentCard) {
			c.SupportedInterfaces = append(c.SupportedInterfaces, c.SupportedInterfaces[0])
		}, Warning, "supportedInterfaces[2]", "the same interface as supportedInterfaces[0]"},
		{"0.3 url elsewhere", func(c *a2a.AgentCard) {
			c.URL = "http://127.0.0.1:9/other"
			c.AdditionalInterfaces[0].URL = c.URL
		}, Warning, "url", "not among supportedInterfaces"},
		{"0.3 url relative", func(c *a2a.AgentCard) {
			c.URL = "agents/echo"
			c.AdditionalInterfaces = nil
		}, Error, "url", "not an absolute http(s) URL"},
		{"0.3 version without url", func(c *a2a.AgentCard) { c.URL, c.AdditionalInterfaces = "", nil },
			Warning, "url", "without the 0.3 endpoint url"},
		{"provider without organization", func(c *a2a.AgentCard) {
			c.Provider = &a2a.AgentProvider{URL: "https://example.org"}
		}, Error, "provider.organization", "required"},
		{"documentation url relative", func(c *a2a.AgentCard) { c.DocumentationURL = "docs" },
			Warning, "documentationUrl", "not an absolute http(s) URL"},
		{"extension without uri", func(c *a2a.AgentCard) {
			c.Capabilities.Extensions = []a2a.AgentExtension{{Description: "x"}}
		}, Error, "capabilities.extensions[0].uri", "required"},
		{"no input modes", func(c *a2a.AgentCard) { c.DefaultInputModes = nil }, Error, "defaultInputModes", "required"},
		{"no output modes", func(c *a2a.AgentCard) { c.DefaultOutputModes = []string{} }, Error, "defaultOutputModes", "required"},
		{"input mode not a media type", func(c *a2a.AgentCard) { c.DefaultInputModes = []string{"text"} },
			Error, "defaultInputModes[0]", "not a media type"},
		{"output mode not a media type", func(c *a2a.AgentCard) { c.DefaultOutputModes[1] = "json/" },
			Error, "defaultOutputModes[1]", "not a media type"},
		{"no skills", func(c *a2a.AgentCard) { c.Skills = nil }, Error, "skills", "required"},
		{"skill without id", func(c *a2a.AgentCard) { c.Skills[0].ID = "" }, Error, "skills[0].id", "required"},
		{"skill without name", func(c *a2a.AgentCard) { c.Skills[0].Name = "" }, Error, "skills[0].name", "required"},
		{"skill without description", func(c *a2a.AgentCard) { c.Skills[0].Description = "" },
			Error, "skills[0].description", "required"},
		{"skill without tags", func(c *a2a.AgentCard) { c.Skills[0].Tags = nil }, Error, "skills[0].tags", "required"},
		{"two skills, one id", func(c *a2a.AgentCard) { c.Skills = append(c.Skills, c.Skills[0]) },
			Error, "skills[1].id", "also the id of skills[0]"},
		{"skill output mode not a media type", func(c *a2a.AgentCard) { c.Skills[0].OutputModes = []string{"png"} },
			Error, "skills[0].outputModes[0]", "not a media type"},
		{"scheme nothing requires", func(c *a2a.AgentCard) {
			c.SecuritySchemes["bearer"] = map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}
		}, Warning, "securitySchemes.bearer", "no security requirement uses it"},
		{"requirement of no scheme", func(c *a2a.AgentCard) {
			c.SecurityReqs = append(c.SecurityReqs, map[string]any{"schemes": map[string]any{"oauth": map[string]any{}}})
		}, Error, "securityRequirements[1].schemes.oauth", "names no scheme"},
		{"0.3 requirement of no scheme", func(c *a2a.AgentCard) { c.Security = []map[string][]string{{"apiKey": {}}, {"other": {}}} },
			Error, "security[1].other", "names no scheme"},
		{"requirement without schemes", func(c *a2a.AgentCard) {
			c.SecurityReqs = append(c.SecurityReqs, map[string]any{"apiKey": []any{}})
		}, Error, "securityRequirements[1].schemes", "missing"},
		{"only 0.3 requirements", func(c *a2a.AgentCard) { c.SecurityReqs = nil },
			Warning, "securityRequirements", "only the 0.3 security list"},
		{"scheme of no kind", func(c *a2a.AgentCard) {
			c.SecuritySchemes["apiKey"] = map[string]any{"type": "apiKey", "in": "header", "name": "X"}
		}, Error, "securitySchemes.apiKey", "cannot tell the kind"},
		{"api key in the body", func(c *a2a.AgentCard) {
			c.SecuritySchemes["apiKey"] = map[string]any{"apiKeySecurityScheme": map[string]any{"location": "body", "name": "X"}}
		}, Error, "securitySchemes.apiKey.apiKeySecurityScheme.location", "want header, query or cookie"},
		{"http scheme without its scheme", func(c *a2a.AgentCard) {
			c.SecuritySchemes["apiKey"] = map[string]any{"httpAuthSecurityScheme": map[string]any{}}
		}, Error, "securitySchemes.apiKey.httpAuthSecurityScheme.scheme", "required"},
		{"oauth2 without flows", func(c *a2a.AgentCard) {
			c.SecuritySchemes["apiKey"] = map[string]any{"oauth2SecurityScheme": map[string]any{}}
		}, Error, "securitySchemes.apiKey.oauth2SecurityScheme.flows", "required"},
		{"openid relative", func(c *a2a.AgentCard) {
			c.SecuritySchemes["apiKey"] = map[string]any{"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": "/.well-known"}}
		}, Error, "securitySchemes.apiKey.openIdConnectSecurityScheme.openIdConnectUrl", "not an absolute"},
		{"extended card without security", func(c *a2a.AgentCard) {
			c.SecuritySchemes, c.SecurityReqs, c.Security = nil, nil, nil
			c.Capabilities.ExtendedAgentCard = a2a.Bool(true)
		}, Warning, "capabilities.extendedAgentCard", "declares no security scheme"},
		{"empty signature", func(c *a2a.AgentCard) { c.Signatures = []a2a.AgentCardSignature{{Protected: "e30"}} },
			Error, "signatures[0].signature", "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			c.Skills = append([]a2a.AgentSkill(nil), c.Skills...)
			tc.edit(&c)
			issues := Check(&c)
			require.Len(t, issues, 1, "%+v", issues)
			require.Equal(t, tc.severity, issues[0].Severity)
			require.Equal(t, tc.field, issues[0].Field)
			require.Contains(t, issues[0].Message, tc.says)
		})
	}
}

// A card of nothing but a name has its errors listed before its
// warnings, each once.
func TestCheckOrder(t *testing.T) {
	c := a2a.AgentCard{Name: "bare", URL: "http://mesh.example/a", SecuritySchemes: map[string]map[string]any{
		"k": {"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X"}}}}
	issues := Check(&c)
	var fields []string
	warned := false
	for _, is := range issues {
		fields = append(fields, string(is.Severity)+" "+is.Field)
		if is.Severity == Warning {
			warned = true
		} else {
			require.False(t, warned, "an error after a warning: %v", fields)
		}
	}
	require.Equal(t, []string{"error description", "error version", "error supportedInterfaces", "error defaultInputModes",
		"error defaultOutputModes", "error skills", "warning url", "warning securitySchemes.k"}, fields, strings.Join(fields, "\n"))
}
