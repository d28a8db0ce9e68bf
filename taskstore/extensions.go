package taskstore

import "github.com/a2amesh/a2amesh/a2a"

// MetaExtensions is the metadata key under which a worker records the
// extensions its agent activated for the current user turn: a status or
// artifact update event carries the whole set (a JSON array of URIs) when
// it differs from what the task last recorded. The fold keeps the latest
// set in TaskRecord.Extensions, so whoever reads the settled task (the
// edge that answers a blocking send, on any node) knows what to echo.
const MetaExtensions = "a2amesh.extensions"

// EventExtensions returns the activated set an event records, and whether
// it records one.
func EventExtensions(ev *a2a.StreamResponse) ([]string, bool) {
	var md a2a.Metadata
	switch {
	case ev.StatusUpdate != nil:
		md = ev.StatusUpdate.Metadata
	case ev.ArtifactUpdate != nil:
		md = ev.ArtifactUpdate.Metadata
	}
	v, ok := md[MetaExtensions]
	if !ok {
		return nil, false
	}
	return ExtensionList(v), true
}

// ExtensionList reads a MetaExtensions value: a list of strings, as
// written ([]string) or as decoded from JSON ([]any). Anything else is an
// empty set.
func ExtensionList(v any) []string {
	switch l := v.(type) {
	case []string:
		return append([]string(nil), l...)
	case []any:
		out := make([]string, 0, len(l))
		for _, e := range l {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
