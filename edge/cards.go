package edge

import (
	"net"
	"net/url"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// The bindings the edge serves beside JSON-RPC, as its cards list them
// (spec §8.3): every card lists every binding, each rewritten to the
// edge's public address, JSON-RPC first (clients prefer the first entry).
//
//   - HTTP+JSON is served under each agent's path (/agents/{name}) and at
//     the edge's base, where the tenant names the agent (/{tenant}/...).
//   - gRPC is served on its own listener (Config.GRPCURL), where the
//     request's tenant field names the agent.

// restBinding is whether the edge serves HTTP+JSON (rest.go).
const restBinding = true

// moreBindings are the interfaces of the other bindings for the card of
// agent (empty: the mesh card, whose calls need no tenant).
func (e *Edge) moreBindings(base, agent string) []a2a.AgentInterface {
	var ifs []a2a.AgentInterface
	if restBinding {
		if agent == "" {
			ifs = append(ifs, a2a.AgentInterface{URL: base, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: string(a2a.V10)})
		} else {
			ifs = append(ifs,
				a2a.AgentInterface{URL: base + "/agents/" + agent, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: string(a2a.V10)},
				a2a.AgentInterface{URL: base, ProtocolBinding: a2a.BindingHTTPJSON, Tenant: agent, ProtocolVersion: string(a2a.V10)})
		}
	}
	if u := e.grpcURL(base); u != "" {
		ifs = append(ifs, a2a.AgentInterface{URL: u, ProtocolBinding: a2a.BindingGRPC, Tenant: agent, ProtocolVersion: string(a2a.V10)})
	}
	return ifs
}

// grpcURL is the address gRPC clients reach the edge at ("": gRPC off), a
// gRPC target (host:port, what the SDKs' gRPC clients dial; see
// internal/cardcheck's grpcTarget): Config.GRPCURL, whose host, when it is
// empty, unspecified ("0.0.0.0", "[::]") or this machine (a loopback
// address, "localhost"), is the host of base, the host the client reached
// the card by, as the HTTP interfaces' is: a client that came by
// "localhost" is not handed "127.0.0.1".
func (e *Edge) grpcURL(base string) string {
	g := e.cfg.GRPCURL
	if g == "" {
		return ""
	}
	hostPort := g
	if i := strings.Index(g, "://"); i >= 0 {
		hostPort = g[i+3:]
	}
	host, port, ok := strings.Cut(hostPort, ":")
	if strings.HasPrefix(hostPort, "[") {
		if j := strings.Index(hostPort, "]:"); j >= 0 {
			host, port, ok = hostPort[:j+1], hostPort[j+2:], true
		}
	}
	if !ok || (host != "" && host != "0.0.0.0" && host != "[::]" && host != "::" && !loopbackHost(host)) {
		return g
	}
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		h := u.Hostname()
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		return h + ":" + port
	}
	return g
}

// loopbackHost reports whether host (an address's host, IPv6 in brackets)
// names this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
