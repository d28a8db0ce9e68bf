package edge_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
)

// On the HTTP+JSON binding, a route under an agent, /agents/{name}/... or
// /{tenant}/..., sees only that agent's tasks: another agent's task there
// is "task not found" for every task route (get, cancel, subscribe by GET
// and POST, the push-config routes), a tenant in the body does not widen
// it, and listing shows only the agent's own. Nothing the refused calls
// asked for happened: the tasks and their push configs stand as they
// were, seen through their own agent's routes.
func TestRESTTenantRoutesSeeOnlyTheirAgentsTasks(t *testing.T) {
	m := startPushMesh(t, edge.PushConfig{Enabled: true})
	// A short timeout: a call that leaks a live subscription fails fast.
	hc := &http.Client{Timeout: 5 * time.Second}
	call := func(method, path string, body any) restResp {
		t.Helper()
		var r restResp
		for range 50 { // 503 while push starts on the edge: retry, bounded
			r = restDo(t, hc, m.URL, method, path, body, nil)
			if r.Status != http.StatusServiceUnavailable {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return r
	}
	const hook = "https://hooks.example.com/a2a"
	ctxID := uuid.NewString()
	// ask's task waits for input (cancelable, live); echo's has completed.
	asks := sentTask(t, call(http.MethodPost, "/agents/ask/message:send", map[string]any{"message": msgInContext("hi", ctxID)}))
	require.Equal(t, a2a.StateInputRequired, asks.Status.State)
	echos := sentTask(t, call(http.MethodPost, "/agents/echo/message:send", map[string]any{"message": msgInContext("hi", ctxID)}))
	require.Equal(t, a2a.StateCompleted, echos.Status.State)
	owner := map[string]string{asks.ID: "ask", echos.ID: "echo"}
	for id, agent := range owner {
		var c a2a.TaskPushNotificationConfig
		call(http.MethodPost, "/"+agent+"/tasks/"+id+"/pushNotificationConfigs", map[string]any{"id": "c0", "url": hook}).ok(t, &c)
		require.Equal(t, "c0", c.ID)
	}

	notFound := func(r restResp, what string) {
		t.Helper()
		require.Equalf(t, http.StatusNotFound, r.Status, "%s: %s", what, r.Body)
		requireRESTStatus(t, r, http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND")
	}
	for _, c := range []struct{ task, other string }{
		{asks.ID, "echo"}, {echos.ID, "ask"},
	} {
		for _, mount := range []string{"/agents/" + c.other, "/" + c.other} {
			base := mount + "/tasks/" + c.task
			what := func(op string) string { return op + " " + owner[c.task] + "'s task via " + mount }
			notFound(call(http.MethodGet, base, nil), what("get"))
			notFound(call(http.MethodGet, base+"?historyLength=1", nil), what("get with a query"))
			notFound(call(http.MethodPost, base+":cancel", nil), what("cancel"))
			notFound(call(http.MethodPost, base+":cancel", map[string]any{"id": c.task, "tenant": owner[c.task]}),
				what("cancel naming its agent in the body"))
			notFound(call(http.MethodGet, base+":subscribe", nil), what("subscribe (GET)"))
			notFound(call(http.MethodPost, base+":subscribe", nil), what("subscribe (POST)"))
			notFound(call(http.MethodPost, base+":subscribe", map[string]any{"tenant": owner[c.task]}),
				what("subscribe naming its agent in the body"))
			notFound(call(http.MethodPost, base+"/pushNotificationConfigs", map[string]any{"id": "c1", "url": hook}),
				what("create a push config"))
			notFound(call(http.MethodPost, base+"/pushNotificationConfigs", map[string]any{"id": "c1", "url": hook, "tenant": owner[c.task]}),
				what("create a push config naming its agent in the body"))
			notFound(call(http.MethodGet, base+"/pushNotificationConfigs", nil), what("list push configs"))
			notFound(call(http.MethodGet, base+"/pushNotificationConfigs/c0", nil), what("get a push config"))
			notFound(call(http.MethodDelete, base+"/pushNotificationConfigs/c0", nil), what("delete a push config"))
		}
	}

	// Listing under an agent shows its own task of the context only.
	for _, c := range []struct{ agent, want string }{{"ask", asks.ID}, {"echo", echos.ID}} {
		for _, mount := range []string{"/agents/" + c.agent, "/" + c.agent} {
			ids, l := listedIDs(t, call(http.MethodGet, mount+"/tasks?contextId="+ctxID, nil))
			assert.Equal(t, []string{c.want}, ids, "tasks listed via %s", mount)
			assert.Equal(t, 1, l.TotalSize, mount)
		}
	}
	// The root sees both.
	ids, _ := listedIDs(t, call(http.MethodGet, "/tasks?contextId="+ctxID, nil))
	assert.ElementsMatch(t, []string{asks.ID, echos.ID}, ids)

	// Through their own agent's routes the tasks stand as they were: ask's
	// not canceled, each with its one push config.
	for id, agent := range owner {
		for _, mount := range []string{"/agents/" + agent, "/" + agent} {
			var got a2a.Task
			call(http.MethodGet, mount+"/tasks/"+id, nil).ok(t, &got)
			assert.Equal(t, id, got.ID)
			var page struct {
				Configs []a2a.TaskPushNotificationConfig `json:"configs"`
			}
			call(http.MethodGet, mount+"/tasks/"+id+"/pushNotificationConfigs", nil).ok(t, &page)
			var cfgs []string
			for _, c := range page.Configs {
				cfgs = append(cfgs, c.ID)
			}
			assert.Equal(t, []string{"c0"}, cfgs, "%s's push configs via %s", agent, mount)
		}
	}
	var got a2a.Task
	call(http.MethodGet, "/ask/tasks/"+asks.ID, nil).ok(t, &got)
	assert.Equal(t, a2a.StateInputRequired, got.Status.State, "ask's task was not canceled")
	var canceled a2a.Task
	call(http.MethodPost, "/ask/tasks/"+asks.ID+":cancel", nil).ok(t, &canceled)
	assert.Equal(t, a2a.StateCanceled, canceled.Status.State, "its own route cancels it")
}
