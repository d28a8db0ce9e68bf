package pbconv_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/pbconv"
)

func intp(n int) *int { return &n }

// userMessage is a message with one part of each kind.
func userMessage() *a2a.Message {
	return &a2a.Message{
		MessageID: "m-1", ContextID: "ctx-1", TaskID: "t-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			a2a.TextPart("summarise the attached report"),
			{Kind: a2a.PartRaw, Raw: []byte{0, 1, 2, 0xfe, 0xff, '<', '>'}, Filename: "report.bin", MediaType: "application/octet-stream"},
			{Kind: a2a.PartURL, URL: "https://files.example.com/q3.pdf", Filename: "q3.pdf", MediaType: "application/pdf"},
			{Kind: a2a.PartData, Data: json.RawMessage(`{"limit":3,"nested":{"nothing":null,"ok":true},"tags":["a","b"]}`), MediaType: "application/json",
				Metadata: a2a.Metadata{"source": "form"}},
		},
		Metadata:         a2a.Metadata{"a2a.trace": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "n": 2.5},
		Extensions:       []string{"https://example.com/ext/v1"},
		ReferenceTaskIDs: []string{"t-0"},
	}
}

func agentTask() *a2a.Task {
	return &a2a.Task{
		ID: "t-1", ContextID: "ctx-1",
		Status: a2a.TaskStatus{State: a2a.StateInputRequired, Timestamp: "2026-03-04T05:06:07.089Z",
			Message: &a2a.Message{MessageID: "m-2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("which quarter?")}}},
		Artifacts: []a2a.Artifact{{ArtifactID: "a-1", Name: "summary", Description: "the summary",
			Parts:    []a2a.Part{a2a.TextPart("so far so good"), a2a.DataPart(map[string]any{"score": 7})},
			Metadata: a2a.Metadata{"pages": 3.0}, Extensions: []string{"x"}}},
		History:  []a2a.Message{*userMessage()},
		Metadata: a2a.Metadata{"priority": "high", "labels": []any{"x", "y"}},
	}
}

// Each a2a value survives a trip to its proto message and back, and the
// proto message carries what the binding defines (checked per case). The
// keys of a data part or metadata object come back sorted (a Struct is a
// map), so the realistic values here have theirs sorted already; and a
// timestamp on a whole second comes back without its ".000" (protojson
// writes no fraction then), the same instant.
func TestRoundTrip(t *testing.T) {
	task := agentTask()
	cases := []struct {
		name  string
		in    any
		trip  func(any) (any, error)
		check func(t *testing.T, pb any)
	}{
		{"send request", &a2a.SendMessageRequest{
			Tenant: "billing", Message: userMessage(),
			Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: intp(0), ReturnImmediately: true,
				TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{ID: "p-1", URL: "https://hooks.example.com/a2a", Token: "tok",
					Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}},
			Metadata: a2a.Metadata{"k": "v"},
		}, func(v any) (any, error) {
			pb, err := pbconv.SendMessageRequest(v.(*a2a.SendMessageRequest))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromSendMessageRequest(pb)
		}, func(t *testing.T, v any) {
			pb := v.(*a2apb.SendMessageRequest)
			require.Equal(t, "billing", pb.GetTenant())
			require.Equal(t, a2apb.Role_ROLE_USER, pb.GetMessage().GetRole())
			parts := pb.GetMessage().GetParts()
			require.Len(t, parts, 4)
			require.Equal(t, "summarise the attached report", parts[0].GetText())
			require.Equal(t, []byte{0, 1, 2, 0xfe, 0xff, '<', '>'}, parts[1].GetRaw())
			require.Equal(t, "report.bin", parts[1].GetFilename())
			require.Equal(t, "https://files.example.com/q3.pdf", parts[2].GetUrl())
			require.Equal(t, 3.0, parts[3].GetData().GetStructValue().GetFields()["limit"].GetNumberValue())
			require.Equal(t, "form", parts[3].GetMetadata().GetFields()["source"].GetStringValue())
			require.Equal(t, int32(0), pb.GetConfiguration().GetHistoryLength())
			require.NotNil(t, pb.GetConfiguration().HistoryLength, "an explicit historyLength 0 stays set")
			require.True(t, pb.GetConfiguration().GetReturnImmediately())
			require.Equal(t, "secret", pb.GetConfiguration().GetTaskPushNotificationConfig().GetAuthentication().GetCredentials())
			require.Equal(t, 2.5, pb.GetMessage().GetMetadata().GetFields()["n"].GetNumberValue())
		}},
		{"task", task, func(v any) (any, error) {
			pb, err := pbconv.Task(v.(*a2a.Task))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromTask(pb)
		}, func(t *testing.T, v any) {
			pb := v.(*a2apb.Task)
			require.Equal(t, a2apb.TaskState_TASK_STATE_INPUT_REQUIRED, pb.GetStatus().GetState())
			require.Equal(t, time.Date(2026, 3, 4, 5, 6, 7, 89e6, time.UTC), pb.GetStatus().GetTimestamp().AsTime())
			require.Equal(t, a2apb.Role_ROLE_AGENT, pb.GetStatus().GetMessage().GetRole())
			require.Equal(t, 7.0, pb.GetArtifacts()[0].GetParts()[1].GetData().GetStructValue().GetFields()["score"].GetNumberValue())
			require.Len(t, pb.GetMetadata().GetFields()["labels"].GetListValue().GetValues(), 2)
		}},
		{"stream status update", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t-1", ContextID: "ctx-1",
			Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "2026-03-04T05:06:07.500Z"}, Metadata: a2a.Metadata{"a2amesh.eventId": "42"}}},
			func(v any) (any, error) {
				pb, err := pbconv.StreamResponse(v.(*a2a.StreamResponse))
				if err != nil {
					return nil, err
				}
				lastPB = pb
				return pbconv.FromStreamResponse(pb)
			}, func(t *testing.T, v any) {
				pb := v.(*a2apb.StreamResponse)
				require.Equal(t, a2apb.TaskState_TASK_STATE_WORKING, pb.GetStatusUpdate().GetStatus().GetState())
				require.Equal(t, "42", pb.GetStatusUpdate().GetMetadata().GetFields()["a2amesh.eventId"].GetStringValue())
			}},
		{"stream artifact update", &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t-1", ContextID: "ctx-1",
			Artifact: task.Artifacts[0], Append: true, LastChunk: true}},
			func(v any) (any, error) {
				pb, err := pbconv.StreamResponse(v.(*a2a.StreamResponse))
				if err != nil {
					return nil, err
				}
				lastPB = pb
				return pbconv.FromStreamResponse(pb)
			}, func(t *testing.T, v any) {
				pb := v.(*a2apb.StreamResponse)
				require.True(t, pb.GetArtifactUpdate().GetAppend())
				require.True(t, pb.GetArtifactUpdate().GetLastChunk())
				require.Equal(t, "a-1", pb.GetArtifactUpdate().GetArtifact().GetArtifactId())
			}},
		{"send response task", &a2a.StreamResponse{Task: task}, func(v any) (any, error) {
			pb, err := pbconv.SendMessageResponse(v.(*a2a.StreamResponse))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromSendMessageResponse(pb)
		}, func(t *testing.T, v any) {
			require.Equal(t, "t-1", v.(*a2apb.SendMessageResponse).GetTask().GetId())
		}},
		{"send response message", &a2a.StreamResponse{Message: &task.History[0]}, func(v any) (any, error) {
			pb, err := pbconv.SendMessageResponse(v.(*a2a.StreamResponse))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromSendMessageResponse(pb)
		}, func(t *testing.T, v any) {
			require.Equal(t, "m-1", v.(*a2apb.SendMessageResponse).GetMessage().GetMessageId())
		}},
		{"get task request", &a2a.GetTaskRequest{Tenant: "billing", ID: "t-1", HistoryLength: intp(3)}, func(v any) (any, error) {
			pb, err := pbconv.GetTaskRequest(v.(*a2a.GetTaskRequest))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromGetTaskRequest(pb)
		}, func(t *testing.T, v any) {
			require.Equal(t, int32(3), v.(*a2apb.GetTaskRequest).GetHistoryLength())
		}},
		{"cancel request", &a2a.TaskIDRequest{Tenant: "billing", ID: "t-1", Metadata: a2a.Metadata{"why": "late"}}, func(v any) (any, error) {
			pb, err := pbconv.CancelTaskRequest(v.(*a2a.TaskIDRequest))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromCancelTaskRequest(pb)
		}, func(t *testing.T, v any) {
			require.Equal(t, "late", v.(*a2apb.CancelTaskRequest).GetMetadata().GetFields()["why"].GetStringValue())
		}},
		{"subscribe request", &a2a.TaskIDRequest{Tenant: "billing", ID: "t-1"}, func(v any) (any, error) {
			pb, err := pbconv.SubscribeToTaskRequest(v.(*a2a.TaskIDRequest))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromSubscribeToTaskRequest(pb)
		}, func(t *testing.T, v any) {
			require.Equal(t, "t-1", v.(*a2apb.SubscribeToTaskRequest).GetId())
		}},
		{"list tasks request", &a2a.ListTasksRequest{Tenant: "billing", ContextID: "ctx-1", Status: a2a.StateCompleted, PageSize: intp(10),
			PageToken: "abc", HistoryLength: intp(2), StatusTimestampAfter: "2026-01-02T03:04:05.000Z", IncludeArtifacts: a2a.Bool(true)},
			func(v any) (any, error) {
				pb, err := pbconv.ListTasksRequest(v.(*a2a.ListTasksRequest))
				if err != nil {
					return nil, err
				}
				lastPB = pb
				out, err := pbconv.FromListTasksRequest(pb)
				if err == nil { // protojson writes whole seconds without a fraction
					out.StatusTimestampAfter = normTime(out.StatusTimestampAfter)
				}
				return out, err
			}, func(t *testing.T, v any) {
				pb := v.(*a2apb.ListTasksRequest)
				require.Equal(t, a2apb.TaskState_TASK_STATE_COMPLETED, pb.GetStatus())
				require.Equal(t, int64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()), pb.GetStatusTimestampAfter().GetSeconds())
				require.True(t, pb.GetIncludeArtifacts())
			}},
		{"list tasks response", &a2a.ListTasksResponse{Tasks: []a2a.Task{*task}, NextPageToken: "next", PageSize: 1, TotalSize: 5},
			func(v any) (any, error) {
				pb, err := pbconv.ListTasksResponse(v.(*a2a.ListTasksResponse))
				if err != nil {
					return nil, err
				}
				lastPB = pb
				return pbconv.FromListTasksResponse(pb)
			}, func(t *testing.T, v any) {
				pb := v.(*a2apb.ListTasksResponse)
				require.Equal(t, int32(5), pb.GetTotalSize())
				require.Equal(t, "next", pb.GetNextPageToken())
			}},
		{"push config", &a2a.TaskPushNotificationConfig{Tenant: "billing", ID: "p-1", TaskID: "t-1", URL: "https://hooks.example.com/a2a", Token: "tok",
			Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}},
			func(v any) (any, error) {
				pb, err := pbconv.PushConfig(v.(*a2a.TaskPushNotificationConfig))
				if err != nil {
					return nil, err
				}
				lastPB = pb
				return pbconv.FromPushConfig(pb)
			}, func(t *testing.T, v any) {
				pb := v.(*a2apb.TaskPushNotificationConfig)
				require.Equal(t, "t-1", pb.GetTaskId())
				require.Equal(t, "Bearer", pb.GetAuthentication().GetScheme())
			}},
		{"agent card", card(), func(v any) (any, error) {
			pb, err := pbconv.AgentCard(v.(*a2a.AgentCard))
			if err != nil {
				return nil, err
			}
			lastPB = pb
			return pbconv.FromAgentCard(pb)
		}, func(t *testing.T, v any) {
			pb := v.(*a2apb.AgentCard)
			require.Equal(t, "GRPC", pb.GetSupportedInterfaces()[1].GetProtocolBinding())
			require.True(t, pb.GetCapabilities().GetStreaming())
			require.Equal(t, "X-API-Key", pb.GetSecuritySchemes()["key"].GetApiKeySecurityScheme().GetName())
			require.Equal(t, []string{"echo"}, pb.GetSkills()[0].GetTags())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lastPB = nil
			out, err := tc.trip(tc.in)
			require.NoError(t, err)
			tc.check(t, lastPB)
			require.Equal(t, tc.in, out)
		})
	}
}

