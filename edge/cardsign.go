package edge

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/registry"
)

// Every card the edge serves is signed (spec §8.4; internal/cardsig): the
// mesh card, each agent's card and each card of GET /agents, after its
// URLs are rewritten to the edge's public address, so a signature covers
// what the client receives. The protected header names the key (kid) and
// the JWK Set to verify with (jku, this edge's /.well-known/jwks.json).
//
// The keys are the fleet's: given by flag (Config.CardKeys), or kept in
// the NATS bucket A2A_CARD_KEYS, created with one new key by the first
// edge that serves a card and read by the others. A rotation (a2amesh
// card-keys rotate) adds a second key there: every edge reads the bucket
// again at most cardKeysRecheck after its last read, and from then on
// signs each card with both keys until the older is retired.

// cardKeysRecheck is how often an edge serving cards reads the stored key
// set again (a rotation reaches every edge within it).
const cardKeysRecheck = 2 * time.Second

// cardKeysWait bounds how long a card request waits for the key set.
const cardKeysWait = 3 * time.Second

// JWKSPath is where an edge serves the JWK Set of its card and push keys.
const JWKSPath = "/.well-known/jwks.json"

// cardSigner holds the key set cards are signed with.
type cardSigner struct {
	static *cardsig.Keys // Config.CardKeys: fixed for the edge's life
	bus    *bus.Bus

	mu      sync.Mutex
	store   *cardsig.CardKeys
	keys    *cardsig.Keys
	rev     uint64
	checked time.Time

	sigCache sigCache
}

// errCardKeys answers a card request while the key set cannot be read.
var errCardKeys = errors.New("card signing keys not loaded")

// current returns the key set to sign with, reading the stored one again
// when it was last read more than cardKeysRecheck ago. A failed read keeps
// the key set read before, if any.
func (s *cardSigner) current(ctx context.Context) (*cardsig.Keys, error) {
	if s.static != nil {
		return s.static, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys != nil && time.Since(s.checked) < cardKeysRecheck {
		return s.keys, nil
	}
	ctx, cancel := context.WithTimeout(ctx, cardKeysWait)
	defer cancel()
	err := s.load(ctx)
	if s.keys != nil {
		if err != nil {
			s.checked = time.Now() // try again after cardKeysRecheck, not on every card
		}
		return s.keys, nil
	}
	return nil, fmt.Errorf("%w: %w", errCardKeys, err)
}

func (s *cardSigner) load(ctx context.Context) error {
	if s.store == nil {
		st, err := cardsig.OpenKeyStore(ctx, s.bus)
		if err != nil {
			return err
		}
		s.store = st
	}
	data, rev, err := s.store.LoadOrCreate(ctx, func() ([]byte, error) {
		k, err := cardsig.Generate()
		if err != nil {
			return nil, err
		}
		return k.Encode()
	})
	if err != nil {
		return err
	}
	if s.keys == nil || rev != s.rev {
		k, err := cardsig.Decode(data)
		if err != nil {
			return err
		}
		s.keys, s.rev = k, rev
	}
	s.checked = time.Now()
	return nil
}

// signCard returns card signed with every key of the fleet's key set
// (its own signatures replaced), and the JSON document served.
func (e *Edge) signCard(r *http.Request, card a2a.AgentCard) (a2a.AgentCard, error) {
	keys, err := e.cardSigner.current(r.Context())
	if err != nil {
		return card, err
	}
	card.Signatures = nil
	doc, err := json.Marshal(card)
	if err != nil {
		return card, err
	}
	jku := e.baseURL(r) + JWKSPath
	sigs, err := e.cardSigner.sigCache.get(keys, jku, doc)
	if err != nil {
		// A card the proto reading refuses (an agent registered a value
		// of the wrong type) cannot be signed; it is served unsigned
		// rather than failing every card list it is in.
		e.log.Error("agent card served unsigned: it cannot be signed", "agent", card.Name, "err", err)
		return card, nil
	}
	card.Signatures = sigs
	return card, nil
}

// sigCacheMax bounds the signatures an edge keeps (one set per distinct
// card document and public URL); past it the cache starts over.
const sigCacheMax = 8192

// sigCache keeps the signatures of the cards an edge served: a card is
// signed again only when its bytes or the keys change, so GET /agents on
// a large fleet costs a hash per card, not a canonicalization and an
// ECDSA signature. (Signatures are deterministic: the cache changes no
// byte served.)
type sigCache struct {
	mu   sync.Mutex
	keys *cardsig.Keys // the key set the entries were made with
	m    map[[sha256.Size]byte][]a2a.AgentCardSignature
}

func (c *sigCache) get(keys *cardsig.Keys, jku string, doc []byte) ([]a2a.AgentCardSignature, error) {
	h := sha256.New()
	h.Write([]byte(jku))
	h.Write([]byte{0})
	h.Write(doc)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	c.mu.Lock()
	if c.keys == keys {
		if sigs, ok := c.m[k]; ok {
			c.mu.Unlock()
			return sigs, nil
		}
	}
	c.mu.Unlock()
	sigs, err := keys.SignCard(doc, jku)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys != keys || len(c.m) >= sigCacheMax {
		c.keys, c.m = keys, map[[sha256.Size]byte][]a2a.AgentCardSignature{}
	}
	c.m[k] = sigs
	return sigs, nil
}

// serveKeySet serves the JWK Set cards and push notifications verify
// with: the card keys (two during a rotation) and, with push on, the push
// signing key.
func (e *Edge) serveKeySet(w http.ResponseWriter, r *http.Request) {
	keys, err := e.cardSigner.current(r.Context())
	if err != nil {
		e.log.Warn("card signing keys unavailable", "err", err)
		writeStarting(w, []string{"card signing keys"})
		return
	}
	set := keys.JWKS()
	if e.pusher != nil {
		ps, ok := e.pusher.JWKS()
		if !ok { // push delivery has not loaded its key yet
			writeStarting(w, []string{"push delivery"})
			return
		}
		for _, k := range ps.Keys {
			if !hasKey(set, k.Kid) {
				set.Keys = append(set.Keys, k)
			}
		}
	}
	e.writeCached(w, r, set, jwksMaxAge)
}

func hasKey(set pushsig.JWKSet, kid string) bool {
	for _, k := range set.Keys {
		if k.Kid == kid {
			return true
		}
	}
	return false
}

// cardUnavailable answers a card request whose card could not be signed.
func (e *Edge) cardUnavailable(w http.ResponseWriter, err error) {
	e.log.Warn("cannot sign agent card", "err", err)
	if errors.Is(err, errCardKeys) {
		writeStarting(w, []string{"card signing keys"})
		return
	}
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
}

// agentList is the document of GET /agents: the cards; each agent's
// status ("status"), since the list holds every known agent, live or not
// (an agent's identity, its card and its queue, outlives its workers);
// and what proxy workers verified of their upstream cards' signatures, by
// agent ("cardChecks", left out when no agent is a proxy).
func agentList(cards []a2a.AgentCard, agents []registry.Listed) map[string]any {
	checks := map[string]*registry.CardCheck{}
	status := make(map[string]registry.Status, len(agents))
	for _, a := range agents {
		if a.CardCheck != nil {
			checks[a.Agent] = a.CardCheck
		}
		status[a.Agent] = a.Status
	}
	doc := map[string]any{"agents": cards, "status": status}
	if len(checks) > 0 {
		doc["cardChecks"] = checks
	}
	return doc
}
