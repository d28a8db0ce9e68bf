package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/taskstore"
)

// An agent whose card marks an extension required refuses, with -32008
// (ExtensionSupportRequired), a call that does not request it: a send, a
// stream and a task call addressed to it, before anything is recorded
// (no task under the id the send would have made). Requesting it (with
// others) lets the send through; an agent that requires nothing takes
// calls that request nothing.
func TestRequiredExtensionRefusesACallWithoutIt(t *testing.T) {
	const (
		must     = "https://example.com/ext/must/v1"
		optional = "https://example.com/ext/optional/v1"
	)
	strict := a2a.AgentCard{Name: "strict", Capabilities: a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{
		{URI: optional}, {URI: must, Required: true},
	}}}
	b := bustest.OpenStore(t, bus.Config{})
	svc := service.New(service.Config{Store: b, Agents: agents{"strict": strict, "echo": {}}, DefaultAgent: "echo",
		KeepAlive: time.Hour})
	ctx := testCtx(t)
	call := func(agent string, exts ...string) context.Context {
		return service.WithCall(ctx, &service.Call{Principal: "alice", Agent: agent, Extensions: exts})
	}
	msg := func() *a2a.Message {
		return &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}
	}
	nonBlocking := &a2a.SendMessageConfiguration{ReturnImmediately: true}
	requireRefused := func(err error, what string) {
		t.Helper()
		requireCode(t, err, a2a.CodeExtensionSupportRequired)
		require.Contains(t, err.Error(), must, "%s: the refusal names the required extension", what)
	}
	requireNotRecorded := func(agent, messageID string) {
		t.Helper()
		_, err := b.LoadTask(ctx, taskstore.DeriveTaskID(agent, "alice", "", messageID))
		require.True(t, errors.Is(err, taskstore.ErrTaskNotFound), "the refused send recorded a task (err %v)", err)
	}

	for _, exts := range [][]string{nil, {optional}, {"https://example.com/ext/unknown"}} {
		m := msg()
		_, err := svc.SendMessage(call("strict", exts...), &a2a.SendMessageRequest{Message: m, Configuration: nonBlocking})
		requireRefused(err, "send")
		requireNotRecorded("strict", m.MessageID)

		m = msg()
		_, err = svc.SendStreamingMessage(call("strict", exts...), &a2a.SendMessageRequest{Message: m}, "")
		requireRefused(err, "stream")
		requireNotRecorded("strict", m.MessageID)

		// Named by the request's tenant on the mesh endpoint, as by the route.
		m = msg()
		_, err = svc.SendMessage(call("", exts...), &a2a.SendMessageRequest{Tenant: "strict", Message: m, Configuration: nonBlocking})
		requireRefused(err, "send by tenant")
		requireNotRecorded("strict", m.MessageID)
	}

	// With the required extension requested, the send goes through, and a
	// task call on its task is served once it requests the extension too.
	res, err := svc.SendMessage(call("strict", optional, must), &a2a.SendMessageRequest{Message: msg(), Configuration: nonBlocking})
	require.NoError(t, err, "the required extension requested")
	require.NotNil(t, res.Task)
	got, err := svc.GetTask(call("strict", must), &a2a.GetTaskRequest{ID: res.Task.ID})
	require.NoError(t, err)
	require.Equal(t, res.Task.ID, got.ID)
	_, err = svc.GetTask(call("strict"), &a2a.GetTaskRequest{ID: res.Task.ID})
	requireRefused(err, "get")
	_, err = svc.ListTasks(call("strict"), &a2a.ListTasksRequest{})
	requireRefused(err, "list")
	_, err = svc.CancelTask(call("strict"), &a2a.TaskIDRequest{ID: res.Task.ID})
	requireRefused(err, "cancel")

	// An agent that requires nothing needs nothing requested.
	_, err = svc.SendMessage(call("echo"), &a2a.SendMessageRequest{Message: msg(), Configuration: nonBlocking})
	require.NoError(t, err)
}
