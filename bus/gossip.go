package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Gossip is a core-NATS subject every member publishes small summaries on
// and hears everyone's (its own included): at most once, never stored, no
// replies. Publishing never waits on the network, so a caller on a
// request path is never held up by the bus.
type Gossip struct {
	nc      *nats.Conn
	subject string
}

// ErrNotConnected is a Gossip.Publish while the connection is down.
var ErrNotConnected = errors.New("bus: not connected")

// gossipPending bounds what a listener may have waiting to be handled:
// past it, messages are dropped (the subscription is a slow consumer)
// rather than held in memory.
const (
	gossipPendingMsgs  = 1024
	gossipPendingBytes = 16 << 20
)

// Gossip is subject as a gossip subject (the edges share their rate-limit
// spending on one: edge/limit_fleet.go).
func (b *Bus) Gossip(subject string) *Gossip {
	return &Gossip{nc: b.nc, subject: subject}
}

// Publish hands data to the connection for everyone listening and returns
// without waiting for the network. While the connection is not up it
// sends nothing and returns ErrNotConnected: a summary left in the
// reconnect buffer would arrive late, describing the past as the present.
func (g *Gossip) Publish(data []byte) error {
	if g.nc.Status() != nats.CONNECTED {
		return ErrNotConnected
	}
	return g.nc.Publish(g.subject, data)
}

// Listen calls handle with the payload of each message published on the
// subject, one message at a time, until the subscription is stopped.
// handle may keep data. Messages past a bounded backlog are dropped.
func (g *Gossip) Listen(handle func(data []byte)) (*Subscription, error) {
	sub, err := g.nc.Subscribe(g.subject, func(m *nats.Msg) { handle(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", g.subject, err)
	}
	if err := sub.SetPendingLimits(gossipPendingMsgs, gossipPendingBytes); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bus: subscribe %s: %w", g.subject, err)
	}
	return &Subscription{sub}, nil
}
