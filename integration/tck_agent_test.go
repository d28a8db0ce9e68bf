package integration

// End-to-end tests of the tck built-in agent (the conformance suite's
// system under test) through /agents/tck, in 1.0 and 0.3: a representative
// scenario of each kind, chosen by the messageId prefix as the suite does.

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tckPath = "/agents/tck"

// tckMsg is a user message whose messageId starts with prefix (empty: a
// plain random id, which selects the default scenario).
func tckMsg(p proto, prefix, text string) map[string]any {
	msg := p.msg(text)
	if prefix != "" {
		msg["messageId"] = prefix + "-" + uuid.NewString()[:8]
	}
	return msg
}

// tckSend makes a blocking send and returns the task, checked for its
// version's encoding.
func (m *rawMesh) tckSend(t *testing.T, p proto, msg map[string]any) wTask {
	t.Helper()
	res := m.ok(t, tckPath, p.send, sendParams(msg, nil))
	tk := p.sendTask(t, res)
	if p.name == v03.name {
		requireKinds03(t, tk.Raw)
	} else {
		requireNoKind(t, tk.Raw)
	}
	return tk
}

// tckParts returns the raw parts of the task's only artifact.
func tckParts(t *testing.T, tk wTask) []map[string]json.RawMessage {
	t.Helper()
	var raw struct {
		Artifacts []struct {
			ArtifactID string                       `json:"artifactId"`
			Parts      []map[string]json.RawMessage `json:"parts"`
		} `json:"artifacts"`
	}
	require.NoError(t, json.Unmarshal(tk.Raw, &raw))
	require.Lenf(t, raw.Artifacts, 1, "one artifact: %s", tk.Raw)
	require.NotEmpty(t, raw.Artifacts[0].ArtifactID)
	require.Lenf(t, raw.Artifacts[0].Parts, 1, "one part: %s", tk.Raw)
	return raw.Artifacts[0].Parts
}

