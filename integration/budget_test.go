package integration

// Past the failover budget a send is told to retry (-32000), never given
// an internal error (-32603) nor left hanging; retried with the same
// messageId once the cluster is back, it makes exactly one task, which
// completes.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

func TestSendPastFailoverBudgetIsBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node cluster fault test")
	}
	t0 := time.Now()
	ev := &clusterEvents{t0: t0}
	logs := &durBuffer{max: durOutputCap}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("A2AMESH_TEST_LOG") != "" {
			t.Logf("--- mesh log:\n%s", logs.String())
			t.Logf("connection events:\n%v", ev.lines())
		}
	})
	nodes := startCluster(t, "")
	cfg := bus.Config{Replicas: 3, AckWait: 3 * time.Second}
	admin := clusterOpen(t, clusterDial(t, "admin", nodes, 0, ev), cfg, 20*time.Second)
	clusterLeaders(t, admin.Bus().JetStream(), 3, 15*time.Second)
	edgeBus := clusterOpen(t, clusterDial(t, "edge", nodes, 0, ev), cfg, 10*time.Second)
	workerBus := clusterOpen(t, clusterDial(t, "worker", nodes, 0, ev), cfg, 10*time.Second)

	runCtx, cancelRun := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	table := registry.NewTable(edgeBus.Bus())
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = table.Run(runCtx)
	}()
	go func() {
		defer wg.Done()
		w := &agentrt.Worker{Store: workerBus, Agent: agents.Slow{}, Name: "slow", Concurrency: 4, Timeout: 20 * time.Second, Logger: logger}
		_ = w.Run(runCtx)
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := edge.NewServer(edge.New(edge.Config{Store: edgeBus, Registry: table, Logger: logger}), logger)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		cancel()
		cancelRun()
		wg.Wait()
	})
	base := "http://" + ln.Addr().String()
	waitAgent(t, base, "slow")
	client := &clusterClient{base: base, hc: &http.Client{}}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	send := func(msgID string) (json.RawMessage, *rpcError, error) {
		params := map[string]any{"message": map[string]any{"messageId": msgID, "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": clusterSlowText}}}}
		return client.call("SendMessage", params)
	}

	// The mesh works.
	_, rerr, err := send("budget-" + run + "-before")
	require.NoError(t, err)
	require.Nil(t, rerr, "a send before the fault")

	// Two nodes of three go: no raft group has a quorum, no write lands.
	nodes[1].kill()
	nodes[2].kill()
	ev.add("killed n1 and n2")
	msgID := "budget-" + run + "-during"
	start := time.Now()
	res, rerr, err := send(msgID)
	took := time.Since(start)
	require.NoErrorf(t, err, "the send without quorum got no JSON-RPC answer within %v (a hang?)", clusterCallTimeout)
	require.NotNilf(t, rerr, "a send without quorum was acknowledged: %s", trimBody(res))
	assert.Equalf(t, a2a.CodeServerBusy, rerr.Code, "a send past the failover budget is answered -32000 (retry), got %d %q after %v", rerr.Code, rerr.Message, took)
	t.Logf("without quorum the send was answered %d %q after %v", rerr.Code, rerr.Message, took.Round(time.Millisecond))

	// The nodes come back; the client's retry with the same messageId is
	// acknowledged (-32000 retried meanwhile, bounded) and completes.
	require.NoError(t, nodes[1].start(t))
	require.NoError(t, nodes[2].start(t))
	clusterLeaders(t, admin.Bus().JetStream(), 3, 30*time.Second)
	var taskID string
	var errs []string
	for attempt := 0; attempt < 10 && taskID == ""; attempt++ {
		res, rerr, err := send(msgID)
		switch {
		case err != nil:
			t.Fatalf("retry %d: %v", attempt, err)
		case rerr != nil && rerr.Code == a2a.CodeServerBusy:
			errs = append(errs, rerr.Message)
			time.Sleep(time.Second)
		case rerr != nil:
			t.Fatalf("retry %d answered %d %q", attempt, rerr.Code, rerr.Message)
		default:
			tk := decodeSendTask(t, res)
			require.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State, "the retried send's task")
			taskID = tk.ID
		}
	}
	require.NotEmptyf(t, taskID, "the retried send was never acknowledged: %v", errs)

	// A bucket scan right after the two nodes rejoined sometimes hangs
	// until its deadline while the next one answers in milliseconds (seen
	// in about 3 runs of 8, reported): the scan is retried, logged; the
	// task count it answers is what this test asserts.
	var recs []*taskstore.TaskRecord
	for attempt := 1; attempt <= 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		recs, err = admin.ListTasks(ctx, func(r *taskstore.TaskRecord) bool {
			return len(r.Task.History) > 0 && r.Task.History[0].MessageID == msgID
		})
		cancel()
		if err == nil {
			break
		}
		t.Logf("KNOWN ISSUE: listing tasks after the nodes rejoined failed after %v (attempt %d): %v", time.Since(began).Round(time.Millisecond), attempt, err)
	}
	require.NoError(t, err)
	var ids []string
	for _, r := range recs {
		ids = append(ids, fmt.Sprintf("%s (%s)", r.Task.ID, r.Task.Status.State))
	}
	assert.Equal(t, []string{taskID + " (" + string(a2a.StateCompleted) + ")"}, ids, "tasks made by messageId %s", msgID)
}

// decodeSendTask reads the task of a 1.0 SendMessage result.
func decodeSendTask(t *testing.T, res []byte) wTask {
	t.Helper()
	var r struct {
		Task *wTask `json:"task"`
	}
	require.NoError(t, json.Unmarshal(res, &r), trimBody(res))
	require.NotNil(t, r.Task, "result without a task: %s", trimBody(res))
	return *r.Task
}
