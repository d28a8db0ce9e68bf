// Package bus owns everything the mesh keeps on NATS JetStream: the
// connection, the embedded server, the streams, key-value buckets and
// subjects (all named in names.go), the task event log with its
// compare-and-set append, the per-agent work queues and the control subject.
//
// Edges and workers meet only here. bus imports a2a and the NATS libraries;
// it never imports edge, agentrt or cmd.
package bus
