package proxy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/a2agoecho"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// A proxy worker fetches the upstream's extended card with its upstream
// credentials (Config.Header) over whichever binding it forwards with, and
// the edge serves it as the proxied agent's; without the credentials the
// upstream refuses, and the edge answers -32007 (declared, not
// configured).
func TestProxyServesUpstreamExtendedCard(t *testing.T) {
	m := meshtest.Start(t)
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	const token = "Bearer upstream-token-0123456789"
	for _, binding := range upstreamBindings {
		t.Run(bindingName(binding), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			up, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{
				Binding: binding, Name: "xcard-up", Authorization: token,
				ExtendedCard: &goa2a.AgentCard{
					Name: "xcard-up", Description: "the extended card", Version: "1.0.0",
					Capabilities:       goa2a.AgentCapabilities{ExtendedAgentCard: true},
					DefaultInputModes:  []string{"text/plain"},
					DefaultOutputModes: []string{"text/plain"},
					Skills: []goa2a.AgentSkill{
						{ID: "echo", Name: "echo", Description: "replies with the text it got", Tags: []string{"echo"}},
						{ID: "members-only", Name: "members only", Description: "for callers who signed in", Tags: []string{"x"}},
					},
				},
			})
			require.NoError(t, err)
			defer up.Stop()

			name := "xcard-" + bindingName(binding)
			runWorker(t, m, proxy.Config{URL: up.URL, Name: name, Guard: guard, Store: m.Store(),
				Header: http.Header{"Authorization": {token}}})
			c := client.New(m.URL + "/agents/" + name)
			card, err := c.Card(ctx)
			require.NoError(t, err)
			require.NotNil(t, card.Capabilities.ExtendedAgentCard)
			assert.True(t, *card.Capabilities.ExtendedAgentCard, "the public card declares the extended card")
			ext, err := c.ExtendedCard(ctx)
			require.NoError(t, err)
			assert.Equal(t, name, ext.Name)
			assert.Equal(t, "the extended card", ext.Description)
			var skills []string
			for _, s := range ext.Skills {
				skills = append(skills, s.ID)
			}
			assert.Equal(t, []string{"echo", "members-only"}, skills)
			require.NotEmpty(t, ext.SupportedInterfaces)
			for _, in := range ext.SupportedInterfaces {
				assert.NotContains(t, in.URL, up.URL, "the extended card must not reveal the upstream")
				assert.NotContains(t, in.URL, up.Endpoint, "the extended card must not reveal the upstream")
			}

			// The same upstream without the credentials: the card is
			// public, the extended card is not.
			anon := name + "-anon"
			runWorker(t, m, proxy.Config{URL: up.URL, Name: anon, Guard: guard, Store: m.Store()})
			_, err = client.New(m.URL + "/agents/" + anon).ExtendedCard(ctx)
			require.Error(t, err)
			var ae *a2a.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, a2a.CodeExtendedCardNotConfigured, ae.Code)
		})
	}
}

// A 0.3 upstream (its card says supportsAuthenticatedExtendedCard): the
// worker asks it with agent/getAuthenticatedExtendedCard, and the edge
// serves the card to 1.0 and 0.3 callers.
func TestProxyServesV03UpstreamExtendedCard(t *testing.T) {
	m := meshtest.Start(t)
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	up := startUpstream(t, &turnsExecutor{}, upstreamOpts{version: "0.3", ext: &goa2a.AgentCard{
		Name: "Upstream Agent", Description: "the 0.3 extended card", Version: "1.0.0",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []goa2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}},
			{ID: "more", Name: "more", Description: "e", Tags: []string{"t"}}},
	}})
	runWorker(t, m, proxy.Config{URL: up.URL, Name: "xcard-v03", Guard: guard, Store: m.Store()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, version := range []string{"1.0", "0.3"} {
		ext, err := client.New(m.URL+"/agents/xcard-v03", client.WithProtocolVersion(version)).ExtendedCard(ctx)
		require.NoError(t, err, version)
		assert.Equal(t, "the 0.3 extended card", ext.Description, version)
		require.Len(t, ext.Skills, 2, version)
		assert.Equal(t, "more", ext.Skills[1].ID, version)
	}
}

// runWorker starts a proxy worker for cfg and waits until the mesh routes
// it.
func runWorker(t *testing.T, m *meshtest.Mesh, cfg proxy.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := proxy.New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &agentrt.Worker{Store: m.Store(), Agent: p, Concurrency: 2, Timeout: 20 * time.Second}
		_ = w.Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(m.URL + "/agents/" + cfg.Name + "/.well-known/agent-card.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "proxied agent %s never became routable", cfg.Name)
		time.Sleep(20 * time.Millisecond)
	}
}
