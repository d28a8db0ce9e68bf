package edge_test

// The gRPC binding against a whole mesh (meshtest, gRPC on a loopback
// port), called by the generated client (a2apb.A2AServiceClient) and by
// the official Go SDK's gRPC transport (a2agrpc).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// grpcClient dials the mesh's gRPC listener; the connection closes when
// the test ends.
func grpcClient(t *testing.T, m *meshtest.Mesh) a2apb.A2AServiceClient {
	t.Helper()
	require.NotEmpty(t, m.GRPCAddr(), "the mesh serves no gRPC")
	conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// grpcCtx is a context bounded for one call, with metadata pairs.
func grpcCtx(t *testing.T, kv ...string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if len(kv) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	}
	return ctx
}

func grpcUserMsg(id, text string) *a2apb.Message {
	return &a2apb.Message{MessageId: id, Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}
}

// requireGRPCStatus checks a call failed with code and, when reason is set, an
// ErrorInfo of that reason in the A2A domain; it returns the status.
func requireGRPCStatus(t *testing.T, err error, code codes.Code, reason string) *status.Status {
	t.Helper()
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, code, st.Code(), "status %v", st)
	var infos []*errdetails.ErrorInfo
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			infos = append(infos, info)
		}
	}
	if reason == "" {
		require.Empty(t, infos, "no ErrorInfo expected: %v", st)
		return st
	}
	require.Len(t, infos, 1, "one ErrorInfo: %v", st)
	require.Equal(t, reason, infos[0].GetReason())
	require.Equal(t, "a2a-protocol.org", infos[0].GetDomain())
	return st
}

// grpcEventID is the event id the edge writes into a streamed event's
// metadata (0: none).
func grpcEventID(t *testing.T, ev *a2apb.StreamResponse) uint64 {
	t.Helper()
	var md map[string]any
	switch {
	case ev.GetTask() != nil:
		md = ev.GetTask().GetMetadata().AsMap()
	case ev.GetMessage() != nil:
		md = ev.GetMessage().GetMetadata().AsMap()
	case ev.GetStatusUpdate() != nil:
		md = ev.GetStatusUpdate().GetMetadata().AsMap()
	case ev.GetArtifactUpdate() != nil:
		md = ev.GetArtifactUpdate().GetMetadata().AsMap()
	}
	s, _ := md[edge.GRPCEventIDKey].(string)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return n
}

