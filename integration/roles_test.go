package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
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

// TestSeparateRolesSurviveStoppedProcesses runs nats, two edges and two
// echo workers as processes, SIGKILLs a worker and SIGTERMs an edge
// mid-traffic, and checks every send made exactly one task: a client whose
// edge went away retries on the other edge with the same messageId, every
// fifth client also repeats a send that succeeded (as if its reply had been
// lost), and afterwards the server's own task list (ListTasks, every page)
// must hold exactly one task per messageId, the one the client was given.
// An internal error (-32603) answer fails the test, even if a retry worked.
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
	// send returns the task id, or an error (a rolesRPCError for a JSON-RPC
	// error answer).
	send := func(base string, i int) (string, error) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "message/send", "params": map[string]any{
			"message": map[string]any{"kind": "message", "role": "user", "messageId": rolesMsgID(i),
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
			return "", rolesRPCError{r.Error}
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
	gotID := map[int]string{} // send -> task id the client was given
	var failures, internal []string
	var wg sync.WaitGroup
	next := make(chan int)
	// sendRetrying sends i, first to edge first, retrying on the other
	// edge with the same messageId: the same task, never a second one.
	sendRetrying := func(i, first int) (string, error) {
		var id string
		var err error
		for attempt := 0; attempt < 6 && ctx.Err() == nil; attempt++ {
			base := "http://" + edges[(first+attempt)%2]
			if id, err = send(base, i); err == nil {
				return id, nil
			}
			if re, ok := err.(rolesRPCError); ok && re.Code == -32603 {
				mu.Lock()
				internal = append(internal, fmt.Sprintf("send %d via %s: %d %s", i, base, re.Code, re.Message))
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
		return "", err
	}
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id, err := sendRetrying(i, i)
				if err == nil && i%5 == 0 {
					// The reply "was lost": the client sends the same
					// message again, through the other edge.
					again, aerr := sendRetrying(i, i+1)
					mu.Lock()
					switch {
					case aerr != nil:
						failures = append(failures, fmt.Sprintf("repeat of send %d: %v", i, aerr))
					case again != id:
						failures = append(failures, fmt.Sprintf("repeat of send %d made task %s, the first made %s", i, again, id))
					}
					mu.Unlock()
				}
				mu.Lock()
				if err != nil {
					failures = append(failures, fmt.Sprintf("send %d: %v", i, err))
				} else {
					ids[id]++
					gotID[i] = id
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
	assert.Empty(t, internal, "sends answered -32603 (internal error)")
	assert.Len(t, ids, n, "every send made exactly one task")
	for id, c := range ids {
		assert.Equal(t, 1, c, "task %s returned to two different sends", id)
	}

	// The server's side: one task per messageId, the one the client got;
	// a retried send whose first reply was lost cannot hide a second task.
	byMsg := rolesListTasks(t, client, "http://"+edges[1]+"/agents/echo")
	for i := 0; i < n; i++ {
		tasks := byMsg[rolesMsgID(i)]
		if len(tasks) != 1 || (gotID[i] != "" && tasks[0] != gotID[i]) {
			t.Errorf("send %d (messageId %s): the server holds tasks %v; the client was given %q", i, rolesMsgID(i), tasks, gotID[i])
		}
		delete(byMsg, rolesMsgID(i))
	}
	for msgID, tasks := range byMsg {
		t.Errorf("the server holds tasks %v for messageId %q, which no client sent", tasks, msgID)
	}
}

func rolesMsgID(i int) string { return fmt.Sprint("roles-", i) }

// rolesRPCError is a JSON-RPC error answer as an error.
type rolesRPCError struct{ *rpcError }

func (e rolesRPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// rolesListTasks reads every page of ListTasks at url and returns the
// tasks' ids by the messageId of the message that made each (a task seen
// on two pages counts once).
func rolesListTasks(t *testing.T, hc *http.Client, url string) map[string][]string {
	t.Helper()
	byMsg := map[string]map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		require.Less(t, page, 50, "ListTasks: more than 50 pages")
		params := map[string]any{"pageSize": 100, "historyLength": 100}
		if token != "" {
			params["pageToken"] = token
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": page, "method": "ListTasks", "params": params})
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		var r struct {
			Result *struct {
				Tasks []struct {
					ID      string `json:"id"`
					History []struct {
						Role      string `json:"role"`
						MessageID string `json:"messageId"`
					} `json:"history"`
				} `json:"tasks"`
				NextPageToken string `json:"nextPageToken"`
			} `json:"result"`
			Error *rpcError `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		require.NoError(t, err)
		require.Nil(t, r.Error, "ListTasks")
		require.NotNil(t, r.Result, "ListTasks")
		for _, tk := range r.Result.Tasks {
			mid := ""
			for _, m := range tk.History {
				if strings.Contains(strings.ToLower(m.Role), "user") {
					mid = m.MessageID
					break
				}
			}
			if byMsg[mid] == nil {
				byMsg[mid] = map[string]bool{}
			}
			byMsg[mid][tk.ID] = true
		}
		if token = r.Result.NextPageToken; token == "" {
			break
		}
	}
	out := map[string][]string{}
	for mid, set := range byMsg {
		for id := range set {
			out[mid] = append(out[mid], id)
		}
		sort.Strings(out[mid])
	}
	return out
}
