// Package pushsig signs push notifications so that receivers can tell they
// come from the mesh without sharing a secret with it: each delivery carries
// a short-lived JWT (RFC 7519) signed with ES256 (ECDSA P-256, SHA-256), and
// the edge publishes the public key as a JWK Set (RFC 7517) at
// /.well-known/jwks.json. This follows the asymmetric flow of the A2A
// project's push-notification security guidance: the JWT header names the
// algorithm and the key id (kid); the claims are iss, aud, iat, exp, jti and
// taskId, plus the SHA-256 of the request body so a token cannot be replayed
// with another payload.
//
// The encoding is small enough to write by hand with crypto/ecdsa and
// encoding/base64; there is no dependency on a JOSE library.
package pushsig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Alg is the only JWS algorithm used and accepted.
const Alg = "ES256"

// DefaultTTL is how long a signature is valid after it is made.
const DefaultTTL = 5 * time.Minute

// coordLen is the byte length of a P-256 coordinate and of r and s.
const coordLen = 32

var b64 = base64.RawURLEncoding

// GenerateKey returns a new P-256 private key.
func GenerateKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// EncodePEM encodes a key as a PKCS #8 "PRIVATE KEY" PEM block.
func EncodePEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pushsig: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePEM reads a P-256 private key from PEM: PKCS #8 ("PRIVATE KEY") or
// SEC 1 ("EC PRIVATE KEY", what `openssl ecparam -genkey` writes).
func ParsePEM(data []byte) (*ecdsa.PrivateKey, error) {
	for len(data) > 0 {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			break
		}
		var key any
		var err error
		switch blk.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(blk.Bytes)
		default:
			continue // e.g. "EC PARAMETERS" before the key
		}
		if err != nil {
			return nil, fmt.Errorf("pushsig: parse %s: %w", blk.Type, err)
		}
		ec, ok := key.(*ecdsa.PrivateKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, errors.New("pushsig: the key must be an ECDSA P-256 key (ES256)")
		}
		return ec, nil
	}
	return nil, errors.New("pushsig: no PRIVATE KEY or EC PRIVATE KEY PEM block found")
}

