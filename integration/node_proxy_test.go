package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// startNodeAgents runs one of the @a2a-js/sdk servers of integration/node/
// refserver under Node and returns its base URL; its agents are at
// <base>/agents/{echo,slow,ask}.
func startNodeAgents(t *testing.T, script string, env ...string) string {
	t.Helper()
	node, dir := requireNode(t)
	cmd := exec.Command(node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- strings.TrimSpace(sc.Text())
		}
		for sc.Scan() { // keep draining
		}
	}()
	select {
	case base := <-line:
		require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), "unexpected first line %q", base)
		return base
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not start", script)
		return ""
	}
}

// Agents served by the JavaScript SDK (1.x speaking 1.0, 0.3.x speaking
// 0.3) join the mesh through proxy workers, unchanged; a client of the
// mesh runs a multi-turn conversation with them.
func TestProxyToJSSDKAgents(t *testing.T) {
	requireNode(t) // before the mesh: skip or fail once, not per subtest
	m := meshtest.Start(t)
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, script, version string
		env                   []string
	}{
		{"js-v1", "refserver/v1.mjs", "1.0", nil},
		{"js-v03", "refserver/v03.mjs", "0.3", []string{"REFSERVER_V03_CARD=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := startNodeAgents(t, tc.script, tc.env...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, agent := range []string{"ask", "echo"} {
				p, err := proxy.New(ctx, proxy.Config{URL: base + "/agents/" + agent, Name: tc.name + "-" + agent, Guard: guard, Store: m.Store()})
				require.NoError(t, err)
				_, _, version := p.Endpoint()
				assert.Equal(t, tc.version, version)
				wctx, stop := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					_ = (&agentrt.Worker{Store: m.Store(), Agent: p, Concurrency: 4, Timeout: 20 * time.Second}).Run(wctx)
				}()
				t.Cleanup(func() { stop(); <-done })
				waitAgent(t, m.URL, tc.name+"-"+agent)
			}

			echo := client.New(m.URL + "/agents/" + tc.name + "-echo")
			res, err := echo.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("from the mesh")})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
			assert.Contains(t, taskText(res.Task), "from the mesh")

			ask := client.New(m.URL + "/agents/" + tc.name + "-ask")
			res, err = ask.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("hi")})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			require.Equal(t, a2a.StateInputRequired, res.Task.Status.State)
			assert.Equal(t, "What is your name?", res.Task.Status.Message.Text())
			msg := client.TextMessage("Ada")
			msg.TaskID = res.Task.ID
			res, err = ask.Send(ctx, &a2a.SendMessageRequest{Message: msg})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
			assert.Contains(t, taskText(res.Task), "Hello, Ada!")
		})
	}
}

// taskText joins the text of a task's artifacts.
func taskText(t *a2a.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
