package a2a

import (
	"encoding/json"
	"strings"
)

// Decoding is lenient: one decoder reads 1.0 ProtoJSON, 0.3 and the 0.2 shapes
// real clients still send (lower-case enums, snake_case keys, sessionId,
// "type" instead of "kind", bytes_data). Encoding is strict 1.0; see v03.go
// for the 0.3 encoding.

var stateAliases = map[string]TaskState{
	"submitted":      StateSubmitted,
	"working":        StateWorking,
	"completed":      StateCompleted,
	"failed":         StateFailed,
	"canceled":       StateCanceled,
	"cancelled":      StateCanceled,
	"input-required": StateInputRequired,
	"input_required": StateInputRequired,
	"rejected":       StateRejected,
	"auth-required":  StateAuthRequired,
	"auth_required":  StateAuthRequired,
	"unknown":        StateUnspecified,
}

// ParseTaskState reads a state in any supported spelling; ok is false for
// an unknown value.
func ParseTaskState(s string) (TaskState, bool) {
	if st := TaskState(strings.ToUpper(s)); st.Valid() || st == StateUnspecified {
		return st, true
	}
	st, ok := stateAliases[strings.ToLower(s)]
	return st, ok
}

// stateNumbers are the 1.0 enum numbers, which ProtoJSON parsers accept.
var stateNumbers = []TaskState{StateUnspecified, StateSubmitted, StateWorking, StateCompleted,
	StateFailed, StateCanceled, StateInputRequired, StateRejected, StateAuthRequired}

var roleNumbers = []Role{RoleUnspecified, RoleUser, RoleAgent}

// enumNumber reads a ProtoJSON enum given as its number; ok is false if b
// is not an integer in [0, n).
func enumNumber(b []byte, n int) (int, bool) {
	var i int
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) || json.Unmarshal(b, &i) != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// isNull reports whether b is the JSON literal null, which ProtoJSON treats
// as the field's default (here: leave the value unchanged).
func isNull(b []byte) bool { return string(b) == "null" }

// UnmarshalJSON accepts 1.0 enum names (any case), 1.0 enum numbers and 0.3
// kebab-case names; null leaves s unchanged.
func (s *TaskState) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	if i, ok := enumNumber(b, len(stateNumbers)); ok {
		*s = stateNumbers[i]
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return &FieldError{Field: "state", Reason: "must be a string"}
	}
	st, ok := ParseTaskState(v)
	if !ok {
		return &FieldError{Field: "state", Reason: "unknown task state " + quote(v)}
	}
	*s = st
	return nil
}

// UnmarshalJSON accepts ROLE_USER / ROLE_AGENT, user / agent and the 1.0
// enum numbers; null leaves r unchanged.
func (r *Role) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	if i, ok := enumNumber(b, len(roleNumbers)); ok {
		*r = roleNumbers[i]
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return &FieldError{Field: "role", Reason: "must be a string"}
	}
	switch strings.ToLower(v) {
	case "role_user", "user":
		*r = RoleUser
	case "role_agent", "agent":
		*r = RoleAgent
	case "role_unspecified", "":
		*r = RoleUnspecified
	default:
		return &FieldError{Field: "role", Reason: "unknown role " + quote(v)}
	}
	return nil
}

