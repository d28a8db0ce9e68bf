package edge

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/service"
)

// parseRESTPath reads the routes of spec §11.3 under their three mounts,
// URL-decodes ids, and knows a path that is no route.
func TestParseRESTPath(t *testing.T) {
	for _, c := range []struct {
		path                   string
		agent, tenant, method  string
		task, config, template string
	}{
		{"/message:send", "", "", "SendMessage", "", "", "/message:send"},
		{"/message:stream", "", "", "SendStreamingMessage", "", "", "/message:stream"},
		{"/tasks", "", "", "ListTasks", "", "", "/tasks"},
		{"/tasks/", "", "", "ListTasks", "", "", "/tasks"},
		{"/tasks/t-1", "", "", "GetTask", "t-1", "", "/tasks/{id}"},
		{"/tasks/t%2D1%3Ax", "", "", "GetTask", "t-1:x", "", "/tasks/{id}"},
		{"/tasks/t-1:cancel", "", "", "CancelTask", "t-1", "", "/tasks/{id}:cancel"},
		{"/tasks/t-1%3Acancel", "", "", "CancelTask", "t-1", "", "/tasks/{id}:cancel"},
		{"/tasks/t-1:subscribe", "", "", "SubscribeToTask", "t-1", "", "/tasks/{id}:subscribe"},
		{"/tasks/t-1/pushNotificationConfigs", "", "", "ListTaskPushNotificationConfigs", "t-1", "", "/tasks/{taskId}/pushNotificationConfigs"},
		{"/tasks/t-1/pushNotificationConfigs/c%201", "", "", "GetTaskPushNotificationConfig", "t-1", "c 1", "/tasks/{taskId}/pushNotificationConfigs/{id}"},
		{"/extendedAgentCard", "", "", "GetExtendedAgentCard", "", "", "/extendedAgentCard"},
		{"/agents/echo/message:send", "echo", "", "SendMessage", "", "", "/agents/{name}/message:send"},
		{"/agents/echo/tasks/t-1:cancel", "echo", "", "CancelTask", "t-1", "", "/agents/{name}/tasks/{id}:cancel"},
		{"/echo/message:send", "", "echo", "SendMessage", "", "", "/{tenant}/message:send"},
		{"/echo/tasks", "", "echo", "ListTasks", "", "", "/{tenant}/tasks"},
		{"/echo/tasks/t-1/pushNotificationConfigs/c1", "", "echo", "GetTaskPushNotificationConfig", "t-1", "c1", "/{tenant}/tasks/{taskId}/pushNotificationConfigs/{id}"},
		// A route at the root wins over a tenant reading of the path.
		{"/tasks/tasks", "", "", "GetTask", "tasks", "", "/tasks/{id}"},
	} {
		rt, ok := parseRESTPath(c.path)
		require.True(t, ok, c.path)
		assert.Equal(t, c.agent, rt.agent, c.path)
		assert.Equal(t, c.tenant, rt.tenant, c.path)
		assert.Equal(t, c.method, rt.method, c.path)
		assert.Equal(t, c.task, rt.taskID, c.path)
		assert.Equal(t, c.config, rt.configID, c.path)
		assert.Equal(t, c.template, rt.template, c.path)
	}
	for _, p := range []string{"", "/", "/a2a", "/agents", "/agents/echo", "/agents/echo/", "/agents/echo/x", "/nothing",
		"/a/b/tasks", "/message:send/x/y", "/tasks/t-1/x", "/tasks/t-1/pushNotificationConfigs/c1/x", "/tasks/%zz",
		"/tasks//pushNotificationConfigs", "/healthz", "/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json"} {
		_, ok := parseRESTPath(p)
		assert.False(t, ok, "%q is no route", p)
	}

	// One path, two operations: the HTTP method picks.
	rt, _ := parseRESTPath("/tasks/t/pushNotificationConfigs")
	assert.True(t, rt.allows("GET") && rt.allows("POST") && !rt.allows("DELETE"))
	rt.forMethod("POST")
	assert.Equal(t, "CreateTaskPushNotificationConfig", rt.method)
	rt, _ = parseRESTPath("/tasks/t/pushNotificationConfigs/c")
	rt.forMethod("DELETE")
	assert.Equal(t, "DeleteTaskPushNotificationConfig", rt.method)
	rt, _ = parseRESTPath("/tasks/t:subscribe")
	assert.True(t, rt.allows("GET") && rt.allows("POST") && !rt.allows("PUT"))
	assert.False(t, rt.allows("HEAD"), "a HEAD would hold a stream open")
	rt, _ = parseRESTPath("/tasks/t")
	assert.True(t, rt.allows("HEAD"))
}

func TestRESTMediaType(t *testing.T) {
	for accept, want := range map[string]string{
		"":                                       mediaA2AJSON,
		"*/*":                                    mediaA2AJSON,
		"application/a2a+json":                   mediaA2AJSON,
		"application/json":                       mediaJSON,
		"application/json; charset=utf-8":        mediaJSON,
		"application/a2a+json, application/json": mediaA2AJSON,
		"application/json, */*;q=0.5":            mediaJSON,
		"application/a2a+json;q=0, application/json": mediaJSON,
		"text/event-stream":                          mediaJSON,
		"text/html, application/*":                   mediaA2AJSON,
	} {
		assert.Equal(t, want, restMediaType(accept), "Accept: %s", accept)
	}
}

// An error that ends a started stream is one data: {"error": ...} event
// without an id, after the events with theirs; keep-alives are comments.
func TestRESTStreamEndsWithErrorEvent(t *testing.T) {
	task := &a2a.Task{ID: "t-1", ContextID: "c-1", Status: a2a.TaskStatus{State: a2a.StateWorking}}
	stream := service.Stream(func(yield func(service.Event, error) bool) {
		if !yield(service.Event{Seq: 7, Resp: &a2a.StreamResponse{Task: task}}, nil) {
			return
		}
		if !yield(service.Event{}, nil) { // keep-alive
			return
		}
		yield(service.Event{}, a2a.ErrServerBusy.With("the event log is unavailable; resume with Last-Event-ID"))
	})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/tasks/t-1:subscribe", nil)
	rt, _ := parseRESTPath(r.URL.Path)
	c := &restCall{call: &call{w: rec, r: r, op: rt.op, version: a2a.V10}, route: rt, media: mediaJSON}
	(&Edge{}).writeRESTStream(c, stream)

	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	require.Len(t, lines, 4, rec.Body.String())
	assert.Equal(t, "id: 7", lines[0])
	var ev a2a.StreamResponse
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &ev))
	require.NotNil(t, ev.Task)
	assert.Equal(t, "t-1", ev.Task.ID)
	assert.Equal(t, ": keep-alive", lines[2])
	require.True(t, strings.HasPrefix(lines[3], "data: "), "the error event has no id: %q", lines[3])
	var st struct {
		Error struct {
			Code    int
			Status  string
			Message string
			Details []a2a.ErrorInfo
		}
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(lines[3], "data: ")), &st))
	assert.Equal(t, 503, st.Error.Code)
	assert.Equal(t, "UNAVAILABLE", st.Error.Status)
	assert.Contains(t, st.Error.Message, "resume with Last-Event-ID")
	require.Len(t, st.Error.Details, 1)
	assert.Equal(t, "SERVER_ERROR", st.Error.Details[0].Reason)
	assert.Equal(t, "t-1", st.Error.Details[0].Metadata["taskId"])
}
