package service

import (
	"slices"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// Extensions (spec §3.2.6, §4.6). A transport puts the extension URIs a
// client requests (the A2A-Extensions service parameter) in
// Call.Extensions and, once the method returns, echoes
// Call.ActivatedExtensions to the client. What is activated:
//
//   - the mesh's own extensions (MeshExtensions), whenever requested: the
//     mesh honours them on every call;
//   - for a send answered when its turn settled (a blocking SendMessage),
//     the requested extensions the agent activated while it ran, as its
//     worker recorded them with the task (taskstore.TaskRecord.Extensions);
//   - for a send answered before the agent ran or finished (a stream, whose
//     headers go out first; returnImmediately; a blocking send past its
//     bound), the requested extensions the agent's card declares: those
//     the agent supports and may activate. A stream's events carry the set
//     actually activated in their metadata (taskstore.MetaExtensions).
//
// A call to an agent whose card marks an extension required that the
// client did not request is refused with -32008 before anything else.

// MeshExtensions are the extensions the mesh itself implements for every
// agent; every card the edge serves lists them (none is required).
func MeshExtensions() []a2a.AgentExtension { return slices.Clone(meshExtensions) }

var meshExtensions = []a2a.AgentExtension{tracing.Extension()}

// ActivatedExtensions is what the transport echoes to the client: the
// requested extensions that apply to the call, known once the method has
// returned (for a stream, once it returned the stream).
func (c *Call) ActivatedExtensions() []string { return c.echo(c.activated) }

// ActivatedBy is what to echo when the agent's worker recorded the set
// recorded (taskstore.MetaExtensions): a stream's trailer, once its events
// told what the agent activated.
func (c *Call) ActivatedBy(recorded []string) []string {
	var agent []string
	for _, u := range recorded {
		if slices.Contains(c.Extensions, u) {
			agent = append(agent, u)
		}
	}
	return c.echo(agent)
}

// echo is the mesh's requested extensions, then agent's.
func (c *Call) echo(agent []string) []string {
	if len(c.Extensions) == 0 {
		return nil // most calls: nothing requested, nothing to echo
	}
	var out []string
	for _, e := range meshExtensions {
		if slices.Contains(c.Extensions, e.URI) {
			out = append(out, e.URI)
		}
	}
	for _, u := range agent {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// checkRequired refuses a call to an agent whose card marks an extension
// required that the call does not request (-32008, naming the first).
func (s *Service) checkRequired(c *Call) error {
	if c.agent == "" {
		return nil
	}
	card, ok := s.cfg.Agents.Lookup(c.agent)
	if !ok {
		return nil
	}
	for _, e := range card.Capabilities.Extensions {
		if e.Required && !slices.Contains(c.Extensions, e.URI) {
			return a2a.ErrExtensionSupportRequired.With("Extension support required: agent %s requires extension %s; request it in the A2A-Extensions header",
				c.agent, e.URI)
		}
	}
	return nil
}

// activateDeclared sets the call's activated extensions to the requested
// ones the agent's card declares (a send answered before its turn ended).
func (s *Service) activateDeclared(c *Call) {
	c.activated = nil
	if len(c.Extensions) == 0 {
		return
	}
	card, _ := s.cfg.Agents.Lookup(c.agent)
	for _, e := range card.Capabilities.Extensions {
		if slices.Contains(c.Extensions, e.URI) && !slices.Contains(c.activated, e.URI) {
			c.activated = append(c.activated, e.URI)
		}
	}
}

// activateRecorded sets the call's activated extensions to those the
// agent activated for the turn rec settled, as far as the call requested
// them.
func (c *Call) activateRecorded(rec *taskstore.TaskRecord) {
	c.activated = nil
	for _, u := range rec.Extensions {
		if slices.Contains(c.Extensions, u) {
			c.activated = append(c.activated, u)
		}
	}
}
