package a2a

import (
	"encoding/json"
	"strings"
)

// Decoding is lenient where ProtoJSON is: one decoder reads 1.0 ProtoJSON,
// 0.3 and the 0.2 shapes real clients still send (lower-case enums, enum
// numbers, proto field names beside JSON names and integers as strings, see
// protonames.go; sessionId, "type" instead of "kind", bytes_data). It is
// strict where the spec is: a send's message must name its role (the 0.2
// tasks/send shape aside), and one field given under two spellings is
// refused. Encoding is strict 1.0; see v03.go for the 0.3 encoding.

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
	if st, ok := quickState(b); ok {
		*s = st
		return nil
	}
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
	switch string(b) {
	case `"ROLE_USER"`:
		*r = RoleUser
		return nil
	case `"ROLE_AGENT"`:
		*r = RoleAgent
		return nil
	}
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

// UnmarshalJSON reads a message in 1.0, 0.3 or 0.2 shape. Every field may
// also be spelled with its proto name (message_id, ...), see protonames.go.
func (m *Message) UnmarshalJSON(b []byte) error {
	if decodeMessageFast(b, m) {
		return nil
	}
	type plain Message
	var w struct {
		plain
		SessionID string `json:"sessionId"` // 0.2
	}
	if err := unmarshalProto(b, "message", &w); err != nil {
		return err
	}
	*m = Message(w.plain)
	m.ContextID = firstNonEmpty(m.ContextID, w.SessionID)
	return nil
}

// UnmarshalJSON reads 1.0 configuration and the 0.3 / 0.2 spellings;
// 0.3's blocking:false becomes ReturnImmediately.
func (c *SendMessageConfiguration) UnmarshalJSON(b []byte) error {
	type plain SendMessageConfiguration
	var w struct {
		plain
		Blocking          *bool                       `json:"blocking"`               // 0.3
		PushV03           *TaskPushNotificationConfig `json:"pushNotificationConfig"` // 0.3
		PushNotification  *TaskPushNotificationConfig `json:"pushNotification"`       // 0.2
		ReturnImmediately *bool                       `json:"returnImmediately"`      // shadows plain's, to see it is set
	}
	if err := unmarshalProto(b, "configuration", &w); err != nil {
		return err
	}
	*c = SendMessageConfiguration(w.plain)
	switch {
	case w.ReturnImmediately != nil:
		c.ReturnImmediately = *w.ReturnImmediately
	case w.Blocking != nil:
		c.ReturnImmediately = !*w.Blocking
	}
	for _, p := range []*TaskPushNotificationConfig{w.PushV03, w.PushNotification} {
		if c.TaskPushNotificationConfig == nil && p != nil {
			c.TaskPushNotificationConfig = p
		}
	}
	return nil
}

// UnmarshalJSON reads a push config flat (1.0) or wrapped (0.3:
// {taskId, pushNotificationConfig:{...}}).
func (c *TaskPushNotificationConfig) UnmarshalJSON(b []byte) error {
	type plain TaskPushNotificationConfig
	var w struct {
		plain
		// 0.3 wraps the config: {taskId, pushNotificationConfig:{...}}.
		Inner *TaskPushNotificationConfig `json:"pushNotificationConfig"`
	}
	if err := unmarshalProto(b, "pushNotificationConfig", &w); err != nil {
		return err
	}
	if w.Inner != nil {
		*c = *w.Inner
		c.TaskID = firstNonEmpty(w.TaskID, c.TaskID)
		c.Tenant = firstNonEmpty(w.Tenant, c.Tenant)
		return nil
	}
	*c = TaskPushNotificationConfig(w.plain)
	return nil
}

// UnmarshalJSON reads the 1.0 scheme and the 0.3 schemes list (whose first
// entry becomes the scheme).
func (a *AuthenticationInfo) UnmarshalJSON(b []byte) error {
	type plain AuthenticationInfo
	var w struct {
		plain
		Schemes []string `json:"schemes"` // 0.3
	}
	if err := unmarshalProto(b, "authentication", &w); err != nil {
		return err
	}
	*a = AuthenticationInfo(w.plain)
	if a.Scheme == "" && len(w.Schemes) > 0 {
		a.Scheme = w.Schemes[0]
	}
	return nil
}

// ErrRoleRequired answers a send whose message has no role (or
// ROLE_UNSPECIFIED): the field is required in 1.0 and in 0.3.
var ErrRoleRequired = ErrInvalidParams.With(`Invalid parameters: message.role is required (ROLE_USER or ROLE_AGENT; "user" or "agent" in 0.3)`)

// UnmarshalJSON reads 1.0 send params and 0.2 tasks/send params
// (id + sessionId beside the message). The message's role is required,
// except in the 0.2 shape (told by its id beside the message), where a
// missing role means user.
func (r *SendMessageRequest) UnmarshalJSON(b []byte) error {
	if decodeSendFast(b, r) {
		return nil
	}
	type plain SendMessageRequest
	var w struct {
		plain
		ID                  string                      `json:"id"`                  // 0.2
		SessionID           string                      `json:"sessionId"`           // 0.2
		AcceptedOutputModes []string                    `json:"acceptedOutputModes"` // 0.2
		HistoryLength       *int                        `json:"historyLength"`       // 0.2
		PushNotification    *TaskPushNotificationConfig `json:"pushNotification"`    // 0.2
	}
	if err := unmarshalProto(b, "params", &w); err != nil {
		return err
	}
	*r = SendMessageRequest(w.plain)
	legacy := w.ID != "" || w.SessionID != ""
	if r.Message != nil {
		r.Message.TaskID = firstNonEmpty(r.Message.TaskID, w.ID)
		r.Message.ContextID = firstNonEmpty(r.Message.ContextID, w.SessionID)
		if r.Message.Role == "" || r.Message.Role == RoleUnspecified {
			if !legacy {
				return ErrRoleRequired
			}
			r.Message.Role = RoleUser
		}
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

// The types below have no other spelling than their proto one: their
// decoders only add the proto field names.

// UnmarshalJSON accepts historyLength and history_length.
func (r *GetTaskRequest) UnmarshalJSON(b []byte) error {
	type plain GetTaskRequest
	return unmarshalProto(b, "params", (*plain)(r))
}

// UnmarshalJSON accepts the JSON and the proto field names.
func (r *TaskIDRequest) UnmarshalJSON(b []byte) error {
	type plain TaskIDRequest
	return unmarshalProto(b, "params", (*plain)(r))
}

// UnmarshalJSON accepts the JSON and the proto field names (context_id,
// page_size, page_token, history_length, status_timestamp_after,
// include_artifacts).
func (r *ListTasksRequest) UnmarshalJSON(b []byte) error {
	type plain ListTasksRequest
	return unmarshalProto(b, "params", (*plain)(r))
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
