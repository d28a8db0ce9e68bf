package mesh

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestStartFailsCleanlyWhenPortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Start(ctx, Config{Listen: ln.Addr().String(), DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	assert.Nil(t, m)
	assert.ErrorContains(t, err, "listen")
}

func TestStartAndClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := Start(ctx, Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	assert.Contains(t, m.URL(), "http://127.0.0.1:")
	m.Close()
	m.Close() // idempotent
}

func TestCloseStopsEverythingAndDataStays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	var taskID string
	for round := range 2 { // the second Start reopens the first one's data
		m, err := Start(ctx, Config{Listen: "127.0.0.1:0", DataDir: dir,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		if round == 0 {
			res := rpc(t, m.URL()+"/agents/echo", `"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"hi"}]}}`)
			taskID = res.Task.ID
			require.NotEmpty(t, taskID)
		} else {
			res := rpc(t, m.URL()+"/agents/echo", `"GetTask","params":{"id":"`+taskID+`"}`)
			assert.Equal(t, taskID, res.ID)
			assert.Equal(t, "TASK_STATE_COMPLETED", res.Status.State)
		}
		m.Close()
	}
	goleak.VerifyNone(t)
}

type rpcTask struct {
	ID     string
	Status struct{ State string }
}

// rpc calls an A2A 1.0 JSON-RPC method; call is the request's method and
// params members.
func rpc(t *testing.T, url, call string) (res struct {
	rpcTask
	Task rpcTask
}) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":`+call+`}`))
	require.NoError(t, err)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Nil(t, body.Error, "%s", body.Error)
	require.NoError(t, json.Unmarshal(body.Result, &res))
	return res
}
