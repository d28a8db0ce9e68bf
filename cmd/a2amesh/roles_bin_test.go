package main

// Tests that run the a2amesh binary itself: help, start-up before NATS,
// JSON logs.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/testbin"
)

// buildA2amesh builds this command, with the race detector when this test
// binary has it.
func buildA2amesh(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./cmd/a2amesh")
}

// roleEnv is a clean environment for a child: no A2AMESH_* or NATS_*
// variables of the machine running the tests.
func roleEnv(t *testing.T, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, extra...)
}

// freeLoopback returns a 127.0.0.1 port nothing listens on (now).
func freeLoopback(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// lineBuf collects a child's output, safe for concurrent reads.
type lineBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// child is a running a2amesh process.
type child struct {
	cmd          *exec.Cmd
	stdout, errs *lineBuf
	done         chan struct{}
}

func startChild(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{stdout: &lineBuf{}, errs: &lineBuf{}, done: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = roleEnv(t)
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.errs
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.stop(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("a2amesh %s stderr:\n%s", args[0], c.errs.String())
		}
	})
	return c
}

// stop signals the child and waits (10s at most) for it to exit.
func (c *child) stop(sig syscall.Signal) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// waitOutput waits (within d) until the child's stderr contains s.
func (c *child) waitOutput(d time.Duration, s string) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(c.errs.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Contains(c.errs.String(), s)
}

// Each role's -h prints its description, a usage line and its flags on
// stdout, and exits 0.
func TestRolesHelpBinary(t *testing.T) {
	bin := buildA2amesh(t)
	for role, desc := range map[string]string{"nats": natsDesc, "edge": edgeDesc, "worker": workerDesc, "dev": devDesc} {
		for _, h := range []string{"-h", "--help"} {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, role, h)
			cmd.Env = roleEnv(t)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "%s %s exits 0; stderr: %s", role, h, stderr.String())
			out := stdout.String()
			require.True(t, strings.HasPrefix(out, desc+"\n\nusage: a2amesh "+role+" [flags]\n"), "%s %s:\n%s", role, h, out)
			require.Contains(t, out, "\nflags:\n", role)
			require.Contains(t, out, "-log-format", role)
			require.Empty(t, stderr.String(), role)
		}
	}
	out, err := exec.Command(bin, "edge", "-h").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "-default-agent")
	require.Contains(t, string(out), "POST /a2a")
	// A bad flag is a usage error: exit 2, usage on stderr.
	cmd := exec.Command(bin, "worker", "--no-such-flag")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode())
	require.Contains(t, stderr.String(), "usage: a2amesh worker [flags]")
}

// An edge and a worker started before NATS say at once that they cannot
// reach it, naming the address and why, and keep trying; the edge's
// /healthz answers 503 with the reason meanwhile, and 200 once a NATS
// node comes up at that address.
func TestRolesWaitForNATSBinary(t *testing.T) {
	bin := buildA2amesh(t)
	natsPort, httpPort := freeLoopback(t), freeLoopback(t)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	edgeProc := startChild(t, bin, "edge", "--nats", natsURL, "--listen", fmt.Sprintf("127.0.0.1:%d", httpPort))
	workerProc := startChild(t, bin, "worker", "--agent", "echo", "--nats", natsURL)
	want := "cannot reach NATS at " + natsURL + " (connection refused); retrying"
	// The clock starts when the edge has started (its listening line, just
	// before it turns to NATS), not when exec did: a loaded machine may
	// take a while to start a race-enabled binary.
	require.True(t, edgeProc.waitOutput(15*time.Second, "a2amesh edge listening"), "the edge starts")
	started := time.Now()
	require.True(t, edgeProc.waitOutput(1500*time.Millisecond, want), "the edge says within 1.5s %q", want)
	t.Logf("edge said it %v after it started", time.Since(started).Round(time.Millisecond))
	require.True(t, workerProc.waitOutput(15*time.Second, want), "the worker says %q", want)
	// The worker's first such line comes as soon as it waits for NATS.
	m := regexp.MustCompile(`cannot reach NATS.* waited_ms=(\d+)`).FindStringSubmatch(workerProc.errs.String())
	require.NotNil(t, m)
	waited, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Less(t, waited, 1000, "the worker said it within 1s of waiting")
	require.NotContains(t, edgeProc.errs.String(), "context deadline exceeded")

	client := &http.Client{Timeout: 2 * time.Second}
	health := func() (int, string) {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := health()
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, "waiting for NATS at "+natsURL+": connection refused")

	// Still waiting, not exited, and not logging a line per retry.
	time.Sleep(2 * time.Second)
	select {
	case <-edgeProc.done:
		t.Fatal("the edge exited while NATS was down")
	case <-workerProc.done:
		t.Fatal("the worker exited while NATS was down")
	default:
	}
	require.LessOrEqual(t, strings.Count(edgeProc.errs.String(), "cannot reach NATS"), 2,
		"at most one line per few seconds")

	natsProc := startChild(t, bin, "nats", "--listen", fmt.Sprintf("127.0.0.1:%d", natsPort), "--data", t.TempDir())
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		code, last = health()
		if code == http.StatusOK {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, code, "ready once NATS is up; last /healthz: %s", last)
	require.True(t, edgeProc.waitOutput(time.Second, "NATS reachable"))
	require.True(t, workerProc.waitOutput(15*time.Second, "worker started"))
	edgeProc.stop(syscall.SIGTERM)
	workerProc.stop(syscall.SIGTERM)
	natsProc.stop(syscall.SIGTERM)
}

