package integration

// Black-box SSE tests: streaming sends, subscribe/resubscribe, resuming a
// dropped stream with Last-Event-ID, keep-alives, and how stream calls
// report errors (one SSE error event, in both versions).

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// requireShape checks one stream result is in its version's encoding.
func requireShape(t testing.TB, p proto, raw json.RawMessage) {
	t.Helper()
	if p.name == v03.name {
		requireKinds03(t, raw)
	} else {
		requireNoKind(t, raw)
	}
}

// requireTaskStream checks a whole task stream: the task first, then only
// status and artifact updates of that task, ending at state last; in 0.3
// final:true on the last status update only.
func requireTaskStream(t testing.TB, p proto, frames []*frame, taskID, last string) {
	t.Helper()
	require.NotEmpty(t, frames)
	for i, f := range frames {
		requireShape(t, p, f.Reply.Result)
		assert.Equalf(t, taskID, f.Item.TaskID, "frame %d belongs to the task", i)
		if i > 0 {
			assert.Containsf(t, []string{"status", "artifact"}, f.Item.Kind, "frame %d: %s", i, f.Reply.Body)
		}
		if f.Item.Kind == "status" && p.name == v03.name {
			require.NotNilf(t, f.Item.Final, "0.3 status update without final: %s", f.Reply.Body)
			assert.Equalf(t, i == len(frames)-1, *f.Item.Final, "final only on the last event (frame %d: %s)", i, f.Reply.Body)
		}
	}
	end := frames[len(frames)-1]
	assert.Equal(t, "status", end.Item.Kind, "the stream ends with a status update")
	assert.Equal(t, last, end.Item.State)
}

// streamErr makes a streaming call that must fail, and returns its error.
// Stream calls answer SSE even when they fail, in both versions (0.3 JS
// and Go SDK clients read a stream call's answer as SSE only): one event
// with the JSON-RPC error, then the end.
func (m *rawMesh) streamErr(t testing.TB, p proto, path, method string, params any, hdr map[string]string) *rpcError {
	t.Helper()
	id := m.newReqID()
	s, r := m.openStream(t, path, rpcBody(t, id, method, params), hdr)
	require.Nilf(t, r, "a failing %s stream call answers SSE: %v", p.name, r)
	frames := s.readAll(t, p, id, 5)
	require.Len(t, frames, 1, "one error event, then the end")
	require.NotNil(t, frames[0].Reply.Error, "%s", frames[0].Reply.Body)
	assert.False(t, frames[0].HasID, "an error event has no SSE id: it is no log entry to resume after")
	requireCleanMessage(t, frames[0].Reply.Error.Message)
	return frames[0].Reply.Error
}

// splitChunks splits artifact text "chunk 1/n\nchunk 2/n\n" into lines.
func splitChunks(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestStreamSend(t *testing.T) {
	m := startRawMesh(t)
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			s, id := m.stream(t, "/agents/slow", p.stream, sendParams(p.msg("chunks=3 delay=40ms"), nil), nil)
			frames := s.readAll(t, p, id, 100) // returns once the server ends the response
			requireStreamOrder(t, frames, 0)
			require.Equal(t, "task", frames[0].Item.Kind, "the first event is the task: %s", frames[0].Reply.Body)
			assert.Equal(t, p.submitted, frames[0].Item.State)
			requireTaskStream(t, p, frames, frames[0].Item.TaskID, p.completed)
			assert.Equal(t, wantChunks(3), chunkTexts(frames))

			tk := m.getTask(t, p, "/agents/slow", frames[0].Item.TaskID, nil)
			assert.Equal(t, p.completed, tk.Status.State)
			assert.Equal(t, wantChunks(3), splitChunks(tk.artifactText()))
		})
		t.Run(p.name+" multi-turn", func(t *testing.T) {
			t.Parallel()
			s, id := m.stream(t, "/agents/ask", p.stream, sendParams(p.msg("hi"), nil), nil)
			frames := s.readAll(t, p, id, 100)
			requireStreamOrder(t, frames, 0)
			require.Equal(t, "task", frames[0].Item.Kind)
			taskID := frames[0].Item.TaskID
			requireTaskStream(t, p, frames, taskID, p.inputRequired)
			assert.Contains(t, frames[len(frames)-1].Item.Text, "What is your name?")

			tk := m.getTask(t, p, "/agents/ask", taskID, nil)
			s, id = m.stream(t, "/agents/ask", p.stream, sendParams(inTask(p.msg("Carol"), taskID, tk.ContextID), nil), nil)
			frames = s.readAll(t, p, id, 100)
			requireStreamOrder(t, frames, 0)
			require.Equal(t, "task", frames[0].Item.Kind)
			requireTaskStream(t, p, frames, taskID, p.completed)
			assert.Contains(t, strings.Join(chunkTexts(frames), ""), "Hello, Carol!")
		})
	}

	t.Run("errors", func(t *testing.T) {
		for _, p := range bothProtos {
			e := m.streamErr(t, p, "/agents/nobody", p.stream, sendParams(p.msg("x"), nil), nil)
			assert.Equal(t, -32602, e.Code, "%s unknown agent", p.name)
			e = m.streamErr(t, p, "/agents/echo", p.stream, sendParams(inTask(p.msg("x"), uuid.NewString(), ""), nil), nil)
			assert.Equal(t, -32001, e.Code, "%s unknown task", p.name)
			e = m.streamErr(t, p, "/agents/echo", p.stream, sendParams(p.msg("x"), map[string]any{"acceptedOutputModes": []string{"image/png"}}), nil)
			assert.Equal(t, -32005, e.Code, "%s output modes", p.name)
			e = m.streamErr(t, p, "/agents/echo", p.stream, sendParams(p.msg("x"), nil), map[string]string{"A2A-Version": "2.0"})
			assert.Equal(t, -32009, e.Code, "%s version", p.name)
			e = m.streamErr(t, p, "/agents/echo", p.resub, map[string]any{"id": uuid.NewString()}, nil)
			assert.Equal(t, -32001, e.Code, "%s subscribe to an unknown task", p.name)
		}
	})
}

