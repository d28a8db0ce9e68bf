package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

// `a2amesh worker --proxy … --require-signed-card`, as processes: a
// worker proxying an unsigned card (the a2a-go SDK server's) exits saying
// why; one proxying an agent of the mesh itself (an edge signs its cards)
// starts, and GET /agents says what it verified. `a2amesh card-keys
// rotate` then reaches the edge: its cards carry two signatures.
func TestRequireSignedCardProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	upURL, stopUp, err := a2agoecho.Start(ctx)
	require.NoError(t, err)
	defer stopUp()

	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	base := "http://" + edgeAddr
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRole(t, bin, "edge", "edge", "--nats", natsURL, "--listen", edgeAddr)

	refused := startRole(t, bin, "unsigned", "worker", "--nats", natsURL, "--proxy", upURL, "--name", "unsigned",
		"--trusted-agents", "127.0.0.1", "--require-signed-card")
	select {
	case <-refused.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a worker requiring a signed card must exit on an unsigned one")
	}
	assert.NotZero(t, refused.cmd.ProcessState.ExitCode())
	assert.Contains(t, refused.out.String(), "--require-signed-card")
	assert.Contains(t, refused.out.String(), "unsigned")

	startRole(t, bin, "sdk", "worker", "--nats", natsURL, "--proxy", upURL, "--name", "sdk-echo", "--trusted-agents", "127.0.0.1")
	waitAgent(t, base, "sdk-echo")
	startRole(t, bin, "signed", "worker", "--nats", natsURL, "--proxy", base+"/agents/sdk-echo", "--name", "via-edge",
		"--trusted-agents", "127.0.0.1", "--require-signed-card")
	waitAgent(t, base, "via-edge")

	var list struct {
		CardChecks map[string]struct {
			Status string   `json:"status"`
			KIDs   []string `json:"kids"`
			JKU    string   `json:"jku"`
		} `json:"cardChecks"`
	}
	resp, err := http.Get(base + "/agents")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	assert.Equal(t, "verified", list.CardChecks["via-edge"].Status)
	assert.Equal(t, base+"/.well-known/jwks.json", list.CardChecks["via-edge"].JKU)
	assert.Equal(t, "unsigned", list.CardChecks["sdk-echo"].Status)

	rot := startRole(t, bin, "rotate", "card-keys", "--nats", natsURL, "rotate")
	select {
	case <-rot.done:
	case <-time.After(20 * time.Second):
		t.Fatal("card-keys rotate did not finish")
	}
	require.Zero(t, rot.cmd.ProcessState.ExitCode(), rot.out.String())
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/.well-known/agent-card.json")
		require.NoError(t, err)
		var card struct {
			Signatures []json.RawMessage `json:"signatures"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
		resp.Body.Close()
		if len(card.Signatures) == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the rotation did not reach the edge: %d signatures", len(card.Signatures))
		time.Sleep(100 * time.Millisecond)
	}
}
