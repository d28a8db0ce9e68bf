// Package bus is the mesh's small NATS layer: the connection, the names
// of the shared resources (names.go), and typed primitives over JetStream — creating or updating a stream or bucket
// (EnsureStream, EnsureKV), a publish and a read retried through a
// failover (Publish, Read), the per-agent work queues with their
// consumers, dead letters, leases, the control subject — for the packages
// above it. It knows no features: the task store (package taskstore) owns
// the tasks' layout and rules, and package push its push configs, delivery
// jobs and delivery log (push/configs.go, push/log.go). names.go keeps
// only the names another package must share with a feature's.
//
// bus imports the NATS client libraries (and a2a for the one error a
// failover gives callers); it never imports edge, agentrt or cmd. A
// work item's content is the task store's (taskstore.WorkItem): bus
// queues bytes. Each user gets the narrow role it needs (roles.go): a Consumer
// handing out Msgs to ack, nak, hold (InProgress) or term, a KV with a
// Watcher, ConsumerStats for metrics, Request/Respond for liveness pings,
// and a Subscription to Stop. Only its hosts dial (Dial) or start an
// embedded server (package natsnode), and hand the connection to Open.
package bus
