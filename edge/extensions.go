package edge

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Extensions on the wire (spec §3.2.6, §9.2, §10.2, §11): a client
// requests extensions with the A2A-Extensions service parameter, an HTTP
// header on JSON-RPC and HTTP+JSON and gRPC metadata (a2a-extensions);
// 0.3 clients send X-A2A-Extensions, which the edge reads too, in every
// version. The answer echoes the activated ones (service.Call's
// ActivatedExtensions) under the same name: an HTTP response header,
// X-A2A-Extensions for a 0.3 call; gRPC response header metadata, and
// for a stream also its trailer, which holds the set the agent activated
// by the end of the stream (the header went out before the agent ran).
const (
	headerExtensions    = "A2A-Extensions"
	headerExtensionsV03 = "X-A2A-Extensions"
	mdExtensions        = "a2a-extensions"
	mdExtensionsV03     = "x-a2a-extensions"
)

// requestedExtensions are the extensions an HTTP request asks for.
func requestedExtensions(h http.Header) []string {
	return a2a.ParseExtensions(append(h.Values(headerExtensions), h.Values(headerExtensionsV03)...)...)
}

// grpcRequestedExtensions are the extensions a gRPC call asks for.
func grpcRequestedExtensions(md metadata.MD) []string {
	return a2a.ParseExtensions(append(md.Get(mdExtensions), md.Get(mdExtensionsV03)...)...)
}

// echoExtensions sets the response header naming the call's activated
// extensions, if any; before the answer's headers are written.
func echoExtensions(w http.ResponseWriter, v a2a.Version, sc *service.Call) {
	if sc == nil {
		return
	}
	act := sc.ActivatedExtensions()
	if len(act) == 0 {
		return
	}
	name := headerExtensions
	if v == a2a.V03 {
		name = headerExtensionsV03
	}
	w.Header().Set(name, strings.Join(act, ","))
}

// grpcEchoExtensions sends the call's activated extensions as response
// header metadata (a unary call's, after its handler succeeded).
func grpcEchoExtensions(ctx context.Context) {
	if act := service.CallFrom(ctx).ActivatedExtensions(); len(act) > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs(mdExtensions, strings.Join(act, ",")))
	}
}

// streamExtensions follows what a gRPC stream's events record of the
// agent's activated extensions (taskstore.MetaExtensions), for its trailer.
type streamExtensions struct {
	sc       *service.Call
	recorded []string
	seen     bool
}

func (s *streamExtensions) note(ev *a2a.StreamResponse) {
	if exts, ok := taskstore.EventExtensions(ev); ok {
		s.recorded, s.seen = exts, true
	}
}

// trailer is the stream's trailer: what to echo given the set the
// agent last recorded (nil when no event recorded one).
func (s *streamExtensions) trailer() metadata.MD {
	if !s.seen {
		return nil
	}
	act := s.sc.ActivatedBy(s.recorded)
	if len(act) == 0 {
		return nil
	}
	return metadata.Pairs(mdExtensions, strings.Join(act, ","))
}

// withMeshExtensions returns c listing the mesh's own extensions
// (service.MeshExtensions) after the agent's, unless it declares them
// itself. The card's extension list is copied, not appended to: it may
// be the registry's.
func withMeshExtensions(c a2a.AgentCard) a2a.AgentCard {
	exts := slices.Clone(c.Capabilities.Extensions)
	for _, m := range service.MeshExtensions() {
		if !slices.ContainsFunc(exts, func(x a2a.AgentExtension) bool { return x.URI == m.URI }) {
			exts = append(exts, m)
		}
	}
	c.Capabilities.Extensions = exts
	return c
}
