package pushsig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

func mustSigner(t *testing.T) *Signer {
	t.Helper()
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(key, "https://mesh.example", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A token verifies with the public JWK alone, read back from the JSON a
// receiver would fetch, and carries the claims the A2A guidance lists.
func TestSignVerifyWithPublishedJWKS(t *testing.T) {
	s := mustSigner(t)
	body := []byte(`{"statusUpdate":{"taskId":"t1"}}`)
	now := time.Now()
	tok, err := s.Sign("t1", "https://hook.example/cb", body, now, "jti-1")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(s.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	var set JWKSet
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatal(err)
	}
	c, err := Verify(tok, set, now)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if c.TaskID != "t1" || c.ID != "jti-1" || c.Audience != "https://hook.example/cb" || c.Issuer != "https://mesh.example" {
		t.Fatalf("claims: %+v", c)
	}
	if c.BodySHA256 != BodyHash(body) || c.Expires-c.IssuedAt != 60 {
		t.Fatalf("claims: %+v", c)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	_ = json.Unmarshal(hdr, &h)
	if h["alg"] != "ES256" || h["typ"] != "JWT" || h["kid"] != s.KeyID() {
		t.Fatalf("header: %v", h)
	}

	// Checked independently of Verify: r||s over header.payload.
	parts := strings.Split(tok, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	pub, err := set.Keys[0].PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("raw ECDSA verification failed")
	}
}

func TestVerifyRefuses(t *testing.T) {
	s := mustSigner(t)
	other := mustSigner(t)
	now := time.Now()
	tok, err := s.Sign("t1", "aud", []byte("{}"), now, "j")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iat":1,"exp":9999999999,"jti":"j","taskId":"t2"}`)) + "." + parts[2]
	noneHdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + s.KeyID() + `"}`))
	cases := []struct {
		name string
		tok  string
		set  JWKSet
		at   time.Time
		want error
	}{
		{"other key set", tok, other.JWKS(), now, ErrUnknownID},
		{"tampered payload", tampered, s.JWKS(), now, ErrSignature},
		{"expired", tok, s.JWKS(), now.Add(2 * time.Minute), ErrExpired},
		{"not yet valid", tok, s.JWKS(), now.Add(-2 * time.Minute), ErrExpired},
		{"alg none", noneHdr + "." + parts[1] + ".", s.JWKS(), now, ErrMalformed},
		{"garbage", "a.b", s.JWKS(), now, ErrMalformed},
		{"bad base64", "!!.??.**", s.JWKS(), now, ErrMalformed},
	}
	for _, c := range cases {
		if _, err := Verify(c.tok, c.set, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// The same key gives the same kid (every edge names it alike), and keys
// round-trip through PEM in both accepted encodings.
func TestPEMAndKid(t *testing.T) {
	key, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := EncodePEM(key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParsePEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := NewSigner(key, "", 0)
	b, _ := NewSigner(back, "", 0)
	if a.KeyID() != b.KeyID() || a.KeyID() == "" {
		t.Fatalf("kid differs: %s vs %s", a.KeyID(), b.KeyID())
	}
	if _, err := ParsePEM([]byte("not pem")); err == nil {
		t.Fatal("want error for non-PEM")
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	pem384, _ := EncodePEM(p384)
	if _, err := ParsePEM(pem384); err == nil {
		t.Fatal("want error for a P-384 key")
	}
}
