package agentrt_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// waiter runs until its context ends and reports why.
type waiter struct {
	started chan string
	causes  chan error
}

func (waiter) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "waiter", Description: "waits for its cancel", Version: "1", DefaultOutputModes: []string{"text/plain"}}
}

func (a waiter) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	a.started <- req.TaskID
	<-ctx.Done()
	a.causes <- context.Cause(ctx)
	return nil
}

// A cancel stops the run holding the task at once, through the worker's
// one subscription to the mesh's cancels, while the agent writes nothing
// (a write would also find the task closed); two runs of other tasks on
// the same worker go on.
func TestCancelReachesTheRun(t *testing.T) {
	m := meshtest.Start(t)
	a := waiter{started: make(chan string, 3), causes: make(chan error, 3)}
	startWorker(t, m.Store(), a)
	waitRoutable(t, m, "waiter")
	c := client.New(m.URL + "/agents/waiter")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ids []string
	for range 3 {
		res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage("wait"),
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		require.NoError(t, err)
		ids = append(ids, res.Task.ID)
	}
	for range 3 {
		select {
		case <-a.started:
		case <-ctx.Done():
			t.Fatal("the runs never started")
		}
	}
	for i, id := range ids {
		_, err := c.Cancel(ctx, id)
		require.NoError(t, err)
		select {
		case cause := <-a.causes:
			require.ErrorIs(t, cause, agentrt.ErrCanceled)
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d not stopped by its cancel", i)
		}
		select {
		case <-a.causes:
			t.Fatal("a cancel stopped another task's run")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
