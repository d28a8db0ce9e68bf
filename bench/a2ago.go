package bench

import (
	"strings"

	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// A2AGoEndpoint returns the endpoint of the server started by
// a2agoecho.Start at base that speaks method's protocol version: base for
// message/send (0.3), base+a2agoecho.V1Path for SendMessage (1.0). The
// mesh needs no such choice: one agent URL takes both.
func A2AGoEndpoint(base, method string) string {
	if method == MethodSend10 {
		return strings.TrimSuffix(base, "/") + a2agoecho.V1Path
	}
	return base
}
