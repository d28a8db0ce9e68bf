package agentrt

import (
	"maps"
	"slices"
	"sync"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Extensions (spec §4.6): a client requests extensions by URI (the
// A2A-Extensions service parameter); the agent reads them in
// Request.Extensions, activates the ones it applies to the turn with
// Request.Activate, and the edge echoes the activated ones to the client.
// An agent declares the extensions it supports in its card
// (Capabilities.Extensions); one marked Required is refused by the edge
// (-32008) when a client does not request it, before the agent runs.

// Requested reports whether the client requested extension uri.
func (r *Request) Requested(uri string) bool {
	return slices.Contains(r.Extensions, uri)
}

// Activate marks extension uri as applied to this turn: the worker records
// it with the turn's next event, and the edge echoes it in its answer
// (the A2A-Extensions response header or gRPC metadata). Only a requested
// extension can be activated: Activate reports false, and records
// nothing, for one the client did not request. Activating one twice is
// harmless.
func (r *Request) Activate(uri string) bool {
	if !r.Requested(uri) {
		return false
	}
	if r.act != nil {
		r.act.add(uri)
	}
	return true
}

// Activated returns the extensions activated for this turn so far.
func (r *Request) Activated() []string {
	if r.act == nil {
		return nil
	}
	return r.act.list()
}

// activation is the set of extensions one run activated, shared by the
// run's Request and its writer.
type activation struct {
	mu   sync.Mutex
	uris []string
}

func (a *activation) add(uri string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.uris, uri) {
		a.uris = append(a.uris, uri)
	}
}

func (a *activation) list() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.uris)
}

// withExtensions returns ev carrying the run's activated set in its
// metadata (taskstore.MetaExtensions) when the task's record holds another set
// (recorded is nil for none): the first event after an Activate records
// it, and a re-run of a turn whose dead run activated others corrects
// the record with its first event. Only status and artifact updates carry
// metadata; ev itself is not modified.
func withExtensions(ev *a2a.StreamResponse, set, recorded []string) *a2a.StreamResponse {
	if slices.Equal(set, recorded) || (len(set) == 0 && len(recorded) == 0) {
		return ev
	}
	if set == nil {
		set = []string{}
	}
	add := func(md a2a.Metadata) a2a.Metadata {
		out := make(a2a.Metadata, len(md)+1)
		maps.Copy(out, md)
		out[taskstore.MetaExtensions] = set
		return out
	}
	switch {
	case ev.StatusUpdate != nil:
		u := *ev.StatusUpdate
		u.Metadata = add(u.Metadata)
		return &a2a.StreamResponse{StatusUpdate: &u}
	case ev.ArtifactUpdate != nil:
		u := *ev.ArtifactUpdate
		u.Metadata = add(u.Metadata)
		return &a2a.StreamResponse{ArtifactUpdate: &u}
	}
	return ev
}
