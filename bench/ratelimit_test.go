package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
)

// A short rate-limit run answers every call, 200 or 429, and counts them;
// the figures themselves come from `a2amesh bench ratelimit`.
func TestRateLimitRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := RateLimit(ctx, RateLimitOptions{Edges: 2, Drive: 100, Duration: time.Second, TempDir: t.TempDir(),
		Limits: edge.Limits{Rate: 5, Burst: 5}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	assert.Equal(t, 100, r.Sent)
	assert.Zero(t, r.Errors)
	assert.Equal(t, r.Sent, r.Admitted+r.Refused)
	assert.Positive(t, r.Admitted)
	assert.Positive(t, r.Refused, "100 calls in a second at 5/s")
	assert.Len(t, r.ByEdge, 2)
	assert.Equal(t, r.Admitted, r.ByEdge[0]+r.ByEdge[1])

	_, err = RateLimit(ctx, RateLimitOptions{Edges: 0, Limits: edge.Limits{Rate: 1}})
	assert.Error(t, err)
	_, err = RateLimit(ctx, RateLimitOptions{Edges: 1})
	assert.Error(t, err, "no rate")
	_, err = RateLimit(ctx, RateLimitOptions{Edges: 1, Limits: edge.Limits{Rate: 1}, Drive: MaxRateLimitDrive + 1})
	assert.Error(t, err)
}
