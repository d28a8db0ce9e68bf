package agentrt_test

// Tests of the max-deliveries and dead-letter paths: a turn that keeps
// failing to run (its worker dies, or the bus refuses its events, on every
// delivery) must end failed, saying why, on delivery MaxDeliver, with its
// work item in A2A_DEAD; an undecodable work item goes to A2A_DEAD at once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// deadConfig is the layout of these tests, set explicitly (not the
// defaults, which may change): three deliveries, a short AckWait.
var deadConfig = bus.Config{AckWait: 2 * time.Second, MaxDeliver: 3}

// hanger signals each run's attempt, then holds the task until its run's
// context ends: a worker that dies meanwhile never settles it.
type hanger struct {
	name    string
	started chan int
	runs    atomic.Int64
}

func (h *hanger) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: h.name, Description: "holds its task until stopped", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "h", Name: "h", Description: "h", Tags: []string{"t"}}}}
}

func (h *hanger) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	h.runs.Add(1)
	select {
	case h.started <- req.Attempt:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// bloater writes an artifact over the events stream's capped
// max_msg_size on every run: the bus refuses it each time.
type bloater struct {
	name string
	runs atomic.Int64
}

func (b *bloater) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: b.name, Description: "its every write is refused", Version: "1",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "b", Name: "b", Description: "b", Tags: []string{"t"}}}}
}

func (b *bloater) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	b.runs.Add(1)
	return w.Artifact(a2a.Artifact{ArtifactID: "big", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("z", 4096))}}, false, true)
}