// drainGRPC reads a stream to its end (at most limit events), returning the
// events and the error that ended it (nil for a clean end).
func drainGRPC(t *testing.T, s grpc.ServerStreamingClient[a2apb.StreamResponse], limit int) ([]*a2apb.StreamResponse, error) {
	t.Helper()
	var out []*a2apb.StreamResponse
	for range limit {
		ev, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	t.Fatalf("stream still going after %d events", limit)
	return nil, nil
}

// Every method over the generated client: the answers, the tenant
// routing, the event ids of streams, and the push-config methods.
func TestGRPCMethods(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push = edge.PushConfig{Enabled: true}
	}))
	cl := grpcClient(t, m)

	// No tenant: the default agent (echo) answers.
	res, err := cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("grpc-send-1", "hello grpc")})
	require.NoError(t, err)
	task := res.GetTask()
	require.NotNil(t, task, "a task: %v", res)
	require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, task.GetStatus().GetState())
	require.Contains(t, task.GetArtifacts()[0].GetParts()[0].GetText(), "hello grpc")
	require.NotNil(t, task.GetStatus().GetTimestamp())

	// Read back on the mesh endpoint (found by id) and by its agent.
	got, err := cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Id: task.GetId()})
	require.NoError(t, err)
	require.Equal(t, task.GetId(), got.GetId())
	got, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Tenant: "echo", Id: task.GetId(), HistoryLength: new(int32)})
	require.NoError(t, err)
	require.Empty(t, got.GetHistory(), "historyLength 0")
	// Another agent's tenant does not see it.
	_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Tenant: "upper", Id: task.GetId()})
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	_, err = cl.GetTask(grpcCtx(t), &a2apb.GetTaskRequest{Id: "no-such-task"})
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")

	// A tenant names the agent of a send.
	res, err = cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "upper", Message: grpcUserMsg("grpc-send-2", "shout")})
	require.NoError(t, err)
	require.Contains(t, res.GetTask().GetArtifacts()[0].GetParts()[0].GetText(), "SHOUT")
	upperTask := res.GetTask().GetId()

	list, err := cl.ListTasks(grpcCtx(t), &a2apb.ListTasksRequest{Tenant: "echo"})
	require.NoError(t, err)
	var ids []string
	for _, tk := range list.GetTasks() {
		ids = append(ids, tk.GetId())
	}
	require.Contains(t, ids, task.GetId())
	require.NotContains(t, ids, upperTask, "the echo tenant lists echo's tasks only")
	require.EqualValues(t, len(ids), list.GetTotalSize())

	// Cancel a finished task: not cancelable.
	_, err = cl.CancelTask(grpcCtx(t), &a2apb.CancelTaskRequest{Id: task.GetId()})
	requireGRPCStatus(t, err, codes.FailedPrecondition, "TASK_NOT_CANCELABLE")

	// Stream: the task, then its events, each with an increasing id.
	s, err := cl.SendStreamingMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "slow", Message: grpcUserMsg("grpc-stream-1", "chunks=3 delay=0ms")})
	require.NoError(t, err)
	evs, err := drainGRPC(t, s, 50)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(evs), 5, "task, working, 3 chunks, completed")
	require.NotNil(t, evs[0].GetTask())
	last := uint64(0)
	for _, ev := range evs {
		id := grpcEventID(t, ev)
		require.Greater(t, id, last, "ids increase: %v", ev)
		last = id
	}
	final := evs[len(evs)-1].GetStatusUpdate()
	require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, final.GetStatus().GetState())
	streamed := evs[0].GetTask().GetId()

	// Subscribe to an ended task: refused as 1.0 does; with a
	// last-event-id it replays what followed that event.
	sub, err := cl.SubscribeToTask(grpcCtx(t), &a2apb.SubscribeToTaskRequest{Id: streamed})
	require.NoError(t, err)
	_, err = drainGRPC(t, sub, 5)
	requireGRPCStatus(t, err, codes.FailedPrecondition, "UNSUPPORTED_OPERATION")
	sub, err = cl.SubscribeToTask(grpcCtx(t, "last-event-id", strconv.FormatUint(grpcEventID(t, evs[0]), 10)), &a2apb.SubscribeToTaskRequest{Tenant: "slow", Id: streamed})
	require.NoError(t, err)
	replay, err := drainGRPC(t, sub, 50)
	require.NoError(t, err)
	require.Len(t, replay, len(evs)-1)
	for i, ev := range replay {
		require.Equal(t, grpcEventID(t, evs[i+1]), grpcEventID(t, ev))
	}

	// Push configs: create, read (without credentials), list, delete.
	hook := "https://hooks.example.com/a2a"
	created, err := cl.CreateTaskPushNotificationConfig(grpcCtx(t), &a2apb.TaskPushNotificationConfig{TaskId: task.GetId(), Id: "cfg-1", Url: hook,
		Authentication: &a2apb.AuthenticationInfo{Scheme: "Bearer", Credentials: "s3cret"}})
	require.NoError(t, err)
	require.Equal(t, "cfg-1", created.GetId())
	require.Equal(t, task.GetId(), created.GetTaskId())
	cfg, err := cl.GetTaskPushNotificationConfig(grpcCtx(t), &a2apb.GetTaskPushNotificationConfigRequest{TaskId: task.GetId(), Id: "cfg-1"})
	require.NoError(t, err)
	require.Equal(t, hook, cfg.GetUrl())
	require.Empty(t, cfg.GetAuthentication().GetCredentials(), "read back without credentials")
	cfgs, err := cl.ListTaskPushNotificationConfigs(grpcCtx(t), &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: task.GetId()})
	require.NoError(t, err)
	require.Len(t, cfgs.GetConfigs(), 1)
	_, err = cl.DeleteTaskPushNotificationConfig(grpcCtx(t), &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: task.GetId(), Id: "cfg-1"})
	require.NoError(t, err)
	cfgs, err = cl.ListTaskPushNotificationConfigs(grpcCtx(t), &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: task.GetId()})
	require.NoError(t, err)
	require.Empty(t, cfgs.GetConfigs())
	_, err = cl.GetTaskPushNotificationConfig(grpcCtx(t), &a2apb.GetTaskPushNotificationConfigRequest{TaskId: task.GetId()})
	requireGRPCStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")
	_, err = cl.CreateTaskPushNotificationConfig(grpcCtx(t), &a2apb.TaskPushNotificationConfig{TaskId: "no-such-task", Url: hook})
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")

	// echo (the default agent) has an extended card with one more skill;
	// slow declares none.
	ext, err := cl.GetExtendedAgentCard(grpcCtx(t), &a2apb.GetExtendedAgentCardRequest{})
	require.NoError(t, err)
	assert.Equal(t, "echo", ext.GetName())
	require.Len(t, ext.GetSkills(), 2)
	assert.Equal(t, "echo-data", ext.GetSkills()[1].GetId())
	assert.True(t, ext.GetCapabilities().GetExtendedAgentCard())
	_, err = cl.GetExtendedAgentCard(grpcCtx(t), &a2apb.GetExtendedAgentCardRequest{Tenant: "slow"})
	requireGRPCStatus(t, err, codes.FailedPrecondition, "UNSUPPORTED_OPERATION")
}