// JWK is a public EC key in JWK form.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKSet is a JWK Set document.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK returns the JWK of a P-256 public key; its kid is the RFC 7638
// thumbprint, so every edge holding the same key names it the same way.
func PublicJWK(pub *ecdsa.PublicKey) (JWK, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return JWK{}, errors.New("pushsig: not a P-256 public key")
	}
	raw, err := pub.Bytes() // 0x04 || X || Y
	if err != nil {
		return JWK{}, fmt.Errorf("pushsig: public key: %w", err)
	}
	x, y := b64.EncodeToString(raw[1:1+coordLen]), b64.EncodeToString(raw[1+coordLen:])
	// RFC 7638: the required members in lexicographic order, no spaces.
	tp := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`))
	return JWK{Kty: "EC", Crv: "P-256", X: x, Y: y, Kid: b64.EncodeToString(tp[:]), Use: "sig", Alg: Alg}, nil
}

// PublicKey returns the ECDSA key a JWK describes.
func (k JWK) PublicKey() (*ecdsa.PublicKey, error) {
	if k.Kty != "EC" || k.Crv != "P-256" {
		return nil, fmt.Errorf("pushsig: JWK %q is not an EC P-256 key", k.Kid)
	}
	x, errX := b64.DecodeString(k.X)
	y, errY := b64.DecodeString(k.Y)
	if errX != nil || errY != nil || len(x) != coordLen || len(y) != coordLen {
		return nil, fmt.Errorf("pushsig: JWK %q has malformed coordinates", k.Kid)
	}
	raw := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("pushsig: JWK %q: %w", k.Kid, err)
	}
	return pub, nil
}

// Claims are what a push signature asserts.
type Claims struct {
	Issuer   string `json:"iss,omitempty"`
	Audience string `json:"aud,omitempty"` // the webhook URL
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
	ID       string `json:"jti"`
	TaskID   string `json:"taskId"`
	// BodySHA256 is the hex SHA-256 of the exact request body.
	BodySHA256 string `json:"request_body_sha256,omitempty"`
}

// BodyHash is the value of Claims.BodySHA256 for body.
func BodyHash(body []byte) string {
	h := sha256.Sum256(body)
	return hex.EncodeToString(h[:])
}

// Signer signs push notifications with one key.
type Signer struct {
	key *ecdsa.PrivateKey
	jwk JWK
	iss string
	ttl time.Duration
}

// NewSigner returns a signer for key; issuer goes into every token's iss
// (empty: none); ttl bounds each token's life (0: DefaultTTL).
func NewSigner(key *ecdsa.PrivateKey, issuer string, ttl time.Duration) (*Signer, error) {
	if key == nil {
		return nil, errors.New("pushsig: no key")
	}
	jwk, err := PublicJWK(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Signer{key: key, jwk: jwk, iss: issuer, ttl: ttl}, nil
}

// KeyID is the kid of the signer's key.
func (s *Signer) KeyID() string { return s.jwk.Kid }

// JWKS is the JWK Set receivers verify tokens with.
func (s *Signer) JWKS() JWKSet { return JWKSet{Keys: []JWK{s.jwk}} }

// Sign returns a compact JWS for one delivery of body about taskID to
// audience, issued at now with a fresh jti.
func (s *Signer) Sign(taskID, audience string, body []byte, now time.Time, jti string) (string, error) {
	c := Claims{Issuer: s.iss, Audience: audience, IssuedAt: now.Unix(), Expires: now.Add(s.ttl).Unix(),
		ID: jti, TaskID: taskID, BodySHA256: BodyHash(body)}
	hdr, err := json.Marshal(map[string]string{"alg": Alg, "typ": "JWT", "kid": s.jwk.Kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signing := b64.EncodeToString(hdr) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(signing))
	r, sv, err := ecdsa.Sign(rand.Reader, s.key, digest[:])
	if err != nil {
		return "", fmt.Errorf("pushsig: sign: %w", err)
	}
	// JWS ES256 signatures are r || s, each left-padded to 32 bytes
	// (RFC 7518 §3.4), not ASN.1 DER.
	sig := make([]byte, 2*coordLen)
	r.FillBytes(sig[:coordLen])
	sv.FillBytes(sig[coordLen:])
	return signing + "." + b64.EncodeToString(sig), nil
}

// Errors of Verify.
var (
	ErrMalformed = errors.New("pushsig: malformed token")
	ErrSignature = errors.New("pushsig: bad signature")
	ErrExpired   = errors.New("pushsig: token expired or not yet valid")
	ErrUnknownID = errors.New("pushsig: unknown key id")
)

// leeway tolerates clock skew between the mesh and a receiver.
const leeway = 30 * time.Second

// Verify checks a token against a JWK Set the way a receiver should: the
// algorithm must be ES256 (never taken on trust from the header), the kid
// must name a key of the set, the signature must hold and now must lie
// within [iat, exp] (with a little leeway). It returns the claims; checking
// aud, taskId, the body hash and jti reuse is the caller's part.
func Verify(token string, set JWKSet, now time.Time) (*Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, ErrMalformed
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, ErrMalformed
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if json.Unmarshal(hb, &hdr) != nil {
		return nil, ErrMalformed
	}
	if hdr.Alg != Alg {
		return nil, fmt.Errorf("%w: alg %q", ErrMalformed, hdr.Alg)
	}
	var pub *ecdsa.PublicKey
	for _, k := range set.Keys {
		if k.Kid == hdr.Kid {
			if pub, err = k.PublicKey(); err != nil {
				return nil, err
			}
			break
		}
	}
	if pub == nil {
		return nil, ErrUnknownID
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != 2*coordLen {
		return nil, ErrMalformed
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:coordLen]), new(big.Int).SetBytes(sig[coordLen:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return nil, ErrSignature
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, ErrMalformed
	}
	var c Claims
	if json.Unmarshal(pb, &c) != nil {
		return nil, ErrMalformed
	}
	if now.Add(leeway).Unix() < c.IssuedAt || now.Add(-leeway).Unix() > c.Expires {
		return nil, ErrExpired
	}
	return &c, nil
}
