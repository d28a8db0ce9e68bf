package agentrt_test

// Tests of the worker's settle and re-run paths: when the bus refuses the
// write that records how a turn ended, the work must go back to the queue
// and the turn run again, never be acked with the task left working or be
// failed for the bus's fault.
//
// The bus refusal is real: the test lowers the A2A_LOG stream's
// max_msg_size, so JetStream itself rejects the append ("message size
// exceeds maximum allowed", a non-transient API error) at the exact point
// under test, over a live connection (acks and naks still get through).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// capEvents sets the events stream's max_msg_size (-1: no limit) and
// returns the previous value.
func capEvents(t *testing.T, b *taskstore.Store, size int32) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.Bus().JetStream().Stream(ctx, taskstore.StreamLog)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	prev := cfg.MaxMsgSize
	cfg.MaxMsgSize = size
	_, err = b.Bus().JetStream().UpdateStream(ctx, cfg)
	require.NoError(t, err, "set max_msg_size of %s to %d", taskstore.StreamLog, size)
	return prev
}

// runsOf reads a2amesh_worker_runs_total{agent, outcome}.
func runsOf(t *testing.T, m *metrics.Metrics, agent, outcome string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != "a2amesh_worker_runs_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			if labelIs(mt, "agent", agent) && labelIs(mt, "outcome", outcome) {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

// startWorkerWith runs w until the test ends (or the returned stop).
func startWorkerWith(t *testing.T, w *agentrt.Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// sendAsync starts a task with a non-blocking send and returns its id.
func sendAsync(t *testing.T, url, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := client.New(url).Send(ctx, &a2a.SendMessageRequest{Message: client.TextMessage(text),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	return res.Task.ID
}

// waitFinal polls the task until it is in a final state (completed, failed,
// canceled, rejected, input-required...) or budget runs out; it returns the
// last snapshot read.
func waitFinal(t *testing.T, b *taskstore.Store, id string, budget time.Duration) *taskstore.TaskRecord {
	t.Helper()
	deadline := time.Now().Add(budget)
	var rec *taskstore.TaskRecord
	for i := 0; i < 10_000 && time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := b.LoadTask(ctx, id)
		cancel()
		if err == nil {
			rec = r
			if r.Task.Status.State.Final() {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rec
}

// logStates lists the states of the status events in task id's log, in
// order (a task's creation entry counts as its state then).
func logStates(t *testing.T, b *taskstore.Store, id string) []a2a.TaskState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, _, err := b.TaskLog(ctx, id, 0, 10_000)
	require.NoError(t, err)
	var out []a2a.TaskState
	for _, e := range events {
		switch ev := e.Resp; {
		case ev.Task != nil:
			out = append(out, ev.Task.Status.State)
		case ev.StatusUpdate != nil:
			out = append(out, ev.StatusUpdate.Status.State)
		}
	}
	return out
}

func countState(states []a2a.TaskState, s a2a.TaskState) int {
	n := 0
	for _, x := range states {
		if x == s {
			n++
		}
	}
	return n
}

// bigError is an agent error whose public message is big: the worker's
// write of it (the failed status) is over a capped max_msg_size.
type bigError struct{}

func (bigError) Error() string         { return "big error" }
func (bigError) PublicMessage() string { return strings.Repeat("x", 4096) }

// refused is an agent whose first run ends in a way whose recording the
// bus refuses; later runs complete.
type refused struct {
	name string
	// mode says how run 1 ends:
	//   "complete": caps the events stream, returns nil (the worker's own
	//               Complete is refused);
	//   "error":    caps, returns an error (the worker's Fail is refused);
	//   "timeout":  caps, waits past Worker.Timeout (the worker's timed-out
	//               Fail is refused);
	//   "public":   returns a PublicError too big for the (pre-set) cap;
	//   "artifact": writes an artifact too big for the (pre-set) cap and
	//               returns the write's error (the bus failed, not the agent).
	mode  string
	b     *taskstore.Store
	runs  atomic.Int64
	first chan struct{} // closed when run 1 is about to end
}

func (r *refused) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: r.name, Description: "its first run's end is refused by the bus", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "r", Name: "r", Description: "r", Tags: []string{"t"}}}}
}

// tinyCap refuses every event of the log (each is over 64 bytes).
const tinyCap = 64

// smallCap admits the mesh's ordinary events, not a 4 KiB one.
const smallCap = 2048

func (r *refused) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	n := r.runs.Add(1)
	if req.Attempt > 1 {
		if err := w.Artifact(a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprint("attempt ", req.Attempt))}}, false, true); err != nil {
			return err
		}
		return w.Complete(fmt.Sprint("done on attempt ", req.Attempt))
	}
	if n == 1 {
		defer close(r.first)
	}
	tiny := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := r.b.Bus().JetStream().Stream(ctx, taskstore.StreamLog)
		if err != nil {
			panic(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgSize = tinyCap
		if _, err := r.b.Bus().JetStream().UpdateStream(ctx, cfg); err != nil {
			panic(err)
		}
	}
	switch r.mode {
	case "complete":
		tiny()
		return nil
	case "error":
		tiny()
		return errors.New("the agent's own failure")
	case "timeout":
		tiny()
		<-ctx.Done()
		return ctx.Err()
	case "public":
		return bigError{}
	case "artifact":
		return w.Artifact(a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("y", 4096))}}, false, true)
	}
	return fmt.Errorf("unknown mode %q", r.mode)
}

