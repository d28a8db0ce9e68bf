package integration

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// The official Go SDK's push-config calls, in 1.0 and through its 0.3
// client, work against the mesh, and the webhook gets the task's final
// state with the SDK-set token.
func TestA2AGoPushConfigs(t *testing.T) {
	rcv := newReceiver(t)
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Push = pushConfig(rcv.hostPort()) }))
	for _, tc := range []struct {
		name   string
		client gosdkClientFunc
		p      proto
	}{{"v1.0", gosdkV10Client, v10}, {"v0.3", gosdkV03Client, v03}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := gosdkStepContext(t)
			client, _, _ := tc.client(t, ctx, m.URL, "slow")
			res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=3 delay=100ms")),
				Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
			})
			if err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			task := gosdkAsTask(t, res)
			path := "/gosdk-" + tc.name
			cfg, err := client.CreateTaskPushConfig(ctx, &a2a.PushConfig{
				TaskID: task.ID, ID: "hook-1", URL: rcv.URL + path, Token: "sdk-token-" + tc.name,
			})
			if err != nil {
				t.Fatalf("CreateTaskPushConfig: %v", err)
			}
			if cfg.URL != rcv.URL+path || cfg.ID != "hook-1" {
				t.Fatalf("created config %+v", cfg)
			}
			got, err := client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"})
			if err != nil || got.URL != rcv.URL+path {
				t.Fatalf("GetTaskPushConfig: %+v, %v", got, err)
			}
			list, err := client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
			if err != nil || len(list) != 1 {
				t.Fatalf("ListTaskPushConfigs: %v, %v", list, err)
			}
			n := rcv.waitState(t, tc.p, path, string(task.ID), tc.p.completed)
			if tok := n.Header.Get("X-A2A-Notification-Token"); tok != "sdk-token-"+tc.name {
				t.Fatalf("token %q", tok)
			}
			if err := client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "hook-1"}); err != nil {
				t.Fatalf("DeleteTaskPushConfig: %v", err)
			}
			if list, err := client.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(list) != 0 {
				t.Fatalf("after delete: %v, %v", list, err)
			}
		})
	}
}
