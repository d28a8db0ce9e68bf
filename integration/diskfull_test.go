package integration

// Disk full: what the mesh does when JetStream's storage is full.
//
// TestStoreLimitRefusesCleanly runs in the default suite: one embedded
// server whose JetStream file store is bounded (ServerConfig.MaxStore, the
// nats role's --max-store), an edge and an echo worker in-process, filled
// with sends until JetStream refuses them. Every refusal must be -32000
// with a short message saying the store is full, answered quickly (never
// -32603, never a hang); every acknowledged task must stay readable and
// completed; once space is freed (the oldest tasks purged, as retention
// does), sends work again without restarting anything.
//
// The tests on a real full disk (tmpfs, ENOSPC) need root and mount(8):
// they run only with A2AMESH_TMPFS_TESTS=1 (diskfull_tmpfs_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// diskLogger discards logs unless A2AMESH_TEST_LOG is set.
func diskLogger() *slog.Logger {
	if os.Getenv("A2AMESH_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// smallMesh is an edge and an echo worker on one embedded server.
type smallMesh struct {
	bus  *taskstore.Store
	url  string // the echo agent's endpoint
	hc   *http.Client
	stop func()
}

// startSmallMesh starts a mesh on the server(s) connect reaches (which the
// caller owns), with streams of replicas and a work queue small enough for
// a small store (its MaxBytes is reserved against the server's max store).
func startSmallMesh(t *testing.T, connect func(name string) (*nats.Conn, error), replicas int) *smallMesh {
	t.Helper()
	log := diskLogger()
	ctx, cancel := context.WithCancel(context.Background())
	open := func(name string) *taskstore.Store {
		nc, err := connect(name)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		deadline := time.Now().Add(60 * time.Second)
		for {
			octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
			b, err := bustest.OpenStoreOn(octx, nc, bus.Config{MaxQueueBytes: 1 << 20, Replicas: replicas})
			ocancel()
			if err == nil {
				return b
			}
			require.True(t, time.Now().Before(deadline), "bus not open: %v", err)
			time.Sleep(250 * time.Millisecond)
		}
	}
	eb, wb := open("edge"), open("worker")
	var wg sync.WaitGroup
	w := &agentrt.Worker{Store: wb, Agent: agents.Builtin()["echo"], Name: "echo", Concurrency: 8, Logger: log}
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	table := registry.NewTable(eb.Bus())
	table.Logger = log
	wg.Add(1)
	go func() { defer wg.Done(); _ = table.Run(ctx) }()
	e := edge.New(edge.Config{Store: eb, Registry: table, Logger: log})
	hs := httptest.NewServer(e)
	m := &smallMesh{bus: eb, url: hs.URL + "/agents/echo", hc: &http.Client{Timeout: 40 * time.Second}}
	m.stop = func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		wg.Wait()
	}
	t.Cleanup(m.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := table.Lookup("echo"); ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "echo not registered")
		time.Sleep(20 * time.Millisecond)
	}
	return m
}

// sendResult is one blocking send's outcome.
type sendResult struct {
	messageID, taskID, state string
	code                     int
	message                  string
	start                    time.Time
	took                     time.Duration
	err                      error
}

// send makes one blocking SendMessage (A2A 1.0) of text with messageID.
func (m *smallMesh) send(messageID, text string) sendResult {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message": map[string]any{"role": "ROLE_USER", "messageId": messageID, "parts": []any{map[string]any{"text": text}}}}})
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	resp, err := m.hc.Do(req)
	r := sendResult{messageID: messageID, start: start, took: time.Since(start)}
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		r.err = err
		return r
	}
	r.took = time.Since(start)
	if out.Error != nil {
		r.code, r.message = out.Error.Code, out.Error.Message
		return r
	}
	r.taskID, r.state = out.Result.Task.ID, out.Result.Task.Status.State
	return r
}

