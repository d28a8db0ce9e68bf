package a2a

import (
	"encoding/json"
	"errors"
	"strings"
)

// DecodeResult decodes the result of a send or a stream event in either
// protocol version into a StreamResponse holding exactly one member: a 1.0
// StreamResponse ({"task": {...}}, {"statusUpdate": {...}}, ...) or a 0.3
// object told apart by its "kind" ("task", "message", "status-update",
// "artifact-update"). Fields of the 0.3 objects have the same names as
// their 1.0 counterparts, and states, roles and parts decode leniently, so
// one set of types reads both.
func DecodeResult(b []byte) (*StreamResponse, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	var res StreamResponse
	var err error
	switch strings.ToLower(probe.Kind) {
	case "":
		err = json.Unmarshal(b, &res)
	case "task":
		res.Task = new(Task)
		err = json.Unmarshal(b, res.Task)
	case "message":
		res.Message = new(Message)
		err = json.Unmarshal(b, res.Message)
	case "status-update":
		res.StatusUpdate = new(TaskStatusUpdateEvent)
		err = json.Unmarshal(b, res.StatusUpdate)
	case "artifact-update":
		res.ArtifactUpdate = new(TaskArtifactUpdateEvent)
		err = json.Unmarshal(b, res.ArtifactUpdate)
	default:
		return nil, errors.New("unknown result kind " + quote(probe.Kind))
	}
	if err != nil {
		return nil, err
	}
	n := 0
	for _, set := range []bool{res.Task != nil, res.Message != nil, res.StatusUpdate != nil, res.ArtifactUpdate != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("result must hold exactly one of task, message, statusUpdate, artifactUpdate")
	}
	return &res, nil
}

// SendParamsV03 is the 0.3 wire shape of message/send and message/stream
// params.
type SendParamsV03 struct {
	Message       *MessageV03    `json:"message"`
	Configuration *SendConfigV03 `json:"configuration,omitempty"`
	Metadata      Metadata       `json:"metadata,omitempty"`
}

// SendConfigV03 is the 0.3 MessageSendConfiguration.
type SendConfigV03 struct {
	AcceptedOutputModes    []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength          *int     `json:"historyLength,omitempty"`
	Blocking               bool     `json:"blocking"`
	PushNotificationConfig any      `json:"pushNotificationConfig,omitempty"`
}

// ToV03 converts r to message/send params.
func (r *SendMessageRequest) ToV03() *SendParamsV03 {
	p := &SendParamsV03{Message: r.Message.ToV03(), Metadata: r.Metadata}
	c := r.Configuration
	if c == nil {
		c = &SendMessageConfiguration{}
	}
	p.Configuration = &SendConfigV03{
		AcceptedOutputModes: c.AcceptedOutputModes,
		HistoryLength:       c.HistoryLength,
		Blocking:            !c.ReturnImmediately,
	}
	if c.TaskPushNotificationConfig != nil {
		p.Configuration.PushNotificationConfig = &c.TaskPushNotificationConfig.ToV03().PushNotificationConfig
	}
	return p
}
