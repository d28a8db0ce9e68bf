package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// The A2A 0.3 encoding: every object carries a "kind" discriminator, enums
// are lower-case (kebab-case states), files sit in a nested "file" object and
// streamed status updates carry "final". The V03 functions below produce
// values that marshal to exactly that shape.

// StateV03 returns the 0.3 spelling of s.
func StateV03(s TaskState) string {
	switch s {
	case StateUnspecified, "":
		return "unknown"
	}
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// RoleV03 returns the 0.3 spelling of r.
func RoleV03(r Role) string {
	if r == RoleAgent {
		return "agent"
	}
	return "user"
}

type fileV03 struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	isURI    bool
}

// MarshalJSON always emits exactly one of bytes and uri, even when it is
// empty: the 0.3 schema requires one (FileWithBytes / FileWithUri).
func (f fileV03) MarshalJSON() ([]byte, error) {
	type withBytes struct {
		Name     string `json:"name,omitempty"`
		MimeType string `json:"mimeType,omitempty"`
		Bytes    string `json:"bytes"`
	}
	type withURI struct {
		Name     string `json:"name,omitempty"`
		MimeType string `json:"mimeType,omitempty"`
		URI      string `json:"uri"`
	}
	if f.isURI || (f.URI != "" && f.Bytes == "") {
		return json.Marshal(withURI{Name: f.Name, MimeType: f.MimeType, URI: f.URI})
	}
	return json.Marshal(withBytes{Name: f.Name, MimeType: f.MimeType, Bytes: f.Bytes})
}

// PartV03 is the 0.3 wire shape of a part.
type PartV03 struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *fileV03        `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata Metadata        `json:"metadata,omitempty"`
}

// ToV03 converts p. A 1.0 data part whose value is not a JSON object is
// wrapped as {"value": …}, because 0.3 data parts must be objects.
func (p Part) ToV03() PartV03 {
	w := PartV03{Metadata: p.Metadata}
	switch p.Kind {
	case PartText:
		w.Kind = "text"
		t := p.Text
		w.Text = &t
	case PartRaw:
		w.Kind = "file"
		w.File = &fileV03{Name: p.Filename, MimeType: p.MediaType, Bytes: base64.StdEncoding.EncodeToString(p.Raw)}
	case PartURL:
		w.Kind = "file"
		w.File = &fileV03{Name: p.Filename, MimeType: p.MediaType, URI: p.URL, isURI: true}
	case PartData:
		w.Kind = "data"
		w.Data = bytes.TrimSpace(p.Data)
		if len(w.Data) == 0 || w.Data[0] != '{' {
			v := w.Data
			if len(v) == 0 {
				v = json.RawMessage("null")
			}
			w.Data, _ = json.Marshal(map[string]json.RawMessage{"value": v})
		}
	default:
		w.Kind = "text"
		empty := ""
		w.Text = &empty
	}
	return w
}

func partsV03(ps []Part) []PartV03 {
	out := make([]PartV03, len(ps))
	for i, p := range ps {
		out[i] = p.ToV03()
	}
	return out
}

// MessageV03 is the 0.3 wire shape of a message.
type MessageV03 struct {
	Kind             string    `json:"kind"`
	MessageID        string    `json:"messageId"`
	ContextID        string    `json:"contextId,omitempty"`
	TaskID           string    `json:"taskId,omitempty"`
	Role             string    `json:"role"`
	Parts            []PartV03 `json:"parts"`
	Metadata         Metadata  `json:"metadata,omitempty"`
	Extensions       []string  `json:"extensions,omitempty"`
	ReferenceTaskIDs []string  `json:"referenceTaskIds,omitempty"`
}

// ToV03 converts m.
func (m *Message) ToV03() *MessageV03 {
	if m == nil {
		return nil
	}
	return &MessageV03{
		Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: RoleV03(m.Role), Parts: partsV03(m.Parts), Metadata: m.Metadata,
		Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

// TaskStatusV03 is the 0.3 wire shape of a task status.
type TaskStatusV03 struct {
	State     string      `json:"state"`
	Message   *MessageV03 `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

func (s TaskStatus) toV03() TaskStatusV03 {
	return TaskStatusV03{State: StateV03(s.State), Message: s.Message.ToV03(), Timestamp: s.Timestamp}
}