func TestTCKAgent(t *testing.T) {
	m := startRawMesh(t)
	rejected := map[string]string{v10.name: "TASK_STATE_REJECTED", v03.name: "rejected"}

	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			t.Run("complete-task", func(t *testing.T) {
				tk := m.tckSend(t, p, tckMsg(p, "tck-complete-task", "hello"))
				assert.Equal(t, p.completed, tk.Status.State)
				assert.Equal(t, "Hello from TCK", tk.Status.Message.text())
				assert.Equal(t, p.agentRole, tk.Status.Message.Role)
				assert.Empty(t, tk.Artifacts)
			})

			t.Run("message-response", func(t *testing.T) {
				// a bare Message, no task (DM-MSG-001), sent and streamed
				res := m.ok(t, tckPath, p.send, sendParams(tckMsg(p, "tck-message-response", "hi"), nil))
				msg := decodeReplyMessage(t, p, res)
				assert.Equal(t, "Direct message response", msg.text())
				s, id := m.stream(t, tckPath, p.stream, sendParams(tckMsg(p, "tck-message-response", "hi"), nil), nil)
				frames := s.readAll(t, p, id, 10)
				require.Len(t, frames, 1, "the message is the stream's one event")
				assert.Equal(t, "message", frames[0].Item.Kind)
				assert.Equal(t, "Direct message response", frames[0].Item.Text)
			})

			t.Run("artifacts", func(t *testing.T) {
				data := m.tckSend(t, p, tckMsg(p, "tck-artifact-data", "data please"))
				assert.Equal(t, p.completed, data.Status.State)
				part := tckParts(t, data)[0]
				assert.JSONEq(t, `{"key":"value","count":42}`, string(part["data"]))

				file := m.tckSend(t, p, tckMsg(p, "tck-artifact-file-url", "a file"))
				assert.Equal(t, p.completed, file.Status.State)
				part = tckParts(t, file)[0]
				if p.name == v03.name {
					assert.JSONEq(t, `"file"`, string(part["kind"]))
					assert.JSONEq(t, `{"uri":"https://example.com/output.txt","name":"output.txt","mimeType":"text/plain"}`, string(part["file"]))
				} else {
					assert.JSONEq(t, `"https://example.com/output.txt"`, string(part["url"]))
					assert.JSONEq(t, `"output.txt"`, string(part["filename"]))
					assert.JSONEq(t, `"text/plain"`, string(part["mediaType"]))
				}
			})

			t.Run("input-required until tck-complete-task", func(t *testing.T) {
				// Any other messageId: input-required, on every turn.
				first := tckMsg(p, "", "start")
				tk := m.tckSend(t, p, first)
				require.Equal(t, p.inputRequired, tk.Status.State)
				assert.NotEmpty(t, tk.Status.Message.text(), "the agent says what it needs")

				second := inTask(tckMsg(p, "", "more"), tk.ID, "")
				tk2 := m.tckSend(t, p, second)
				assert.Equal(t, p.inputRequired, tk2.Status.State)
				third := inTask(tckMsg(p, "tck-input-required", "still more"), tk.ID, tk.ContextID)
				tk3 := m.tckSend(t, p, third)
				assert.Equal(t, p.inputRequired, tk3.Status.State)

				// The open task can be subscribed to: the task comes first.
				s, id := m.stream(t, tckPath, p.resub, map[string]any{"id": tk.ID}, nil)
				f := s.readFrame(t, p, id)
				require.NotNil(t, f)
				assert.Equal(t, "task", f.Item.Kind)
				assert.Equal(t, p.inputRequired, f.Item.State)

				last := inTask(tckMsg(p, "tck-complete-task", "done"), tk.ID, "")
				done := m.tckSend(t, p, last)
				assert.Equal(t, p.completed, done.Status.State)
				assert.Equal(t, tk.ContextID, done.ContextID)

				// The subscription sees the last turn and ends at completed.
				rest := s.readAll(t, p, id, 50)
				require.NotEmpty(t, rest)
				end := rest[len(rest)-1]
				assert.Equal(t, "status", end.Item.Kind)
				assert.Equal(t, p.completed, end.Item.State)

				got := m.getTask(t, p, tckPath, tk.ID, nil)
				var users []string
				for _, h := range got.History {
					if h.Role == p.userRole {
						users = append(users, h.MessageID)
					}
				}
				assert.Equal(t, []string{first["messageId"].(string), second["messageId"].(string),
					third["messageId"].(string), last["messageId"].(string)}, users, "every turn is in the history, in order")
				m.fails(t, tckPath, p.send, sendParams(inTask(tckMsg(p, "", "late"), tk.ID, ""), nil), -32004)
			})

			t.Run("reject and fail", func(t *testing.T) {
				tk := m.tckSend(t, p, tckMsg(p, "tck-reject-task", "no"))
				assert.Equal(t, rejected[p.name], tk.Status.State)
				assert.Equal(t, "rejected", tk.Status.Message.text())
				tk = m.tckSend(t, p, tckMsg(p, "tck-fail-task", "boom"))
				assert.Equal(t, p.failed, tk.Status.State)
				assert.Equal(t, "failed", tk.Status.Message.text())
			})

			t.Run("stream chunked artifact", func(t *testing.T) {
				s, id := m.stream(t, tckPath, p.stream, sendParams(tckMsg(p, "tck-stream-artifact-chunked", "stream"), nil), nil)
				frames := s.readAll(t, p, id, 50)
				requireStreamOrder(t, frames, 0)
				require.NotEmpty(t, frames)
				assert.Equal(t, "task", frames[0].Item.Kind, "the task comes first")
				var chunks []string
				for _, f := range frames {
					if f.Item.Kind == "artifact" {
						chunks = append(chunks, f.Item.Text)
					}
				}
				if frames[0].Item.State != p.completed { // the stream began before the run ended
					assert.Equal(t, []string{"chunk-1 ", "chunk-2"}, chunks)
				}
				end := frames[len(frames)-1]
				assert.Equal(t, p.completed, end.Item.State)
				if end.Item.Kind == "status" && p.name == v03.name {
					require.NotNil(t, end.Item.Final)
					assert.True(t, *end.Item.Final)
				}
				tk := m.getTask(t, p, tckPath, end.Item.TaskID, nil)
				require.Len(t, tk.Artifacts, 1, "the chunks make one artifact")
				assert.Equal(t, "chunk-1 chunk-2", tk.Artifacts[0].text())
			})

			t.Run("long-running: subscribe, then cancel", func(t *testing.T) {
				s, id := m.stream(t, tckPath, p.stream, sendParams(tckMsg(p, "test-resubscribe-message-id", "hold"), nil), nil)
				first := s.readFrame(t, p, id)
				require.NotNil(t, first)
				require.Equal(t, "task", first.Item.Kind)
				taskID := first.Item.TaskID
				// Wait until the agent holds the task working.
				for {
					f := s.readFrame(t, p, id)
					require.NotNil(t, f, "the stream ended before the task was working")
					if f.Item.Kind == "status" && f.Item.State == p.working && f.Item.Text != "" {
						break
					}
				}
				sub, subID := m.stream(t, tckPath, p.resub, map[string]any{"id": taskID}, nil)
				f := sub.readFrame(t, p, subID)
				require.NotNil(t, f)
				assert.Equal(t, "task", f.Item.Kind)
				assert.Equal(t, p.working, f.Item.State, "still working when subscribed")

				canceled := decodeTask(t, m.ok(t, tckPath, p.cancel, map[string]any{"id": taskID}))
				assert.Equal(t, p.canceled, canceled.Status.State)
				for _, st := range []struct {
					s  *sseStream
					id json.RawMessage
				}{{s, id}, {sub, subID}} {
					rest := st.s.readAll(t, p, st.id, 50)
					require.NotEmpty(t, rest)
					assert.Equal(t, p.canceled, rest[len(rest)-1].Item.State, "both streams end at canceled")
				}
				assert.Equal(t, p.canceled, m.getTask(t, p, tckPath, taskID, nil).Status.State, "and it stays canceled")
			})
		})
	}
}

// TestTCKAgentSkills: the tck card explains its scenarios.
func TestTCKAgentSkills(t *testing.T) {
	m := startRawMesh(t)
	status, _, body := m.getJSON(t, tckPath+"/.well-known/agent-card.json", nil)
	require.Equal(t, 200, status, string(body))
	var c struct {
		Name   string `json:"name"`
		Skills []struct {
			ID       string   `json:"id"`
			Examples []string `json:"examples"`
		} `json:"skills"`
	}
	require.NoError(t, json.Unmarshal(body, &c))
	assert.Equal(t, "tck", c.Name)
	require.NotEmpty(t, c.Skills)
	for _, sk := range c.Skills {
		assert.NotEmpty(t, sk.Examples, "skill %s", sk.ID)
	}
}
