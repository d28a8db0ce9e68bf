package a2a

// DeclaresExtendedCard reports whether the card says its agent has an
// extended agent card (GetExtendedAgentCard), in the 1.0 field
// (capabilities.extendedAgentCard) or the 0.3 one
// (supportsAuthenticatedExtendedCard).
func (c *AgentCard) DeclaresExtendedCard() bool {
	return c.Capabilities.ExtendedAgentCard != nil && *c.Capabilities.ExtendedAgentCard ||
		c.SupportsAuthenticatedExtendedCard != nil && *c.SupportsAuthenticatedExtendedCard
}
