package edge_test

// Signed cards and card caching (cardsign.go, cardcache.go), black-box
// through the HTTP routes: every card the edge serves carries signatures
// that verify against the JWK Set its jku names; a rotation yields two
// signatures, each by a key of the set; ETags follow the registry at
// every edge of a bus and answer If-None-Match with 304.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// cardPaths are the routes serving one card.
var cardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json",
	"/agents/echo/.well-known/agent-card.json", "/agents/echo/.well-known/agent.json"}

// cardDocs returns every card document the edge serves: one per card
// route and each card of GET /agents.
func (m *httpMesh) cardDocs(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, p := range cardPaths {
		status, _, body := m.do(t, http.MethodGet, p, nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", p, body)
		docs[p] = body
	}
	status, _, body := m.do(t, http.MethodGet, "/agents", nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var list struct {
		Agents []json.RawMessage `json:"agents"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.NotEmpty(t, list.Agents)
	for i, c := range list.Agents {
		docs["/agents#"+string(rune('0'+i))] = c
	}
	return docs
}

// jwksAt fetches the JWK Set a signature's jku names, from this edge
// (the jku may be the public URL, which the test cannot reach).
func (m *httpMesh) jwksAt(t *testing.T, jku, publicBase string) pushsig.JWKSet {
	t.Helper()
	require.True(t, strings.HasPrefix(jku, publicBase), "jku %s is not under %s", jku, publicBase)
	status, _, body := m.do(t, http.MethodGet, strings.TrimPrefix(jku, publicBase), nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var set pushsig.JWKSet
	require.NoError(t, json.Unmarshal(body, &set))
	return set
}

// verifyDoc checks every signature of doc on its own against the key set
// of its jku and returns their kids.
func (m *httpMesh) verifyDoc(t *testing.T, name string, doc []byte, publicBase string) []string {
	t.Helper()
	sigs, err := cardsig.Signatures(doc)
	require.NoError(t, err)
	require.NotEmpty(t, sigs, "%s is not signed: %s", name, doc)
	payload, err := cardsig.Payload(doc)
	require.NoError(t, err)
	var kids []string
	for _, s := range sigs {
		h, err := cardsig.DecodeHeader(s)
		require.NoError(t, err)
		assert.Equal(t, "ES256", h.Alg)
		assert.Equal(t, "JOSE", h.Typ)
		assert.Equal(t, publicBase+edge.JWKSPath, h.JKU, "%s: jku", name)
		set := m.jwksAt(t, h.JKU, publicBase)
		_, err = cardsig.Verify(payload, s, set)
		require.NoError(t, err, "%s: signature by %s", name, h.Kid)
		kids = append(kids, h.Kid)
	}
	return kids
}

// TestCardsSigned: the mesh card, each agent's card and each card of the
// list carry a signature that verifies against the edge's JWK Set, and a
// card whose rewritten URL or description is changed no longer verifies.
func TestCardsSigned(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{}, "echo")
	var kid string
	for name, doc := range m.cardDocs(t) {
		kids := m.verifyDoc(t, name, doc, m.URL)
		require.Len(t, kids, 1, name)
		if kid == "" {
			kid = kids[0]
		}
		assert.Equal(t, kid, kids[0], "%s: one key signs every card", name)
	}

	doc := m.cardDocs(t)["/agents/echo/.well-known/agent-card.json"]
	set := m.jwksAt(t, m.URL+edge.JWKSPath, m.URL)
	_, err := cardsig.VerifyCard(doc, set)
	require.NoError(t, err)
	for _, tamper := range [][2]string{{m.URL + "/agents/echo", "http://evil.example/agents/echo"}, {`"description":"`, `"description":"X`}} {
		bad := []byte(strings.Replace(string(doc), tamper[0], tamper[1], 1))
		require.NotEqual(t, doc, bad)
		_, err := cardsig.VerifyCard(bad, set)
		assert.ErrorIs(t, err, cardsig.ErrSignature, "tampered with %q", tamper[0])
	}
}

// TestCardsSignedPublicURL: with --public-url the signature covers the
// rewritten URLs and the jku is the public one.
func TestCardsSignedPublicURL(t *testing.T) {
	const public = "https://mesh.example:8443"
	m := startHTTPMesh(t, edge.Config{PublicURL: public + "/"}, "echo")
	for name, doc := range m.cardDocs(t) {
		var c a2a.AgentCard
		require.NoError(t, json.Unmarshal(doc, &c))
		for _, i := range c.SupportedInterfaces {
			if i.ProtocolBinding != a2a.BindingGRPC {
				assert.True(t, strings.HasPrefix(i.URL, public), "%s: %s not rewritten", name, i.URL)
			}
		}
		m.verifyDoc(t, name, doc, public)
	}
}

// TestCardKeysByConfig: keys given by Config.CardKeys (the
// --card-signing-key flag) sign the cards, both of them during a rotation.
func TestCardKeysByConfig(t *testing.T) {
	k1, err := pushsig.GenerateKey()
	require.NoError(t, err)
	k2, err := pushsig.GenerateKey()
	require.NoError(t, err)
	keys, err := cardsig.NewKeys(k1, k2)
	require.NoError(t, err)
	m := startHTTPMesh(t, edge.Config{CardKeys: keys}, "echo")
	for name, doc := range m.cardDocs(t) {
		assert.Equal(t, keys.KeyIDs(), m.verifyDoc(t, name, doc, m.URL), name)
	}
}

// TestCardKeyRotation: a rotation in NATS reaches the edge within its
// recheck interval; cards then carry two signatures, each verifying with
// its own key of the JWK Set; retiring leaves the new key's alone.
func TestCardKeyRotation(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{}, "echo")
	path := "/agents/echo/.well-known/agent-card.json"
	_, _, doc := m.do(t, http.MethodGet, path, nil)
	old := m.verifyDoc(t, "before", doc, m.URL)
	require.Len(t, old, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rotated, err := cardsig.Rotate(ctx, cardStore(t, m.Store))
	require.NoError(t, err)
	ids := rotated.KeyIDs()
	require.Equal(t, old[0], ids[0])

	var kids []string
	require.True(t, natstest.Eventually(ctx, 8*time.Second, func() bool {
		_, _, doc = m.do(t, http.MethodGet, path, nil)
		sigs, _ := cardsig.Signatures(doc)
		return len(sigs) == 2
	}), "the rotation did not reach the edge")
	kids = m.verifyDoc(t, "during", doc, m.URL)
	assert.Equal(t, ids, kids)
	set := m.jwksAt(t, m.URL+edge.JWKSPath, m.URL)
	assert.Len(t, set.Keys, 2)
	// Each signature holds on its own: a key set with only one key
	// verifies exactly one of them.
	payload, err := cardsig.Payload(doc)
	require.NoError(t, err)
	sigs, _ := cardsig.Signatures(doc)
	for i, k := range set.Keys {
		one := pushsig.JWKSet{Keys: []pushsig.JWK{k}}
		_, err0 := cardsig.Verify(payload, sigs[0], one)
		_, err1 := cardsig.Verify(payload, sigs[1], one)
		assert.True(t, (err0 == nil) != (err1 == nil), "key %d verifies exactly one signature: %v, %v", i, err0, err1)
	}

	_, err = cardsig.Retire(ctx, cardStore(t, m.Store))
	require.NoError(t, err)
	require.True(t, natstest.Eventually(ctx, 8*time.Second, func() bool {
		_, _, doc = m.do(t, http.MethodGet, path, nil)
		sigs, _ := cardsig.Signatures(doc)
		return len(sigs) == 1
	}), "the retirement did not reach the edge")
	assert.Equal(t, []string{ids[1]}, m.verifyDoc(t, "after", doc, m.URL))
}

// secondEdge runs another edge on m's bus, with its own registry table.
func secondEdge(t *testing.T, m *httpMesh, cfg edge.Config) *httpMesh {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	table := registry.NewTable(m.Store.Bus())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	table.Logger = quiet
	wg.Add(1)
	go func() { defer wg.Done(); _ = table.Run(ctx) }()
	cfg.Store, cfg.Registry, cfg.Logger = m.Store, table, quiet
	srv := edge.NewServer(edge.New(cfg), quiet)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		cancel()
		wg.Wait()
	})
	require.True(t, natstest.Eventually(ctx, 10*time.Second, table.Loaded))
	return &httpMesh{URL: "http://" + ln.Addr().String(), Store: m.Store, hc: m.hc}
}

// TestCardETagFollowsRegistry: two edges on one bus serving the same
// public URL answer every card route with the same bytes and ETag (the
// signatures are deterministic, the key set shared); an agent joining
// changes the ETag at both, the old ETag then gets 200 and the new 304.
func TestCardETagFollowsRegistry(t *testing.T) {
	const public = "https://mesh.example"
	a := startHTTPMesh(t, edge.Config{PublicURL: public}, "echo")
	b := secondEdge(t, a, edge.Config{PublicURL: public})
	routes := []string{"/.well-known/agent-card.json", "/agents", "/agents/echo/.well-known/agent-card.json", edge.JWKSPath}

	etags := func(m *httpMesh) map[string]string {
		out := map[string]string{}
		for _, p := range routes {
			status, h, body := m.do(t, http.MethodGet, p, nil)
			require.Equal(t, http.StatusOK, status, "%s: %s", p, body)
			require.NotEmpty(t, h.Get("ETag"), p)
			require.Contains(t, h.Get("Cache-Control"), "max-age=", p)
			out[p] = h.Get("ETag")
		}
		return out
	}
	var before map[string]string
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		before = etags(a)
		bb := etags(b)
		for p := range before {
			if before[p] != bb[p] {
				return false
			}
		}
		return true
	}), "the two edges do not serve the same cards")
	for _, p := range routes {
		for _, m := range []*httpMesh{a, b} {
			status, _, body := m.do(t, http.MethodGet, p, map[string]string{"If-None-Match": before[p]})
			assert.Equal(t, http.StatusNotModified, status, p)
			assert.Empty(t, body, p)
		}
	}

	// An agent joins: the mesh card lists it as a skill, the list holds
	// its card.
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		card := func() a2a.AgentCard {
			return a2a.AgentCard{Name: "newcomer", Description: "joined late", Version: "1", Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}}}
		}
		_ = registry.Publish(pctx, a.Store.Bus(), registry.Entry{Agent: "newcomer", Instance: "n1"}, card, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { stop(); <-done })

	for _, m := range []*httpMesh{a, b} {
		require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
			now := etags(m)
			return now["/.well-known/agent-card.json"] != before["/.well-known/agent-card.json"] && now["/agents"] != before["/agents"]
		}), "%s: the ETags did not follow the registry", m.URL)
		after := etags(m)
		assert.Equal(t, before["/agents/echo/.well-known/agent-card.json"], after["/agents/echo/.well-known/agent-card.json"], "an unchanged card keeps its ETag")
		for _, p := range []string{"/.well-known/agent-card.json", "/agents"} {
			status, _, body := m.do(t, http.MethodGet, p, map[string]string{"If-None-Match": before[p]})
			assert.Equal(t, http.StatusOK, status, "%s with the old ETag", p)
			assert.Contains(t, string(body), "newcomer")
			status, _, _ = m.do(t, http.MethodGet, p, map[string]string{"If-None-Match": after[p]})
			assert.Equal(t, http.StatusNotModified, status, "%s with the new ETag", p)
		}
	}
	assert.Equal(t, etags(a), etags(b), "both edges serve the same bytes again")
}

// cardStore opens the card key bucket of b.
func cardStore(t *testing.T, b *taskstore.Store) *cardsig.CardKeys {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cardsig.OpenKeyStore(ctx, b.Bus())
	require.NoError(t, err)
	return st
}
