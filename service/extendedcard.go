package service

import (
	"context"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/policy"
)

// ExtendedCards is what GetExtendedAgentCard reads of the agent registry
// when Config.Agents has it (registry.Table does): an agent's public card
// and its extended card (nil when it registered none).
type ExtendedCards interface {
	Cards(agent string) (card a2a.AgentCard, ext *a2a.AgentCard, ok bool)
}

// GetExtendedAgentCardRequest is the request of GetExtendedAgentCard.
type GetExtendedAgentCardRequest struct {
	Tenant string `json:"tenant,omitempty"`
}

// GetExtendedAgentCard returns the extended card of the agent the call
// addresses, as the caller may see it: the skills its public card does not
// list are kept only where Config.SkillVisible allows them. An agent whose
// public card does not declare the capability
// (capabilities.extendedAgentCard, or 0.3's
// supportsAuthenticatedExtendedCard) is answered UnsupportedOperation
// (-32004), as is the mesh endpoint without an agent; one that declares it
// but registered no extended card, ExtendedAgentCardNotConfigured (-32007)
// (spec §3.3.4).
//
// The card is returned as the agent registered it: the transport points
// its interfaces at the edge, as it does for the public card. Who may
// call at all is the transport's business (the edge authenticates every
// call before it reaches the service).
func (s *Service) GetExtendedAgentCard(ctx context.Context, req *GetExtendedAgentCardRequest) (_ *a2a.AgentCard, err error) {
	c, err := s.resolve(ctx, "GetExtendedAgentCard", policy.ExtendedCard, req.Tenant, "")
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	if c.agent == "" {
		return nil, a2a.ErrUnsupportedOperation.With("the mesh card declares no extended agent card: " +
			"name an agent (POST to /agents/<name>, or the tenant field) to get its extended card")
	}
	var (
		card a2a.AgentCard
		ext  *a2a.AgentCard
		ok   bool
	)
	if x, has := s.cfg.Agents.(ExtendedCards); has {
		card, ext, ok = x.Cards(c.agent)
	} else {
		card, ok = s.cfg.Agents.Lookup(c.agent)
	}
	if !ok {
		if !s.cfg.Agents.Loaded() {
			return nil, errRegistryLoading
		}
		return nil, errUnknownAgent(c.agent)
	}
	if !card.DeclaresExtendedCard() {
		return nil, a2a.ErrUnsupportedOperation.With("agent %q declares no extended agent card (capabilities.extendedAgentCard)", c.agent)
	}
	if ext == nil {
		return nil, a2a.ErrExtendedCardNotConfigured.With("agent %q declares an extended agent card but has none configured", c.agent)
	}
	out := *ext
	out.Skills = s.visibleSkills(c.Principal, c.agent, card.Skills, ext.Skills)
	return &out, nil
}

// visibleSkills is ext minus the skills the public card does not list and
// principal may not see. It does not change ext.
func (s *Service) visibleSkills(principal, agent string, public, ext []a2a.AgentSkill) []a2a.AgentSkill {
	if s.cfg.SkillVisible == nil {
		return ext
	}
	listed := make(map[string]bool, len(public))
	for _, sk := range public {
		listed[sk.ID] = true
	}
	out := make([]a2a.AgentSkill, 0, len(ext))
	for _, sk := range ext {
		if listed[sk.ID] || s.cfg.SkillVisible(principal, agent, sk.ID) {
			out = append(out, sk)
		}
	}
	return out
}