// Bad requests get INVALID_ARGUMENT with a short message: no role, a
// part without content, an unknown agent; a version other than 1.x is
// FAILED_PRECONDITION; an oversized message RESOURCE_EXHAUSTED; push
// without push delivery FAILED_PRECONDITION.
func TestGRPCRefusals(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.MaxBodyBytes = 64 << 10
	}))
	cl := grpcClient(t, m)

	noRole := grpcUserMsg("grpc-bad-1", "x")
	noRole.Role = a2apb.Role_ROLE_UNSPECIFIED
	_, err := cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: noRole})
	st := requireGRPCStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")
	require.Contains(t, st.Message(), "role")

	emptyPart := grpcUserMsg("grpc-bad-2", "x")
	emptyPart.Parts = append(emptyPart.Parts, &a2apb.Part{})
	_, err = cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: emptyPart})
	st = requireGRPCStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")
	require.Contains(t, st.Message(), "part")
	require.NotContains(t, st.Message(), "pbconv")

	_, err = cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "nobody", Message: grpcUserMsg("grpc-bad-3", "x")})
	st = requireGRPCStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")
	require.Contains(t, st.Message(), "nobody")

	// Streams answer their refusals as the call's status too.
	s, err := cl.SendStreamingMessage(grpcCtx(t), &a2apb.SendMessageRequest{Tenant: "nobody", Message: grpcUserMsg("grpc-bad-4", "x")})
	require.NoError(t, err)
	_, err = drainGRPC(t, s, 3)
	requireGRPCStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")

	for _, v := range []string{"0.3", "2.0", "banana"} {
		_, err = cl.GetTask(grpcCtx(t, "a2a-version", v), &a2apb.GetTaskRequest{Id: "t"})
		requireGRPCStatus(t, err, codes.FailedPrecondition, "VERSION_NOT_SUPPORTED")
		s, err := cl.SubscribeToTask(grpcCtx(t, "a2a-version", v), &a2apb.SubscribeToTaskRequest{Id: "t"})
		require.NoError(t, err)
		_, err = drainGRPC(t, s, 3)
		requireGRPCStatus(t, err, codes.FailedPrecondition, "VERSION_NOT_SUPPORTED")
	}
	for _, v := range []string{"1.0", "1", "1.0.1"} {
		_, err = cl.GetTask(grpcCtx(t, "a2a-version", v), &a2apb.GetTaskRequest{Id: "t"})
		requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	}

	big := grpcUserMsg("grpc-big", strings.Repeat("x", 70<<10))
	_, err = cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: big})
	requireGRPCStatus(t, err, codes.ResourceExhausted, "")
	_, err = cl.SendMessage(grpcCtx(t), &a2apb.SendMessageRequest{Message: grpcUserMsg("grpc-small", strings.Repeat("x", 60<<10))})
	require.NoError(t, err, "under the bound")

	_, err = cl.ListTaskPushNotificationConfigs(grpcCtx(t), &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: "t"})
	requireGRPCStatus(t, err, codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED")
}

// With auth, a call needs a credential in metadata (x-api-key or
// authorization: Bearer); a task is its principal's only; the rate limit
// applies per principal.
func TestGRPCAuthAndRateLimit(t *testing.T) {
	auth, err := edge.NewAuth(map[string][]string{"alice": {"alice-secret-0123456789"}, "bob": {"bob-secret-0123456789"}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Auth = auth
		c.Edge.Limits = edge.Limits{Rate: 0.001, Burst: 4}
	}))
	cl := grpcClient(t, m)
	req := &a2apb.SendMessageRequest{Message: grpcUserMsg("grpc-auth-1", "hi")}

	_, err = cl.SendMessage(grpcCtx(t), req)
	requireGRPCStatus(t, err, codes.Unauthenticated, "")
	_, err = cl.SendMessage(grpcCtx(t, "x-api-key", "not-a-known-secret-at-all"), req)
	requireGRPCStatus(t, err, codes.Unauthenticated, "")
	s, err := cl.SubscribeToTask(grpcCtx(t, "authorization", "Basic Ym9iOng="), &a2apb.SubscribeToTaskRequest{Id: "t"})
	require.NoError(t, err)
	_, err = drainGRPC(t, s, 3)
	requireGRPCStatus(t, err, codes.Unauthenticated, "")

	res, err := cl.SendMessage(grpcCtx(t, "x-api-key", "alice-secret-0123456789"), req) // alice: 1
	require.NoError(t, err)
	id := res.GetTask().GetId()
	_, err = cl.GetTask(grpcCtx(t, "authorization", "Bearer alice-secret-0123456789"), &a2apb.GetTaskRequest{Id: id}) // alice: 2
	require.NoError(t, err)
	_, err = cl.GetTask(grpcCtx(t, "authorization", "Bearer bob-secret-0123456789"), &a2apb.GetTaskRequest{Id: id}) // bob: 1
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	_, err = cl.GetTask(grpcCtx(t, "x-api-key", "bob-secret-0123456789"), &a2apb.GetTaskRequest{Tenant: "echo", Id: id}) // bob: 2
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")

	// alice has 2 tokens left of 4, then is refused; bob still has his.
	for range 2 {
		_, err = cl.GetTask(grpcCtx(t, "x-api-key", "alice-secret-0123456789"), &a2apb.GetTaskRequest{Id: id})
		require.NoError(t, err)
	}
	_, err = cl.GetTask(grpcCtx(t, "x-api-key", "alice-secret-0123456789"), &a2apb.GetTaskRequest{Id: id})
	st := requireGRPCStatus(t, err, codes.ResourceExhausted, "")
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "RetryInfo says when to retry")
	require.GreaterOrEqual(t, retry.GetRetryDelay().AsDuration(), time.Second)
	_, err = cl.GetTask(grpcCtx(t, "x-api-key", "bob-secret-0123456789"), &a2apb.GetTaskRequest{Id: id})
	requireGRPCStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
}

