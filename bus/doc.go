// Package bus owns everything the mesh keeps on NATS JetStream: the
// connection, the embedded server, the streams, key-value buckets and
// subjects (all named in names.go), the task event log with its
// compare-and-set append, the per-agent work queues and the control subject.
//
// Edges and workers meet only here. bus imports a2a and the NATS libraries;
// it never imports edge, agentrt or cmd. No NATS type leaves it: each user
// gets the narrow role it needs (roles.go) — a Consumer handing out Msgs
// to ack, nak, hold (InProgress) or term (the worker's work queue, the
// push deliverer's two consumers), a KV with a Watcher (the registry's
// cards, the proxy workers' upstream ids, the push configs),
// ConsumerStats for metrics, Queues and TaskLog for the operator API
// (work queue figures, a task's log replayed), Request/Respond for
// liveness pings, and a
// Subscription to Stop for cancels and settlement. Only its hosts touch
// NATS itself: they start servers and dial (Dial, StartServer), and hand
// the connection to Open.
//
// A Bus's upkeep (retention: Trim every few seconds) is its Run(ctx),
// which the host runs beside its other components for as long as it uses
// the bus.
package bus
