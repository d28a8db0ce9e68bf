// Package natsnode runs a NATS server with JetStream inside an a2amesh
// process: the single node of a2amesh dev, a node of a2amesh nats (alone
// or in a cluster), and the servers of the tests. It keeps the node
// writing when its disk filled and space came back (storewatch.go), which
// nats-server does not do by itself. It knows nothing of the mesh's
// layout: package bus opens that on a connection to any NATS server,
// embedded or not.
package natsnode
