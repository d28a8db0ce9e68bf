package agents

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseSlow(t *testing.T) {
	cases := []struct {
		in     string
		chunks int
		delay  time.Duration
	}{
		{"", slowDefaultChunks, slowDefaultDelay},
		{"chunks=3 delay=100ms", 3, 100 * time.Millisecond},
		{"CHUNKS=7 delay=50", 7, 50 * time.Millisecond},
		{"chunks=0 delay=-1s", slowDefaultChunks, slowDefaultDelay},
		{"chunks=999999 delay=1h", slowMaxChunks, slowMaxDelay},
		{"please chunks=abc", slowDefaultChunks, slowDefaultDelay},
	}
	for _, c := range cases {
		n, d := ParseSlow(c.in)
		assert.Equal(t, c.chunks, n, c.in)
		assert.Equal(t, c.delay, d, c.in)
	}
}
