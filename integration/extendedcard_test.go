package integration

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/stretchr/testify/require"

	a2amesh "github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/registry"
)

// xcardNone is an agent of the bindings suite whose card declares an
// extended card while it registered none (publishXCardNone).
const xcardNone = "xcard-none"

// publishXCardNone registers xcardNone in m's registry, as a worker would,
// until the test ends, and waits for the edge to list it.
func publishXCardNone(t *testing.T, m *rawMesh) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		card := a2amesh.AgentCard{Name: xcardNone, Description: "declares an extended card it does not have",
			Capabilities: a2amesh.AgentCapabilities{ExtendedAgentCard: a2amesh.Bool(true)}}
		_ = registry.PublishCards(ctx, m.Bus(), registry.Entry{Agent: xcardNone, Instance: "only"},
			func() (a2amesh.AgentCard, *a2amesh.AgentCard) { return card, nil }, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(m.URL + "/agents/" + xcardNone + "/.well-known/agent-card.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "%s never listed", xcardNone)
		time.Sleep(20 * time.Millisecond)
	}
}

// The official Go SDK's client reads echo's public card (1.0 and 0.3
// parsers), sees the extended card declared, and gets it with
// GetExtendedAgentCard, with the extra skill and interfaces at the edge.
// The mesh runs without auth: the SDK (v2.4) cannot parse the
// securityRequirements of a secured card's answer (TestA2AGoReadsSecuredCards
// works around it for the public card only); the bindings suite covers
// the extended card with auth through every binding.
func TestA2AGoGetsExtendedCard(t *testing.T) {
	m := startRawMesh(t)
	for _, tc := range []struct {
		name   string
		parser agentcard.Parser
	}{{"v1.0", agentcard.DefaultCardParser}, {"v0.3", a2av0.NewAgentCardParser()}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := gosdkStepContext(t)
			hc, _ := gosdkHTTPClient()
			resolver := &agentcard.Resolver{Client: hc, CardParser: tc.parser}
			card, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "echo"))
			require.NoError(t, err)
			require.True(t, card.Capabilities.ExtendedAgentCard, "echo's public card declares its extended card")
			require.NotContains(t, skillIDs(card), agents.EchoDataSkill, "the public card lacks the extra skill")

			factory := a2aclient.NewFactory(a2aclient.WithJSONRPCTransport(hc))
			if tc.name == "v0.3" {
				factory = gosdkV03Factory(hc)
			}
			client, err := factory.CreateFromCard(ctx, card)
			require.NoError(t, err)
			defer client.Destroy()
			ext, err := client.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
			require.NoError(t, err)
			require.Equal(t, "echo", ext.Name)
			require.Contains(t, skillIDs(ext), agents.EchoDataSkill)
			require.True(t, ext.Capabilities.ExtendedAgentCard)
			require.NotEmpty(t, ext.SupportedInterfaces)
			for _, in := range ext.SupportedInterfaces {
				require.Contains(t, in.URL, m.URL, "interfaces point at the edge")
			}

			// An agent without the capability: the SDK's typed error.
			slow, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "slow"))
			require.NoError(t, err)
			require.False(t, slow.Capabilities.ExtendedAgentCard)
			sc, err := factory.CreateFromCard(ctx, slow)
			require.NoError(t, err)
			defer sc.Destroy()
			slow.Capabilities.ExtendedAgentCard = true // past the SDK's own check, to the edge
			require.NoError(t, sc.UpdateCard(slow))
			_, err = sc.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
			require.ErrorIs(t, err, a2a.ErrUnsupportedOperation)
		})
	}
}

func skillIDs(c *a2a.AgentCard) []string {
	var out []string
	for _, s := range c.Skills {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}
