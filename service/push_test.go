package service_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/service"
)

// The push-config methods over a store: a config is created for a task
// of the caller and read back without its credentials; 1.0 lists pages,
// 0.3 everything; another principal sees none of it.
func TestPushConfigs(t *testing.T) {
	ctx := testCtx(t)
	_, b := newService(t)
	st, err := push.OpenStore(ctx, b, push.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	svc := service.New(service.Config{Store: b, Agents: agents{"echo": {}}, DefaultAgent: "echo", KeepAlive: time.Hour,
		PushStore: func() (*push.Store, error) { return st, nil }})
	task := send(t, svc, as(ctx, "alice", ""), "hi")

	for i := range 3 {
		out, err := svc.CreateTaskPushNotificationConfig(as(ctx, "alice", ""), &a2a.TaskPushNotificationConfig{
			TaskID: task.ID, ID: fmt.Sprintf("c%d", i), URL: "https://93.184.215.14/hook",
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}})
		require.NoError(t, err)
		require.Equal(t, "secret", out.Authentication.Credentials, "set returns the config as stored")
	}
	got, err := svc.GetTaskPushNotificationConfig(as(ctx, "alice", ""), &service.PushConfigRequest{TaskID: task.ID, ID: "c1"})
	require.NoError(t, err)
	require.Equal(t, "c1", got.ID)
	require.Empty(t, got.Authentication.Credentials, "read back without credentials")

	size := 2
	page, err := svc.ListTaskPushNotificationConfigs(as(ctx, "alice", ""), &service.ListPushConfigsRequest{TaskID: task.ID, PageSize: &size})
	require.NoError(t, err)
	require.Len(t, page.Configs, 2)
	require.NotEmpty(t, page.NextPageToken)
	all, err := svc.ListTaskPushNotificationConfigs(service.WithCall(ctx, &service.Call{Principal: "alice", Version: a2a.V03}),
		&service.ListPushConfigsRequest{TaskID: task.ID, PageSize: &size})
	require.NoError(t, err)
	require.Len(t, all.Configs, 3, "0.3 lists every config")

	_, err = svc.GetTaskPushNotificationConfig(as(ctx, "bob", ""), &service.PushConfigRequest{TaskID: task.ID, ID: "c1"})
	requireCode(t, err, a2a.CodeTaskNotFound)
	requireCode(t, svc.DeleteTaskPushNotificationConfig(as(ctx, "alice", ""), &service.PushConfigRequest{TaskID: task.ID}),
		a2a.CodeInvalidParams)
	require.NoError(t, svc.DeleteTaskPushNotificationConfig(as(ctx, "alice", ""), &service.PushConfigRequest{TaskID: task.ID, ID: "c1"}))
	all, err = svc.ListTaskPushNotificationConfigs(as(ctx, "alice", ""), &service.ListPushConfigsRequest{TaskID: task.ID})
	require.NoError(t, err)
	require.Len(t, all.Configs, 2)
}