func TestStreamSubscribe(t *testing.T) {
	m := startRawMesh(t)
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			tk := p.sendTask(t, m.ok(t, "/agents/slow", p.send, sendParams(p.msg("chunks=5 delay=80ms"), p.nonBlocking)))
			require.False(t, p.final(tk.Status.State))
			s, id := m.stream(t, "/agents/slow", p.resub, map[string]any{"id": tk.ID}, nil)
			frames := s.readAll(t, p, id, 100)
			requireStreamOrder(t, frames, 0)
			require.Equal(t, "task", frames[0].Item.Kind, "the first event is the task: %s", frames[0].Reply.Body)
			assert.Equal(t, tk.ID, frames[0].Item.TaskID)
			requireTaskStream(t, p, frames, tk.ID, p.completed)
			// what the snapshot had plus what followed is every chunk once
			got := append(splitChunks(frames[0].Item.Task.artifactText()), chunkTexts(frames)...)
			assert.Equal(t, wantChunks(5), got)
		})
	}

	t.Run("completed task", func(t *testing.T) {
		tk := v10.sendTask(t, m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("done"), nil)))
		e := m.streamErr(t, v10, "/agents/echo", "SubscribeToTask", map[string]any{"id": tk.ID}, nil)
		assert.Equal(t, -32004, e.Code)

		// A 0.3 client resubscribing to a finished task gets the task and the end.
		s, id := m.stream(t, "/agents/echo", "tasks/resubscribe", map[string]any{"id": tk.ID}, nil)
		frames := s.readAll(t, v03, id, 10)
		require.NotEmpty(t, frames)
		for _, f := range frames {
			require.Nil(t, f.Reply.Error)
		}
		last := frames[len(frames)-1].Item
		assert.Equal(t, "completed", last.State)
	})
}

