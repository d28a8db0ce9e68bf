package edge_test

// The official Go SDK (a2a-go v2) as a client of the gRPC binding: it
// finds the gRPC interface in an agent's card, calls every kind of
// method, reads the stream (whose events carry their ids in metadata),
// and decodes the edge's errors into its typed errors.

import (
	"context"
	"net/http"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

func TestGRPCOfficialClient(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	card, err := agentcard.NewResolver(hc).Resolve(ctx, m.URL+"/agents/slow")
	require.NoError(t, err)
	cl, err := a2aclient.NewFromCard(ctx, card,
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []goa2a.TransportProtocol{goa2a.TransportProtocolGRPC}}))
	require.NoError(t, err)
	defer func() { _ = cl.Destroy() }()

	// A blocking send: the card's tenant (slow) routes it.
	res, err := cl.SendMessage(ctx, &goa2a.SendMessageRequest{Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("chunks=2 delay=0ms"))})
	require.NoError(t, err)
	task, ok := res.(*goa2a.Task)
	require.True(t, ok, "a task: %T", res)
	require.Equal(t, goa2a.TaskStateCompleted, task.Status.State)
	require.Len(t, task.Artifacts, 1)
	require.Equal(t, "chunk 1/2\nchunk 2/2\n", task.Artifacts[0].Parts[0].Text()+task.Artifacts[0].Parts[1].Text())

	got, err := cl.GetTask(ctx, &goa2a.GetTaskRequest{ID: task.ID})
	require.NoError(t, err)
	require.Equal(t, task.ID, got.ID)
	list, err := cl.ListTasks(ctx, &goa2a.ListTasksRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, list.Tasks)

	// A stream: typed events, each with its id in its metadata.
	var events []goa2a.Event
	for ev, err := range cl.SendStreamingMessage(ctx, &goa2a.SendMessageRequest{Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("chunks=3 delay=0ms"))}) {
		require.NoError(t, err)
		events = append(events, ev)
		require.Less(t, len(events), 50)
	}
	require.GreaterOrEqual(t, len(events), 5)
	_, isTask := events[0].(*goa2a.Task)
	require.True(t, isTask, "first a task: %T", events[0])
	final, ok := events[len(events)-1].(*goa2a.TaskStatusUpdateEvent)
	require.True(t, ok, "last a status update: %T", events[len(events)-1])
	require.Equal(t, goa2a.TaskStateCompleted, final.Status.State)
	for _, ev := range events {
		mc, ok := ev.(interface{ Meta() map[string]any })
		require.True(t, ok)
		require.NotEmpty(t, mc.Meta()[edge.GRPCEventIDKey], "%T carries its id", ev)
	}

	// Errors decode into the SDK's typed errors.
	_, err = cl.GetTask(ctx, &goa2a.GetTaskRequest{ID: "no-such-task"})
	require.ErrorIs(t, err, goa2a.ErrTaskNotFound)
	_, err = cl.CancelTask(ctx, &goa2a.CancelTaskRequest{ID: task.ID})
	require.ErrorIs(t, err, goa2a.ErrTaskNotCancelable)
	var subErr error
	for _, err := range cl.SubscribeToTask(ctx, &goa2a.SubscribeToTaskRequest{ID: task.ID}) {
		subErr = err
		break
	}
	require.ErrorIs(t, subErr, goa2a.ErrUnsupportedOperation, "an ended task")
	_, err = cl.GetTaskPushConfig(ctx, &goa2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "x"})
	require.ErrorIs(t, err, goa2a.ErrPushNotificationNotSupported)
	_, err = cl.GetExtendedAgentCard(ctx, &goa2a.GetExtendedAgentCardRequest{})
	require.ErrorIs(t, err, goa2a.ErrExtendedCardNotConfigured, "slow's card declares none: the SDK answers itself")
	_, err = cl.SendMessage(ctx, &goa2a.SendMessageRequest{Message: &goa2a.Message{ID: "no-parts", Role: goa2a.MessageRoleUser}})
	require.ErrorIs(t, err, goa2a.ErrInvalidParams)

	// echo's card declares an extended card: the SDK asks the edge over
	// gRPC (the card's tenant names echo) and gets it, with its extra
	// skill.
	echoCard, err := agentcard.NewResolver(hc).Resolve(ctx, m.URL+"/agents/echo")
	require.NoError(t, err)
	require.True(t, echoCard.Capabilities.ExtendedAgentCard)
	ec, err := a2aclient.NewFromCard(ctx, echoCard,
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []goa2a.TransportProtocol{goa2a.TransportProtocolGRPC}}))
	require.NoError(t, err)
	defer func() { _ = ec.Destroy() }()
	ext, err := ec.GetExtendedAgentCard(ctx, &goa2a.GetExtendedAgentCardRequest{})
	require.NoError(t, err)
	require.Equal(t, "echo", ext.Name)
	require.Len(t, ext.Skills, 2)
	require.Equal(t, "echo-data", ext.Skills[1].ID)
}
