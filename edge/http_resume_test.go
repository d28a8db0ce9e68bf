package edge_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
)

// snapshotOf reads a stream frame that must be a task snapshot: 1.0
// {"task": {...}}, 0.3 a task object with kind "task".
func snapshotOf(t *testing.T, f sseFrame, v03 bool) wireTask {
	t.Helper()
	require.Nil(t, f.Resp.Error, "want a task snapshot, got error %+v", f.Resp.Error)
	if v03 {
		var k struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(f.Resp.Result, &k))
		require.Equal(t, "task", k.Kind, "%s", f.Resp.Result)
		return taskResult(t, &f.Resp)
	}
	var out struct {
		Task *wireTask `json:"task"`
	}
	require.NoError(t, json.Unmarshal(f.Resp.Result, &out))
	require.NotNil(t, out.Task, "want a task snapshot: %s", f.Resp.Result)
	return *out.Task
}

func frameIDs(frames []sseFrame) []uint64 {
	var out []uint64
	for _, f := range frames {
		out = append(out, f.ID)
	}
	return out
}

// Last-Event-ID on a resubscribe (both versions): an id of the task's
// stream resumes after it; at or past the end of a finished (or waiting)
// task the answer is the task's snapshot as the one event, never an empty
// stream; an id that is not an event of the task, or not a number, is one
// -32602 error event.
func TestHTTPResumeLastEventID(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo", "slow", "ask")

	msg := userMsg("chunks=3 delay=0ms", "")
	first := m.streamCall(t, "/agents/slow", "SendStreamingMessage", map[string]any{"message": msg}, nil, 10*time.Second)
	require.GreaterOrEqual(t, len(first), 5, "snapshot, working, 3 chunks, completed")
	taskID := snapshotOf(t, first[0], false).ID
	created, last := first[0].ID, first[len(first)-1].ID
	require.NotZero(t, created)
	other := sendResult(t, m.post(t, "/agents/echo", "SendMessage", map[string]any{"message": userMsg("x", "")}))
	otherFrames := m.streamCall(t, "/agents/echo", "SubscribeToTask", map[string]any{"id": other.ID},
		map[string]string{"Last-Event-ID": "0"}, 5*time.Second)
	require.NotEmpty(t, otherFrames)
	otherID := otherFrames[len(otherFrames)-1].ID // an event of another task, after this task's events

	for _, v := range []struct {
		name, method string
		v03          bool
		completed    string
	}{{"v1.0", "SubscribeToTask", false, "TASK_STATE_COMPLETED"}, {"v0.3", "tasks/resubscribe", true, "completed"}} {
		t.Run(v.name, func(t *testing.T) {
			resub := func(lastEventID string) []sseFrame {
				return m.streamCall(t, "/a2a", v.method, map[string]any{"id": taskID},
					map[string]string{"Last-Event-ID": lastEventID}, 5*time.Second)
			}
			// The id of the last event of a finished task: its snapshot.
			got := resub(strconv.FormatUint(last, 10))
			require.Len(t, got, 1, "a finished task with nothing after the id answers with its snapshot")
			snap := snapshotOf(t, got[0], v.v03)
			assert.Equal(t, taskID, snap.ID)
			assert.Equal(t, v.completed, snap.Status.State)
			assert.Equal(t, "chunk 1/3\nchunk 2/3\nchunk 3/3\n", snap.text())
			assert.Equal(t, last, got[0].ID, "the snapshot carries the id of the task's last event")

			// An id of the task's stream resumes after it; 0 is the start.
			for _, after := range []uint64{created, 0} {
				got = resub(strconv.FormatUint(after, 10))
				assert.Equal(t, frameIDs(first[1:]), frameIDs(got), "after %d", after)
				for _, f := range got {
					require.Nil(t, f.Resp.Error)
				}
			}
			got = resub(strconv.FormatUint(first[2].ID, 10))
			assert.Equal(t, frameIDs(first[3:]), frameIDs(got))

			// Ids that are not events of this task, and garbage.
			for _, bad := range []struct{ id, says string }{
				{strconv.FormatUint(otherID, 10), "is not an event of task " + taskID},
				{strconv.FormatUint(otherID+1_000_000, 10), "is not an event of task " + taskID},
				{"abc", "is not an event id"},
				{"-3", "is not an event id"},
			} {
				got = resub(bad.id)
				require.Len(t, got, 1, "Last-Event-ID %s", bad.id)
				requireCode(t, &got[0].Resp, -32602, "Last-Event-ID "+bad.id)
				assert.Contains(t, got[0].Resp.Error.Message, bad.says)
				assert.Zero(t, got[0].ID, "an error event has no id")
			}
		})
	}

	// A retried streaming send (same messageId) with the last id: the
	// snapshot too, not a stream left waiting for events that never come.
	got := m.streamCall(t, "/agents/slow", "SendStreamingMessage", map[string]any{"message": msg},
		map[string]string{"Last-Event-ID": strconv.FormatUint(last, 10)}, 5*time.Second)
	require.Len(t, got, 1)
	assert.Equal(t, "TASK_STATE_COMPLETED", snapshotOf(t, got[0], false).Status.State)
	got = m.streamCall(t, "/agents/slow", "SendStreamingMessage", map[string]any{"message": msg},
		map[string]string{"Last-Event-ID": "nope"}, 5*time.Second)
	require.Len(t, got, 1)
	requireCode(t, &got[0].Resp, -32602, "retried send with a bad Last-Event-ID")

	// A task waiting for input, resumed at its last event: its snapshot.
	ask := m.streamCall(t, "/agents/ask", "SendStreamingMessage", map[string]any{"message": userMsg("hi", "")}, nil, 5*time.Second)
	require.NotEmpty(t, ask)
	askID := snapshotOf(t, ask[0], false).ID
	got = m.streamCall(t, "/a2a", "SubscribeToTask", map[string]any{"id": askID},
		map[string]string{"Last-Event-ID": strconv.FormatUint(ask[len(ask)-1].ID, 10)}, 5*time.Second)
	require.Len(t, got, 1)
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", snapshotOf(t, got[0], false).Status.State)
}
