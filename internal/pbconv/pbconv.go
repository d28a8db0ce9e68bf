// Package pbconv converts between the mesh's protocol types (package a2a)
// and the messages of the A2A 1.0 gRPC binding (lf.a2a.v1, generated in
// github.com/a2aproject/a2a-go/v2/a2apb/v1).
//
// The 1.0 JSON the a2a types read and write is the ProtoJSON form of those
// messages, so a conversion goes through it: an a2a value is marshalled
// with encoding/json and read with protojson, a message is written with
// protojson and read with encoding/json (and the a2a types' lenient
// decoders). Enum names, timestamps, Struct metadata, the Part oneof and
// raw bytes (base64 in JSON) all have one spelling on both sides. Fields
// one side has and the other has not (the 0.3 fields of a card) are
// dropped.
package pbconv

import (
	"encoding/json"
	"errors"
	"fmt"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2amesh/a2amesh/a2a"
)

var (
	readPB  = protojson.UnmarshalOptions{DiscardUnknown: true}
	writePB = protojson.MarshalOptions{}
)

// toPB reads v, an a2a value, into m.
func toPB(what string, v any, m proto.Message) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("pbconv: %s: %w", what, err)
	}
	if err := readPB.Unmarshal(b, m); err != nil {
		return fmt.Errorf("pbconv: %s: %w", what, err)
	}
	return nil
}

