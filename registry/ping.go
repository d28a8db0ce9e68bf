package registry

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Liveness pings, on core NATS (no JetStream: they keep working while
// JetStream elects leaders). Every worker running Publish answers requests
// on two subjects:
//
//	a2a.registry.alive.<agent>.<instance>   this instance (edges' tables ask it when its heartbeat is late)
//	a2a.registry.alive.<agent>              any instance of the agent (queue group "alive"; Live asks it)
//
// and its connection (one per bus, shared by the agents it serves) on
//
//	a2a.registry.alive.proc.<proc>.conn     the connection (tables probe it a few times a second; proc.go)
//
// They are named here rather than in bus/names.go because only this
// package uses them: workers answer, tables and Live ask. With NATS
// authorization, workers need to subscribe to a2a.registry.alive.>, and
// edges and workers calling other agents to publish there (and receive
// replies on _INBOX.>).
const (
	subjAlivePrefix = "a2a.registry.alive."
	aliveQueue      = "alive"
)

// InstanceSubject is where one instance of agent answers liveness pings.
func InstanceSubject(agent, instance string) string { return subjAlivePrefix + agent + "." + instance }

// AgentSubject is where any one live instance of agent answers a liveness
// ping.
func AgentSubject(agent string) string { return subjAlivePrefix + agent }

// pingTimeout bounds one ping: a live instance answers in well under a
// millisecond on a LAN; one that does not answer within this is stopped,
// or its host is gone.
func pingTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/4, 100*time.Millisecond), time.Second)
}

// probeEvery is how long an answered ping vouches for an instance whose
// heartbeats fail: it is asked again after that.
func probeEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/4, 50*time.Millisecond), 2*time.Second)
}

// answerPings subscribes the instance's liveness subjects; the returned
// func unsubscribes them (idempotent). A subscription that fails is
// logged: the instance then lives on heartbeats alone.
func answerPings(b *bus.Bus, agent, instance string, log *slog.Logger) func() {
	if b == nil {
		return func() {}
	}
	var stops []func()
	if stop, err := b.Respond(InstanceSubject(agent, instance), "", []byte(instance)); err == nil {
		stops = append(stops, stop)
	} else {
		log.Warn("registry: cannot answer liveness pings; edges will drop this instance when a heartbeat is late", "err", err)
	}
	if stop, err := b.Respond(AgentSubject(agent), aliveQueue, []byte(instance)); err == nil {
		stops = append(stops, stop)
	} else {
		log.Warn("registry: cannot answer liveness pings for the agent", "err", err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		for _, stop := range stops {
			stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = b.Flush(ctx)
	}
}

// ping asks the instance (or agent) behind subject whether it is alive.
// nil: it answered; bus.ErrNoResponders: nothing subscribes there (the
// process is gone or stopped publishing); anything else: no answer in
// time.
func ping(ctx context.Context, r requester, subject string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := r.Request(ctx, subject)
	return err
}

// requester asks a subject (bus.Bus does).
type requester interface {
	Request(ctx context.Context, subject string) ([]byte, error)
}

// conn is what the prober asks of the connection (bus.Bus does): pings
// and probes, whether it is up and has reconnected, and the server it is
// on.
type conn interface {
	requester
	Connected() bool
	Reconnects() uint64
	ServerID() string
}
