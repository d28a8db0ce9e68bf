package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// The dev mesh with metrics on: calls through the edge and the echo
// worker's runs show on the edge's /metrics.
func TestMeshMetrics(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Metrics = metrics.New() }))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}

	post := func(method, params string) *http.Response {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
		req, err := http.NewRequest(http.MethodPost, m.URL+"/agents/echo", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		return resp
	}
	msg := func(id string) string {
		return `{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	}

	// An ok send.
	resp := post("SendMessage", msg("m-send"))
	var reply struct {
		Result json.RawMessage     `json:"result"`
		Error  *struct{ Code int } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	resp.Body.Close()
	require.Nil(t, reply.Error)

	// An unknown method: -32601, counted as method "unknown".
	resp = post("NoSuchMethod", `{}`)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reply))
	resp.Body.Close()
	require.NotNil(t, reply.Error)
	require.Equal(t, -32601, reply.Error.Code)

	// A stream, read to its end.
	resp = post("SendStreamingMessage", msg("m-stream"))
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
	}
	resp.Body.Close()

	// Counters move as the calls end; the worker records a run after
	// settling it, so poll until it shows (bounded).
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(15 * time.Second)
	for {
		fams = scrapeMesh(t, hc, m.URL)
		if value(fams, "a2amesh_worker_task_duration_seconds", map[string]string{"agent": "echo", "state": "completed"}) >= 2 &&
			value(fams, "a2amesh_edge_sse_connections", nil) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.GreaterOrEqual(t, value(fams, "a2amesh_edge_requests_total", map[string]string{"binding": "jsonrpc", "method": "SendMessage", "code": "ok"}), 1.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_edge_requests_total", map[string]string{"binding": "jsonrpc", "method": "SendStreamingMessage", "code": "ok"}), 1.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_edge_requests_total", map[string]string{"method": "unknown", "code": "-32601"}), 1.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_worker_task_duration_seconds", map[string]string{"agent": "echo", "state": "completed"}), 2.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_worker_turn_latency_seconds", map[string]string{"agent": "echo", "state": "completed"}), 2.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_worker_runs_total", map[string]string{"agent": "echo", "outcome": "settled"}), 2.0)
	require.Equal(t, 0.0, value(fams, "a2amesh_edge_sse_connections", nil))
	require.GreaterOrEqual(t, value(fams, "a2amesh_registry_agents", nil), 1.0)
	require.Contains(t, fams, "a2amesh_consumer_pending")
	require.GreaterOrEqual(t, value(fams, "a2amesh_consumer_pending", map[string]string{"consumer": "worker_echo"}), 0.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_consumer_ack_pending", map[string]string{"consumer": "worker_echo"}), 0.0)
	require.GreaterOrEqual(t, value(fams, "a2amesh_agent_workers", map[string]string{"agent": "echo"}), 1.0)
	require.Contains(t, fams, "a2amesh_agent_pending")
	require.Contains(t, fams, "a2amesh_agent_in_flight")
}

func scrapeMesh(t *testing.T, hc *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	require.NoError(t, err)
	return fams
}

// value is the value of the series of family name with labels (a
// histogram's count); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, mt := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range mt.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.GetCounter().GetValue()
		case mt.Gauge != nil:
			return mt.GetGauge().GetValue()
		case mt.Histogram != nil:
			return float64(mt.GetHistogram().GetSampleCount())
		}
	}
	return -1
}
