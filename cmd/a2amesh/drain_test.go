package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On SIGTERM an edge turns /healthz to 503 "draining" and keeps serving
// for --drain: a call made meanwhile, on a new connection, is answered.
// Then it exits. With --drain 0 it stops at once (the test's control: the
// same call after the signal then fails).
func TestEdgeDrainsOnSIGTERM(t *testing.T) {
	bin := buildA2amesh(t)
	natsPort := freeLoopback(t)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	startChild(t, bin, "nats", "--listen", fmt.Sprintf("127.0.0.1:%d", natsPort), "--data", t.TempDir())
	startChild(t, bin, "worker", "--agent", "echo", "--nats", natsURL)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(url string) (int, string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	send := func(base string) error {
		body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"` +
			fmt.Sprint("drain-", time.Now().UnixNano()) + `","parts":[{"kind":"text","text":"still here"}]}}}`
		resp, err := client.Post(base+"/agents/echo", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"completed"`) {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	}
	startEdge := func(drain string) (*child, string) {
		port := freeLoopback(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		e := startChild(t, bin, "edge", "--nats", natsURL, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--drain", drain)
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _, _ := get(base + "/healthz")
			if code == http.StatusOK && send(base) == nil {
				return e, base
			}
			require.True(t, time.Now().Before(deadline), "the edge never served")
			time.Sleep(100 * time.Millisecond)
		}
	}

	e, base := startEdge("3s")
	signaled := time.Now()
	require.NoError(t, e.cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, e.waitOutput(2*time.Second, "draining"), "the edge says it drains")
	code, body, err := get(base + "/healthz")
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Contains(t, body, `"draining"`)
	require.NoError(t, send(base), "a call while draining is served")
	select {
	case <-e.done:
		t.Fatal("the edge exited before its drain ended")
	default:
	}
	select {
	case <-e.done:
		require.GreaterOrEqual(t, time.Since(signaled), 3*time.Second, "it served for the whole drain")
	case <-time.After(15 * time.Second):
		t.Fatal("the edge did not exit after its drain")
	}

	e, base = startEdge("0s")
	e.stop(syscall.SIGTERM)
	require.Error(t, send(base), "without a drain the listener closes at once")
}