// deadLetters returns the messages on A2A_DEAD's subject of agent.
func deadLetters(t *testing.T, b *taskstore.Store, agent string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.Bus().JetStream().Stream(ctx, bus.StreamDead)
	require.NoError(t, err)
	var out []*jetstream.RawStreamMsg
	next := uint64(1)
	for i := 0; i < 100; i++ {
		m, err := s.GetMsg(ctx, next, jetstream.WithGetMsgSubject(bus.DeadSubject(agent)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		require.NoError(t, err)
		out = append(out, m)
		next = m.Sequence + 1
	}
	return out
}

// requireDeadLettered checks task id ended failed on delivery MaxDeliver,
// saying so, once, and that its work item went to A2A_DEAD and left the
// work queue.
func requireDeadLettered(t *testing.T, b *taskstore.Store, agent, id string, rec *taskstore.TaskRecord) {
	t.Helper()
	require.NotNil(t, rec, "task %s unreadable", id)
	states := logStates(t, b, id)
	require.Equalf(t, a2a.StateFailed, rec.Task.Status.State, "task %s after %d deliveries; log states %v", id, deadConfig.MaxDeliver, states)
	assert.Contains(t, statusText(rec), fmt.Sprintf("%d delivery attempts failed", deadConfig.MaxDeliver), "the failed task says why")
	assert.Equal(t, 1, countState(states, a2a.StateFailed), "FAILED events: %v", states)
	assert.Zero(t, countState(states, a2a.StateCompleted), "COMPLETED events: %v", states)

	dead := deadLetters(t, b, agent)
	var mine []*jetstream.RawStreamMsg
	for _, m := range dead {
		var item taskstore.WorkItem
		if json.Unmarshal(m.Data, &item) == nil && item.TaskID == id {
			mine = append(mine, m)
		}
	}
	if assert.Equalf(t, 1, len(mine), "work items of task %s in %s (of %d on %s)", id, bus.StreamDead, len(dead), bus.DeadSubject(agent)) {
		assert.Equal(t, "max deliveries", mine[0].Header.Get("A2a-Reason"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	queued, err := b.Bus().Queued(ctx, agent, id)
	require.NoError(t, err)
	assert.False(t, queued, "the dead-lettered work item is still in the work queue")
}

// TestMaxDeliveriesDeadLetter: a turn that cannot finish on any delivery
// ends failed with the reason on delivery MaxDeliver (the agent does not
// run that time), and its work item is in A2A_DEAD.
func TestMaxDeliveriesDeadLetter(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Bus = deadConfig
		c.NATSListen = "127.0.0.1:0" // the crashing workers connect over TCP
	}))

	// Each delivery's worker dies mid-run (its NATS connection closes
	// without an ack or nak, as with kill -9): JetStream redelivers after
	// AckWait, to the next worker.
	t.Run("worker-crashes", func(t *testing.T) {
		const name = "crasher"
		h := &hanger{name: name, started: make(chan int, 1)}
		type gen struct {
			nc   *nats.Conn
			stop func()
		}
		startGen := func(n int) gen {
			nc, err := bus.Dial(bus.DialConfig{URL: m.NATSURL(), Name: fmt.Sprint(name, "-", n)})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			b, err := bustest.OpenStoreOn(ctx, nc, deadConfig)
			cancel()
			require.NoError(t, err)
			stop := startWorkerWith(t, &agentrt.Worker{Store: b, Agent: h, Name: name, Instance: fmt.Sprint("gen", n),
				Concurrency: 1, Timeout: time.Minute})
			t.Cleanup(nc.Close)
			return gen{nc: nc, stop: stop}
		}
		g := startGen(1)
		waitRoutable(t, m, name)
		id := sendAsync(t, m.URL+"/agents/"+name, "hold it")

		var attempts []int
		var rec *taskstore.TaskRecord
		wait := 3*deadConfig.AckWait + 10*time.Second
		for n := 1; n <= deadConfig.MaxDeliver+1; n++ {
			if n > 1 {
				g = startGen(n)
			}
			var attempt int
			deadline := time.Now().Add(wait)
			for attempt == 0 && time.Now().Before(deadline) {
				select {
				case attempt = <-h.started:
				case <-time.After(100 * time.Millisecond):
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					r, err := m.Store().LoadTask(ctx, id)
					cancel()
					if err == nil && r.Task.Status.State.Final() {
						rec = r
						deadline = time.Now() // settled without a run
					}
				}
			}
			if attempt == 0 {
				break
			}
			attempts = append(attempts, attempt)
			// The run's claim is written within the writer's linger of
			// its start; a run that dies before it counts for nothing.
			require.Eventually(t, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				r, err := m.Store().LoadTask(ctx, id)
				return err == nil && r.TurnRuns >= len(attempts)
			}, 10*time.Second, 10*time.Millisecond, "the claim of run %d", len(attempts))
			assert.Lessf(t, attempt, deadConfig.MaxDeliver, "the agent ran on delivery %d, MaxDeliver %d: that delivery must fail the task instead", attempt, deadConfig.MaxDeliver)
			// Crash: the connection goes first, so no nak gets out.
			g.nc.Close()
			g.stop()
		}
		if rec == nil {
			rec = waitFinal(t, m.Store(), id, 5*time.Second)
		}
		g.stop()
		want := make([]int, 0, deadConfig.MaxDeliver-1)
		for i := 1; i < deadConfig.MaxDeliver; i++ {
			want = append(want, i)
		}
		assert.Equal(t, want, attempts, "deliveries on which the agent ran")
		requireDeadLettered(t, m.Store(), name, id, rec)
	})

	// Every run's write is refused by the bus: the worker hands the work
	// back each time (nak), until delivery MaxDeliver ends it.
	t.Run("bus-refuses-every-run", func(t *testing.T) {
		const name = "bloater"
		a := &bloater{name: name}
		startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: a, Concurrency: 1, Timeout: time.Minute})
		waitRoutable(t, m, name)
		pre := capEvents(t, m.Store(), smallCap)
		t.Cleanup(func() { capEvents(t, m.Store(), pre) })
		id := sendAsync(t, m.URL+"/agents/"+name, "write too much")
		// Each nak delays the next delivery by 2s.
		rec := waitFinal(t, m.Store(), id, time.Duration(deadConfig.MaxDeliver)*(deadConfig.AckWait+2*time.Second)+10*time.Second)
		assert.EqualValues(t, deadConfig.MaxDeliver-1, a.runs.Load(), "agent runs")
		requireDeadLettered(t, m.Store(), name, id, rec)
	})

	// A work item no worker can decode is dead-lettered at once, not
	// redelivered.
	t.Run("undecodable", func(t *testing.T) {
		const name = "undecodable"
		h := &hanger{name: name, started: make(chan int, 1)}
		startWorkerWith(t, &agentrt.Worker{Store: m.Store(), Agent: h, Concurrency: 1, Timeout: time.Minute})
		waitRoutable(t, m, name)
		garbage := []byte("not a work item {")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := m.Store().Bus().JetStream().Publish(ctx, bus.WorkSubject(name, "garbage"), garbage)
		require.NoError(t, err)
		var dead []*jetstream.RawStreamMsg
		deadline := time.Now().Add(10 * time.Second)
		for len(dead) == 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			dead = deadLetters(t, m.Store(), name)
		}
		// Longer than a redelivery would take.
		time.Sleep(deadConfig.AckWait + time.Second)
		dead = deadLetters(t, m.Store(), name)
		require.Equal(t, 1, len(dead), "dead letters of the undecodable item")
		assert.Equal(t, garbage, dead[0].Data)
		assert.Equal(t, "undecodable", dead[0].Header.Get("A2a-Reason"))
		queued, err := m.Store().Bus().Queued(ctx, name, "garbage")
		require.NoError(t, err)
		assert.False(t, queued, "the undecodable item is still in the work queue")
		assert.Zero(t, h.runs.Load(), "the agent ran an undecodable item")
	})
}