// TestRefusedEndOfTurnRunsAgain: whichever way a turn ends, when the bus
// refuses the write recording it, the worker hands the work back and the
// turn runs again: the task completes on attempt 2, with one COMPLETED
// and no FAILED event in its log. A worker that acks anyway (settle) leaves
// the task working for good; one that fails the task for the bus's refusal
// (the write-failed branch) ends it failed.
func TestRefusedEndOfTurnRunsAgain(t *testing.T) {
	// Set explicitly: room for a redelivery or two, a timely AckWait.
	cfg := bus.Config{AckWait: 3 * time.Second, MaxDeliver: 8}
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Bus = cfg }))
	for _, mode := range []string{"complete", "error", "timeout", "public", "artifact"} {
		t.Run(mode, func(t *testing.T) {
			name := "refused-" + mode
			a := &refused{name: name, mode: mode, b: m.Store(), first: make(chan struct{})}
			met := metrics.New()
			w := &agentrt.Worker{Store: m.Store(), Agent: a, Concurrency: 2, Timeout: 20 * time.Second, Metrics: met}
			if mode == "timeout" {
				w.Timeout = 500 * time.Millisecond
			}
			startWorkerWith(t, w)
			waitRoutable(t, m, name)
			pre := capEvents(t, m.Store(), -1)
			t.Cleanup(func() { capEvents(t, m.Store(), pre) })
			if mode == "public" || mode == "artifact" {
				capEvents(t, m.Store(), smallCap)
			}

			id := sendAsync(t, m.URL+"/agents/"+name, "go")
			select {
			case <-a.first:
			case <-time.After(20 * time.Second):
				t.Fatal("the agent's first run never ended")
			}
			// The worker's refused write makes the run "retried"; only then
			// is the cap lifted, so the re-run can record its events.
			deadline := time.Now().Add(15 * time.Second)
			for runsOf(t, met, name, metrics.RunRetried) < 1 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			retried := runsOf(t, met, name, metrics.RunRetried)
			capEvents(t, m.Store(), -1)
			assert.GreaterOrEqualf(t, retried, 1.0, "the run whose end the bus refused was not handed back (settled runs: %v)",
				runsOf(t, met, name, metrics.RunSettled))

			budget := 3*cfg.AckWait + 10*time.Second
			rec := waitFinal(t, m.Store(), id, budget)
			require.NotNil(t, rec, "task %s unreadable", id)
			states := logStates(t, m.Store(), id)
			require.Equalf(t, a2a.StateCompleted, rec.Task.Status.State,
				"task %s after its first run's end was refused (waited %v); log states %v; status %q",
				id, budget, states, statusText(rec))
			assert.Equal(t, "done on attempt 2", statusText(rec))
			assert.Equal(t, 1, countState(states, a2a.StateCompleted), "COMPLETED events in the log: %v", states)
			assert.Zero(t, countState(states, a2a.StateFailed), "FAILED events in the log: %v", states)
			assert.EqualValues(t, 2, a.runs.Load(), "agent runs")
			require.Len(t, rec.Task.Artifacts, 1)
			assert.Equal(t, "attempt 2", rec.Task.Artifacts[0].Parts[0].Text)
		})
	}
}

func statusText(rec *taskstore.TaskRecord) string {
	if rec == nil || rec.Task.Status.Message == nil {
		return ""
	}
	return rec.Task.Status.Message.Text()
}