// A stream cut mid-way resumes, on SubscribeToTask with last-event-id set
// to the id of the last event read, right after that event: together the
// two streams are the task's events with no gap and no duplicate.
func TestGRPCStreamResume(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	cl := grpcClient(t, m)

	ctx, cut := context.WithTimeout(context.Background(), 20*time.Second)
	defer cut()
	s, err := cl.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Tenant: "slow", Message: grpcUserMsg("grpc-resume-1", "chunks=8 delay=150ms")})
	require.NoError(t, err)
	var before []*a2apb.StreamResponse
	for len(before) < 4 { // the task, working, two chunks
		ev, err := s.Recv()
		require.NoError(t, err)
		before = append(before, ev)
	}
	cut()
	taskID := before[0].GetTask().GetId()
	lastRead := grpcEventID(t, before[len(before)-1])
	require.NotZero(t, lastRead)

	sub, err := cl.SubscribeToTask(grpcCtx(t, "last-event-id", strconv.FormatUint(lastRead, 10)), &a2apb.SubscribeToTaskRequest{Id: taskID})
	require.NoError(t, err)
	after, err := drainGRPC(t, sub, 50)
	require.NoError(t, err)
	require.NotEmpty(t, after)
	require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, after[len(after)-1].GetStatusUpdate().GetStatus().GetState())

	// The whole log of the task after its creation, to compare with.
	all, err := cl.SubscribeToTask(grpcCtx(t, "last-event-id", strconv.FormatUint(grpcEventID(t, before[0]), 10)), &a2apb.SubscribeToTaskRequest{Id: taskID})
	require.NoError(t, err)
	full, err := drainGRPC(t, all, 50)
	require.NoError(t, err)

	var got, want []uint64
	var chunks []string
	for _, ev := range append(before[1:], after...) {
		got = append(got, grpcEventID(t, ev))
		if au := ev.GetArtifactUpdate(); au != nil {
			chunks = append(chunks, au.GetArtifact().GetParts()[0].GetText())
		}
	}
	for _, ev := range full {
		want = append(want, grpcEventID(t, ev))
	}
	require.Equal(t, want, got, "no gap, no duplicate")
	require.Len(t, chunks, 8)
	for i, c := range chunks {
		require.Equal(t, "chunk "+strconv.Itoa(i+1)+"/8\n", c)
	}
}

// The mesh card and each agent card list the gRPC interface at the
// listener's address, with the agent as tenant.
func TestGRPCInCards(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithGRPC())
	for _, c := range []struct{ path, tenant string }{{"/.well-known/agent-card.json", ""}, {"/agents/echo/.well-known/agent-card.json", "echo"}} {
		resp, err := http.Get(m.URL + c.path)
		require.NoError(t, err)
		var card a2a.AgentCard
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
		_ = resp.Body.Close()
		var found bool
		for _, i := range card.SupportedInterfaces {
			if i.ProtocolBinding == a2a.BindingGRPC {
				found = true
				assert.Equal(t, m.GRPCAddr(), i.URL, c.path)
				assert.Equal(t, c.tenant, i.Tenant, c.path)
				assert.Equal(t, "1.0", i.ProtocolVersion)
			}
		}
		require.True(t, found, "%s lists gRPC: %+v", c.path, card.SupportedInterfaces)
	}
}
