package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// record drives every recording method once.
func record(m *Metrics) {
	m.EdgeRequest("jsonrpc", "SendMessage", "ok")
	m.SSEOpened()()
	m.PushDelivery(PushDelivered)
	m.RunStarted("echo", time.Now().Add(-time.Second))("completed", RunSettled)
}

// families returns the a2amesh_* family names a scrape shows.
func families(t *testing.T, m *Metrics) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(scrape(t, m.Handler()), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok && strings.HasPrefix(name, "a2amesh_") {
			out[strings.Fields(name)[0]] = true
		}
	}
	return out
}

// An edge's metrics show edge series only, a worker's worker series only,
// dev's (New) both; recording the other role's series is harmless.
func TestMetricsPerRole(t *testing.T) {
	edgeFams := []string{"a2amesh_edge_requests_total", "a2amesh_edge_sse_connections", "a2amesh_push_deliveries_total"}
	workerFams := []string{"a2amesh_worker_tasks_in_flight", "a2amesh_worker_task_duration_seconds",
		"a2amesh_worker_turn_latency_seconds", "a2amesh_worker_runs_total"}
	for _, tc := range []struct {
		name       string
		m          *Metrics
		edge, work bool
	}{
		{"edge", NewEdge(), true, false},
		{"worker", NewWorker(), false, true},
		{"dev", New(), true, true},
	} {
		record(tc.m)
		got := families(t, tc.m)
		for _, f := range edgeFams {
			require.Equal(t, tc.edge, got[f], "%s: %s", tc.name, f)
		}
		for _, f := range workerFams {
			require.Equal(t, tc.work, got[f], "%s: %s", tc.name, f)
		}
	}
}
