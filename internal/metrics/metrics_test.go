package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

func TestHandlerServesFamilies(t *testing.T) {
	m := New()
	m.EdgeRequest("jsonrpc", "SendMessage", "ok")
	m.EdgeRequest("jsonrpc", "unknown", "-32601")
	closeSSE := m.SSEOpened()
	m.PushDelivery(PushDelivered)
	ended := m.RunStarted("echo", time.Now().Add(-time.Second))
	ended("completed", RunSettled)
	m.RunStarted("echo", time.Now())("handed_back", RunHandedBack) // no latency: the turn is not done
	m.SetRegistrySize(func() int { return 3 })
	m.SetAgentWorkers(func() map[string]int { return map[string]int{"echo": 2, "sleepy": 0} })
	m.AddConsumers(func(context.Context) []ConsumerStats {
		return []ConsumerStats{{Consumer: "worker_echo", Pending: 2, AckPending: 1, Redelivered: 0}}
	})
	// The same consumer from a second source is reported once.
	m.AddConsumers(func(context.Context) []ConsumerStats {
		return []ConsumerStats{{Consumer: "worker_echo", Pending: 9}}
	})

	out := scrape(t, m.Handler())
	for _, want := range []string{
		`a2amesh_edge_requests_total{binding="jsonrpc",code="ok",method="SendMessage"} 1`,
		`a2amesh_edge_requests_total{binding="jsonrpc",code="-32601",method="unknown"} 1`,
		`a2amesh_edge_sse_connections 1`,
		`a2amesh_push_deliveries_total{outcome="delivered"} 1`,
		`a2amesh_worker_tasks_in_flight{agent="echo"} 0`,
		`a2amesh_worker_task_duration_seconds_count{agent="echo",state="completed"} 1`,
		`a2amesh_worker_turn_latency_seconds_count{agent="echo",state="completed"} 1`,
		`a2amesh_worker_turn_latency_seconds_bucket{agent="echo",state="completed",le="0.5"} 0`,
		`a2amesh_worker_turn_latency_seconds_bucket{agent="echo",state="completed",le="1"} 0`,
		`a2amesh_worker_turn_latency_seconds_bucket{agent="echo",state="completed",le="2.5"} 1`,
		`a2amesh_worker_runs_total{agent="echo",outcome="settled"} 1`,
		`a2amesh_registry_agents 3`,
		`a2amesh_consumer_pending{consumer="worker_echo"} 2`,
		`a2amesh_consumer_ack_pending{consumer="worker_echo"} 1`,
		`a2amesh_consumer_redelivered{consumer="worker_echo"} 0`,
		`a2amesh_agent_workers{agent="echo"} 2`,
		`a2amesh_agent_workers{agent="sleepy"} 0`,
		`a2amesh_agent_pending{agent="echo"} 2`,
		`a2amesh_agent_in_flight{agent="echo"} 1`,
		`go_goroutines`,
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, 1, strings.Count(out, `a2amesh_consumer_pending{`))

	closeSSE()
	assert.Contains(t, scrape(t, m.Handler()), `a2amesh_edge_sse_connections 0`)
}

// A process with no registry table and no consumers reports neither.
func TestDynamicFamiliesAbsentWhenUnset(t *testing.T) {
	out := scrape(t, New().Handler())
	assert.NotContains(t, out, "a2amesh_registry_agents")
	assert.NotContains(t, out, "a2amesh_consumer_pending")
}

// Separate Metrics do not share counts (no global registry).
func TestInstancesIndependent(t *testing.T) {
	a, b := New(), New()
	a.EdgeRequest("jsonrpc", "GetTask", "ok")
	assert.Contains(t, scrape(t, a.Handler()), `a2amesh_edge_requests_total{binding="jsonrpc",code="ok",method="GetTask"} 1`)
	assert.NotContains(t, scrape(t, b.Handler()), `method="GetTask"`)
}

// A nil *Metrics records nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.EdgeRequest("jsonrpc", "SendMessage", "ok")
	m.SSEOpened()()
	m.PushDelivery(PushRetried)
	m.RunStarted("echo", time.Time{})("completed", RunSettled)
	m.SetRegistrySize(func() int { return 1 })
	m.AddConsumers(nil)
}
