package a2a

// Protocol bindings and versions named in cards.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingHTTPJSON = "HTTP+JSON"
	BindingGRPC     = "GRPC"
)

// AgentInterface is one URL/binding/version a card offers.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentInterfaceV03 is a 0.3 additionalInterfaces entry.
type AgentInterfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// AgentProvider names who runs an agent.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentExtension declares a protocol extension.
type AgentExtension struct {
	URI         string   `json:"uri"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Params      Metadata `json:"params,omitempty"`
}

// AgentCapabilities lists optional protocol features.
type AgentCapabilities struct {
	Streaming         *bool            `json:"streaming,omitempty"`
	PushNotifications *bool            `json:"pushNotifications,omitempty"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
	ExtendedAgentCard *bool            `json:"extendedAgentCard,omitempty"`
	// StateTransitionHistory is a 0.3 field.
	StateTransitionHistory *bool `json:"stateTransitionHistory,omitempty"`
}

// AgentSkill is one ability of an agent.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// AgentCardSignature is a JWS (RFC 7515) of a card in the flattened JSON
// form, without its payload, which is the card itself (spec §8.4.2).
type AgentCardSignature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// AgentCard describes an agent. The mesh serves one JSON document readable
// by both 1.0 clients (supportedInterfaces) and 0.3 clients (url,
// protocolVersion, preferredTransport, additionalInterfaces); each ignores
// the other's fields.
type AgentCard struct {
	Name                string                    `json:"name"`
	Description         string                    `json:"description"`
	SupportedInterfaces []AgentInterface          `json:"supportedInterfaces"`
	Provider            *AgentProvider            `json:"provider,omitempty"`
	Version             string                    `json:"version"`
	DocumentationURL    string                    `json:"documentationUrl,omitempty"`
	Capabilities        AgentCapabilities         `json:"capabilities"`
	SecuritySchemes     map[string]map[string]any `json:"securitySchemes,omitempty"`
	SecurityReqs        []map[string]any          `json:"securityRequirements,omitempty"`
	DefaultInputModes   []string                  `json:"defaultInputModes"`
	DefaultOutputModes  []string                  `json:"defaultOutputModes"`
	Skills              []AgentSkill              `json:"skills"`
	IconURL             string                    `json:"iconUrl,omitempty"`
	// Signatures are JWS signatures of the card (spec §8.4; package
	// internal/cardsig).
	Signatures []AgentCardSignature `json:"signatures,omitempty"`

	// 0.3 compatibility fields.
	ProtocolVersion                   string                `json:"protocolVersion,omitempty"`
	URL                               string                `json:"url,omitempty"`
	PreferredTransport                string                `json:"preferredTransport,omitempty"`
	AdditionalInterfaces              []AgentInterfaceV03   `json:"additionalInterfaces,omitempty"`
	Security                          []map[string][]string `json:"security,omitempty"`
	SupportsAuthenticatedExtendedCard *bool                 `json:"supportsAuthenticatedExtendedCard,omitempty"`
}

// Bool returns a pointer to b, for the optional card fields.
func Bool(b bool) *bool { return &b }

// OutputModes returns the media types the agent can produce.
func (c *AgentCard) OutputModes() []string {
	return c.DefaultOutputModes
}

// WithEndpoint returns a copy of c whose interfaces point at url (and, when
// tenantURL is set, at tenantURL with the given tenant), in both 1.0 and 0.3
// spellings.
func (c AgentCard) WithEndpoint(url, tenantURL, tenant string) AgentCard {
	c.SupportedInterfaces = []AgentInterface{
		{URL: url, ProtocolBinding: BindingJSONRPC, ProtocolVersion: string(V10)},
	}
	if tenantURL != "" && tenant != "" {
		c.SupportedInterfaces = append(c.SupportedInterfaces,
			AgentInterface{URL: tenantURL, ProtocolBinding: BindingJSONRPC, Tenant: tenant, ProtocolVersion: string(V10)})
	}
	c.SupportedInterfaces = append(c.SupportedInterfaces,
		AgentInterface{URL: url, ProtocolBinding: BindingJSONRPC, ProtocolVersion: string(V03)})
	c.ProtocolVersion = "0.3.0"
	c.URL = url
	c.PreferredTransport = BindingJSONRPC
	c.AdditionalInterfaces = []AgentInterfaceV03{{URL: url, Transport: BindingJSONRPC}}
	return c
}

// WithBindings returns a copy of c that also offers ifs, 1.0 interfaces
// of other bindings than JSON-RPC: they are listed after the JSON-RPC 1.0
// interfaces (the first entry is the one clients prefer) and before the 0.3
// entry. The 0.3 fields keep JSON-RPC only.
func (c AgentCard) WithBindings(ifs ...AgentInterface) AgentCard {
	if len(ifs) == 0 {
		return c
	}
	out := make([]AgentInterface, 0, len(c.SupportedInterfaces)+len(ifs))
	i := 0
	for ; i < len(c.SupportedInterfaces) && c.SupportedInterfaces[i].ProtocolVersion != string(V03); i++ {
		out = append(out, c.SupportedInterfaces[i])
	}
	out = append(out, ifs...)
	c.SupportedInterfaces = append(out, c.SupportedInterfaces[i:]...)
	return c
}

// Strict10 returns a copy of c without the 0.3 compatibility fields, for
// deployments that serve only 1.0 clients and validate cards strictly
// against the 1.0 schema. The 0.3 interface entry stays: it is valid 1.0.
func (c AgentCard) Strict10() AgentCard {
	c.ProtocolVersion, c.URL, c.PreferredTransport = "", "", ""
	c.AdditionalInterfaces = nil
	c.Security = nil
	c.SupportsAuthenticatedExtendedCard = nil
	c.Capabilities.StateTransitionHistory = nil
	return c
}

// MediaTypeMatches reports whether accepted (a client's acceptedOutputModes
// entry) matches offered (an agent's output mode), honouring */* and type/*.
func MediaTypeMatches(accepted, offered string) bool {
	a, o := normMedia(accepted), normMedia(offered)
	if a == o || a == "*/*" || o == "*/*" || a == "*" || o == "*" {
		return true
	}
	at, as := splitMedia(a)
	ot, os := splitMedia(o)
	return at == ot && (as == "*" || os == "*")
}

func normMedia(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == ';' {
			s = s[:i]
			break
		}
	}
	b := []byte(s)
	n := 0
	for _, c := range b {
		if c == ' ' || c == '\t' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[n] = c
		n++
	}
	return string(b[:n])
}

func splitMedia(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// ModesOverlap reports whether any accepted mode matches any offered mode.
// An empty accepted list accepts anything.
func ModesOverlap(accepted, offered []string) bool {
	if len(accepted) == 0 || len(offered) == 0 {
		return true
	}
	for _, a := range accepted {
		for _, o := range offered {
			if MediaTypeMatches(a, o) {
				return true
			}
		}
	}
	return false
}