// ArtifactV03 is the 0.3 wire shape of an artifact.
type ArtifactV03 struct {
	ArtifactID  string    `json:"artifactId"`
	Name        string    `json:"name,omitempty"`
	Description string    `json:"description,omitempty"`
	Parts       []PartV03 `json:"parts"`
	Metadata    Metadata  `json:"metadata,omitempty"`
	Extensions  []string  `json:"extensions,omitempty"`
}

func (a Artifact) toV03() ArtifactV03 {
	return ArtifactV03{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: partsV03(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions}
}

// TaskV03 is the 0.3 wire shape of a task.
type TaskV03 struct {
	Kind      string        `json:"kind"`
	ID        string        `json:"id"`
	ContextID string        `json:"contextId"`
	Status    TaskStatusV03 `json:"status"`
	Artifacts []ArtifactV03 `json:"artifacts,omitempty"`
	History   []MessageV03  `json:"history,omitempty"`
	Metadata  Metadata      `json:"metadata,omitempty"`
}

// ToV03 converts t.
func (t *Task) ToV03() *TaskV03 {
	if t == nil {
		return nil
	}
	w := &TaskV03{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: t.Status.toV03(), Metadata: t.Metadata}
	if t.Artifacts != nil {
		w.Artifacts = make([]ArtifactV03, len(t.Artifacts))
		for i, a := range t.Artifacts {
			w.Artifacts[i] = a.toV03()
		}
	}
	if t.History != nil {
		w.History = make([]MessageV03, len(t.History))
		for i := range t.History {
			w.History[i] = *t.History[i].ToV03()
		}
	}
	return w
}

// StatusUpdateV03 is the 0.3 wire shape of a status update event.
type StatusUpdateV03 struct {
	Kind      string        `json:"kind"`
	TaskID    string        `json:"taskId"`
	ContextID string        `json:"contextId"`
	Status    TaskStatusV03 `json:"status"`
	Final     bool          `json:"final"`
	Metadata  Metadata      `json:"metadata,omitempty"`
}

// ArtifactUpdateV03 is the 0.3 wire shape of an artifact update event.
type ArtifactUpdateV03 struct {
	Kind      string      `json:"kind"`
	TaskID    string      `json:"taskId"`
	ContextID string      `json:"contextId"`
	Artifact  ArtifactV03 `json:"artifact"`
	Append    bool        `json:"append,omitempty"`
	LastChunk bool        `json:"lastChunk,omitempty"`
	Metadata  Metadata    `json:"metadata,omitempty"`
}

// ToV03 converts a stream item to its 0.3 shape (a task, message,
// status-update or artifact-update object). A status update is final when
// its state ends the stream.
func (r *StreamResponse) ToV03() any {
	switch {
	case r.Task != nil:
		return r.Task.ToV03()
	case r.Message != nil:
		return r.Message.ToV03()
	case r.StatusUpdate != nil:
		e := r.StatusUpdate
		return &StatusUpdateV03{Kind: "status-update", TaskID: e.TaskID, ContextID: e.ContextID,
			Status: e.Status.toV03(), Final: e.Status.State.Final(), Metadata: e.Metadata}
	case r.ArtifactUpdate != nil:
		e := r.ArtifactUpdate
		return &ArtifactUpdateV03{Kind: "artifact-update", TaskID: e.TaskID, ContextID: e.ContextID,
			Artifact: e.Artifact.toV03(), Append: e.Append, LastChunk: e.LastChunk, Metadata: e.Metadata}
	}
	return nil
}

// PushConfigV03 is the 0.3 TaskPushNotificationConfig shape.
type PushConfigV03 struct {
	TaskID                 string `json:"taskId"`
	PushNotificationConfig struct {
		ID             string `json:"id,omitempty"`
		URL            string `json:"url"`
		Token          string `json:"token,omitempty"`
		Authentication *struct {
			Schemes     []string `json:"schemes"`
			Credentials string   `json:"credentials,omitempty"`
		} `json:"authentication,omitempty"`
	} `json:"pushNotificationConfig"`
}

// ToV03 converts c.
func (c *TaskPushNotificationConfig) ToV03() *PushConfigV03 {
	w := &PushConfigV03{TaskID: c.TaskID}
	w.PushNotificationConfig.ID, w.PushNotificationConfig.URL, w.PushNotificationConfig.Token = c.ID, c.URL, c.Token
	if c.Authentication != nil {
		w.PushNotificationConfig.Authentication = &struct {
			Schemes     []string `json:"schemes"`
			Credentials string   `json:"credentials,omitempty"`
		}{Schemes: []string{c.Authentication.Scheme}, Credentials: c.Authentication.Credentials}
	}
	return w
}
