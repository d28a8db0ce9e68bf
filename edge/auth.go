package edge

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/tokens"
)

// Auth holds the credentials an edge accepts and the principal each one
// stands for. A credential is a secret sent either as an API key (the
// x-api-key header) or as a bearer token (Authorization: Bearer <secret>);
// both name the same table. Tasks belong to the principal that created
// them: no other principal can read, list, cancel, subscribe to, or
// configure push for them.
type Auth struct {
	principals map[[sha256.Size]byte]string // sha256(secret) -> principal
	// skills holds the skills= patterns of the principals that have them
	// (ParseAuthText): what they see of extended cards' extra skills.
	skills map[string]map[string]bool
	// roles holds the roles= of the principals that have them: the
	// grants the access policy's role:NAME rules match (package policy).
	roles map[string][]string
}

// APIKeyHeader is the header an API key travels in.
const APIKeyHeader = "X-Api-Key"

// minSecretLen bounds how short a credential may be.
const minSecretLen = 16

// NewAuth builds an Auth from principal → secrets.
func NewAuth(secrets map[string][]string) (*Auth, error) {
	a := &Auth{principals: map[[sha256.Size]byte]string{}}
	for principal, list := range secrets {
		for _, s := range list {
			if err := a.add(principal, s); err != nil {
				return nil, err
			}
		}
	}
	if len(a.principals) == 0 {
		return nil, errors.New("auth: no credentials")
	}
	return a, nil
}

// Principals returns how many distinct principals hold a credential.
func (a *Auth) Principals() int {
	if a == nil {
		return 0
	}
	seen := map[string]bool{}
	for _, p := range a.principals {
		seen[p] = true
	}
	return len(seen)
}

func (a *Auth) add(principal, secret string) error {
	switch {
	case principal == "" || len(principal) > 128 || strings.ContainsAny(principal, " \t\r\n\x00"):
		return fmt.Errorf("auth: principal %q: want 1-128 characters without spaces", principal)
	case len(secret) < minSecretLen:
		return fmt.Errorf("auth: principal %s: a secret must be at least %d characters", principal, minSecretLen)
	case strings.ContainsAny(secret, " \t\r\n\x00"):
		return fmt.Errorf("auth: principal %s: a secret must not contain spaces", principal)
	}
	h := sha256.Sum256([]byte(secret))
	if other, dup := a.principals[h]; dup && other != principal {
		return fmt.Errorf("auth: principals %s and %s share a secret", other, principal)
	}
	a.principals[h] = principal
	return nil
}

// ParseCredentials reads "principal secret" pairs, one per line (also
// "principal:secret" or "principal=secret"); blank lines and lines
// starting with # are skipped. A principal may have several secrets (for
// rotation). Fields after the secret (skills=, see ParseAuthText) are
// checked and left out: use ParseAuthText to keep them.
func ParseCredentials(text string) (map[string][]string, error) {
	c, err := ParseAuthText(text)
	return c.Secrets, err
}

// Credentials is what an auth file holds.
type Credentials struct {
	// Secrets maps each principal to its secrets.
	Secrets map[string][]string
	// Skills maps a principal to the skills= patterns its lines give: of
	// the skills an agent's extended card adds to its public card, the
	// principal sees only those matched. A principal absent here sees all
	// of them.
	Skills map[string][]string
	// Roles maps a principal to the roles= its lines give: what the
	// access policy's role:NAME rules match (package policy).
	Roles map[string][]string
}

// ParseAuthText reads an auth file: lines of "principal secret" as
// ParseCredentials reads them, each optionally followed by fields
// separated by spaces. The one field known is skills=LIST, LIST being
// comma-separated patterns, each "skill" (that skill id of any agent),
// "agent/skill", "agent/*" or "*", or "-" alone for none: the extra
// skills of extended agent cards the principal may see. It may be given
// on any of a principal's lines, identically when on several.
func ParseAuthText(text string) (Credentials, error) {
	out := Credentials{Secrets: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		principal, rest, ok := cutAny(line, " \t:=")
		principal = strings.TrimSpace(principal)
		fields := strings.Fields(rest)
		if !ok || principal == "" || len(fields) == 0 {
			return Credentials{}, fmt.Errorf("auth: line %d: want \"principal secret\"", n)
		}
		out.Secrets[principal] = append(out.Secrets[principal], fields[0])
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			if k == "roles" {
				list, err := parseRoleList(v)
				if err != nil {
					return Credentials{}, fmt.Errorf("auth: line %d: %w", n, err)
				}
				if out.Roles == nil {
					out.Roles = map[string][]string{}
				}
				if prev, dup := out.Roles[principal]; dup && !slices.Equal(prev, list) {
					return Credentials{}, fmt.Errorf("auth: line %d: principal %s has another roles= on an earlier line", n, principal)
				}
				out.Roles[principal] = list
				continue
			}
			if k != "skills" {
				return Credentials{}, fmt.Errorf("auth: line %d: unknown field %q after the secret (want skills=LIST or roles=LIST)", n, trunc(f, 32))
			}
			list, err := parseSkillList(v)
			if err != nil {
				return Credentials{}, fmt.Errorf("auth: line %d: %w", n, err)
			}
			if out.Skills == nil {
				out.Skills = map[string][]string{}
			}
			if prev, dup := out.Skills[principal]; dup && !slices.Equal(prev, list) {
				return Credentials{}, fmt.Errorf("auth: line %d: principal %s has another skills= on an earlier line", n, principal)
			}
			out.Skills[principal] = list
		}
	}
	return out, sc.Err()
}

