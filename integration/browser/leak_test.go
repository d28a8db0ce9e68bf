package browser

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// browser, its tab and the mesh all stop with their test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
