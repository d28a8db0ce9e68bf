package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// Bad input over HTTP+JSON: every route, with junk paths, queries and
// bodies, gets a 4xx google.rpc.Status with a message, never a 5xx, a
// hang or a stack trace; the edge serves normally afterwards.
func TestRESTBadInput(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo", MaxBodyBytes: 4096}, "echo")
	junkBodies := []any{
		``, `null`, `[]`, `"x"`, `42`, `{`, `{"message":null}`, `{"message":{}}`, `{"message":{"parts":"x"}}`,
		`{"message":{"role":"ROLE_USER","messageId":"m","parts":[{}]}}`, `{"message":{"role":"ROLE_NOBODY","messageId":"m","parts":[{"text":"x"}]}}`,
		`{"message":{"role":"ROLE_USER","messageId":"` + strings.Repeat("x", 300) + `","parts":[{"text":"x"}]},"configuration":{"historyLength":-3}}`,
		`{"url":5}`, `{"url":"ftp://x"}`, `{"taskId":"other","url":"https://example.com/hook"}`, "{\"a\":\"\xff\"}",
	}
	type route struct{ method, path string }
	routes := []route{
		{"POST", "/message:send"}, {"POST", "/agents/echo/message:send"}, {"POST", "/echo/message:stream"},
		{"GET", "/tasks/%00"}, {"GET", "/tasks/" + strings.Repeat("a", 600)}, {"GET", "/tasks/x?historyLength=abc"},
		{"GET", "/tasks?pageSize=0"}, {"GET", "/tasks?pageSize=-1&status=TASK_STATE_NOPE"}, {"GET", "/tasks?statusTimestampAfter=yesterday"},
		{"GET", "/tasks?pageToken=%ff%fe"}, {"GET", "/tasks?includeArtifacts=maybe"}, {"GET", "/tasks?pageSize=1&pageSize=2"},
		{"POST", "/tasks/x:cancel"}, {"GET", "/tasks/:subscribe"}, {"POST", "/tasks/x:subscribe"},
		{"POST", "/tasks/x/pushNotificationConfigs"}, {"GET", "/tasks/x/pushNotificationConfigs?pageSize=x"},
		{"GET", "/tasks/x/pushNotificationConfigs/y"}, {"DELETE", "/tasks/x/pushNotificationConfigs/y"},
		{"GET", "/extendedAgentCard"}, {"PUT", "/message:send"}, {"POST", "/a/b/c/message:send"},
		{"GET", "/agents/echo/tasks/x/y/z/w"}, {"GET", "/nobody/tasks/x"},
	}
	for _, rt := range routes {
		bodies := []any{nil}
		if rt.method == http.MethodPost {
			bodies = junkBodies
		}
		for _, b := range bodies {
			r := m.rest(t, rt.method, rt.path, b, map[string]string{"Content-Type": "application/json"})
			label := rt.method + " " + rt.path + " " + strings.TrimSpace(strings.ReplaceAll(asString(b), "\n", " "))
			if r.Status == http.StatusOK {
				continue // junk the binding can serve (a stream, a list); the point is no 5xx
			}
			assert.GreaterOrEqual(t, r.Status, 400, label)
			assert.Less(t, r.Status, 500, "%s: %s", label, r.Body)
			assert.NotContains(t, string(r.Body), "goroutine", label)
			if r.Header.Get("Content-Type") != "text/event-stream" {
				var s restStatusWire
				if assert.NoError(t, json.Unmarshal(r.Body, &s), "%s: %s", label, r.Body) {
					assert.Equal(t, r.Status, s.Error.Code, label)
					assert.NotEmpty(t, s.Error.Message, label)
				}
			}
		}
	}
	// Still serving.
	var res struct {
		Task struct{ ID string } `json:"task"`
	}
	m.rest(t, http.MethodPost, "/agents/echo/message:send",
		map[string]any{"message": map[string]any{"role": "ROLE_USER", "messageId": "after-junk", "parts": []any{map[string]any{"text": "hi"}}}}, nil).ok(t, &res)
	require.NotEmpty(t, res.Task.ID)
}

