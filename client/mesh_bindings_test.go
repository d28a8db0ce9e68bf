package client

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// meshClients returns, for each way the mesh's edge offers an agent, a
// client of it: each binding picked from the agent's card, and HTTP+JSON
// by tenant at the edge's root.
func meshClients(t *testing.T, m *meshtest.Mesh, agent string) map[string]*Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	card, err := Card(ctx, CardURL(m.URL+"/agents/"+agent))
	require.NoError(t, err)
	out := map[string]*Client{
		"HTTP+JSON tenant": New(m.URL, WithBinding(a2a.BindingHTTPJSON), WithTenant(agent)),
	}
	for _, b := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		c, err := FromCard(card, []string{b})
		require.NoError(t, err, b)
		require.Equal(t, b, c.Binding())
		t.Cleanup(func() { _ = c.Close() })
		out[b] = c
	}
	require.Equal(t, m.GRPCAddr(), out[a2a.BindingGRPC].URL())
	require.Equal(t, m.URL+"/agents/"+agent, out[a2a.BindingHTTPJSON].URL())
	return out
}

// Every binding of the mesh's edge, through the same client methods:
// send, get, list, cancel, errors by code, multi-turn, streams with event
// ids, and a stream resumed after an event id.
func TestBindingsAgainstMesh(t *testing.T) {
	require.Equal(t, edge.GRPCEventIDKey, grpcEventIDKey, "the client reads the event ids the edge sends")
	m := meshtest.Start(t, meshtest.WithGRPC())
	echo, slow, ask := meshClients(t, m, "echo"), meshClients(t, m, "slow"), meshClients(t, m, "ask")
	for _, name := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON, "HTTP+JSON tenant", a2a.BindingGRPC} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			// Send, get, list, cancel.
			c := echo[name]
			res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("hello " + name)})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
			id := res.Task.ID
			task, err := c.GetTask(ctx, id, nil)
			require.NoError(t, err)
			assert.Equal(t, id, task.ID)
			require.NotEmpty(t, task.Artifacts)
			assert.Contains(t, task.Artifacts[0].Parts[0].Text, "hello "+name)
			size := 100
			list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: res.Task.ContextID, PageSize: &size})
			require.NoError(t, err)
			require.Len(t, list.Tasks, 1)
			assert.Equal(t, id, list.Tasks[0].ID)
			_, err = c.Cancel(ctx, id)
			assert.ErrorIs(t, err, a2a.ErrTaskNotCancelable)
			_, err = c.GetTask(ctx, "no-such-task", nil)
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			_, err = c.Cancel(ctx, "no-such-task")
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)

			// Multi-turn.
			c = ask[name]
			res, err = c.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("hi")})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			require.Equal(t, a2a.StateInputRequired, res.Task.Status.State)
			msg := TextMessage("Ada")
			msg.TaskID = res.Task.ID
			res, err = c.Send(ctx, &a2a.SendMessageRequest{Message: msg})
			require.NoError(t, err)
			assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
			assert.Equal(t, msg.TaskID, res.Task.ID)

			// A stream, its event ids, and a resume after one of them.
			c = slow[name]
			s, err := c.Stream(ctx, &a2a.SendMessageRequest{Message: TextMessage("chunks=4 delay=1ms")})
			require.NoError(t, err)
			var evs []Event
			for range 50 {
				ev, err := s.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				evs = append(evs, ev)
			}
			require.NoError(t, s.Close())
			require.GreaterOrEqual(t, len(evs), 6, "snapshot, working, 4 chunks, completed")
			require.NotNil(t, evs[0].Response.Task)
			taskID := evs[0].Response.Task.ID
			last := evs[len(evs)-1].Response
			require.NotNil(t, last.StatusUpdate)
			assert.Equal(t, a2a.StateCompleted, last.StatusUpdate.Status.State)
			prev := uint64(0)
			for i, ev := range evs {
				n, err := strconv.ParseUint(ev.ID, 10, 64)
				require.NoError(t, err, "event %d has id %q", i, ev.ID)
				assert.Greater(t, n, prev, "ids increase")
				prev = n
				if ev.Response.Task != nil {
					assert.NotContains(t, ev.Response.Task.Metadata, grpcEventIDKey, "the id is not left in the metadata")
				}
			}
			assert.Equal(t, evs[len(evs)-1].ID, s.LastEventID())

			after := evs[2].ID
			sub, err := c.Subscribe(ctx, taskID, after)
			require.NoError(t, err)
			var resumed []Event
			for range 50 {
				ev, err := sub.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				resumed = append(resumed, ev)
			}
			require.NoError(t, sub.Close())
			var wantIDs, gotIDs []string
			for _, ev := range evs[3:] {
				wantIDs = append(wantIDs, ev.ID)
			}
			for _, ev := range resumed {
				gotIDs = append(gotIDs, ev.ID)
			}
			assert.Equal(t, wantIDs, gotIDs, "the resumed stream goes on after event %s", after)

			// A resume after an id that is no event: invalid params, at
			// once or as the stream's one event.
			sub, err = c.Subscribe(ctx, taskID, "not-a-number")
			if err == nil {
				_, err = sub.Next()
				_ = sub.Close()
			}
			assert.ErrorIs(t, err, a2a.ErrInvalidParams)
		})
	}
}