var lastPB any

func normTime(s string) string {
	tm, err := a2a.ParseTime(s)
	if err != nil {
		return s
	}
	return a2a.FormatTime(tm)
}

// card is a 1.0 card; the 0.3 fields are left out, as they do not
// survive the trip (the proto has no place for them).
func card() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "echo", Description: "echoes", Version: "1.2.3",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: "http://127.0.0.1:8080/agents/echo", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
			{URL: "127.0.0.1:9090", ProtocolBinding: a2a.BindingGRPC, Tenant: "echo", ProtocolVersion: "1.0"},
		},
		Provider:         &a2a.AgentProvider{URL: "https://example.com", Organization: "Example"},
		DocumentationURL: "https://example.com/docs",
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false),
			Extensions: []a2a.AgentExtension{{URI: "https://example.com/ext", Required: true, Params: a2a.Metadata{"x": 1.0}}}},
		SecuritySchemes:   map[string]map[string]any{"key": {"apiKeySecurityScheme": map[string]any{"location": "header", "name": "X-API-Key"}}},
		SecurityReqs:      []map[string]any{{"schemes": map[string]any{"key": map[string]any{}}}},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:  []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "says it back", Tags: []string{"echo"}, Examples: []string{"hi"}}},
		IconURL: "https://example.com/icon.png",
	}
}

