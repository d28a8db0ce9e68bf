package edge_test

// The 1.0 push-config methods name the task by taskId (task_id) and, for
// get and delete, the config by id: a 1.0 call without them is refused
// with -32602, never read with the 0.3 meaning of "id" (the task).

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

func TestStrictPushConfigNeedsTaskID(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push = edge.PushConfig{Enabled: true}
	}))
	send := strictCall(t, m.URL, "echo", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "push-strict-1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}}}})
	require.Nil(t, send.Error)
	var res a2a.StreamResponse
	require.NoError(t, json.Unmarshal(send.Result, &res))
	require.NotNil(t, res.Task)
	task := res.Task.ID
	const hook = "https://hooks.example.com/a2a"

	// Created with proto field names.
	created := strictCall(t, m.URL, "echo", "CreateTaskPushNotificationConfig", map[string]any{"task_id": task, "id": "cfg-1", "url": hook})
	require.Nil(t, created.Error, "create with task_id")
	var cfg a2a.TaskPushNotificationConfig
	require.NoError(t, json.Unmarshal(created.Result, &cfg))
	assert.Equal(t, task, cfg.TaskID)
	assert.Equal(t, "cfg-1", cfg.ID)

	// Without taskId: -32602, whatever else is given. Before the fix, get,
	// list and delete read "id" as the task (0.3) and said "Task not found:
	// cfg-1".
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"CreateTaskPushNotificationConfig", map[string]any{"id": "cfg-2", "url": hook}},
		{"GetTaskPushNotificationConfig", map[string]any{"id": "cfg-1"}},
		{"GetTaskPushNotificationConfig", map[string]any{"id": task}},
		{"ListTaskPushNotificationConfigs", map[string]any{"id": task}},
		{"ListTaskPushNotificationConfigs", map[string]any{}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"id": "cfg-1"}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"id": task, "pushNotificationConfigId": "cfg-1"}},
	} {
		strictFails(t, strictCall(t, m.URL, "echo", c.method, c.params), "taskId is required", c.method+" "+jsonText(c.params))
	}
	// Get and delete also need the config's id.
	for _, method := range []string{"GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"} {
		strictFails(t, strictCall(t, m.URL, "echo", method, map[string]any{"taskId": task}), "id is required", method+" without id")
	}
	// Both spellings of taskId at once.
	strictFails(t, strictCall(t, m.URL, "echo", "GetTaskPushNotificationConfig", map[string]any{"taskId": task, "task_id": task, "id": "cfg-1"}),
		"taskId and task_id", "taskId twice")

	// The 1.0 methods with proto field names, and the 0.3 ones, still work.
	get := strictCall(t, m.URL, "echo", "GetTaskPushNotificationConfig", map[string]any{"task_id": task, "id": "cfg-1"})
	require.Nil(t, get.Error, "get with task_id")
	list := strictCall(t, m.URL, "echo", "ListTaskPushNotificationConfigs", map[string]any{"task_id": task, "page_size": 1})
	require.Nil(t, list.Error, "list with task_id")
	var page struct {
		Configs []a2a.TaskPushNotificationConfig `json:"configs"`
	}
	require.NoError(t, json.Unmarshal(list.Result, &page))
	require.Len(t, page.Configs, 1)
	assert.Equal(t, "cfg-1", page.Configs[0].ID)
	v03 := strictCall(t, m.URL, "echo", "tasks/pushNotificationConfig/get", map[string]any{"id": task})
	require.Nil(t, v03.Error, "0.3 get: id is the task")
	del := strictCall(t, m.URL, "echo", "DeleteTaskPushNotificationConfig", map[string]any{"task_id": task, "id": "cfg-1"})
	require.Nil(t, del.Error, "delete with task_id")
	after := strictCall(t, m.URL, "echo", "ListTaskPushNotificationConfigs", map[string]any{"taskId": task})
	require.Nil(t, after.Error)
	require.NoError(t, json.Unmarshal(after.Result, &page))
	assert.Empty(t, page.Configs, "the config was deleted")
}
