// Package natstest runs real NATS servers with JetStream in the test
// process, on loopback: a single node, or a 3-node cluster whose nodes can
// be stopped and restarted on their data (same ports, same names), for
// failover tests. Test support only.
package natstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Node is one nats-server.
type Node struct {
	Name string
	opts server.Options

	mu  sync.Mutex
	srv *server.Server // nil while stopped
}

// Cluster is a set of routed nodes.
type Cluster struct {
	Nodes []*Node
}

// freeAddr returns a loopback host:port nobody listens on right now.
func freeAddr(t testing.TB) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: free port: %v", err)
	}
	defer ln.Close()
	a := ln.Addr().(*net.TCPAddr)
	return a.String(), a.Port
}

// StartCluster starts n routed JetStream nodes on loopback (n >= 1), each
// with its own data dir, and waits until their meta group has a leader.
// They stop when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	routes := make([]string, n)
	ports := make([]int, n)
	for i := range n {
		var addr string
		addr, ports[i] = freeAddr(t)
		routes[i] = "nats-route://" + addr
	}
	for i := range n {
		_, port := freeAddr(t)
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		c.Nodes = append(c.Nodes, &Node{Name: fmt.Sprintf("n%d", i), opts: server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       port,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			MaxPayload: 8 << 20,
			Cluster:    server.ClusterOpts{Name: "natstest", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(others, ",")),
		}})
	}
	t.Cleanup(c.StopAll)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, nd := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nd.start() }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("natstest: %v", err)
		}
	}
	if n > 1 {
		c.WaitMetaLeader(t, 30*time.Second)
	}
	return c
}

// StartSingle starts one JetStream node (a cluster of one, not clustered).
func StartSingle(t testing.TB) *Node {
	t.Helper()
	_, port := freeAddr(t)
	nd := &Node{Name: "single", opts: server.Options{
		ServerName: "single", Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true, MaxPayload: 8 << 20,
	}}
	if err := nd.start(); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	t.Cleanup(nd.Stop)
	return nd
}

func (nd *Node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.srv != nil {
		return nil
	}
	opts := nd.opts // a copy: the server keeps and changes its options
	s, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("%s: %w", nd.Name, err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("%s: not ready after 20s", nd.Name)
	}
	nd.srv = s
	return nil
}

// Start restarts a stopped node on its data, ports and name.
func (nd *Node) Start(t testing.TB) {
	t.Helper()
	if err := nd.start(); err != nil {
		t.Fatalf("natstest: %v", err)
	}
}

// Stop shuts the node down (no-op when stopped).
func (nd *Node) Stop() {
	nd.mu.Lock()
	s := nd.srv
	nd.srv = nil
	nd.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Server is the running server (nil while stopped).
func (nd *Node) Server() *server.Server {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.srv
}

// URL is the node's client URL (also while stopped).
func (nd *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", nd.opts.Port) }

// URLs lists every node's client URL, comma-separated, starting at node
// first.
func (c *Cluster) URLs(first int) string {
	var u []string
	for i := range c.Nodes {
		u = append(u, c.Nodes[(first+i)%len(c.Nodes)].URL())
	}
	return strings.Join(u, ",")
}

// StopAll stops every node.
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, nd := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); nd.Stop() }()
	}
	wg.Wait()
}

// WaitMetaLeader waits until some running node sees a JetStream meta
// leader.
func (c *Cluster) WaitMetaLeader(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, nd := range c.Nodes {
			if s := nd.Server(); s != nil && s.JetStreamIsLeader() {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("natstest: no JetStream meta leader after %v", within)
}

// Connect opens a client connection to the given URLs that reconnects for
// ever (as the mesh's roles do) and closes when the test ends.
func Connect(t testing.TB, name, urls string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(urls, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.DontRandomize())
	if err != nil {
		t.Fatalf("natstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Eventually polls cond every 20ms until it holds or within passes.
func Eventually(ctx context.Context, within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}
