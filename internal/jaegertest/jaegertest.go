// Package jaegertest runs a real Jaeger v2 for a test: in memory, OTLP/HTTP
// in, the query API and UI out, every port on 127.0.0.1. The binary is
// the one scripts/jaeger.sh builds and caches (.ci/run builds it); a test
// that needs it skips only on the explicit opt-out A2AMESH_SKIP_JAEGER=1
// and fails when the binary is missing, so that a suite without Jaeger
// never passes by skipping the tests that check traces end to end.
package jaegertest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testbin"
)

// Version is the Jaeger build scripts/jaeger.sh makes (the v1.76.0 module
// tag carries the Jaeger v2 binary).
const Version = "v1.76.0"

// Binary is where the Jaeger binary is: $A2AMESH_JAEGER_BIN, or where
// scripts/jaeger.sh caches it ($A2AMESH_CACHE, else the user's cache
// directory under a2amesh/).
func Binary() string {
	if p := os.Getenv("A2AMESH_JAEGER_BIN"); p != "" {
		return p
	}
	return filepath.Join(testbin.CacheDir(), "jaeger-"+Version, "jaeger")
}

// config is Jaeger v2's configuration: in-memory storage, OTLP/HTTP in,
// the query API out, each on the address given (the all-in-one default
// binds some to every interface).
const config = `service:
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
          max_traces: 10000
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

// startTimeout bounds the wait for Jaeger's query API to answer.
const startTimeout = 30 * time.Second

// Start runs Jaeger until the test ends and returns the base URL of its
// query API and UI (http://127.0.0.1:PORT) and the OTLP/HTTP endpoint it
// receives spans on. Its output is logged when the test fails.
func Start(t testing.TB) (query, otlp string) {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_JAEGER") == "1" {
		t.Skip("A2AMESH_SKIP_JAEGER=1: the tests that need Jaeger skip")
	}
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Jaeger binary at %s: build it with `bash scripts/jaeger.sh` (it prints the path; set A2AMESH_JAEGER_BIN to it if you moved it), or set A2AMESH_SKIP_JAEGER=1 to skip the tests that need Jaeger", bin)
	}
	queryAddr, grpcAddr, otlpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(config, queryAddr, grpcAddr, otlpAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("--- jaeger output:\n%s", out.String())
		}
	})
	query = "http://" + queryAddr
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := http.Get(query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return query, "http://" + otlpAddr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger's query API did not answer within %s", startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
