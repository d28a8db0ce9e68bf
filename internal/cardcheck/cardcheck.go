// Package cardcheck checks an agent card against the A2A specification
// (1.0, with the 0.3 fields a card may also carry), as a client would
// read it: the fields the specification requires that are missing or
// empty, URLs that are not absolute http(s), media types that are not
// media types, security requirements that name no declared scheme, and
// what is allowed but likely a mistake (a declared scheme nothing
// requires, an interface of an unknown binding, plain http to a host that
// is not loopback).
//
// The checks are pure functions of the card: they read nothing and never
// fail. The console shows their findings next to each agent of the fleet
// (GET /ops/v1/fleet, cardIssues).
package cardcheck

import (
	"fmt"
	"mime"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// Severity says how bad an issue is.
type Severity string

const (
	// Error: the card breaks a requirement of the specification; a
	// client may refuse it or misuse the agent.
	Error Severity = "error"
	// Warning: allowed, but likely a mistake or unusable in production.
	Warning Severity = "warning"
)

// Issue is one finding about a card.
type Issue struct {
	Severity Severity `json:"severity"`
	// Field is the JSON path of the field concerned, as the card spells
	// it: "skills[0].tags", "supportedInterfaces[1].url"; "" for the card
	// as a whole.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// The protocol bindings the specification defines.
var coreBindings = []string{a2a.BindingJSONRPC, a2a.BindingGRPC, a2a.BindingHTTPJSON}

// The 1.0 names of a security scheme's kinds (the SecurityScheme oneof).
var schemeKinds = []string{"apiKeySecurityScheme", "httpAuthSecurityScheme", "oauth2SecurityScheme",
	"openIdConnectSecurityScheme", "mtlsSecurityScheme"}

// versionRE matches a protocol version: major.minor, with an optional
// patch ("1.0", "0.3.0").
var versionRE = regexp.MustCompile(`^\d+\.\d+(\.\d+)?$`)

// checker gathers the issues of one card.
type checker struct{ issues []Issue }

func (c *checker) add(sev Severity, field, format string, args ...any) {
	c.issues = append(c.issues, Issue{Severity: sev, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) required(field, value string) {
	if strings.TrimSpace(value) == "" {
		c.add(Error, field, "required, and missing or empty")
	}
}

// url checks an absolute http(s) URL; sev is the severity of a bad one.
// It reports whether value is one ("" is not).
func (c *checker) url(sev Severity, field, value string) bool {
	if value == "" {
		return false
	}
	u, err := url.Parse(value)
	switch {
	case err != nil:
		c.add(sev, field, "not a URL: %q", value)
		return false
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		c.add(sev, field, "not an absolute http(s) URL: %q", value)
		return false
	case u.Scheme == "http" && !loopback(u.Hostname()):
		c.add(Warning, field, "plain http to %s: the specification asks for https in production", u.Hostname())
	}
	return true
}

// grpcTarget checks the url of a gRPC interface. The specification asks
// for an absolute URL; the SDKs' gRPC clients (a2a-go's grpc.NewClient,
// @a2a-js/sdk's and a2a-python's channels) dial the string as a gRPC
// target, host:port (or dns:///host:port), and fail on one with an
// http(s) scheme. The mesh serves host:port, the form they dial; a URL is
// a warning, not an error.
func (c *checker) grpcTarget(field, value string) {
	if value == "" {
		return
	}
	hostPort := strings.TrimPrefix(value, "dns:///")
	if u, err := url.Parse(value); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		c.add(Warning, field, "a URL: the gRPC clients of a2a-go, @a2a-js/sdk and a2a-python dial host:port and fail on %q", value)
		return
	}
	host, port, err := net.SplitHostPort(hostPort)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
		c.add(Error, field, "not a gRPC target (host:port): %q", value)
	}
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// modes checks a list of media types.
func (c *checker) modes(field string, modes []string) {
	for i, m := range modes {
		mt, _, err := mime.ParseMediaType(m)
		if err != nil || !strings.Contains(mt, "/") || strings.HasPrefix(mt, "/") || strings.HasSuffix(mt, "/") {
			c.add(Error, fmt.Sprintf("%s[%d]", field, i), "not a media type (type/subtype): %q", m)
		}
	}
}

// Check returns what is wrong or doubtful in card, errors first, then
// by field; nil when nothing is.
func Check(card *a2a.AgentCard) []Issue {
	c := &checker{}
	c.required("name", card.Name)
	c.required("description", card.Description)
	c.required("version", card.Version)
	c.interfaces(card)
	if card.Provider != nil {
		c.required("provider.url", card.Provider.URL)
		c.required("provider.organization", card.Provider.Organization)
		c.url(Error, "provider.url", card.Provider.URL)
	}
	c.url(Warning, "documentationUrl", card.DocumentationURL)
	c.url(Warning, "iconUrl", card.IconURL)
	for i, e := range card.Capabilities.Extensions {
		c.required(fmt.Sprintf("capabilities.extensions[%d].uri", i), e.URI)
	}
	if len(card.DefaultInputModes) == 0 {
		c.add(Error, "defaultInputModes", "required: the media types the agent takes, and empty")
	}
	if len(card.DefaultOutputModes) == 0 {
		c.add(Error, "defaultOutputModes", "required: the media types the agent answers with, and empty")
	}
	c.modes("defaultInputModes", card.DefaultInputModes)
	c.modes("defaultOutputModes", card.DefaultOutputModes)
	c.skills(card.Skills)
	c.security(card)
	for i, s := range card.Signatures {
		c.required(fmt.Sprintf("signatures[%d].protected", i), s.Protected)
		c.required(fmt.Sprintf("signatures[%d].signature", i), s.Signature)
	}
	sort.SliceStable(c.issues, func(i, j int) bool {
		a, b := c.issues[i], c.issues[j]
		if a.Severity != b.Severity {
			return a.Severity == Error
		}
		return false // the order of the card's fields otherwise
	})
	return c.issues
}

// interfaces checks supportedInterfaces and the 0.3 url and
// protocolVersion.
func (c *checker) interfaces(card *a2a.AgentCard) {
	ifs := card.SupportedInterfaces
	if len(ifs) == 0 {
		c.add(Error, "supportedInterfaces", "required: a 1.0 client finds no endpoint without it, and it is empty")
	}
	seen := map[a2a.AgentInterface]int{}
	has10, urls := false, map[string]bool{}
	for i, f := range ifs {
		field := fmt.Sprintf("supportedInterfaces[%d]", i)
		c.required(field+".url", f.URL)
		if f.ProtocolBinding == a2a.BindingGRPC {
			c.grpcTarget(field+".url", f.URL)
		} else {
			c.url(Error, field+".url", f.URL)
		}
		c.required(field+".protocolBinding", f.ProtocolBinding)
		if f.ProtocolBinding != "" && !slices.Contains(coreBindings, f.ProtocolBinding) {
			c.add(Warning, field+".protocolBinding", "%q is none of the specification's bindings (%s): only clients that know it can use it",
				f.ProtocolBinding, strings.Join(coreBindings, ", "))
		}
		c.required(field+".protocolVersion", f.ProtocolVersion)
		if f.ProtocolVersion != "" && !versionRE.MatchString(f.ProtocolVersion) {
			c.add(Error, field+".protocolVersion", "not a protocol version (major.minor, e.g. \"1.0\"): %q", f.ProtocolVersion)
		}
		if strings.HasPrefix(f.ProtocolVersion, "1.") {
			has10 = true
		}
		if j, dup := seen[f]; dup {
			c.add(Warning, field, "the same interface as supportedInterfaces[%d]", j)
		} else {
			seen[f] = i
		}
		urls[f.URL] = true
	}
	if len(ifs) > 0 && !has10 {
		c.add(Warning, "supportedInterfaces", "no interface of protocol version 1.x: a 1.0 client cannot reach the agent")
	}
	// The 0.3 fields, which a card may carry for 0.3 clients.
	if card.URL != "" {
		if c.url(Error, "url", card.URL) && len(ifs) > 0 && !urls[card.URL] {
			c.add(Warning, "url", "the 0.3 endpoint %q is not among supportedInterfaces: 0.3 and 1.0 clients reach different endpoints", card.URL)
		}
	}
	if card.ProtocolVersion != "" {
		if !versionRE.MatchString(card.ProtocolVersion) {
			c.add(Error, "protocolVersion", "not a protocol version (e.g. \"0.3.0\"): %q", card.ProtocolVersion)
		}
		if card.URL == "" {
			c.add(Warning, "url", "protocolVersion (0.3) is set without the 0.3 endpoint url")
		}
	}
	for i, f := range card.AdditionalInterfaces {
		field := fmt.Sprintf("additionalInterfaces[%d]", i)
		c.required(field+".url", f.URL)
		c.url(Error, field+".url", f.URL)
		c.required(field+".transport", f.Transport)
	}
}

// skills checks the skills: each needs an id, unique, a name, a
// description and tags.
func (c *checker) skills(skills []a2a.AgentSkill) {
	if len(skills) == 0 {
		c.add(Error, "skills", "required: what the agent can do, and empty")
	}
	ids := map[string]int{}
	for i, s := range skills {
		field := fmt.Sprintf("skills[%d]", i)
		c.required(field+".id", s.ID)
		c.required(field+".name", s.Name)
		c.required(field+".description", s.Description)
		if len(s.Tags) == 0 {
			c.add(Error, field+".tags", "required: keywords of the skill, and empty")
		}
		if j, dup := ids[s.ID]; dup && s.ID != "" {
			c.add(Error, field+".id", "%q is also the id of skills[%d]: ids name one skill each", s.ID, j)
		} else {
			ids[s.ID] = i
		}
		c.modes(field+".inputModes", s.InputModes)
		c.modes(field+".outputModes", s.OutputModes)
	}
}

// security checks the declared schemes and the requirements that use
// them: a requirement must name declared schemes; a declared scheme that
// no requirement uses is likely a mistake.
func (c *checker) security(card *a2a.AgentCard) {
	names := make([]string, 0, len(card.SecuritySchemes))
	for name := range card.SecuritySchemes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c.scheme("securitySchemes."+name, card.SecuritySchemes[name])
	}
	used := map[string]bool{}
	for i, req := range card.SecurityReqs {
		field := fmt.Sprintf("securityRequirements[%d]", i)
		schemes, ok := req["schemes"].(map[string]any)
		if !ok {
			c.add(Error, field+".schemes", "required: a map of scheme names to scopes, and missing")
			continue
		}
		for _, name := range sortedKeys(schemes) {
			used[name] = true
			if _, ok := card.SecuritySchemes[name]; !ok {
				c.add(Error, field+".schemes."+name, "names no scheme of securitySchemes")
			}
		}
	}
	for i, req := range card.Security { // 0.3
		for _, name := range sortedKeys(req) {
			used[name] = true
			if _, ok := card.SecuritySchemes[name]; !ok {
				c.add(Error, fmt.Sprintf("security[%d].%s", i, name), "names no scheme of securitySchemes")
			}
		}
	}
	for _, name := range names {
		if !used[name] {
			c.add(Warning, "securitySchemes."+name, "declared, and no security requirement uses it: clients do not know it is needed")
		}
	}
	if len(card.SecuritySchemes) > 0 && len(card.SecurityReqs) == 0 && len(card.Security) > 0 {
		c.add(Warning, "securityRequirements", "only the 0.3 security list says which schemes are needed: 1.0 clients read securityRequirements")
	}
	if card.Capabilities.ExtendedAgentCard != nil && *card.Capabilities.ExtendedAgentCard && len(card.SecuritySchemes) == 0 {
		c.add(Warning, "capabilities.extendedAgentCard", "an extended card is served to authenticated clients, and the card declares no security scheme")
	}
}

// scheme checks one declared security scheme: exactly one kind, with its
// required fields.
func (c *checker) scheme(field string, s map[string]any) {
	var kinds []string
	for _, k := range schemeKinds {
		if _, ok := s[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		if len(kinds) == 0 {
			c.add(Error, field, "none of %s: a 1.0 client cannot tell the kind of scheme", strings.Join(schemeKinds, ", "))
		} else {
			c.add(Error, field, "more than one kind of scheme: %s", strings.Join(kinds, ", "))
		}
		return
	}
	kind := kinds[0]
	body, _ := s[kind].(map[string]any)
	str := func(k string) string { v, _ := body[k].(string); return v }
	f := field + "." + kind
	switch kind {
	case "apiKeySecurityScheme":
		c.required(f+".name", str("name"))
		if loc := str("location"); !slices.Contains([]string{"header", "query", "cookie"}, loc) {
			c.add(Error, f+".location", "want header, query or cookie, not %q", loc)
		}
	case "httpAuthSecurityScheme":
		c.required(f+".scheme", str("scheme"))
	case "oauth2SecurityScheme":
		if flows, _ := body["flows"].(map[string]any); len(flows) == 0 {
			c.add(Error, f+".flows", "required, and missing or empty")
		}
		c.url(Error, f+".oauth2MetadataUrl", str("oauth2MetadataUrl"))
	case "openIdConnectSecurityScheme":
		c.required(f+".openIdConnectUrl", str("openIdConnectUrl"))
		c.url(Error, f+".openIdConnectUrl", str("openIdConnectUrl"))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
