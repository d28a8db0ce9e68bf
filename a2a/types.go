package a2a

import (
	"time"
)

// TaskState is a task's lifecycle state, spelled as the 1.0 enum names.
type TaskState string

// Task states (1.0 ProtoJSON names).
const (
	StateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether no further transition is allowed from s.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether s waits on the client (input or auth).
func (s TaskState) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// Final reports whether a stream or a blocking call ends at s.
func (s TaskState) Final() bool { return s.Terminal() || s.Interrupted() }

// Valid reports whether s is one of the defined states (UNSPECIFIED excluded).
func (s TaskState) Valid() bool {
	switch s {
	case StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled,
		StateInputRequired, StateRejected, StateAuthRequired:
		return true
	}
	return false
}

// Role is the sender of a message.
type Role string

// Roles (1.0 ProtoJSON names).
const (
	RoleUnspecified Role = "ROLE_UNSPECIFIED"
	RoleUser        Role = "ROLE_USER"
	RoleAgent       Role = "ROLE_AGENT"
)

// Metadata is a free-form JSON object.
type Metadata map[string]any

// Message is one unit of communication between client and agent.
type Message struct {
	MessageID        string   `json:"messageId"`
	ContextID        string   `json:"contextId,omitempty"`
	TaskID           string   `json:"taskId,omitempty"`
	Role             Role     `json:"role"`
	Parts            []Part   `json:"parts"`
	Metadata         Metadata `json:"metadata,omitempty"`
	Extensions       []string `json:"extensions,omitempty"`
	ReferenceTaskIDs []string `json:"referenceTaskIds,omitempty"`
}

// Text joins the text of all text parts of m with newlines.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	var out []byte
	for _, p := range m.Parts {
		if p.Kind != PartText {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, p.Text...)
	}
	return string(out)
}

// TaskStatus is a task's state with an optional message and timestamp.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string   `json:"artifactId"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Parts       []Part   `json:"parts"`
	Metadata    Metadata `json:"metadata,omitempty"`
	Extensions  []string `json:"extensions,omitempty"`
}

// Task is the unit of work the mesh tracks.
type Task struct {
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	History   []Message  `json:"history,omitempty"`
	Metadata  Metadata   `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent announces a new status of a task.
type TaskStatusUpdateEvent struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	Metadata  Metadata   `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent carries a new artifact or a chunk of one.
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
	Metadata  Metadata `json:"metadata,omitempty"`
}

// StreamResponse is one item of a stream: exactly one member is set.
// It is also the SendMessage result (only Task or Message set).
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// Now returns the current time in the spec's timestamp format
// (UTC, millisecond precision, Z suffix).
func Now() string { return FormatTime(time.Now()) }

// FormatTime formats t in the spec's timestamp format.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ParseTime parses an ISO 8601 / RFC 3339 timestamp.
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// AuthenticationInfo is the credential a push receiver expects.
type AuthenticationInfo struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// TaskPushNotificationConfig is a webhook registration for a task.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId,omitempty"`
	URL            string              `json:"url"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
}

// SendMessageConfiguration tunes a send.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string                    `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig *TaskPushNotificationConfig `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int                        `json:"historyLength,omitempty"`
	ReturnImmediately          bool                        `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage / SendStreamingMessage
// (and, after conversion, of message/send and message/stream).
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      Metadata                  `json:"metadata,omitempty"`
}

// GetTaskRequest is the params of GetTask / tasks/get.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// TaskIDRequest is the params of CancelTask and SubscribeToTask.
type TaskIDRequest struct {
	Tenant   string   `json:"tenant,omitempty"`
	ID       string   `json:"id"`
	Metadata Metadata `json:"metadata,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int      `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int      `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     *bool     `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is the result of ListTasks. NextPageToken is always
// present (empty on the last page), as the spec requires.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// WithHistory returns a shallow copy of t keeping at most n most recent
// history messages; n < 0 keeps all, n == 0 drops the history.
func (t Task) WithHistory(n int) Task {
	switch {
	case n < 0:
	case n == 0:
		t.History = nil
	case len(t.History) > n:
		t.History = t.History[len(t.History)-n:]
	}
	return t
}