// getTask reads a task: its state and its artifact's text.
func (m *smallMesh) getTask(t *testing.T, id string) (string, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": id}})
	req, _ := http.NewRequest(http.MethodPost, m.url, bytes.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifacts []struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"artifacts"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Nil(t, out.Error, "GetTask %s", id)
	text := ""
	for _, a := range out.Result.Artifacts {
		for _, p := range a.Parts {
			text += p.Text
		}
	}
	return out.Result.Status.State, text
}

// requireStoreFullRefusal checks a refused send: -32000 with a short
// message saying the store is full, answered well within the failover
// budget (the refusal is JetStream's answer, not a timeout).
func requireStoreFullRefusal(t *testing.T, r sendResult) {
	t.Helper()
	require.NoError(t, r.err)
	require.Equal(t, -32000, r.code, "refusal code (message %q)", r.message)
	require.Contains(t, r.message, "full", "refusal message")
	require.Less(t, len(r.message), 120, "a short message: %q", r.message)
	for _, bad := range []string{"nats:", "jetstream", "err_code", "goroutine", ".go:", "failover"} {
		require.NotContains(t, strings.ToLower(r.message), bad, "message %q", r.message)
	}
	require.Less(t, r.took, 5*time.Second, "a refusal is answered at once, not after a timeout")
}

func TestStoreLimitRefusesCleanly(t *testing.T) {
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true, MaxStore: 6 << 20, Logger: diskLogger()})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	m := startSmallMesh(t, srv.Connect, 1)

	// Fill: 8 KiB sends (each task keeps about 4x that: the message in
	// its log and snapshot, the artifact in both) until JetStream
	// refuses; bounded in count and time.
	text := strings.Repeat("d", 8<<10)
	acked := map[string]string{} // task id -> messageId
	// pending holds sends accepted as the store filled: the task's first
	// write fit, its snapshot did not, and its work was already queued.
	// Such a send is answered within about a second (the worker's first try) with the task
	// as it stands (submitted), and the task runs once space returns.
	pending := map[string]bool{}
	var refusal *sendResult
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 400 && refusal == nil && time.Now().Before(deadline); i++ {
		r := m.send(fmt.Sprintf("fill-%d", i), text)
		switch {
		case r.err == nil && r.code == 0 && r.state == "TASK_STATE_SUBMITTED":
			requireAcceptedAsFull(t, r)
			pending[r.taskID] = true
		case r.err == nil && r.code == 0:
			require.Equal(t, "TASK_STATE_COMPLETED", r.state, "an acknowledged send")
			acked[r.taskID] = fmt.Sprintf("fill-%d", i)
		default:
			refusal = &r
		}
	}
	require.NotNil(t, refusal, "JetStream never refused a send (%d acknowledged)", len(acked))
	t.Logf("%d sends acknowledged (%d of them as the store filled), then: code %d %q after %v", len(acked)+len(pending), len(pending), refusal.code, refusal.message, refusal.took)
	requireStoreFullRefusal(t, *refusal)
	require.Greater(t, len(acked), 10, "the store took some tasks first")

	// Full: further sends are refused the same way, and every
	// acknowledged task is still readable, completed, with its artifact.
	for i := 0; i < 3; i++ {
		requireStoreFullRefusal(t, m.send(fmt.Sprintf("full-%d", i), text))
	}
	for id := range acked {
		state, got := m.getTask(t, id)
		require.Equal(t, "TASK_STATE_COMPLETED", state, "task %s", id)
		require.Equal(t, text, got, "task %s's artifact", id)
	}
	for id := range pending {
		state, _ := m.getTask(t, id)
		require.Equal(t, "TASK_STATE_SUBMITTED", state, "task %s, accepted as the store filled", id)
	}

	// Space returns: the acknowledged tasks are purged (as retention or an
	// operator would), and sends work again, with nothing restarted.
	purgeTasks(t, m.bus, acked)
	deadline = time.Now().Add(15 * time.Second)
	var r sendResult
	for i := 0; time.Now().Before(deadline); i++ {
		if r = m.send(fmt.Sprintf("after-%d", i), "hello"); r.code == 0 && r.err == nil {
			break
		}
		requireStoreFullRefusal(t, r) // not yet: still the same clear refusal
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, r.err)
	require.Zero(t, r.code, "a send once space is back: %q", r.message)
	require.Equal(t, "TASK_STATE_COMPLETED", r.state)

	// A task accepted as the store filled was queued, not lost: it runs
	// now that space is back.
	for id := range pending {
		deadline := time.Now().Add(15 * time.Second)
		for {
			state, got := m.getTask(t, id)
			if state == "TASK_STATE_COMPLETED" {
				require.Equal(t, text, got, "task %s's artifact", id)
				break
			}
			require.True(t, time.Now().Before(deadline), "task %s, accepted as the store filled, is still %s", id, state)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// requireAcceptedAsFull checks a send accepted as the store filled: the
// task as it stands (submitted), answered within the store-full grace,
// not after the blocking bound.
func requireAcceptedAsFull(t *testing.T, r sendResult) {
	t.Helper()
	require.NotEmpty(t, r.taskID)
	require.Less(t, r.took, 5*time.Second, "a send accepted as the store filled is answered after the grace, not the blocking bound")
}

// purgeTasks removes tasks' logs, which hold the tasks (what retention
// does when they age out).
func purgeTasks(t *testing.T, b *taskstore.Store, tasks map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	js := b.Bus().JetStream()
	events, err := js.Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	for id := range tasks {
		subj, err := logSubject(ctx, js, id)
		require.NoError(t, err)
		require.NoError(t, events.Purge(ctx, jetstream.WithPurgeSubject(subj)))
	}
}