func TestStreamResume(t *testing.T) {
	m := startRawMesh(t)

	// replay returns every event of a task after its creation (the
	// reference sequence), read back once the task has ended.
	replay := func(t *testing.T, p proto, path, taskID string, after uint64) []*frame {
		t.Helper()
		s, id := m.stream(t, path, p.resub, map[string]any{"id": taskID},
			map[string]string{"Last-Event-ID": strconv.FormatUint(after, 10)})
		frames := s.readAll(t, p, id, 200)
		requireStreamOrder(t, frames, after)
		return frames
	}

	for _, p := range bothProtos {
		for _, dropAfter := range []int{1, 3, 5} {
			t.Run(p.name+" drop and resubscribe after "+strconv.Itoa(dropAfter), func(t *testing.T) {
				t.Parallel()
				const n = 6
				s, id := m.stream(t, "/agents/slow", p.stream, sendParams(p.msg("chunks=6 delay=60ms"), nil), nil)
				var seen []*frame
				for len(seen) < dropAfter {
					f := s.readFrame(t, p, id)
					require.NotNil(t, f, "stream ended early")
					seen = append(seen, f)
				}
				s.Close() // the client goes away mid-stream
				requireStreamOrder(t, seen, 0)
				require.Equal(t, "task", seen[0].Item.Kind)
				taskID, created := seen[0].Item.TaskID, seen[0].SSEID
				lastID := seen[len(seen)-1].SSEID

				s2, id2 := m.stream(t, "/agents/slow", p.resub, map[string]any{"id": taskID},
					map[string]string{"Last-Event-ID": strconv.FormatUint(lastID, 10)})
				rest := s2.readAll(t, p, id2, 200)
				requireStreamOrder(t, rest, lastID)
				if len(rest) > 0 {
					assert.NotEqual(t, "task", rest[0].Item.Kind, "a resumed stream replays what was missed, not the snapshot")
				}
				all := append(append([]*frame{}, seen[1:]...), rest...)
				requireTaskStream(t, p, append([]*frame{seen[0]}, all...), taskID, p.completed)

				ref := replay(t, p, "/agents/slow", taskID, created)
				assert.Equal(t, frameIDs(ref), frameIDs(all), "seen + resumed = the whole sequence, no gap, no duplicate")
				assert.Equal(t, wantChunks(n), chunkTexts(all))
				assert.Equal(t, wantChunks(n), chunkTexts(ref))
			})
		}

		t.Run(p.name+" re-POST with the same messageId resumes", func(t *testing.T) {
			t.Parallel()
			const n = 5
			ctxID := uuid.NewString()
			params := sendParams(inTask(p.msg("chunks=5 delay=60ms"), "", ctxID), nil)
			body := rpcBody(t, json.RawMessage(`"resume-1"`), p.stream, params)

			s, r := m.openStream(t, "/agents/slow", body, nil)
			require.Nil(t, r)
			var seen []*frame
			for len(seen) < 3 {
				f := s.readFrame(t, p, json.RawMessage(`"resume-1"`))
				require.NotNil(t, f)
				seen = append(seen, f)
			}
			s.Close()
			requireStreamOrder(t, seen, 0)
			taskID, lastID := seen[0].Item.TaskID, seen[len(seen)-1].SSEID

			s, r = m.openStream(t, "/agents/slow", body, map[string]string{"Last-Event-ID": strconv.FormatUint(lastID, 10)})
			require.Nil(t, r, "the retried stream is served")
			rest := s.readAll(t, p, json.RawMessage(`"resume-1"`), 200)
			requireStreamOrder(t, rest, lastID)
			require.NotEmpty(t, rest)
			assert.NotEqual(t, "task", rest[0].Item.Kind, "it resumes after Last-Event-ID")
			all := append(append([]*frame{}, seen...), rest...)
			requireTaskStream(t, p, all, taskID, p.completed)
			assert.Equal(t, wantChunks(n), chunkTexts(all))

			ref := replay(t, p, "/agents/slow", taskID, seen[0].SSEID)
			assert.Equal(t, frameIDs(ref), frameIDs(all[1:]))
			l := m.listTasks(t, map[string]any{"contextId": ctxID})
			assert.Equal(t, 1, *l.TotalSize, "the retry made no second task")

			// Without Last-Event-ID a retry of the finished stream gets the
			// same task's snapshot and ends.
			s, r = m.openStream(t, "/agents/slow", body, nil)
			require.Nil(t, r)
			again := s.readAll(t, p, json.RawMessage(`"resume-1"`), 10)
			require.NotEmpty(t, again)
			assert.Equal(t, taskID, again[0].Item.TaskID)
			assert.Equal(t, "task", again[0].Item.Kind)
			assert.Equal(t, p.completed, again[len(again)-1].Item.State)
		})
	}

	t.Run("Last-Event-ID at the end of a finished task", func(t *testing.T) {
		s, id := m.stream(t, "/agents/slow", "SendStreamingMessage", sendParams(v10.msg("chunks=2 delay=0ms"), nil), nil)
		frames := s.readAll(t, v10, id, 50)
		requireStreamOrder(t, frames, 0)
		last := frames[len(frames)-1].SSEID
		start := time.Now()
		// Nothing missed and nothing to come: the answer is the task as
		// it stands, as the one event, and the stream ends at once (an
		// empty 200 would leave the client guessing).
		s2, id2 := m.stream(t, "/agents/slow", v10.resub, map[string]any{"id": frames[0].Item.TaskID},
			map[string]string{"Last-Event-ID": strconv.FormatUint(last, 10)})
		got := s2.readAll(t, v10, id2, 10)
		require.Len(t, got, 1, "a finished task answers with its snapshot")
		assert.Equal(t, "task", got[0].Item.Kind)
		assert.Equal(t, v10.completed, got[0].Item.State)
		assert.Equal(t, last, got[0].SSEID)
		assert.Less(t, time.Since(start), 2*time.Second)
	})
}

func TestStreamKeepAlive(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.KeepAlive = 100 * time.Millisecond }))
	s, id := m.stream(t, "/agents/slow", "SendStreamingMessage", sendParams(v10.msg("chunks=2 delay=500ms"), nil), nil)
	frames := s.readAll(t, v10, id, 50)
	requireStreamOrder(t, frames, 0)
	requireTaskStream(t, v10, frames, frames[0].Item.TaskID, "TASK_STATE_COMPLETED")
	assert.Contains(t, s.Comments(), ": keep-alive", "a quiet stream carries keep-alive comments")
}