// fromPB reads m into v, an a2a value. An error of the a2a decoders (an
// *a2a.Error, a *a2a.FieldError) is returned as it is, so a transport
// answers it as the JSON bindings do.
func fromPB(what string, m proto.Message, v any) error {
	b, err := writePB.Marshal(m)
	if err != nil {
		return fmt.Errorf("pbconv: %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		var ae *a2a.Error
		var fe *a2a.FieldError
		if errors.As(err, &ae) || errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("pbconv: %s: %w", what, err)
	}
	return nil
}

// Message returns m as a proto message.
func Message(m *a2a.Message) (*a2apb.Message, error) {
	out := new(a2apb.Message)
	return out, toPB("message", m, out)
}

// FromMessage returns m as an a2a message.
func FromMessage(m *a2apb.Message) (*a2a.Message, error) {
	out := new(a2a.Message)
	return out, fromPB("message", m, out)
}

// Task returns t as a proto message.
func Task(t *a2a.Task) (*a2apb.Task, error) {
	out := new(a2apb.Task)
	return out, toPB("task", t, out)
}

// FromTask returns t as an a2a task.
func FromTask(t *a2apb.Task) (*a2a.Task, error) {
	out := new(a2a.Task)
	return out, fromPB("task", t, out)
}

// SendMessageRequest returns r as a proto message.
func SendMessageRequest(r *a2a.SendMessageRequest) (*a2apb.SendMessageRequest, error) {
	out := new(a2apb.SendMessageRequest)
	return out, toPB("send request", r, out)
}

// FromSendMessageRequest returns r as an a2a request. A message without a
// role is refused with a2a.ErrRoleRequired, as the JSON bindings do.
func FromSendMessageRequest(r *a2apb.SendMessageRequest) (*a2a.SendMessageRequest, error) {
	out := new(a2a.SendMessageRequest)
	return out, fromPB("send request", r, out)
}

// StreamResponse returns r, which holds exactly one member, as a proto
// stream event.
func StreamResponse(r *a2a.StreamResponse) (*a2apb.StreamResponse, error) {
	out := new(a2apb.StreamResponse)
	return out, toPB("stream response", r, out)
}

// FromStreamResponse returns r as an a2a stream event.
func FromStreamResponse(r *a2apb.StreamResponse) (*a2a.StreamResponse, error) {
	out := new(a2a.StreamResponse)
	if err := fromPB("stream response", r, out); err != nil {
		return nil, err
	}
	if out.Task == nil && out.Message == nil && out.StatusUpdate == nil && out.ArtifactUpdate == nil {
		return nil, errors.New("pbconv: stream response holds no task, message or update")
	}
	return out, nil
}

// SendMessageResponse returns r, the result of SendMessage (a task or a
// message), as a proto message.
func SendMessageResponse(r *a2a.StreamResponse) (*a2apb.SendMessageResponse, error) {
	if r == nil || r.StatusUpdate != nil || r.ArtifactUpdate != nil || (r.Task == nil) == (r.Message == nil) {
		return nil, errors.New("pbconv: a send response holds exactly one of task and message")
	}
	out := new(a2apb.SendMessageResponse)
	return out, toPB("send response", r, out)
}

// FromSendMessageResponse returns r as an a2a result holding a task or a
// message.
func FromSendMessageResponse(r *a2apb.SendMessageResponse) (*a2a.StreamResponse, error) {
	out := new(a2a.StreamResponse)
	if err := fromPB("send response", r, out); err != nil {
		return nil, err
	}
	if (out.Task == nil) == (out.Message == nil) {
		return nil, errors.New("pbconv: send response holds no task or message")
	}
	return out, nil
}

// GetTaskRequest returns r as a proto message.
func GetTaskRequest(r *a2a.GetTaskRequest) (*a2apb.GetTaskRequest, error) {
	out := new(a2apb.GetTaskRequest)
	return out, toPB("get task request", r, out)
}

// FromGetTaskRequest returns r as an a2a request.
func FromGetTaskRequest(r *a2apb.GetTaskRequest) (*a2a.GetTaskRequest, error) {
	out := new(a2a.GetTaskRequest)
	return out, fromPB("get task request", r, out)
}

// CancelTaskRequest returns r as a proto message.
func CancelTaskRequest(r *a2a.TaskIDRequest) (*a2apb.CancelTaskRequest, error) {
	out := new(a2apb.CancelTaskRequest)
	return out, toPB("cancel request", r, out)
}

// FromCancelTaskRequest returns r as an a2a request.
func FromCancelTaskRequest(r *a2apb.CancelTaskRequest) (*a2a.TaskIDRequest, error) {
	out := new(a2a.TaskIDRequest)
	return out, fromPB("cancel request", r, out)
}

// SubscribeToTaskRequest returns r as a proto message (the proto request
// has no metadata: r's is dropped).
func SubscribeToTaskRequest(r *a2a.TaskIDRequest) (*a2apb.SubscribeToTaskRequest, error) {
	out := new(a2apb.SubscribeToTaskRequest)
	return out, toPB("subscribe request", r, out)
}

// FromSubscribeToTaskRequest returns r as an a2a request.
func FromSubscribeToTaskRequest(r *a2apb.SubscribeToTaskRequest) (*a2a.TaskIDRequest, error) {
	out := new(a2a.TaskIDRequest)
	return out, fromPB("subscribe request", r, out)
}

// ListTasksRequest returns r as a proto message.
func ListTasksRequest(r *a2a.ListTasksRequest) (*a2apb.ListTasksRequest, error) {
	out := new(a2apb.ListTasksRequest)
	return out, toPB("list tasks request", r, out)
}

// FromListTasksRequest returns r as an a2a request.
func FromListTasksRequest(r *a2apb.ListTasksRequest) (*a2a.ListTasksRequest, error) {
	out := new(a2a.ListTasksRequest)
	return out, fromPB("list tasks request", r, out)
}

// ListTasksResponse returns r as a proto message.
func ListTasksResponse(r *a2a.ListTasksResponse) (*a2apb.ListTasksResponse, error) {
	out := new(a2apb.ListTasksResponse)
	return out, toPB("list tasks response", r, out)
}

// FromListTasksResponse returns r as an a2a response (Tasks is never nil).
func FromListTasksResponse(r *a2apb.ListTasksResponse) (*a2a.ListTasksResponse, error) {
	out := new(a2a.ListTasksResponse)
	if err := fromPB("list tasks response", r, out); err != nil {
		return nil, err
	}
	if out.Tasks == nil {
		out.Tasks = []a2a.Task{}
	}
	return out, nil
}

// PushConfig returns c as a proto message.
func PushConfig(c *a2a.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	out := new(a2apb.TaskPushNotificationConfig)
	return out, toPB("push config", c, out)
}

// FromPushConfig returns c as an a2a push config.
func FromPushConfig(c *a2apb.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error) {
	out := new(a2a.TaskPushNotificationConfig)
	return out, fromPB("push config", c, out)
}

// ListPushConfigsResponse returns a page of push configs as a proto
// message.
func ListPushConfigsResponse(configs []a2a.TaskPushNotificationConfig, nextPageToken string) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	out := &a2apb.ListTaskPushNotificationConfigsResponse{
		Configs:       make([]*a2apb.TaskPushNotificationConfig, 0, len(configs)),
		NextPageToken: nextPageToken,
	}
	for i := range configs {
		c, err := PushConfig(&configs[i])
		if err != nil {
			return nil, err
		}
		out.Configs = append(out.Configs, c)
	}
	return out, nil
}

// FromListPushConfigsResponse returns the configs of a page and the
// token of the next one ("" on the last page).
func FromListPushConfigsResponse(r *a2apb.ListTaskPushNotificationConfigsResponse) ([]a2a.TaskPushNotificationConfig, string, error) {
	out := make([]a2a.TaskPushNotificationConfig, 0, len(r.GetConfigs()))
	for _, c := range r.GetConfigs() {
		ac, err := FromPushConfig(c)
		if err != nil {
			return nil, "", err
		}
		out = append(out, *ac)
	}
	return out, r.GetNextPageToken(), nil
}

// AgentCard returns c as a proto message. The 0.3 compatibility fields of
// c have no proto counterpart and are dropped.
func AgentCard(c *a2a.AgentCard) (*a2apb.AgentCard, error) {
	out := new(a2apb.AgentCard)
	return out, toPB("agent card", c, out)
}

// FromAgentCard returns c as an a2a card (1.0 fields only; signatures are
// dropped).
func FromAgentCard(c *a2apb.AgentCard) (*a2a.AgentCard, error) {
	out := new(a2a.AgentCard)
	return out, fromPB("agent card", c, out)
}
