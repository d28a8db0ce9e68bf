// Package tokens verifies OAuth 2.0 / OpenID Connect bearer tokens (JWTs)
// for the edge: the issuer's discovery document and key set
// (github.com/coreos/go-oidc, cached, fetched again for an unknown key
// id), then the token's signature, algorithm, issuer and audience, and its
// time window with a small skew. A verified token is a policy.Caller: the
// principal from one claim, the grants (scopes or roles) from another.
package tokens

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/a2amesh/a2amesh/policy"
)

// Config says which tokens a Verifier accepts.
type Config struct {
	// Issuer is the issuer's URL, exactly as its tokens' iss claim and its
	// discovery document say it (required).
	Issuer string
	// Audience is what the token's aud must contain (required).
	Audience string
	// Algorithms are the signature algorithms accepted (default RS256 and
	// ES256). "none" is never accepted.
	Algorithms []string
	// PrincipalClaim names the claim the principal is read from (default
	// "sub").
	PrincipalClaim string
	// GrantsClaim names the claim the grants are read from: a
	// space-separated string (OAuth's "scope") or an array of strings
	// ("scp", "roles", "groups"). Default: "scope", falling back to "scp".
	GrantsClaim string
	// Skew is the clock skew allowed on exp and nbf (default DefaultSkew).
	Skew time.Duration
	// HTTPClient fetches the discovery document and the key set (default:
	// one with a 5 s timeout).
	HTTPClient *http.Client
}

// DefaultSkew is the clock skew allowed on a token's exp and nbf.
const DefaultSkew = 30 * time.Second

// discoveryRetry is how long a failed discovery is not tried again: an
// issuer that is down costs each call at most one bounded attempt per
// interval, not one per call.
const discoveryRetry = 5 * time.Second

// Errors of Verify.
var (
	// ErrUnavailable: the issuer's discovery document or key set cannot
	// be read now; the call may be retried (503).
	ErrUnavailable = errors.New("tokens: the token issuer cannot be reached")
	// ErrInvalid: the token is not valid (401).
	ErrInvalid = errors.New("tokens: invalid token")
)

// Verifier verifies tokens of one issuer. It discovers the issuer on its
// first use (and again after a failure, at most every 5 s), so an edge
// starts while its issuer is down.
type Verifier struct {
	cfg Config

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failedAt time.Time
	lastErr  error

	// seen caches tokens verified, by their SHA-256, until they expire: a
	// token is immutable, so a caller's next call with it costs a hash,
	// not a signature check. Bounded by seenMax.
	seenMu sync.Mutex
	seen   map[[sha256.Size]byte]seenToken
}

// seenMax bounds the verified-token cache.
const seenMax = 10000

type seenToken struct {
	caller   policy.Caller
	validTo  time.Time // exp + skew
	validFor time.Time // nbf - skew
}

// New returns a Verifier for cfg.
func New(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("tokens: an issuer and an audience are required")
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = []string{oidc.RS256, oidc.ES256}
	}
	for _, a := range cfg.Algorithms {
		if strings.EqualFold(a, "none") || !strings.ContainsAny(a, "0123456789") {
			return nil, fmt.Errorf("tokens: algorithm %q: want signature algorithms such as RS256, ES256, PS256, EdDSA", a)
		}
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = "sub"
	}
	if cfg.Skew <= 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	return &Verifier{cfg: cfg}, nil
}

// Issuer is the issuer's URL.
func (v *Verifier) Issuer() string { return v.cfg.Issuer }

// DiscoveryURL is the issuer's OpenID Connect discovery document, which
// cards name in their openIdConnect scheme.
func (v *Verifier) DiscoveryURL() string {
	return strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration"
}

// LooksLikeJWT reports whether s has a JWT's three dot-separated parts,
// so an edge with API keys too tells a token from a key without trying.
func LooksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && len(s) > 20
}