// With --log-format json, everything dev writes is JSON records, one per
// line, with no key twice in a record: the ready banner too.
func TestDevJSONLogsBinary(t *testing.T) {
	bin := buildA2amesh(t)
	port := freeLoopback(t)
	dev := startChild(t, bin, "dev", "--log-format", "json", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--data", t.TempDir(), "--nats-listen", fmt.Sprintf("127.0.0.1:%d", freeLoopback(t)))
	require.True(t, dev.waitOutput(60*time.Second, `"msg":"a2amesh dev ready"`), "dev ready")
	dev.stop(syscall.SIGTERM)
	require.Equal(t, 0, dev.cmd.ProcessState.ExitCode())

	require.Empty(t, strings.TrimSpace(dev.stdout.String()), "nothing on stdout")
	var ready map[string]any
	n := 0
	sc := bufio.NewScanner(strings.NewReader(dev.errs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			t.Errorf("blank line in a JSON log")
			continue
		}
		n++
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not a JSON record: %q", line)
		for _, k := range []string{"time", "level", "msg"} {
			require.Contains(t, rec, k, "record %q", line)
		}
		require.NoError(t, noRepeatedKeys(line), "record %q", line)
		if rec["msg"] == "a2amesh dev ready" {
			ready = rec
		}
	}
	require.NotNil(t, ready)
	require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d/.well-known/agent-card.json", port), ready["card"])
	t.Logf("%d JSON records", n)
}

// noRepeatedKeys reports a key that appears twice in one JSON object of
// line (encoding/json keeps the last silently).
func noRepeatedKeys(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next string token is a key
	}
	var stack []*frame
	for range 100_000 {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true // the value ends; a key comes next
				}
				stack = append(stack, &frame{obj: v == '{', keys: map[string]bool{}, key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					return fmt.Errorf("key %q twice", v)
				}
				top.keys[v] = true
				top.key = false
				continue
			}
			if top != nil && top.obj {
				top.key = true
			}
		default:
			if top != nil && top.obj {
				top.key = true
			}
		}
	}
	return fmt.Errorf("record too long")
}

func TestNoRepeatedKeys(t *testing.T) {
	require.NoError(t, noRepeatedKeys(`{"a":1,"b":{"a":2,"c":[{"a":3},{"a":4}]},"c":"a"}`))
	require.ErrorContains(t, noRepeatedKeys(`{"a":1,"b":2,"a":3}`), `"a" twice`)
	require.ErrorContains(t, noRepeatedKeys(`{"x":{"a":"a","a":1}}`), `"a" twice`)
	require.ErrorContains(t, noRepeatedKeys(`{"x":[1,{"k":{}, "k":2}]}`), `"k" twice`)
}
