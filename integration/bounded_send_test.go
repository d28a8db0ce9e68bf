package integration

// A blocking wait never lasts without bound, with real processes (nats,
// edge, workers) and a worker killed with SIGKILL:
//
//   - a blocking send to an agent whose only worker is dead answers at the
//     edge's --blocking-timeout with the task as it stands (submitted);
//     the task stays queued and completes once a worker is back;
//   - a planner whose delegate's only worker is dead fails its own task,
//     before its --task-timeout, with a message naming the delegate, the
//     delegated task and its state, and cancels the delegated task.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// boundedCall posts one JSON-RPC call with a client that gives up after
// 30 s (far past every bound tested) and returns its result.
func boundedCall(t *testing.T, url, method string, params any) json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": method, "params": params})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoErrorf(t, err, "%s: the client gave up: the edge did not answer within 30 s", method)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	require.NoErrorf(t, json.Unmarshal(data, &r), "%s answered %s", method, data)
	require.Nilf(t, r.Error, "%s answered %s", method, data)
	return r.Result
}

// boundedSend makes a blocking 1.0 SendMessage of text and returns the
// task it answers with and how long that took.
func boundedSend(t *testing.T, url, text string) (wTask, time.Duration) {
	t.Helper()
	start := time.Now()
	res := boundedCall(t, url, "SendMessage", sendParams(v10.msg(text), nil))
	return v10.sendTask(t, res), time.Since(start)
}

// boundedPoll reads the task with GetTask until its state is want (at
// most 25 s).
func boundedPoll(t *testing.T, url, id, want string) wTask {
	t.Helper()
	deadline := time.Now().Add(25 * time.Second)
	var tk wTask
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		tk = decodeTask(t, boundedCall(t, url, "GetTask", map[string]any{"id": id}))
		if tk.Status.State == want {
			return tk
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s is %s after 25 s, want %s", id, tk.Status.State, want)
	return tk
}

func TestBlockingSendToCrashedWorkerIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	const bound = 2 * time.Second
	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr, "--blocking-timeout", bound.String())
	worker := startRole(t, bin, "worker-echo", "worker", "--nats", natsURL, "--agent", "echo")
	base := "http://" + edgeAddr
	url := base + "/agents/echo"
	waitAgent(t, base, "echo")

	tk, _ := boundedSend(t, url, "before the crash")
	require.Equal(t, v10.completed, tk.Status.State, "the fleet answers while its worker runs")

	// A worker that hangs (stopped, its connection still open) is not
	// known to be gone: the registry keeps echo routable, so the send is
	// queued, and its blocking wait ends at the bound. (A worker known to
	// have crashed — its connection closed — is unlisted within a second
	// and its agent's sends are refused: registry's crash tests.)
	require.NoError(t, worker.cmd.Process.Signal(syscall.SIGSTOP))
	tk, took := boundedSend(t, url, "while no worker runs")
	require.Equalf(t, v10.submitted, tk.Status.State, "answered after %s with the task as it stands", took)
	require.GreaterOrEqual(t, took, bound-100*time.Millisecond, "the send waited for its bound")
	require.Less(t, took, bound+2*time.Second, "the send answered at its bound")

	// Nothing lost: a worker comes back and the same task completes.
	startRole(t, bin, "worker-echo-2", "worker", "--nats", natsURL, "--agent", "echo")
	done := boundedPoll(t, url, tk.ID, v10.completed)
	require.Equal(t, "while no worker runs", done.artifactText())
}

func TestDelegationToCrashedWorkerIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	const taskTimeout = 6 * time.Second
	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr)
	echo := startRole(t, bin, "worker-echo", "worker", "--nats", natsURL, "--agent", "echo")
	startRole(t, bin, "worker-upper", "worker", "--nats", natsURL, "--agent", "upper")
	startRole(t, bin, "worker-planner", "worker", "--nats", natsURL, "--agent", "planner", "--task-timeout", taskTimeout.String())
	base := "http://" + edgeAddr
	for _, a := range []string{"echo", "upper", "planner"} {
		waitAgent(t, base, a)
	}
	url := base + "/agents/planner"

	tk, _ := boundedSend(t, url, "say this; shout that")
	require.Equalf(t, v10.completed, tk.Status.State, "the planner answers while its delegates run: %s", tk.Raw)

	echo.stop(syscall.SIGKILL)

	tk, took := boundedSend(t, url, "say this; shout that")
	require.Equalf(t, v10.failed, tk.Status.State, "planner task after %s: %s", took, tk.Raw)
	msg := tk.Status.Message.text()
	require.Contains(t, msg, `planner: agent "echo" did not settle task`, "the failure names the delegate")
	require.Contains(t, msg, "still submitted", "the failure says how the delegated task stood")
	require.NotContains(t, msg, "timed out", "the planner failed its task itself, before its timeout")
	require.Less(t, took, taskTimeout+2*time.Second, "the planner's wait was bounded by its task timeout")

	// The delegated task is named and was canceled: it will not run for no one.
	id := regexp.MustCompile(`task ([0-9a-f-]{36})`).FindStringSubmatch(msg)
	require.NotNilf(t, id, "no task id in %q", msg)
	child := decodeTask(t, boundedCall(t, base+"/agents/echo", "GetTask", map[string]any{"id": id[1]}))
	require.Equal(t, v10.canceled, child.Status.State)
	require.True(t, strings.Contains(child.Status.Message.text(), "planner stopped waiting"), child.Raw)
}
