package proxy_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// signedUpstream serves an agent card signed with its own key (jku: its
// own /jwks.json) and that key set; mode changes what it serves.
type signedUpstream struct {
	URL  string
	keys *cardsig.Keys
	mu   sync.Mutex
	mode string // "signed", "tampered", "unsigned", "otherkey", "huge", "foreignjku"
	desc string
}

func (u *signedUpstream) set(mode, desc string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.mode, u.desc = mode, desc
}

func startSignedUpstream(t *testing.T) *signedUpstream {
	t.Helper()
	keys, err := cardsig.Generate()
	require.NoError(t, err)
	other, err := cardsig.Generate()
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &signedUpstream{URL: "http://" + ln.Addr().String(), keys: keys, mode: "signed", desc: "signs its card"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		mode, desc := u.mode, u.desc
		u.mu.Unlock()
		card := a2a.AgentCard{Name: "Signer", Description: desc, Version: "1.0.0",
			SupportedInterfaces: []a2a.AgentInterface{{URL: u.URL + "/a2a", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"}},
			Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
			DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}}}
		doc, _ := json.Marshal(card)
		jku := u.URL + "/jwks.json"
		if mode == "foreignjku" {
			jku = "http://127.0.0.2:1/jwks.json"
		}
		if mode != "unsigned" {
			card.Signatures, err = keys.SignCard(doc, jku)
			require.NoError(t, err)
		}
		if mode == "tampered" { // changed after signing
			card.Description += " (and more)"
		}
		_ = json.NewEncoder(w).Encode(card)
	})
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		mode := u.mode
		u.mu.Unlock()
		switch mode {
		case "otherkey":
			_ = json.NewEncoder(w).Encode(other.JWKS())
		case "huge":
			set := keys.JWKS()
			for len(set.Keys) < 1000 {
				set.Keys = append(set.Keys, other.JWKS().Keys[0])
			}
			_ = json.NewEncoder(w).Encode(set)
		default:
			_ = json.NewEncoder(w).Encode(keys.JWKS())
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return u
}

func trustLoopback(t *testing.T) *ssrf.Guard {
	t.Helper()
	g, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	return g
}

// TestProxyRequireSignedCard: with RequireSignedCard a proxy accepts an
// upstream card whose signature verifies with the JWK Set of its jku and
// refuses one changed after signing, an unsigned one, one signed with a
// key its JWK Set does not hold, one whose JWK Set is too large and one
// whose jku is on another origin. Without it every card is accepted, and
// the check says what was found.
func TestProxyRequireSignedCard(t *testing.T) {
	m := meshtest.Start(t)
	up := startSignedUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(require bool) (*proxy.Agent, error) {
		p, err := proxy.New(ctx, proxy.Config{URL: up.URL, Guard: trustLoopback(t), Store: m.Store(), RequireSignedCard: require})
		if err == nil {
			t.Cleanup(func() { _ = p.Close() })
		}
		return p, err
	}

	p, err := open(true)
	require.NoError(t, err)
	cc := p.CardCheck()
	require.Equal(t, registry.CardVerified, cc.Status, "%+v", cc)
	assert.Equal(t, up.keys.KeyIDs(), cc.KeyIDs)
	assert.Equal(t, up.URL+"/jwks.json", cc.JKU)
	assert.Empty(t, p.Card().Signatures, "the upstream's signatures are not registered: edges sign what they serve")

	for mode, want := range map[string]string{
		"tampered": registry.CardInvalid, "unsigned": registry.CardUnsigned, "otherkey": registry.CardInvalid,
		"huge": registry.CardInvalid, "foreignjku": registry.CardInvalid,
	} {
		up.set(mode, "signs its card")
		_, err := open(true)
		require.Error(t, err, mode)
		assert.Contains(t, err.Error(), want, mode)
		assert.NotErrorIs(t, err, proxy.ErrUnavailable, "%s: retrying does not help", mode)

		p, err := open(false)
		require.NoError(t, err, mode)
		assert.Equal(t, want, p.CardCheck().Status, "%s: %+v", mode, p.CardCheck())
	}
	up.set("huge", "")
	_, err = open(true)
	assert.ErrorContains(t, err, "larger than")
	up.set("foreignjku", "")
	_, err = open(true)
	assert.ErrorContains(t, err, "not on the card's origin")
}

// TestProxyRefreshKeepsVerifiedCard: a proxy requiring signed cards does
// not register a refreshed card that fails verification (it keeps the one
// it verified); one that does not require them registers it, and GET
// /agents says it is invalid.
func TestProxyRefreshKeepsVerifiedCard(t *testing.T) {
	m := meshtest.Start(t)
	up := startSignedUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	strict, err := proxy.New(ctx, proxy.Config{URL: up.URL, Name: "strict", Guard: trustLoopback(t), Store: m.Store(), RequireSignedCard: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = strict.Close() })
	lax, err := proxy.New(ctx, proxy.Config{URL: up.URL, Name: "lax", Guard: trustLoopback(t), Store: m.Store()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lax.Close() })
	for _, p := range []*proxy.Agent{strict, lax} {
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w := &agentrt.Worker{Store: m.Store(), Agent: p, Concurrency: 1, Timeout: 5 * time.Second}
			_ = w.Run(wctx)
		}()
		t.Cleanup(func() { stop(); <-done })
	}

	checks := func() map[string]registry.CardCheck {
		resp, err := http.Get(m.URL + "/agents")
		require.NoError(t, err)
		defer resp.Body.Close()
		var doc struct {
			CardChecks map[string]registry.CardCheck `json:"cardChecks"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		return doc.CardChecks
	}
	require.Eventually(t, func() bool {
		c := checks()
		return c["strict"].Status == registry.CardVerified && c["lax"].Status == registry.CardVerified
	}, 10*time.Second, 20*time.Millisecond, "both proxies list a verified card")

	up.set("tampered", "a forged description")
	err = strict.RefreshCard(ctx)
	require.Error(t, err)
	assert.Equal(t, "signs its card", strict.Card().Description, "the verified card stays registered")
	assert.Equal(t, registry.CardVerified, strict.CardCheck().Status)
	require.NoError(t, lax.RefreshCard(ctx))
	assert.True(t, strings.HasPrefix(lax.Card().Description, "a forged description"))
	require.Eventually(t, func() bool {
		c := checks()
		return c["strict"].Status == registry.CardVerified && c["lax"].Status == registry.CardInvalid && c["lax"].Error != ""
	}, 10*time.Second, 20*time.Millisecond, "GET /agents says which card failed")
}

// TestProxyVerifiesMeshCard: an a2amesh edge's card (another mesh, as
// upstream) verifies with the JWK Set its jku names: the mesh's own
// signatures hold for its own proxy workers.
func TestProxyVerifiesMeshCard(t *testing.T) {
	upstream := meshtest.Start(t)
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := proxy.New(ctx, proxy.Config{URL: upstream.URL + "/agents/echo", Name: "far-echo", Guard: trustLoopback(t), Store: m.Store(), RequireSignedCard: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	assert.Equal(t, registry.CardVerified, p.CardCheck().Status, "%+v", p.CardCheck())
	assert.Equal(t, upstream.URL+"/.well-known/jwks.json", p.CardCheck().JKU)
}
