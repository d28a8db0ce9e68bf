package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// ListLatency times ListTasks calls and reads the total the mesh reports;
// an endpoint that is not a mesh is an error, not figures.
func TestListLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := meshtest.Start(t)
	ep := m.URL + "/agents/echo"
	hc := NewClient(2)
	res, err := Run(ctx, Options{URL: ep, Method: MethodSend10, Concurrency: 2, MaxRequests: 7, Duration: time.Minute, Client: hc})
	require.NoError(t, err)
	require.EqualValues(t, 7, res.Tasks)
	lr, err := ListLatency(ctx, hc, ep, 3, "")
	require.NoError(t, err)
	require.Empty(t, lr.FirstError)
	require.Equal(t, 3, lr.Calls)
	require.Equal(t, 7, lr.TotalSize)
	require.Equal(t, 7, lr.PageTasks)
	require.Positive(t, lr.P50)

	lr, err = ListLatency(ctx, hc, m.URL+"/healthz", 3, "")
	require.NoError(t, err)
	require.NotEmpty(t, lr.FirstError, "an error answer is reported, not timed")
	_, err = ListLatency(ctx, hc, ep, 0, "")
	require.Error(t, err)
}