// parseRoleList reads the LIST of roles=LIST: comma-separated role names.
func parseRoleList(v string) ([]string, error) {
	var list []string
	for _, r := range strings.Split(v, ",") {
		if r == "" || len(r) > 128 {
			return nil, errors.New("roles= wants a comma-separated list of role names (1-128 characters each)")
		}
		list = append(list, r)
	}
	slices.Sort(list)
	return slices.Compact(list), nil
}

// parseSkillList reads the LIST of skills=LIST: sorted patterns, none for
// "-".
func parseSkillList(v string) ([]string, error) {
	if v == "-" {
		return []string{}, nil
	}
	if v == "" {
		return nil, errors.New(`skills= wants a list of skill ids, agent/skill, agent/* or *, or "-" for none`)
	}
	var list []string
	for _, p := range strings.Split(v, ",") {
		agent, skill, scoped := strings.Cut(p, "/")
		if p == "" || scoped && (agent == "" || skill == "" || agent == "*") || strings.Count(p, "/") > 1 {
			return nil, fmt.Errorf("skills=: bad pattern %q (want skill, agent/skill, agent/* or *)", trunc(p, 64))
		}
		list = append(list, p)
	}
	slices.Sort(list)
	return slices.Compact(list), nil
}

// LoadAuthFile reads credentials from a file in ParseAuthText's format.
// A file holding none (empty, or comments only) is an error. The file
// should be readable by the edge only.
func LoadAuthFile(path string) (*Auth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	creds, err := ParseAuthText(string(b))
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", path, err)
	}
	if len(creds.Secrets) == 0 {
		return nil, fmt.Errorf("auth: %s: no credentials in it", path)
	}
	return NewAuthFrom(creds)
}

// NewAuthFrom builds an Auth from parsed credentials, with the skills
// each principal may see.
func NewAuthFrom(c Credentials) (*Auth, error) {
	a, err := NewAuth(c.Secrets)
	if err != nil {
		return nil, err
	}
	for p, list := range c.Roles {
		if _, ok := c.Secrets[p]; ok {
			if a.roles == nil {
				a.roles = map[string][]string{}
			}
			a.roles[p] = list
		}
	}
	for p, list := range c.Skills {
		if _, ok := c.Secrets[p]; !ok {
			continue
		}
		if a.skills == nil {
			a.skills = map[string]map[string]bool{}
		}
		set := make(map[string]bool, len(list))
		for _, s := range list {
			set[s] = true
		}
		a.skills[p] = set
	}
	return a, nil
}

// skillVisible is the service's Config.SkillVisible for this auth: nil
// (every skill to everyone) without auth or without skills= lines.
func (a *Auth) skillVisible() func(principal, agent, skill string) bool {
	if a == nil || len(a.skills) == 0 {
		return nil
	}
	return func(principal, agent, skill string) bool {
		set, limited := a.skills[principal]
		if !limited {
			return true
		}
		return set["*"] || set[skill] || set[agent+"/"+skill] || set[agent+"/*"]
	}
}

