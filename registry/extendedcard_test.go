package registry

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// An agent's extended card travels in its entry beside the public card:
// edges' tables return both, a renewal with a changed or withdrawn
// extended card replaces it, and a lost agent keeps it for its grace.
func TestExtendedCardTravelsWithTheEntry(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 300 * time.Millisecond})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, stop := watchTable(t, b)

	var ext atomic.Pointer[a2a.AgentCard]
	ext.Store(&a2a.AgentCard{Name: "xc", Description: "extended"})
	cards := func() (a2a.AgentCard, *a2a.AgentCard) {
		return a2a.AgentCard{Name: "xc", Description: "public"}, ext.Load()
	}
	pub := make(chan struct{})
	go func() { defer close(pub); _ = PublishCards(ctx, b, Entry{Agent: "xc", Instance: "a"}, cards, log) }()
	waitFor(t, "the extended card", func() bool {
		c, x, ok := table.Cards("xc")
		return ok && c.Description == "public" && x != nil && x.Description == "extended"
	})
	ext.Store(nil)
	waitFor(t, "the extended card withdrawn", func() bool { _, x, ok := table.Cards("xc"); return ok && x == nil })
	stop()
	<-pub

	lost := NewTable(b)
	lost.LostGrace = time.Minute
	lost, _, stopLost := watchTableWith(t, b, lost)
	defer stopLost()
	lost.apply(fakeEntry{key: "gx.x", e: Entry{Agent: "gx", Instance: "x", Card: a2a.AgentCard{Name: "gx"},
		ExtendedCard: &a2a.AgentCard{Name: "gx", Description: "kept"}, TTL: 300 * time.Millisecond, Beat: time.Now()}}.entry())
	waitFor(t, "the instance to be dropped", func() bool { return lost.Workers()["gx"] == 0 })
	_, x, ok := lost.Cards("gx")
	require.True(t, ok, "routable during its grace")
	require.NotNil(t, x, "the extended card is kept through the grace")
	assert.Equal(t, "kept", x.Description)
}