// idVerifier returns the go-oidc verifier, discovering the issuer once.
func (v *Verifier) idVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	if !v.failedAt.IsZero() && time.Since(v.failedAt) < discoveryRetry {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, v.lastErr)
	}
	// The key set outlives this call: its fetches use a background
	// context with the client's timeout.
	bg := oidc.ClientContext(context.Background(), v.cfg.HTTPClient)
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.cfg.HTTPClient), v.cfg.HTTPClient.Timeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, v.cfg.Issuer)
	if err != nil {
		v.failedAt, v.lastErr = time.Now(), err
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	v.verifier = p.VerifierContext(bg, &oidc.Config{
		ClientID:             v.cfg.Audience,
		SupportedSigningAlgs: v.cfg.Algorithms,
		SkipExpiryCheck:      true, // checked below, with the stated skew
	})
	return v.verifier, nil
}

// Verify checks raw and returns its caller. A token verified before is
// answered from a cache until it expires.
func (v *Verifier) Verify(ctx context.Context, raw string) (policy.Caller, error) {
	sum := sha256.Sum256([]byte(raw))
	now := time.Now()
	v.seenMu.Lock()
	st, ok := v.seen[sum]
	v.seenMu.Unlock()
	if ok && now.Before(st.validTo) && !now.Before(st.validFor) {
		return st.caller, nil
	}
	c, validTo, validFor, err := v.verify(ctx, raw)
	if err != nil {
		return c, err
	}
	v.seenMu.Lock()
	if v.seen == nil {
		v.seen = map[[sha256.Size]byte]seenToken{}
	}
	if len(v.seen) >= seenMax {
		for k, e := range v.seen { // drop the expired
			if !now.Before(e.validTo) {
				delete(v.seen, k)
			}
		}
		if len(v.seen) >= seenMax { // all current: start again (a cost, not an error)
			clear(v.seen)
		}
	}
	v.seen[sum] = seenToken{caller: c, validTo: validTo, validFor: validFor}
	v.seenMu.Unlock()
	return c, nil
}

// verify checks raw with the issuer's keys and returns its caller and the
// window it is valid in, skew included.
func (v *Verifier) verify(ctx context.Context, raw string) (_ policy.Caller, validTo, validFor time.Time, _ error) {
	iv, err := v.idVerifier(ctx)
	if err != nil {
		return policy.Caller{}, time.Time{}, time.Time{}, err
	}
	tok, err := iv.Verify(ctx, raw)
	if err != nil {
		if isFetchFailure(err) {
			return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: claims: %v", ErrInvalid, err)
	}
	now := time.Now()
	if tok.Expiry.IsZero() {
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: no exp claim", ErrInvalid)
	}
	if now.After(tok.Expiry.Add(v.cfg.Skew)) {
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: expired at %s", ErrInvalid, tok.Expiry.UTC().Format(time.RFC3339))
	}
	nbf, hasNBF := numericDate(claims["nbf"])
	if hasNBF && now.Add(v.cfg.Skew).Before(nbf) {
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: not valid before %s", ErrInvalid, nbf.UTC().Format(time.RFC3339))
	}
	principal, _ := claims[v.cfg.PrincipalClaim].(string)
	if principal == "" || len(principal) > 256 {
		return policy.Caller{}, time.Time{}, time.Time{}, fmt.Errorf("%w: no %q claim to name the caller", ErrInvalid, v.cfg.PrincipalClaim)
	}
	return policy.Caller{Principal: principal, Grants: v.grants(claims)}, tok.Expiry.Add(v.cfg.Skew), nbf.Add(-v.cfg.Skew), nil
}

// grants reads the grants claim: a space-separated string or an array.
func (v *Verifier) grants(claims map[string]any) []string {
	names := []string{v.cfg.GrantsClaim}
	if v.cfg.GrantsClaim == "" {
		names = []string{"scope", "scp"}
	}
	for _, n := range names {
		switch g := claims[n].(type) {
		case string:
			return strings.Fields(g)
		case []any:
			var out []string
			for _, x := range g {
				if s, ok := x.(string); ok && s != "" {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

func numericDate(v any) (time.Time, bool) {
	switch n := v.(type) {
	case float64:
		return time.Unix(int64(n), 0), true
	case json.Number:
		f, err := n.Float64()
		return time.Unix(int64(f), 0), err == nil
	}
	return time.Time{}, false
}

// isFetchFailure reports whether go-oidc failed to fetch the key set (the
// issuer is down), not to verify the token.
func isFetchFailure(err error) bool {
	s := err.Error()
	return strings.Contains(s, "fetching keys") || strings.Contains(s, "get keys failed")
}
