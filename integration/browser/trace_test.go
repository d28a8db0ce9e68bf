package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/jaegertest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// With a Jaeger configured, a planner task's view links to its trace in
// Jaeger's UI and draws its spans, read from a real Jaeger through the
// edge: a bar per span, the delegates' runs beneath the planner's
// delegations, beneath its run.
func TestConsoleBrowserTaskTrace(t *testing.T) {
	query, otlp := jaegertest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdown, err := tracing.Setup(ctx, "a2amesh-dev")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
		tracing.Reset()
	})
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.JaegerUI = query
		c.Edge.JaegerQuery = query
	}))
	id := sendTask(t, m.URL, "planner", "say this; shout that", false)

	// Spans reach Jaeger in batches: wait until it has the whole run.
	want := []string{"SendMessage", "run planner", "delegate echo", "delegate upper", "run echo", "run upper"}
	var doc struct {
		TraceID string `json:"traceId"`
		Spans   []struct {
			Name string `json:"name"`
		} `json:"spans"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		resp, err := http.Get(m.URL + "/ops/v1/tasks/" + id + "/trace")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		resp.Body.Close()
		names := map[string]bool{}
		for _, s := range doc.Spans {
			names[s.Name] = true
		}
		all := true
		for _, w := range want {
			all = all && names[w]
		}
		if all {
			break
		}
		require.True(t, i < 300 && time.Now().Before(deadline), "Jaeger's spans of the task: %+v, want %v", doc.Spans, want)
		time.Sleep(50 * time.Millisecond)
	}
	require.Len(t, doc.TraceID, 32)

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.openTask(id)
	b.waitFor("the waterfall", `document.querySelectorAll('#task-body .trace .waterfall li').length >= 6`)
	var link string
	b.eval(`document.querySelector('#task-body .trace a.jaeger').href`, &link)
	require.Equal(t, query+"/trace/"+doc.TraceID, link)
	var bars []struct {
		Label string
		Depth int
		Left  float64
		Width float64
	}
	b.eval(`Array.from(document.querySelectorAll('#task-body .trace .waterfall li'), (li) => ({label: li.querySelector('.label').textContent,
		depth: Number(li.dataset.depth), left: parseFloat(li.querySelector('.bar').style.marginLeft), width: parseFloat(li.querySelector('.bar').style.width)}))`, &bars)
	depth := map[string]int{}
	for _, bar := range bars {
		for _, w := range want {
			if bytes.Contains([]byte(bar.Label), []byte(" · "+w+" · ")) {
				depth[w] = bar.Depth
			}
		}
		require.GreaterOrEqual(t, bar.Left, 0.0, "%+v", bar)
		require.Greater(t, bar.Width, 0.0, "%+v", bar)
		require.LessOrEqual(t, bar.Left+bar.Width, 100.5, "%+v", bar)
	}
	require.Len(t, depth, len(want), "%+v", bars)
	require.Equal(t, 0, depth["SendMessage"], "%+v", bars)
	require.Greater(t, depth["run planner"], depth["SendMessage"])
	require.Greater(t, depth["delegate echo"], depth["run planner"])
	require.Greater(t, depth["run echo"], depth["delegate echo"])
	require.Greater(t, depth["run upper"], depth["delegate upper"])
	b.screenshot("task-trace")
	b.noCSPViolations()
}
