package tracing

import "github.com/a2amesh/a2amesh/a2a"

// ExtensionURI names the a2a.trace metadata convention as an A2A
// extension (spec §4.6). The URI is the mesh's own: a2amesh.dev is the
// project's name, not a standard body. The extension is never required:
// the mesh reads a send's a2a.trace entry (and the traceparent header)
// whether or not a client requests it, and writes one on the calls it
// makes itself (agents calling agents, proxy workers' upstream calls).
const ExtensionURI = "https://a2amesh.dev/ext/trace/v1"

// Extension is the card entry of the trace extension, which every card
// the mesh serves lists.
func Extension() a2a.AgentExtension {
	return a2a.AgentExtension{
		URI: ExtensionURI,
		Description: `Trace context in message metadata: params.metadata["` + MetadataKey + `"] = ` +
			`{"traceId": <32 hex>, "spanId": <16 hex>} is the caller's span, the parent of the mesh's spans ` +
			`for the call when no traceparent header is sent; the mesh writes it on the calls it makes.`,
	}
}