// A message the gRPC client built (as the official SDK does) reads into
// the a2a types: enums, the timestamp, Struct metadata and each part kind.
func TestFromProto(t *testing.T) {
	data, err := structpb.NewValue(map[string]any{"rows": []any{1.0, 2.0}})
	require.NoError(t, err)
	meta, err := structpb.NewStruct(map[string]any{"trace": "abc"})
	require.NoError(t, err)
	pb := &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{
		Id: "t-9", ContextId: "c-9",
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED, Timestamp: timestamppb.New(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))},
		Artifacts: []*a2apb.Artifact{{ArtifactId: "a", Parts: []*a2apb.Part{
			{Content: &a2apb.Part_Raw{Raw: []byte("\x00bin\xff")}, MediaType: "image/png"},
			{Content: &a2apb.Part_Data{Data: data}},
			{Content: &a2apb.Part_Url{Url: "https://x.example/y"}},
			{Content: &a2apb.Part_Text{Text: "done"}},
		}}},
		Metadata: meta,
	}}}
	got, err := pbconv.FromStreamResponse(pb)
	require.NoError(t, err)
	require.NotNil(t, got.Task)
	require.Equal(t, a2a.StateCompleted, got.Task.Status.State)
	ts, err := a2a.ParseTime(got.Task.Status.Timestamp)
	require.NoError(t, err)
	require.True(t, ts.Equal(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)))
	parts := got.Task.Artifacts[0].Parts
	require.Equal(t, a2a.PartRaw, parts[0].Kind)
	require.Equal(t, []byte("\x00bin\xff"), parts[0].Raw)
	require.Equal(t, "image/png", parts[0].MediaType)
	require.Equal(t, a2a.PartData, parts[1].Kind)
	require.JSONEq(t, `{"rows":[1,2]}`, string(parts[1].Data))
	require.Equal(t, a2a.PartURL, parts[2].Kind)
	require.Equal(t, "done", parts[3].Text)
	require.Equal(t, "abc", got.Task.Metadata["trace"])
}

