package bus

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// What the registry's liveness checks need beyond Request and Respond
// (roles.go): which NATS server a connection is on, and an answer made at
// the moment of each request, so a worker can say where it is now.

// ServerID is the id of the NATS server the connection is on right now
// ("" while it is not connected). Ids are unique: a restarted node gets a
// new one.
func (b *Bus) ServerID() string { return b.nc.ConnectedServerId() }

// RespondFunc answers every request on subject with what reply returns at
// that moment, until stop is called.
func (b *Bus) RespondFunc(subject string, reply func() []byte) (stop func(), err error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(reply()) })
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
