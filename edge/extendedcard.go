package edge

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
)

// The extended agent card (GetExtendedAgentCard, spec §3.1.11, §13.3).
// Workers register an agent's extended card beside its public one
// (registry.Entry.ExtendedCard); the service picks the card of the agent
// a call addresses and the skills its caller may see (the auth file's
// skills=, auth.go); the transports point its interfaces at this edge, as
// for the public card (extendedCard), and answer it. The edge
// authenticates every call when it has an auth file, so an
// unauthenticated caller is refused before the service is asked.

// extendedCard is the extended card the service returned for the call in
// ctx, as the edge serves it: interfaces at base, the name the mesh knows
// the agent by, and the security and push support of this edge.
func (e *Edge) extendedCard(ctx context.Context, base string, c *a2a.AgentCard) *a2a.AgentCard {
	out := e.agentCardAt(base, service.CallFrom(ctx).ResolvedAgent(), *c)
	out.Capabilities.ExtendedAgentCard = a2a.Bool(true)
	out.SupportsAuthenticatedExtendedCard = a2a.Bool(true)
	if e.cfg.StrictCards {
		out.SupportsAuthenticatedExtendedCard = nil
	}
	return &out
}

// grpcBaseURL is the base URL the cards a gRPC call returns point at:
// PublicURL, else the HTTP URL of the host the call was made to (its
// :authority; the edge's HTTP port is not known there, so set
// --public-url for gRPC clients to get usable HTTP interfaces).
func (e *Edge) grpcBaseURL(ctx context.Context) string {
	if e.cfg.PublicURL != "" {
		return e.cfg.PublicURL
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if a := md.Get(":authority"); len(a) > 0 && a[0] != "" {
			return "http://" + a[0]
		}
	}
	return "http://localhost"
}

// noStoreExtended marks an extended card's answer as private: it depends
// on who asked (spec §13.3 asks for caching headers).
func noStoreExtended(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Add("Vary", "Authorization, X-Api-Key")
}