// FieldError names the input field that failed to decode or validate.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// UnmarshalJSON reads a message in 1.0, 0.3 or 0.2 shape.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var w struct {
		plain
		MessageIDSnake  string   `json:"message_id"`
		ContextIDSnake  string   `json:"context_id"`
		SessionID       string   `json:"sessionId"`
		SessionIDSnake  string   `json:"session_id"`
		TaskIDSnake     string   `json:"task_id"`
		RefTaskIDsSnake []string `json:"reference_task_ids"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message(w.plain)
	m.MessageID = firstNonEmpty(m.MessageID, w.MessageIDSnake)
	m.ContextID = firstNonEmpty(m.ContextID, w.ContextIDSnake, w.SessionID, w.SessionIDSnake)
	m.TaskID = firstNonEmpty(m.TaskID, w.TaskIDSnake)
	if m.ReferenceTaskIDs == nil {
		m.ReferenceTaskIDs = w.RefTaskIDsSnake
	}
	return nil
}

// UnmarshalJSON reads 1.0 configuration and the 0.3 / snake_case spellings;
// 0.3's blocking:false becomes ReturnImmediately.
func (c *SendMessageConfiguration) UnmarshalJSON(b []byte) error {
	type plain SendMessageConfiguration
	var w struct {
		plain
		AcceptedSnake     []string                    `json:"accepted_output_modes"`
		HistorySnake      *int                        `json:"history_length"`
		ReturnSnake       *bool                       `json:"return_immediately"`
		Blocking          *bool                       `json:"blocking"`
		PushV03           *TaskPushNotificationConfig `json:"pushNotificationConfig"`
		PushSnake         *TaskPushNotificationConfig `json:"push_notification_config"`
		TaskPushSnake     *TaskPushNotificationConfig `json:"task_push_notification_config"`
		PushNotification  *TaskPushNotificationConfig `json:"pushNotification"`
		ReturnImmediately *bool                       `json:"returnImmediately"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = SendMessageConfiguration(w.plain)
	if c.AcceptedOutputModes == nil {
		c.AcceptedOutputModes = w.AcceptedSnake
	}
	if c.HistoryLength == nil {
		c.HistoryLength = w.HistorySnake
	}
	switch {
	case w.ReturnImmediately != nil:
		c.ReturnImmediately = *w.ReturnImmediately
	case w.ReturnSnake != nil:
		c.ReturnImmediately = *w.ReturnSnake
	case w.Blocking != nil:
		c.ReturnImmediately = !*w.Blocking
	}
	for _, p := range []*TaskPushNotificationConfig{w.PushV03, w.PushSnake, w.TaskPushSnake, w.PushNotification} {
		if c.TaskPushNotificationConfig == nil && p != nil {
			c.TaskPushNotificationConfig = p
		}
	}
	return nil
}

