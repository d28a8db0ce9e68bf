package registry

// CardCheck says what a proxy worker verified of the signatures on its
// upstream agent's card (agentrt/proxy, docs/cards.md). Edges list it in
// GET /agents under "cardChecks", by agent.
type CardCheck struct {
	// Status is CardVerified, CardUnsigned or CardInvalid.
	Status string `json:"status"`
	// KeyIDs are the kids of the signatures that verified.
	KeyIDs []string `json:"kids,omitempty"`
	// JKU is the JWK Set the keys were read from.
	JKU string `json:"jku,omitempty"`
	// Error says why the card is CardInvalid.
	Error string `json:"error,omitempty"`
}

// The statuses of a CardCheck.
const (
	CardVerified = "verified" // a signature holds with a key of the upstream's JWK Set
	CardUnsigned = "unsigned" // the card carries no signature
	CardInvalid  = "invalid"  // it carries signatures, and none could be verified
)