// Bad input is an error, not a panic: a send without a role is the JSON
// bindings' own error; an empty stream event and a part with no content
// are refused.
func TestBadInput(t *testing.T) {
	_, err := pbconv.FromSendMessageRequest(&a2apb.SendMessageRequest{Message: &a2apb.Message{MessageId: "m", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}})
	require.True(t, errors.Is(err, a2a.ErrInvalidParams), "got %v", err)
	require.ErrorIs(t, err, a2a.ErrRoleRequired)

	_, err = pbconv.FromStreamResponse(&a2apb.StreamResponse{})
	require.Error(t, err)
	_, err = pbconv.FromSendMessageResponse(&a2apb.SendMessageResponse{})
	require.Error(t, err)

	_, err = pbconv.FromMessage(&a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{}}})
	require.Error(t, err)

	_, err = pbconv.SendMessageResponse(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{}})
	require.Error(t, err)
	_, err = pbconv.StreamResponse(&a2a.StreamResponse{Task: &a2a.Task{Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: "yesterday"}}})
	require.Error(t, err)

	cfgs, next, err := pbconv.FromListPushConfigsResponse(&a2apb.ListTaskPushNotificationConfigsResponse{})
	require.NoError(t, err)
	require.Empty(t, cfgs)
	require.Empty(t, next)
	resp, err := pbconv.FromListTasksResponse(&a2apb.ListTasksResponse{})
	require.NoError(t, err)
	require.NotNil(t, resp.Tasks)
}

func TestListPushConfigs(t *testing.T) {
	in := []a2a.TaskPushNotificationConfig{
		{ID: "p-1", TaskID: "t-1", URL: "https://a.example/h"},
		{ID: "p-2", TaskID: "t-1", URL: "https://b.example/h", Authentication: &a2a.AuthenticationInfo{Scheme: "Basic"}},
	}
	pb, err := pbconv.ListPushConfigsResponse(in, "2")
	require.NoError(t, err)
	require.Len(t, pb.GetConfigs(), 2)
	out, next, err := pbconv.FromListPushConfigsResponse(pb)
	require.NoError(t, err)
	require.Equal(t, in, out)
	require.Equal(t, "2", next)
}

// A data part's object keeps its values, if not its key order.
func TestDataPartKeyOrder(t *testing.T) {
	in := &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"z":1,"a":{"y":true,"b":null}}`)}}}
	pb, err := pbconv.Message(in)
	require.NoError(t, err)
	out, err := pbconv.FromMessage(pb)
	require.NoError(t, err)
	require.JSONEq(t, string(in.Parts[0].Data), string(out.Parts[0].Data))
}

// The cards the mesh serves carry 0.3 fields beside the 1.0 ones: they
// convert, without them.
func TestCardWith03Fields(t *testing.T) {
	c := card().WithEndpoint("http://127.0.0.1:8080/agents/echo", "", "")
	require.NotEmpty(t, c.PreferredTransport)
	pb, err := pbconv.AgentCard(&c)
	require.NoError(t, err)
	out, err := pbconv.FromAgentCard(pb)
	require.NoError(t, err)
	require.Equal(t, c.Strict10().SupportedInterfaces, out.SupportedInterfaces)
	require.Empty(t, out.PreferredTransport)
}
