package edge_test

// The a2a-go v2 client's REST transport against the edge: it finds the
// HTTP+JSON interfaces in the cards, and sends, gets, lists, cancels and
// streams through them, with the edge's errors arriving as the SDK's
// typed errors.

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
)

// pathLog records the method and path of each request a client makes.
type pathLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *pathLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.calls = append(l.calls, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (l *pathLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// restOnly is a client factory that has the REST transport only.
func restOnly(hc *http.Client) *a2aclient.Factory {
	return a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(), a2aclient.WithRESTTransport(hc))
}

func TestRESTGoSDKClient(t *testing.T) {
	m := startHTTPMesh(t, edge.Config{DefaultAgent: "echo"}, "echo", "ask", "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := &pathLog{}
	hc := &http.Client{Transport: log, Timeout: 20 * time.Second}

	// The agent card lists HTTP+JSON under the agent's path and by tenant
	// at the base; the mesh card at the base.
	card, err := (&agentcard.Resolver{Client: hc}).Resolve(ctx, m.URL+"/agents/echo")
	require.NoError(t, err)
	var rest []a2a.AgentInterface
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == a2a.TransportProtocolHTTPJSON {
			rest = append(rest, *i)
		}
	}
	require.Len(t, rest, 2, "%+v", card.SupportedInterfaces)
	assert.Equal(t, m.URL+"/agents/echo", rest[0].URL)
	assert.Empty(t, rest[0].Tenant)
	assert.Equal(t, m.URL, rest[1].URL)
	assert.Equal(t, "echo", rest[1].Tenant)
	assert.Equal(t, a2a.TransportProtocolJSONRPC, card.SupportedInterfaces[0].ProtocolBinding, "JSON-RPC stays first")
	meshCard, err := (&agentcard.Resolver{Client: hc}).Resolve(ctx, m.URL)
	require.NoError(t, err)
	found := false
	for _, i := range meshCard.SupportedInterfaces {
		if i.ProtocolBinding == a2a.TransportProtocolHTTPJSON {
			found = true
			assert.Equal(t, m.URL, i.URL)
			assert.Empty(t, i.Tenant)
		}
	}
	assert.True(t, found, "the mesh card lists HTTP+JSON: %+v", meshCard.SupportedInterfaces)

	// A client made from the card, with REST only, talks to /agents/echo.
	client, err := restOnly(hc).CreateFromCard(ctx, card)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Destroy() })
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
	require.NoError(t, err)
	task, ok := res.(*a2a.Task)
	require.True(t, ok, "%T", res)
	assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	require.NotEmpty(t, task.Artifacts)
	assert.Equal(t, "hello", task.Artifacts[0].Parts[0].Text())
	assert.Contains(t, log.seen(), "POST /agents/echo/message:send")

	got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, task.ID, got.ID)
	since := time.Now().Add(-time.Hour)
	list, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID, StatusTimestampAfter: &since, IncludeArtifacts: true})
	require.NoError(t, err)
	require.Len(t, list.Tasks, 1)
	assert.Equal(t, task.ID, list.Tasks[0].ID)
	assert.NotEmpty(t, list.Tasks[0].Artifacts)

	// Errors are the SDK's typed errors.
	_, err = client.GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
	assert.True(t, errors.Is(err, a2a.ErrTaskNotFound), "%v", err)
	_, err = client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	assert.True(t, errors.Is(err, a2a.ErrTaskNotCancelable), "%v", err)
	ext, err := client.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	require.NoError(t, err)
	assert.Equal(t, "echo", ext.Name)
	assert.Len(t, ext.Skills, 2, "echo's extended card adds a skill")
	_, err = client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "c"})
	assert.True(t, errors.Is(err, a2a.ErrPushNotificationNotSupported), "%v", err)
	for ev, err := range client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: "no-such-task"}) {
		assert.Nil(t, ev)
		assert.True(t, errors.Is(err, a2a.ErrTaskNotFound), "%v", err)
		break
	}
	for ev, err := range client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		assert.Nil(t, ev)
		assert.True(t, errors.Is(err, a2a.ErrUnsupportedOperation), "a finished task: %v", err)
		break
	}

	// Streams, through the tenant interface at the base.
	slow, err := restOnly(hc).CreateFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: m.URL, ProtocolBinding: a2a.TransportProtocolHTTPJSON, Tenant: "slow", ProtocolVersion: "1.0"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = slow.Destroy() })
	var events []a2a.Event
	for ev, err := range slow.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=3 delay=0ms"))}) {
		require.NoError(t, err)
		events = append(events, ev)
		require.Less(t, len(events), 100)
	}
	require.GreaterOrEqual(t, len(events), 5)
	first, ok := events[0].(*a2a.Task)
	require.True(t, ok, "the task first: %T", events[0])
	end, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
	require.True(t, ok, "%T", events[len(events)-1])
	assert.Equal(t, a2a.TaskStateCompleted, end.Status.State)
	assert.Contains(t, log.seen(), "POST /slow/message:stream")

	// Cancel a running task over the tenant interface.
	res, err = slow.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=50 delay=200ms")),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
	require.NoError(t, err)
	running := res.(*a2a.Task)
	canceled, err := slow.CancelTask(ctx, &a2a.CancelTaskRequest{ID: running.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, canceled.Status.State)
	_, err = slow.GetTask(ctx, &a2a.GetTaskRequest{ID: first.ID})
	require.NoError(t, err)

	// A tenant the edge has no agent for: invalid params, typed.
	none, err := restOnly(hc).CreateFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: m.URL, ProtocolBinding: a2a.TransportProtocolHTTPJSON, Tenant: "nobody", ProtocolVersion: "1.0"}})
	require.NoError(t, err)
	_, err = none.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))})
	assert.True(t, errors.Is(err, a2a.ErrInvalidParams), "%v", err)
	assert.True(t, strings.Contains(err.Error(), "nobody"), "%v", err)
}
