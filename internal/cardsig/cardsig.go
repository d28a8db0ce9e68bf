// Package cardsig signs and verifies agent cards as A2A 1.0 asks (spec
// §8.4): each signature is a JWS (RFC 7515) with a detached payload, the
// RFC 8785 (JCS) form of the card without its signatures field, after
// the card is read as the proto message lf.a2a.v1.AgentCard (so fields
// outside the 1.0 schema are not covered, and fields at their proto
// default are left out) and empty strings, lists and objects are
// removed. That is the reading the A2A SDKs verify with (a2a-python's
// a2a.utils.signing, @a2a-js/sdk's verifyAgentCardSignature), so a card
// this package signs verifies with theirs.
//
// Signatures are ES256 (ECDSA P-256, SHA-256), deterministic (RFC 6979):
// every edge holding the same keys signs the same card with the same
// bytes, so a card's ETag is the same at every edge. The protected header
// is {"alg":"ES256","typ":"JOSE","kid":...,"jku":...}; keys are named by
// their RFC 7638 thumbprint (package pushsig's JWK).
//
// JCS is written here (jcs.go) rather than taken from a library: it is a
// page of code over encoding/json, and the module has no JOSE or JCS
// dependency to keep up.
package cardsig

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/pushsig"
)

// Alg is the only algorithm cards are signed with and verified in.
const Alg = "ES256"

// coordLen is the byte length of a P-256 coordinate, and of r and s.
const coordLen = 32

var b64 = base64.RawURLEncoding

// Payload returns the bytes a card's signatures sign: card (a JSON
// document) read as lf.a2a.v1.AgentCard, written back in ProtoJSON,
// without signatures and without empty values, in RFC 8785 form.
func Payload(card []byte) ([]byte, error) {
	var pb a2apb.AgentCard
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(card, &pb); err != nil {
		return nil, fmt.Errorf("cardsig: not an agent card: %w", err)
	}
	pb.Signatures = nil
	pj, err := protojson.Marshal(&pb)
	if err != nil {
		return nil, fmt.Errorf("cardsig: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(pj))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("cardsig: %w", err)
	}
	v = dropEmpty(v)
	if v == nil {
		v = map[string]any{}
	}
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cardsig: %w", err)
	}
	return Canonicalize(doc)
}

// dropEmpty removes, depth first, empty strings, nulls, and the lists and
// objects left empty (nil: v itself is empty).
func dropEmpty(v any) any {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if t == "" {
			return nil
		}
	case []any:
		out := t[:0]
		for _, e := range t {
			if e = dropEmpty(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		for k, e := range t {
			if e = dropEmpty(e); e != nil {
				t[k] = e
			} else {
				delete(t, k)
			}
		}
		if len(t) == 0 {
			return nil
		}
	}
	return v
}

// Header is the protected header of a card signature.
type Header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid"`
	JKU string `json:"jku,omitempty"`
}

// Sign returns the signature of payload (see Payload) by key, whose kid
// is kid, naming jku as where its JWK Set is served. The signature is
// deterministic: the same key, header and payload give the same bytes.
func Sign(payload []byte, key *ecdsa.PrivateKey, kid, jku string) (a2a.AgentCardSignature, error) {
	hdr, err := json.Marshal(Header{Alg: Alg, Typ: "JOSE", Kid: kid, JKU: jku})
	if err != nil {
		return a2a.AgentCardSignature{}, err
	}
	protected := b64.EncodeToString(hdr)
	digest := sha256.Sum256([]byte(protected + "." + b64.EncodeToString(payload)))
	der, err := key.Sign(nil, digest[:], crypto.SHA256) // nil: RFC 6979
	if err != nil {
		return a2a.AgentCardSignature{}, fmt.Errorf("cardsig: sign: %w", err)
	}
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &rs); err != nil {
		return a2a.AgentCardSignature{}, fmt.Errorf("cardsig: sign: %w", err)
	}
	// JWS wants r || s, each 32 bytes (RFC 7518 §3.4), not ASN.1.
	sig := make([]byte, 2*coordLen)
	rs.R.FillBytes(sig[:coordLen])
	rs.S.FillBytes(sig[coordLen:])
	return a2a.AgentCardSignature{Protected: protected, Signature: b64.EncodeToString(sig)}, nil
}

// Errors of Verify and VerifyCard.
var (
	ErrUnsigned   = errors.New("cardsig: the card carries no signature")
	ErrMalformed  = errors.New("cardsig: malformed signature")
	ErrUnknownKey = errors.New("cardsig: signed with a key the key set does not hold")
	ErrSignature  = errors.New("cardsig: signature does not match the card")
)

// DecodeHeader returns the protected header of sig.
func DecodeHeader(sig a2a.AgentCardSignature) (Header, error) {
	var h Header
	raw, err := b64.DecodeString(sig.Protected)
	if err != nil || json.Unmarshal(raw, &h) != nil {
		return Header{}, ErrMalformed
	}
	return h, nil
}

// Verify checks sig over payload against the keys of set: the algorithm
// must be ES256 (never taken from the header on trust), the kid must name
// a key of set. It returns the header.
func Verify(payload []byte, sig a2a.AgentCardSignature, set pushsig.JWKSet) (Header, error) {
	h, err := DecodeHeader(sig)
	if err != nil {
		return h, err
	}
	if h.Alg != Alg {
		return h, fmt.Errorf("%w: alg %q (only %s is accepted)", ErrMalformed, h.Alg, Alg)
	}
	var pub *ecdsa.PublicKey
	for _, k := range set.Keys {
		if k.Kid == h.Kid {
			if pub, err = k.PublicKey(); err != nil {
				return h, err
			}
			break
		}
	}
	if pub == nil {
		return h, fmt.Errorf("%w (kid %q)", ErrUnknownKey, h.Kid)
	}
	raw, err := b64.DecodeString(sig.Signature)
	if err != nil || len(raw) != 2*coordLen {
		return h, ErrMalformed
	}
	digest := sha256.Sum256([]byte(sig.Protected + "." + b64.EncodeToString(payload)))
	r, s := new(big.Int).SetBytes(raw[:coordLen]), new(big.Int).SetBytes(raw[coordLen:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return h, ErrSignature
	}
	return h, nil
}

// Signatures returns the signatures a card document carries.
func Signatures(card []byte) ([]a2a.AgentCardSignature, error) {
	var c struct {
		Signatures []a2a.AgentCardSignature `json:"signatures"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("cardsig: not an agent card: %w", err)
	}
	return c.Signatures, nil
}

// VerifyCard checks the signatures of card (a JSON document) against set
// and returns the headers of those that hold. It fails when none holds,
// with the reason of the first that does not; ErrUnsigned when the card
// has none.
func VerifyCard(card []byte, set pushsig.JWKSet) ([]Header, error) {
	sigs, err := Signatures(card)
	if err != nil {
		return nil, err
	}
	if len(sigs) == 0 {
		return nil, ErrUnsigned
	}
	payload, err := Payload(card)
	if err != nil {
		return nil, err
	}
	var ok []Header
	var first error
	for _, s := range sigs {
		h, err := Verify(payload, s, set)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ok = append(ok, h)
	}
	if len(ok) == 0 {
		return nil, first
	}
	return ok, nil
}
