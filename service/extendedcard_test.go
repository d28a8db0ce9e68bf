package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/service"
)

// xagents is a registry whose agents may have extended cards.
type xagents map[string][2]*a2a.AgentCard

func (a xagents) Lookup(name string) (a2a.AgentCard, bool) {
	c, _, ok := a.Cards(name)
	return c, ok
}
func (a xagents) Loaded() bool { return true }
func (a xagents) Cards(name string) (a2a.AgentCard, *a2a.AgentCard, bool) {
	c, ok := a[name]
	if !ok {
		return a2a.AgentCard{}, nil, false
	}
	return *c[0], c[1], true
}

// GetExtendedAgentCard answers per the public card's declaration and the
// caller: -32004 without the capability (or on the mesh endpoint), -32007
// when declared and not registered, and the extended card with the skills
// the caller may see (the public card's always).
func TestGetExtendedAgentCard(t *testing.T) {
	skill := func(id string) a2a.AgentSkill { return a2a.AgentSkill{ID: id, Name: id} }
	public := &a2a.AgentCard{Name: "x", Capabilities: a2a.AgentCapabilities{ExtendedAgentCard: a2a.Bool(true)},
		Skills: []a2a.AgentSkill{skill("base")}}
	ext := &a2a.AgentCard{Name: "x", Description: "more", Skills: []a2a.AgentSkill{skill("base"), skill("extra"), skill("other")}}
	v03 := &a2a.AgentCard{Name: "old", SupportsAuthenticatedExtendedCard: a2a.Bool(true)}
	b := bustest.OpenStore(t, bus.Config{})
	svc := service.New(service.Config{Store: b, KeepAlive: time.Hour,
		Agents: xagents{"x": {public, ext}, "plain": {&a2a.AgentCard{Name: "plain"}, ext}, "bare": {public, nil}, "old": {v03, ext}},
		SkillVisible: func(principal, agent, skill string) bool {
			return principal != "bob" || skill == "other"
		}})
	ctx := testCtx(t)
	get := func(principal, agent string) (*a2a.AgentCard, error) {
		return svc.GetExtendedAgentCard(as(ctx, principal, agent), &service.GetExtendedAgentCardRequest{})
	}
	ids := func(c *a2a.AgentCard) []string {
		var out []string
		for _, s := range c.Skills {
			out = append(out, s.ID)
		}
		return out
	}

	c, err := get("alice", "x")
	require.NoError(t, err)
	assert.Equal(t, "more", c.Description)
	assert.Equal(t, []string{"base", "extra", "other"}, ids(c))
	c, err = get("bob", "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"base", "other"}, ids(c), "bob sees the public skill and the one allowed")
	assert.Len(t, ext.Skills, 3, "the registered card is not changed")
	c, err = get("alice", "old")
	require.NoError(t, err, "the 0.3 field declares it too")
	assert.Equal(t, "more", c.Description)

	_, err = get("alice", "plain")
	requireCode(t, err, a2a.CodeUnsupportedOperation)
	_, err = get("alice", "")
	requireCode(t, err, a2a.CodeUnsupportedOperation)
	_, err = get("alice", "bare")
	requireCode(t, err, a2a.CodeExtendedCardNotConfigured)
	_, err = get("alice", "nobody")
	requireCode(t, err, a2a.CodeInvalidParams)
}
