package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// TestNodeSDKVerifiesCards: the signatures on every card the mesh serves
// (mesh card, agent card, the cards of /agents) verify with the
// JavaScript SDK's own verifier (@a2a-js/sdk verifyAgentCardSignature,
// over the jose library), which canonicalizes the card by itself; a
// tampered card does not. After a key rotation each card carries two
// signatures and each verifies on its own.
func TestNodeSDKVerifiesCards(t *testing.T) {
	node, dir := requireNode(t)
	m := meshtest.Start(t)
	t.Run("one key", func(t *testing.T) {
		runNodeChecks(t, node, dir, "cards.mjs", m.URL)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cardsig.Rotate(ctx, cardStore(t, m.Store()))
	require.NoError(t, err)
	time.Sleep(3 * time.Second) // past the edge's key recheck interval (2 s)
	t.Run("rotation", func(t *testing.T) {
		runNodeChecks(t, node, dir, "cards.mjs", m.URL, "2")
	})
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