func cutAny(s, seps string) (before, after string, ok bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// Caller is the caller a principal of this auth is: its name and its
// roles= (the grants the access policy matches).
func (a *Auth) Caller(principal string) policy.Caller {
	if a == nil {
		return policy.Caller{Principal: principal}
	}
	return policy.Caller{Principal: principal, Grants: a.roles[principal]}
}

// Authenticate returns the principal whose credential r carries. ok is
// false for a request with no credential or an unknown one.
func (a *Auth) Authenticate(r *http.Request) (principal string, ok bool) {
	return a.AuthenticateCredential(r.Header.Get(APIKeyHeader), r.Header.Get("Authorization"))
}

// AuthenticateCredential returns the principal whose credential a call
// carries, given as the values of its API key header (x-api-key) and of
// its Authorization header ("Bearer <secret>"), for transports whose
// headers are not an http.Header (gRPC metadata). The API key wins when
// both are set. ok is false for no credential or an unknown one.
func (a *Auth) AuthenticateCredential(apiKey, authorization string) (principal string, ok bool) {
	secret := apiKey
	if secret == "" {
		scheme, token, found := strings.Cut(authorization, " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return "", false
		}
		secret = strings.TrimSpace(token)
	}
	if secret == "" {
		return "", false
	}
	principal, ok = a.principals[sha256.Sum256([]byte(secret))]
	return principal, ok
}

// codeUnauthenticated is the JSON-RPC error code of a 401 answer (A2A
// leaves authentication errors to the transport; JSON-RPC's
// implementation-defined server-error range it is).
const codeUnauthenticated = -32000

// Security scheme names in cards.
const (
	schemeAPIKey = "apiKey"
	schemeBearer = "bearer"
	schemeOIDC   = "openIdConnect"
)

// cardSecurity returns the securitySchemes and security requirements a card
// declares for this edge's auth, readable in both versions: each scheme
// object carries the 1.0 oneof member (apiKeySecurityScheme,
// httpAuthSecurityScheme) and the 0.3 fields (type, in, name, scheme) side
// by side; 1.0 requirements are securityRequirements ({"schemes": {name:
// {"list": []}}}), 0.3 ones security ({name: []}). Either scheme suffices.
//
// With API keys: apiKey (the header) and bearer (the same key as a bearer
// credential). With an OpenID Connect issuer: openIdConnect (its discovery
// URL, where clients find its token endpoint) and bearer (a JWT).
func (id identity) cardSecurity() (schemes map[string]map[string]any, reqs10 []map[string]any, reqs03 []map[string][]string) {
	schemes = map[string]map[string]any{}
	add := func(name string, scheme map[string]any) {
		schemes[name] = scheme
		reqs10 = append(reqs10, map[string]any{"schemes": map[string]any{name: map[string]any{"list": []string{}}}})
		reqs03 = append(reqs03, map[string][]string{name: {}})
	}
	bearer := "the same credential as a bearer token"
	if id.keys != nil {
		add(schemeAPIKey, map[string]any{
			"apiKeySecurityScheme": map[string]any{"location": "header", "name": APIKeyHeader,
				"description": "API key issued by the mesh operator"},
			"type": "apiKey", "in": "header", "name": APIKeyHeader,
			"description": "API key issued by the mesh operator",
		})
	}
	if id.tokens != nil {
		bearer = "an access token (JWT) of " + id.tokens.Issuer()
		if id.keys != nil {
			bearer = "an API key, or an access token (JWT) of " + id.tokens.Issuer()
		}
		add(schemeOIDC, map[string]any{
			"openIdConnectSecurityScheme": map[string]any{"openIdConnectUrl": id.tokens.DiscoveryURL(),
				"description": "tokens of this OpenID Connect issuer, sent as Authorization: Bearer"},
			"type": "openIdConnect", "openIdConnectUrl": id.tokens.DiscoveryURL(),
			"description": "tokens of this OpenID Connect issuer, sent as Authorization: Bearer",
		})
	}
	add(schemeBearer, map[string]any{
		"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": bearer},
		"type":                   "http", "scheme": "bearer", "description": bearer,
	})
	return schemes, reqs10, reqs03
}

// strict10Security drops the 0.3 fields from card security schemes.
func strict10Security(schemes map[string]map[string]any) map[string]map[string]any {
	out := make(map[string]map[string]any, len(schemes))
	for name, s := range schemes {
		c := map[string]any{}
		for k, v := range s {
			if strings.HasSuffix(k, "SecurityScheme") {
				c[k] = v
			}
		}
		out[name] = c
	}
	return out
}

// unauthorized answers a call without valid credentials: HTTP 401 with a
// challenge for each accepted scheme, and the transport's error body,
// before any work of the transport. A bearer token that failed
// verification gets error="invalid_token" (RFC 6750) and why, in short.
func unauthorized(w http.ResponseWriter, ref refusals, id identity, err error) {
	var bad *badToken
	if errors.As(err, &bad) {
		w.Header().Add("WWW-Authenticate", `Bearer realm="a2amesh", error="invalid_token", error_description="`+bad.reason+`"`)
		if id.keys != nil {
			w.Header().Add("WWW-Authenticate", `ApiKey realm="a2amesh", header="`+APIKeyHeader+`"`)
		}
		ref.unauthenticated(w, "Authentication failed: the bearer token is not valid ("+bad.reason+")")
		return
	}
	w.Header().Add("WWW-Authenticate", `Bearer realm="a2amesh"`)
	if id.keys != nil {
		w.Header().Add("WWW-Authenticate", `ApiKey realm="a2amesh", header="`+APIKeyHeader+`"`)
	}
	ref.unauthenticated(w, "Authentication required: "+id.wanted())
}