func asString(b any) string {
	if s, ok := b.(string); ok {
		return s
	}
	return ""
}

// Bad input over gRPC: empty and odd messages on every method get an
// INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION status with a
// message, never INTERNAL or UNKNOWN, and the server serves afterwards.
func TestGRPCBadInput(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	cl := grpcClient(t, m)
	ok := []codes.Code{codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition}
	weird, _ := structpb.NewStruct(map[string]any{"a2a.trace": 5, "x": []any{nil, map[string]any{}}})
	check := func(name string, err error) {
		t.Helper()
		require.Error(t, err, name)
		st, _ := status.FromError(err)
		assert.Contains(t, ok, st.Code(), "%s: %v", name, st)
		assert.NotEmpty(t, st.Message(), name)
		assert.NotContains(t, st.Message(), "goroutine", name)
	}
	for name, req := range map[string]*a2apb.SendMessageRequest{
		"empty":      {},
		"no id":      {Message: &a2apb.Message{Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}},
		"no role":    {Message: &a2apb.Message{MessageId: "m-no-role", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}},
		"no parts":   {Message: &a2apb.Message{MessageId: "m-no-parts", Role: a2apb.Role_ROLE_USER}},
		"empty part": {Message: &a2apb.Message{MessageId: "m-empty-part", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{}}}},
		"bad tenant": {Tenant: "no such/agent", Message: grpcUserMsg("m-bad-tenant", "x")},
		"unknown":    {Tenant: "nobody", Message: grpcUserMsg("m-nobody", "x")},
		"other task": {Message: &a2apb.Message{MessageId: "m-other", Role: a2apb.Role_ROLE_USER, TaskId: "no-such-task", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}},
	} {
		_, err := cl.SendMessage(grpcCtx(t), req)
		check("SendMessage "+name, err)
		if s, err := cl.SendStreamingMessage(grpcCtx(t), req); err == nil {
			_, err = s.Recv()
			check("SendStreamingMessage "+name, err)
		}
	}
	_, err := cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("m-weird-md", "x"), Metadata: weird})
	if err != nil {
		check("weird metadata", err)
	}
	_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{})
	check("GetTask empty", err)
	_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Id: strings.Repeat("x", 5000)})
	check("GetTask long id", err)
	_, err = cl.CancelTask(grpcCtx(t), &a2apb.CancelTaskRequest{})
	check("CancelTask empty", err)
	_, err = cl.ListTasks(grpcCtx(t), &a2apb.ListTasksRequest{PageSize: ptr(int32(-1))})
	check("ListTasks negative page", err)
	_, err = cl.ListTasks(grpcCtx(t), &a2apb.ListTasksRequest{PageToken: "not a token!"})
	check("ListTasks bad token", err)
	if s, err := cl.SubscribeToTask(grpcCtx(t), &a2apb.SubscribeToTaskRequest{}); err == nil {
		_, err = s.Recv()
		check("SubscribeToTask empty", err)
	}
	_, err = cl.CreateTaskPushNotificationConfig(grpcCtx(t), &a2apb.TaskPushNotificationConfig{})
	check("CreateTaskPushNotificationConfig empty", err)
	_, err = cl.GetTaskPushNotificationConfig(grpcCtx(t), &a2apb.GetTaskPushNotificationConfigRequest{})
	check("GetTaskPushNotificationConfig empty", err)
	_, err = cl.DeleteTaskPushNotificationConfig(grpcCtx(t), &a2apb.DeleteTaskPushNotificationConfigRequest{})
	check("DeleteTaskPushNotificationConfig empty", err)
	_, err = cl.ListTaskPushNotificationConfigs(grpcCtx(t), &a2apb.ListTaskPushNotificationConfigsRequest{})
	check("ListTaskPushNotificationConfigs empty", err)

	res, err := cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("m-after-junk", "hi")})
	require.NoError(t, err, "still serving")
	require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, res.GetTask().GetStatus().GetState())
}

func ptr[T any](v T) *T { return &v }
