package client

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/a2a"
)

// Extensions asks calls for A2A extensions (spec §4.6) and collects the
// ones the server says it activated. Attach it to a call's context with
// WithExtensions; the client sends Requested in the A2A-Extensions
// service parameter (the HTTP header, X-A2A-Extensions for a 0.3
// client; gRPC metadata a2a-extensions) and adds what the answer echoes
// (the same header, or gRPC header and trailer metadata) to Activated.
// A stream's answer is read when it opens and, over gRPC, again when it
// ends (its trailer). One Extensions may serve several calls, also at
// once.
type Extensions struct {
	Requested []string

	mu        sync.Mutex
	activated []string
}

// Activated returns the extensions the server echoed so far.
func (e *Extensions) Activated() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.activated)
}

// note adds the URIs of echoed header values.
func (e *Extensions) note(values []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range a2a.ParseExtensions(values...) {
		if !slices.Contains(e.activated, u) {
			e.activated = append(e.activated, u)
		}
	}
}

type extensionsKey struct{}

// WithExtensions returns ctx carrying e for the calls made with it.
func WithExtensions(ctx context.Context, e *Extensions) context.Context {
	return context.WithValue(ctx, extensionsKey{}, e)
}

func extensionsFrom(ctx context.Context) *Extensions {
	e, _ := ctx.Value(extensionsKey{}).(*Extensions)
	return e
}

// Header names of the A2A-Extensions service parameter.
const (
	headerExtensions    = "A2A-Extensions"
	headerExtensionsV03 = "X-A2A-Extensions"
	mdExtensions        = "a2a-extensions"
	mdExtensionsV03     = "x-a2a-extensions"
)

// setExtensions puts the requested extensions of req's context in its
// headers.
func (c *Client) setExtensions(req *http.Request) {
	e := extensionsFrom(req.Context())
	if e == nil || len(e.Requested) == 0 {
		return
	}
	name := headerExtensions
	if c.v03 {
		name = headerExtensionsV03
	}
	req.Header.Set(name, strings.Join(e.Requested, ","))
}

// noteExtensions records what an HTTP answer echoes.
func noteExtensions(ctx context.Context, h http.Header) {
	if e := extensionsFrom(ctx); e != nil {
		e.note(append(h.Values(headerExtensions), h.Values(headerExtensionsV03)...))
	}
}

// grpcExtensions adds the requested extensions of ctx to md.
func grpcExtensions(ctx context.Context, md metadata.MD) {
	if e := extensionsFrom(ctx); e != nil && len(e.Requested) > 0 {
		md.Set(mdExtensions, strings.Join(e.Requested, ","))
	}
}

// noteGRPCExtensions records what gRPC metadata (a header or a trailer)
// echoes.
func noteGRPCExtensions(ctx context.Context, md metadata.MD) {
	if e := extensionsFrom(ctx); e != nil && md != nil {
		e.note(append(md.Get(mdExtensions), md.Get(mdExtensionsV03)...))
	}
}
