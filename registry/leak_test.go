package registry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind. Two
// goroutines of nats-server are left out: a stream's file-store flusher
// and the process-wide access-time ticker, which nats-server leaves
// running when a node is shut down while a stream of it is still being
// created without quorum (the cluster tests stop nodes so). Any server of
// ours left running is still found by its other goroutines (its accept
// and route loops).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"))
}
