package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// jaegerVersion is the Jaeger build scripts/jaeger.sh makes and caches
// (as integration/jaeger_test.go runs it).
const jaegerVersion = "v1.76.0"

// jaegerBinary finds the Jaeger binary: $A2AMESH_JAEGER_BIN, or where
// scripts/jaeger.sh caches it.
func jaegerBinary() string {
	if p := os.Getenv("A2AMESH_JAEGER_BIN"); p != "" {
		return p
	}
	cache := os.Getenv("A2AMESH_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "a2amesh")
	}
	return filepath.Join(cache, "jaeger-"+jaegerVersion, "jaeger")
}

// jaegerConfig runs Jaeger v2 in memory: OTLP/HTTP in, the query API and
// UI out, every port on 127.0.0.1.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startJaeger runs Jaeger for the test and returns the base URL of its
// query API and UI, and the OTLP/HTTP endpoint it receives spans on.
func startJaeger(t *testing.T) (query, otlp string) {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_JAEGER") == "1" {
		t.Skip("A2AMESH_SKIP_JAEGER=1: the tests that need Jaeger skip")
	}
	bin := jaegerBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Jaeger binary at %s: build it with `bash scripts/jaeger.sh`, set A2AMESH_JAEGER_BIN, or set A2AMESH_SKIP_JAEGER=1 to skip", bin)
	}
	queryAddr, grpcAddr, otlpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, queryAddr, grpcAddr, otlpAddr)), 0o600))
	cmd := exec.Command(bin, "--config", cfg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger output:\n%s", out.String())
		}
	})
	query = "http://" + queryAddr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "Jaeger did not answer within 20s")
		time.Sleep(50 * time.Millisecond)
	}
	return query, "http://" + otlpAddr
}

// With a Jaeger configured, a planner task's view links to its trace in
// Jaeger's UI and draws its spans, read from a real Jaeger through the
// edge: a bar per span, the delegates' runs beneath the planner's
// delegations, beneath its run.
func TestConsoleBrowserTaskTrace(t *testing.T) {
	query, otlp := startJaeger(t)
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
