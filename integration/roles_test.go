package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roleProc is one a2amesh role running as a child process.
type roleProc struct {
	name string
	cmd  *exec.Cmd
	out  *durBuffer
	done chan struct{}
}

func startRole(t *testing.T, bin, name string, args ...string) *roleProc {
	t.Helper()
	return startRoleEnv(t, bin, name, nil, args...)
}

// startRoleEnv is startRole with extra environment variables.
func startRoleEnv(t *testing.T, bin, name string, env []string, args ...string) *roleProc {
	t.Helper()
	p := &roleProc{name: name, out: &durBuffer{max: durOutputCap}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start(), name)
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

func (p *roleProc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitAgent waits until the edge at base lists agent.
func waitAgent(t *testing.T, base, agent string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/agents/" + agent + "/.well-known/agent-card.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("agent %s never appeared at %s", agent, base)
}

func TestSeparateRolesSurviveStoppedProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	bin := durBuild(t)
	natsAddr := durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	edges := []string{durFreeAddr(t), durFreeAddr(t)}

	// Out of order on purpose: edges and workers wait for NATS.
	var edgeProcs []*roleProc
	for i, addr := range edges {
		edgeProcs = append(edgeProcs, startRole(t, bin, fmt.Sprint("edge", i), "edge", "--nats", natsURL, "--listen", addr))
	}
	w0 := startRole(t, bin, "worker0", "worker", "--nats", natsURL, "--agent", "echo", "--concurrency", "8")
	startRole(t, bin, "worker1", "worker", "--nats", natsURL, "--agent", "echo", "--concurrency", "8")
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	for _, addr := range edges {
		waitAgent(t, "http://"+addr, "echo")
	}

	client := &http.Client{Timeout: 30 * time.Second}
	send := func(base string, i int) (string, error) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "message/send", "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": fmt.Sprint("roles-", i),
				"parts": []any{map[string]any{"kind": "text", "text": fmt.Sprint("hello ", i)}}}}})
		resp, err := client.Post(base+"/agents/echo", "application/json", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var r struct {
			Result *struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				Artifacts []struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifacts"`
			} `json:"result"`
			Error *rpcError `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return "", err
		}
		if r.Error != nil {
			return "", fmt.Errorf("rpc error %d: %s", r.Error.Code, r.Error.Message)
		}
		if r.Result.Status.State != "completed" || len(r.Result.Artifacts) != 1 || r.Result.Artifacts[0].Parts[0].Text != fmt.Sprint("hello ", i) {
			return "", fmt.Errorf("task %s: state %s, artifacts %v", r.Result.ID, r.Result.Status.State, r.Result.Artifacts)
		}
		return r.Result.ID, nil
	}

	const n = 120
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	ids := map[string]int{}
	var failures []string
	var wg sync.WaitGroup
	next := make(chan int)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var id string
				var err error
				// A client whose edge went away retries on the other edge
				// with the same messageId: the same task, never a second one.
				for attempt := 0; attempt < 6 && ctx.Err() == nil; attempt++ {
					base := "http://" + edges[(i+attempt)%2]
					if id, err = send(base, i); err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("send %d: %v", i, err))
				} else {
					ids[id]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		switch i {
		case n / 3:
			w0.stop(syscall.SIGKILL) // a worker dies mid-traffic
		case n / 2:
			edgeProcs[0].stop(syscall.SIGTERM) // an edge leaves mid-traffic
		}
		next <- i
	}
	close(next)
	wg.Wait()
	assert.Empty(t, failures)
	assert.Len(t, ids, n, "every send made exactly one task")
	for id, c := range ids {
		assert.Equal(t, 1, c, "task %s returned to two different sends", id)
	}
}
