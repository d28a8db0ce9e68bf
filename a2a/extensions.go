package a2a

import (
	"slices"
	"strings"
)

// ParseExtensions reads A2A-Extensions values (each a comma-separated
// list of URIs, as a header may repeat) into a list without blanks or
// repeats, in the order given. At most MaxExtensions are kept, each at
// most MaxExtensionURI bytes: a server's requested set rides on its work
// items, and a client's echoed set is kept for the caller.
func ParseExtensions(values ...string) []string {
	var out []string
	for _, v := range values {
		for _, u := range strings.Split(v, ",") {
			u = strings.TrimSpace(u)
			if u == "" || len(u) > MaxExtensionURI || slices.Contains(out, u) {
				continue
			}
			if len(out) == MaxExtensions {
				return out
			}
			out = append(out, u)
		}
	}
	return out
}

// Bounds of ParseExtensions.
const (
	MaxExtensions   = 32
	MaxExtensionURI = 512
)