// UnmarshalJSON reads a push config with both token shapes and both
// authentication shapes (1.0 scheme, 0.3 schemes list).
func (c *TaskPushNotificationConfig) UnmarshalJSON(b []byte) error {
	type plain TaskPushNotificationConfig
	var w struct {
		plain
		TaskIDSnake    string `json:"task_id"`
		Authentication *struct {
			Scheme      string   `json:"scheme"`
			Schemes     []string `json:"schemes"`
			Credentials string   `json:"credentials"`
		} `json:"authentication"`
		// 0.3 wraps the config: {taskId, pushNotificationConfig:{...}}.
		Inner *TaskPushNotificationConfig `json:"pushNotificationConfig"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Inner != nil {
		*c = *w.Inner
		c.TaskID = firstNonEmpty(w.TaskID, w.TaskIDSnake, c.TaskID)
		c.Tenant = firstNonEmpty(w.Tenant, c.Tenant)
		return nil
	}
	*c = TaskPushNotificationConfig(w.plain)
	c.TaskID = firstNonEmpty(c.TaskID, w.TaskIDSnake)
	c.Authentication = nil
	if a := w.Authentication; a != nil {
		scheme := a.Scheme
		if scheme == "" && len(a.Schemes) > 0 {
			scheme = a.Schemes[0]
		}
		c.Authentication = &AuthenticationInfo{Scheme: scheme, Credentials: a.Credentials}
	}
	return nil
}

// UnmarshalJSON reads 1.0 send params and 0.2 tasks/send params
// (id + sessionId beside the message).
func (r *SendMessageRequest) UnmarshalJSON(b []byte) error {
	type plain SendMessageRequest
	var w struct {
		plain
		ID                  string                      `json:"id"`
		SessionID           string                      `json:"sessionId"`
		AcceptedOutputModes []string                    `json:"acceptedOutputModes"`
		HistoryLength       *int                        `json:"historyLength"`
		PushNotification    *TaskPushNotificationConfig `json:"pushNotification"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = SendMessageRequest(w.plain)
	if r.Message != nil {
		r.Message.TaskID = firstNonEmpty(r.Message.TaskID, w.ID)
		r.Message.ContextID = firstNonEmpty(r.Message.ContextID, w.SessionID)
	}
	if w.AcceptedOutputModes != nil || w.HistoryLength != nil || w.PushNotification != nil {
		if r.Configuration == nil {
			r.Configuration = &SendMessageConfiguration{}
		}
		if r.Configuration.AcceptedOutputModes == nil {
			r.Configuration.AcceptedOutputModes = w.AcceptedOutputModes
		}
		if r.Configuration.HistoryLength == nil {
			r.Configuration.HistoryLength = w.HistoryLength
		}
		if r.Configuration.TaskPushNotificationConfig == nil {
			r.Configuration.TaskPushNotificationConfig = w.PushNotification
		}
	}
	return nil
}

// UnmarshalJSON accepts historyLength and history_length.
func (r *GetTaskRequest) UnmarshalJSON(b []byte) error {
	type plain GetTaskRequest
	var w struct {
		plain
		HistorySnake *int `json:"history_length"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = GetTaskRequest(w.plain)
	if r.HistoryLength == nil {
		r.HistoryLength = w.HistorySnake
	}
	return nil
}

// UnmarshalJSON accepts the proto field names ProtoJSON parsers must also
// accept (context_id, page_size, page_token, history_length,
// status_timestamp_after, include_artifacts); the lowerCamelCase name wins
// when both are present.
func (r *ListTasksRequest) UnmarshalJSON(b []byte) error {
	type plain ListTasksRequest
	var w struct {
		plain
		ContextIDSnake        string `json:"context_id"`
		PageSizeSnake         *int   `json:"page_size"`
		PageTokenSnake        string `json:"page_token"`
		HistorySnake          *int   `json:"history_length"`
		StatusTimestampSnake  string `json:"status_timestamp_after"`
		IncludeArtifactsSnake *bool  `json:"include_artifacts"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ListTasksRequest(w.plain)
	r.ContextID = firstNonEmpty(r.ContextID, w.ContextIDSnake)
	r.PageToken = firstNonEmpty(r.PageToken, w.PageTokenSnake)
	r.StatusTimestampAfter = firstNonEmpty(r.StatusTimestampAfter, w.StatusTimestampSnake)
	if r.PageSize == nil {
		r.PageSize = w.PageSizeSnake
	}
	if r.HistoryLength == nil {
		r.HistoryLength = w.HistorySnake
	}
	if r.IncludeArtifacts == nil {
		r.IncludeArtifacts = w.IncludeArtifactsSnake
	}
	return nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// unmarshalV03 reads a 0.3 part ({"kind":"text"|"file"|"data"}), also
// accepting "type" for "kind" (0.2), bytes_data and mime_type.
func (p *Part) unmarshalV03(b []byte) error {
	var w struct {
		Kind     string          `json:"kind"`
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		Data     json.RawMessage `json:"data"`
		Metadata Metadata        `json:"metadata"`
		File     *struct {
			Name          string  `json:"name"`
			MimeType      string  `json:"mimeType"`
			MimeTypeSnake string  `json:"mime_type"`
			Bytes         *string `json:"bytes"`
			BytesData     *string `json:"bytes_data"`
			URI           *string `json:"uri"`
			URL           *string `json:"url"`
		} `json:"file"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	kind := strings.ToLower(firstNonEmpty(w.Kind, w.Type))
	*p = Part{Metadata: w.Metadata}
	switch {
	case kind == "text" || (kind == "" && w.Text != nil):
		if w.Text == nil {
			return &FieldError{Field: "part.text", Reason: "text part without text"}
		}
		p.Kind, p.Text = PartText, *w.Text
	case kind == "data" || (kind == "" && len(w.Data) > 0):
		if len(w.Data) == 0 {
			return &FieldError{Field: "part.data", Reason: "data part without data"}
		}
		p.Kind, p.Data, p.MediaType = PartData, compactJSON(w.Data), "application/json"
	case kind == "file" || (kind == "" && w.File != nil):
		f := w.File
		if f == nil {
			return &FieldError{Field: "part.file", Reason: "file part without file"}
		}
		p.Filename, p.MediaType = f.Name, firstNonEmpty(f.MimeType, f.MimeTypeSnake)
		switch {
		case f.Bytes != nil || f.BytesData != nil:
			s := f.Bytes
			if s == nil {
				s = f.BytesData
			}
			raw, err := decodeBase64(*s)
			if err != nil {
				return &FieldError{Field: "part.file.bytes", Reason: "not valid base64"}
			}
			p.Kind, p.Raw = PartRaw, raw
		case f.URI != nil || f.URL != nil:
			u := f.URI
			if u == nil {
				u = f.URL
			}
			p.Kind, p.URL = PartURL, *u
		default:
			return &FieldError{Field: "part.file", Reason: "file needs bytes or uri"}
		}
	default:
		return &FieldError{Field: "part.kind", Reason: "unknown part kind " + quote(kind)}
	}
	return nil
}
