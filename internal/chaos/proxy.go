package chaos

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// routeProxies carry the NATS cluster's route traffic, so the harness can
// cut one node off: node i dials node j at proxy (i, j), which forwards to
// j's route port. Cutting node k closes every connection of the pairs
// (k, *) and (*, k) and refuses new ones until restored.
type routeProxies struct {
	n     int
	lns   [][]net.Listener // [from][to], nil on the diagonal
	mu    sync.Mutex
	cutOf []bool
	conns map[net.Conn][2]int
	wg    sync.WaitGroup
}

func newRouteProxies(routeAddrs []string) (*routeProxies, error) {
	n := len(routeAddrs)
	p := &routeProxies{n: n, lns: make([][]net.Listener, n), cutOf: make([]bool, n), conns: map[net.Conn][2]int{}}
	for i := 0; i < n; i++ {
		p.lns[i] = make([]net.Listener, n)
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				p.close()
				return nil, err
			}
			p.lns[i][j] = ln
			p.wg.Add(1)
			go p.serve(ln, i, j, routeAddrs[j])
		}
	}
	return p, nil
}

// addr is where node i reaches node j.
func (p *routeProxies) addr(i, j int) string { return p.lns[i][j].Addr().String() }

func (p *routeProxies) serve(ln net.Listener, from, to int, target string) {
	defer p.wg.Done()
	for k := 0; k < 1_000_000_000; k++ {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cutOf[from] || p.cutOf[to]
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.pipe(c, from, to, target)
		}()
	}
}

func (p *routeProxies) pipe(c net.Conn, from, to int, target string) {
	u, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cutOf[from] || p.cutOf[to] {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = [2]int{from, to}, [2]int{from, to}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a broken link does.
		dst.Close()
		src.Close()
	}
	go cp(u, c)
	go cp(c, u)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// links counts the open proxied connections between node k and each other
// node (both directions): 0 for a pair whose route does not go through
// the proxies (a route made to a gossiped address).
func (p *routeProxies) links(k int) map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int{}
	for i := 0; i < p.n; i++ {
		if i != k {
			out[i] = 0
		}
	}
	for _, pair := range p.conns {
		switch k {
		case pair[0]:
			out[pair[1]]++
		case pair[1]:
			out[pair[0]]++
		}
	}
	return out
}

// cut cuts (on) or restores node k's route traffic.
func (p *routeProxies) cut(k int, on bool) {
	if k < 0 || k >= p.n {
		panic(fmt.Sprintf("chaos: no node %d", k))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOf[k] = on
	if !on {
		return
	}
	for c, pair := range p.conns {
		if pair[0] == k || pair[1] == k {
			c.Close()
		}
	}
}

// close stops every proxy and waits for its connections to end.
func (p *routeProxies) close() {
	for _, row := range p.lns {
		for _, ln := range row {
			if ln != nil {
				ln.Close()
			}
		}
	}
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
