package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// nodeScriptTimeout bounds each interop script run. The scripts bound
// themselves too (20 s per check, 100 s per run), so this only trips if
// node itself wedges.
const nodeScriptTimeout = 2 * time.Minute

// nodeCheck is one line of interop script output.
type nodeCheck struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	MS     int64  `json:"ms"`
}

// nodeMinMajor is the oldest Node.js major version the JS SDK scripts run on
// (integration/node/package.json, engines).
const nodeMinMajor = 20

// nodeSDKPackages are the npm packages the scripts import: the aliases of
// @a2a-js/sdk, and the peer dependencies of its gRPC client.
var nodeSDKPackages = []string{"a2a-v1", "a2a-v03", "@grpc/grpc-js", "@bufbuild/protobuf"}

// requireNode returns the node binary and the absolute path of
// integration/node for the JavaScript SDK tests. A missing Node.js, one
// too old, or a missing node_modules fails the test with how to install
// it: a suite without Node must not pass by skipping. Only
// A2AMESH_SKIP_NODE=1 skips, saying so.
func requireNode(t *testing.T) (node, dir string) {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_NODE") == "1" {
		t.Skip("A2AMESH_SKIP_NODE=1: the JavaScript SDK tests are skipped")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: install Node.js %d+ with npm, then run `cd integration/node && npm ci`; or set A2AMESH_SKIP_NODE=1 to skip the JavaScript SDK tests", nodeMinMajor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	version := strings.TrimSpace(string(out))
	var major int
	if _, err := fmt.Sscanf(version, "v%d.", &major); err != nil || major < nodeMinMajor {
		t.Fatalf("%s is Node.js %q; the JavaScript SDK tests need %d+ (or set A2AMESH_SKIP_NODE=1 to skip them)", node, version, nodeMinMajor)
	}
	dir, err = filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range nodeSDKPackages {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("integration/node/node_modules/%s is missing: run `cd integration/node && npm ci` (it installs the locked @a2a-js/sdk versions); or set A2AMESH_SKIP_NODE=1 to skip the JavaScript SDK tests", pkg)
		}
	}
	return node, dir
}

// TestNodeSDKInterop drives the mesh with the official A2A JavaScript SDK
// (@a2a-js/sdk 1.x for A2A 1.0 over JSON-RPC, HTTP+JSON and gRPC, and
// 0.3.x for A2A 0.3) and reports each of the scripts' checks as a subtest.
func TestNodeSDKInterop(t *testing.T) {
	node, dir := requireNode(t)

	// Push on, trusting loopback receivers: the scripts' webhook listens
	// on 127.0.0.1; gRPC on, for interop-grpc.mjs.
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push = edge.PushConfig{Enabled: true, Trusted: []string{"127.0.0.1"}}
	}))

	for _, script := range []string{"interop-v1.mjs", "interop-v03.mjs", "interop-rest.mjs", "interop-grpc.mjs"} {
		t.Run(strings.TrimSuffix(script, ".mjs"), func(t *testing.T) {
			runNodeChecks(t, node, dir, script, m.URL)
		})
	}
}

func runNodeChecks(t *testing.T, node, dir, script, url string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeScriptTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, append([]string{script, url}, args...)...)
	cmd.Dir = dir
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()

	var checks []nodeCheck
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var c nodeCheck
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Check == "" {
			t.Logf("%s: unparsed output: %s", script, line)
			continue
		}
		checks = append(checks, c)
	}

	failed := 0
	for _, c := range checks {
		t.Run(c.Check, func(t *testing.T) {
			if !c.OK {
				t.Errorf("%s (%d ms)", c.Detail, c.MS)
				return
			}
			if strings.HasPrefix(c.Detail, "skipped") {
				// The mesh here offers everything the scripts check.
				t.Errorf("check skipped against the mesh: %s", c.Detail)
				return
			}
			t.Logf("%s (%d ms)", c.Detail, c.MS)
		})
		if !c.OK {
			failed++
		}
	}

	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("node %s did not finish within %v", script, nodeScriptTimeout)
	}
	switch {
	case len(checks) == 0:
		t.Errorf("node %s produced no checks: %v\nstderr:\n%s", script, runErr, stderr.String())
	case runErr != nil && failed == 0:
		t.Errorf("node %s failed although every check passed: %v\nstderr:\n%s", script, runErr, stderr.String())
	case runErr == nil && failed > 0:
		t.Errorf("node %s exited 0 with %d failed checks", script, failed)
	case stderr.Len() > 0:
		t.Logf("node %s stderr:\n%s", script, stderr.String())
	}
}