// identity is how an edge knows its callers: API keys (Auth), bearer
// tokens of an OpenID Connect issuer (tokens.Verifier), either, both or
// neither. Every binding asks it (identify), each answering its refusals
// in its own shape.
type identity struct {
	keys   *Auth
	tokens *tokens.Verifier
	// certs names callers by their verified TLS client certificates
	// ("": off; see Config.ClientCertPrincipal).
	certs string
}

// on reports whether calls need a credential.
func (id identity) on() bool { return id.keys != nil || id.tokens != nil || id.certs != "" }

// Where a client certificate's principal is read from (Config.ClientCertPrincipal).
const (
	CertPrincipalSAN = "san" // the first URI SAN (a SPIFFE id), else DNS SAN, else email SAN
	CertPrincipalCN  = "cn"  // the subject's common name
)

// certPrincipal names the caller of a verified client certificate ("" for
// none that names one).
func certPrincipal(from string, cert *x509.Certificate) string {
	if from == CertPrincipalCN {
		return cert.Subject.CommonName
	}
	switch {
	case len(cert.URIs) > 0:
		return cert.URIs[0].String()
	case len(cert.DNSNames) > 0:
		return cert.DNSNames[0]
	case len(cert.EmailAddresses) > 0:
		return cert.EmailAddresses[0]
	}
	return ""
}

// fromCert returns the caller a verified TLS connection's client
// certificate names; ok is false when there is none (or mTLS is off).
func (id identity) fromCert(state *tls.ConnectionState) (policy.Caller, bool) {
	if id.certs == "" || state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return policy.Caller{}, false
	}
	p := certPrincipal(id.certs, state.VerifiedChains[0][0])
	if p == "" || len(p) > 256 {
		return policy.Caller{}, false
	}
	return policy.Caller{Principal: p}, true
}

// wanted says what credential the edge takes, for a 401's message.
func (id identity) wanted() string {
	switch {
	case id.keys != nil && id.tokens != nil:
		return "send an API key in " + APIKeyHeader + " or Authorization: Bearer <key or token>"
	case id.tokens != nil:
		return "send Authorization: Bearer <token> with a token of " + id.tokens.Issuer()
	case id.keys == nil && id.certs != "":
		return "connect with a client certificate the edge trusts"
	}
	return "send an API key in " + APIKeyHeader + " or Authorization: Bearer"
}

// errNoCredential is a call with no credential, or a key no one holds.
var errNoCredential = errors.New("no valid credential")

// badToken is a bearer token that failed verification.
type badToken struct{ reason string }

func (b *badToken) Error() string { return "invalid token: " + b.reason }

// identify returns the caller a call's credentials name: its API key
// header, or its Authorization header's bearer credential, an API key or
// (looking like a JWT, with an issuer configured) a token. Errors:
// errNoCredential, *badToken, or one wrapping tokens.ErrUnavailable (the
// issuer is down: retry).
func (id identity) identify(ctx context.Context, apiKey, authorization string, state *tls.ConnectionState) (policy.Caller, error) {
	if apiKey == "" && authorization == "" {
		// No credential in the call: a verified client certificate, if
		// the connection has one, names the caller.
		if c, ok := id.fromCert(state); ok {
			return c, nil
		}
		return policy.Caller{}, errNoCredential
	}
	if id.keys != nil {
		if p, ok := id.keys.AuthenticateCredential(apiKey, authorization); ok {
			return id.keys.Caller(p), nil
		}
	}
	if id.tokens == nil || apiKey != "" {
		return policy.Caller{}, errNoCredential
	}
	scheme, tok, found := strings.Cut(authorization, " ")
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || !tokens.LooksLikeJWT(tok) {
		return policy.Caller{}, errNoCredential
	}
	c, err := id.tokens.Verify(ctx, tok)
	switch {
	case errors.Is(err, tokens.ErrUnavailable):
		return policy.Caller{}, err
	case err != nil:
		return policy.Caller{}, &badToken{reason: tokenReason(err)}
	}
	return c, nil
}

// tokenReason is why a token failed, short and safe to show its holder
// (no key material, no claims beyond what it names).
func tokenReason(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "expired"):
		return "expired"
	case strings.Contains(s, "not valid before"):
		return "not valid yet"
	case strings.Contains(s, "audience"):
		return "not for this audience"
	case strings.Contains(s, "issued by a different provider"):
		return "from another issuer"
	case strings.Contains(s, "malformed jwt"), strings.Contains(s, "unexpected signature algorithm"):
		return "malformed, or signed with an algorithm not accepted"
	case strings.Contains(s, "signature"), strings.Contains(s, "verify"):
		return "signature does not verify with the issuer's keys"
	case strings.Contains(s, "claim to name the caller"):
		return "no principal claim"
	}
	return "rejected"
}
