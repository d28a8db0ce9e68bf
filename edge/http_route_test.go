package edge_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
)

// wireTask is the part of a 1.0 task the tests read.
type wireTask struct {
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

func (w wireTask) text() string {
	s := ""
	for _, a := range w.Artifacts {
		for _, p := range a.Parts {
			s += p.Text
		}
	}
	return s
}

// sendResult reads the task of a 1.0 send result ({"task": ...}).
func sendResult(t *testing.T, r *rpcResp) wireTask {
	t.Helper()
	require.Nil(t, r.Error, "send failed: %+v", r.Error)
	var out struct {
		Task *wireTask `json:"task"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &out))
	require.NotNil(t, out.Task, "%s", r.Result)
	return *out.Task
}

func taskResult(t *testing.T, r *rpcResp) wireTask {
	t.Helper()
	require.Nil(t, r.Error, "call failed: %+v", r.Error)
	var out wireTask
	require.NoError(t, json.Unmarshal(r.Result, &out))
	return out
}

func userMsg(text, taskID string) map[string]any {
	m := map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}

func requireCode(t *testing.T, r *rpcResp, code int, what string) {
	t.Helper()
	require.NotNil(t, r.Error, "%s: want error %d, got %s", what, code, r.Result)
	assert.Equal(t, code, r.Error.Code, "%s: %s", what, r.Error.Message)
}

// Task ids are unique across the mesh: the mesh endpoint (/a2a, no
// tenant) finds a task whichever agent owns it and sends its calls to that
// agent (the CLI's "reply with" and "get" hints go there), while an
// endpoint naming an agent sees only that agent's tasks.
func TestHTTPMeshEndpointFindsEveryAgentsTasks(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo", "ask")

	tk := sendResult(t, m.post(t, "/agents/ask", "SendMessage", map[string]any{"message": userMsg("hi", "")}))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", tk.Status.State)

	got := taskResult(t, m.post(t, "/a2a", "GetTask", map[string]any{"id": tk.ID}))
	assert.Equal(t, tk.ID, got.ID)
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", got.Status.State)
	requireCode(t, m.post(t, "/agents/echo", "GetTask", map[string]any{"id": tk.ID}), -32001, "GetTask on another agent's endpoint")
	requireCode(t, m.post(t, "/a2a", "GetTask", map[string]any{"id": tk.ID, "tenant": "echo"}), -32001, "GetTask naming another tenant")
	requireCode(t, m.post(t, "/agents/echo", "CancelTask", map[string]any{"id": tk.ID}), -32001, "CancelTask on another agent's endpoint")
	requireCode(t, m.post(t, "/agents/echo", "SendMessage", map[string]any{"message": userMsg("Eve", tk.ID)}), -32001,
		"a reply on another agent's endpoint")

	// The reply goes through /a2a to ask, and a retry of it (same
	// messageId) is the same turn, not a "messageId already used".
	reply := userMsg("Bob", tk.ID)
	done := sendResult(t, m.post(t, "/a2a", "SendMessage", map[string]any{"message": reply}))
	assert.Equal(t, tk.ID, done.ID)
	assert.Equal(t, "TASK_STATE_COMPLETED", done.Status.State)
	assert.Equal(t, "Hello, Bob!", done.text())
	again := sendResult(t, m.post(t, "/a2a", "SendMessage", map[string]any{"message": reply}))
	assert.Equal(t, tk.ID, again.ID)
	assert.Equal(t, "Hello, Bob!", again.text())

	// ListTasks on /a2a lists the caller's tasks of every agent; on an
	// agent's endpoint, that agent's only.
	echoTask := sendResult(t, m.post(t, "/agents/echo", "SendMessage", map[string]any{"message": userMsg("x", "")}))
	ids := func(r *rpcResp) []string {
		require.Nil(t, r.Error)
		var l struct {
			Tasks []wireTask `json:"tasks"`
		}
		require.NoError(t, json.Unmarshal(r.Result, &l))
		var out []string
		for _, t := range l.Tasks {
			out = append(out, t.ID)
		}
		return out
	}
	assert.ElementsMatch(t, []string{tk.ID, echoTask.ID}, ids(m.post(t, "/a2a", "ListTasks", map[string]any{})))
	assert.Equal(t, []string{echoTask.ID}, ids(m.post(t, "/agents/echo", "ListTasks", map[string]any{})))

	// A finished task of ask canceled through /a2a: its agent answers.
	requireCode(t, m.post(t, "/a2a", "CancelTask", map[string]any{"id": tk.ID}), -32002, "cancel of a completed task")
	// A 0.3 client reaches it too.
	r := m.post(t, "/a2a", "tasks/get", map[string]any{"id": tk.ID})
	require.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), `"state":"completed"`)
}

// An edge without a default agent serves task calls on /a2a by task id; a
// send there that names no agent gets -32602 saying how to name one; its
// mesh card still lists the agents.
func TestHTTPNoDefaultAgent(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{}, "echo", "ask")

	for _, method := range []string{"SendMessage", "message/send"} {
		msg := userMsg("hi", "")
		if method == "message/send" {
			msg["role"], msg["kind"] = "user", "message"
		}
		r := m.post(t, "/a2a", method, map[string]any{"message": msg})
		requireCode(t, r, -32602, method)
		assert.Contains(t, r.Error.Message, "this edge has no default agent")
		assert.Contains(t, r.Error.Message, "/agents/<name>")
		assert.Contains(t, r.Error.Message, "GET /agents")
	}
	frames := m.streamCall(t, "/a2a", "SendStreamingMessage", map[string]any{"message": userMsg("hi", "")}, nil, 5e9)
	require.Len(t, frames, 1)
	requireCode(t, &frames[0].Resp, -32602, "stream without an agent")
	assert.Contains(t, frames[0].Resp.Error.Message, "no default agent")

	// Naming the agent works, by tenant or by path; the task's calls then
	// work on /a2a by id alone.
	tk := sendResult(t, m.post(t, "/a2a", "SendMessage", map[string]any{"tenant": "ask", "message": userMsg("hi", "")}))
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", tk.Status.State)
	assert.Equal(t, tk.ID, taskResult(t, m.post(t, "/a2a", "GetTask", map[string]any{"id": tk.ID})).ID)
	done := sendResult(t, m.post(t, "/a2a", "SendMessage", map[string]any{"message": userMsg("Ann", tk.ID)}))
	assert.Equal(t, "Hello, Ann!", done.text())
	requireCode(t, m.post(t, "/a2a", "SendMessage", map[string]any{"message": userMsg("Ann", uuid.NewString())}), -32602,
		"a reply to a task that does not exist names no agent")

	status, _, body := m.do(t, http.MethodGet, "/.well-known/agent-card.json", nil)
	require.Equal(t, http.StatusOK, status)
	var card struct {
		Description         string `json:"description"`
		SupportedInterfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	require.NoError(t, json.Unmarshal(body, &card))
	require.NotEmpty(t, card.SupportedInterfaces)
	assert.Equal(t, m.URL+"/a2a", card.SupportedInterfaces[0].URL)
	assert.Contains(t, card.Description, "/agents/{name}")
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	assert.ElementsMatch(t, []string{"echo", "ask"}, skills)
}

// Ownership holds on /a2a as on every endpoint: another principal's task
// is "not found", whatever its agent.
func TestHTTPMeshEndpointKeepsOwnership(t *testing.T) {
	auth, err := edge.NewAuth(map[string][]string{"alice": {"alice-secret-0123456789"}, "bob": {"bob-secret-0123456789ab"}})
	require.NoError(t, err)
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", Auth: auth}, "echo", "ask")
	alice := map[string]string{edge.APIKeyHeader: "alice-secret-0123456789"}
	bob := map[string]string{edge.APIKeyHeader: "bob-secret-0123456789ab"}

	tk := sendResult(t, m.postH(t, "/agents/ask", "SendMessage", map[string]any{"message": userMsg("hi", "")}, alice))
	requireCode(t, m.postH(t, "/a2a", "GetTask", map[string]any{"id": tk.ID}, bob), -32001, "bob reads alice's task")
	requireCode(t, m.postH(t, "/a2a", "SendMessage", map[string]any{"message": userMsg("Mallory", tk.ID)}, bob), -32001,
		"bob replies to alice's task")
	requireCode(t, m.postH(t, "/a2a", "CancelTask", map[string]any{"id": tk.ID}, bob), -32001, "bob cancels alice's task")
	assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", taskResult(t, m.postH(t, "/a2a", "GetTask", map[string]any{"id": tk.ID}, alice)).Status.State)
}
