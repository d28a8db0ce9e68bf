// Package oidctest is an OpenID Connect issuer for tests, on a loopback
// port: a discovery document, a JSON Web Key Set, and tokens it signs
// (ES256) with the claims a test asks for, or with a key the key set does
// not hold, or unsigned ("alg": "none").
package oidctest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Issuer is a running test issuer.
type Issuer struct {
	URL      string // the issuer, as its tokens' iss says it
	key      *ecdsa.PrivateKey
	other    *ecdsa.PrivateKey // a key the JWKS does not hold
	srv      *httptest.Server
	jwksHits atomic.Int64
}

// Start starts an issuer on a loopback port; it stops when the test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{key: key, other: other}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/jwks", "token_endpoint": is.URL + "/token",
			"authorization_endpoint": is.URL + "/auth", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	is.srv = httptest.NewUnstartedServer(mux)
	is.srv.Listener.Close()
	is.srv.Listener = ln
	is.srv.Start()
	is.URL = is.srv.URL
	t.Cleanup(is.srv.Close)
	return is
}

// Close stops the issuer now (an issuer that is down).
func (is *Issuer) Close() { is.srv.Close() }

// JWKSFetches counts the key set's fetches.
func (is *Issuer) JWKSFetches() int64 { return is.jwksHits.Load() }

// Claims are a token's claims; Token fills iss, iat and exp unless set.
type Claims map[string]any

// Token signs claims with the issuer's key: iss is the issuer's, exp an
// hour from now and iat now unless claims set them.
func (is *Issuer) Token(t testing.TB, claims Claims) string {
	return is.sign(t, is.key, "k1", claims)
}

// TokenFromOtherKey signs claims with a key the issuer's key set does not
// hold (under a key id it does not list).
func (is *Issuer) TokenFromOtherKey(t testing.TB, claims Claims) string {
	return is.sign(t, is.other, "k-unknown", claims)
}

// UnsignedToken is claims with "alg": "none" and no signature.
func (is *Issuer) UnsignedToken(t testing.TB, claims Claims) string {
	hdr, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	body, err := json.Marshal(is.fill(claims))
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(hdr) + "." + enc.EncodeToString(body) + "."
}

func (is *Issuer) fill(claims Claims) Claims {
	out := Claims{"iss": is.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		out[k] = v
	}
	return out
}

func (is *Issuer) sign(t testing.TB, key *ecdsa.PrivateKey, kid string, claims Claims) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(is.fill(claims))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(body)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
