package cardsig

import (
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/pushsig"
)

// MaxKeys is how many keys a key set holds at most: the current one and,
// during a rotation, the next.
const MaxKeys = 2

// Keys is the set of keys cards are signed with, oldest first. Outside a
// rotation it holds one key; during one, two, and every card carries a
// signature by each, so a client that knows either key verifies it.
type Keys struct {
	priv []*ecdsa.PrivateKey
	pub  []pushsig.JWK
}

// NewKeys returns the key set of keys (oldest first, at most MaxKeys).
func NewKeys(keys ...*ecdsa.PrivateKey) (*Keys, error) {
	if len(keys) == 0 || len(keys) > MaxKeys {
		return nil, fmt.Errorf("cardsig: a key set holds 1 to %d keys, not %d", MaxKeys, len(keys))
	}
	k := &Keys{}
	for _, key := range keys {
		if key == nil {
			return nil, errors.New("cardsig: nil key")
		}
		jwk, err := pushsig.PublicJWK(&key.PublicKey)
		if err != nil {
			return nil, err
		}
		for _, have := range k.pub {
			if have.Kid == jwk.Kid {
				return nil, fmt.Errorf("cardsig: key %s is listed twice", jwk.Kid)
			}
		}
		k.priv = append(k.priv, key)
		k.pub = append(k.pub, jwk)
	}
	return k, nil
}

// KeyIDs are the kids of the keys, oldest first.
func (k *Keys) KeyIDs() []string {
	ids := make([]string, len(k.pub))
	for i, j := range k.pub {
		ids[i] = j.Kid
	}
	return ids
}

// JWKS is the public key set cards signed with k verify against.
func (k *Keys) JWKS() pushsig.JWKSet {
	return pushsig.JWKSet{Keys: append([]pushsig.JWK(nil), k.pub...)}
}

// SignCard returns the signatures of card (a JSON document; its own
// signatures are ignored), one per key, oldest key first; jku goes into
// each protected header.
func (k *Keys) SignCard(card []byte, jku string) ([]a2a.AgentCardSignature, error) {
	payload, err := Payload(card)
	if err != nil {
		return nil, err
	}
	sigs := make([]a2a.AgentCardSignature, 0, len(k.priv))
	for i, key := range k.priv {
		s, err := Sign(payload, key, k.pub[i].Kid, jku)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, s)
	}
	return sigs, nil
}

// stored is how a key set is kept in NATS (bucket A2A_CARD_KEYS): PEM
// blocks, oldest first.
type stored struct {
	Keys []string `json:"keys"`
}

// Encode returns the stored form of the private keys of k.
func (k *Keys) Encode() ([]byte, error) {
	var s stored
	for _, key := range k.priv {
		p, err := pushsig.EncodePEM(key)
		if err != nil {
			return nil, err
		}
		s.Keys = append(s.Keys, string(p))
	}
	return json.Marshal(s)
}

// Decode reads a key set Encode wrote.
func Decode(data []byte) (*Keys, error) {
	var s stored
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("cardsig: stored key set: %w", err)
	}
	keys := make([]*ecdsa.PrivateKey, 0, len(s.Keys))
	for _, p := range s.Keys {
		key, err := pushsig.ParsePEM([]byte(p))
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	return NewKeys(keys...)
}

// Generate returns a key set of one new key.
func Generate() (*Keys, error) {
	key, err := pushsig.GenerateKey()
	if err != nil {
		return nil, err
	}
	return NewKeys(key)
}

// Rotate returns k with a new key added after its newest (and its oldest
// dropped if it already held MaxKeys): cards are then signed with both
// keys until Retire.
func (k *Keys) Rotate() (*Keys, error) {
	key, err := pushsig.GenerateKey()
	if err != nil {
		return nil, err
	}
	keys := append([]*ecdsa.PrivateKey(nil), k.priv...)
	if len(keys) == MaxKeys {
		keys = keys[1:]
	}
	return NewKeys(append(keys, key)...)
}

// Retire returns k with its newest key only.
func (k *Keys) Retire() *Keys {
	n := len(k.priv) - 1
	return &Keys{priv: k.priv[n:], pub: k.pub[n:]}
}
