package a2a

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrip marshals v, checks the 1.0 JSON against want (when set), decodes
// it into a fresh value of v's type and checks it equals v.
func roundTrip(t *testing.T, v any, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	if want != "" {
		assert.JSONEq(t, want, string(b))
	}
	out := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	require.NoError(t, json.Unmarshal(b, out), "decode %s", b)
	assert.Equal(t, v, out)
}

func TestRoundTripV10(t *testing.T) {
	msg := sampleMessage()
	art := sampleArtifact()
	task := sampleTask()
	card := sampleCard().WithEndpoint("https://mesh.test/a2a", "https://mesh.test/t/acme/a2a", "acme")
	card.SecuritySchemes = map[string]map[string]any{"bearer": {"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer"}}}
	card.SecurityReqs = []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []any{"read"}}}}}
	card.SupportsAuthenticatedExtendedCard = Bool(false)
	card.Capabilities.StateTransitionHistory = Bool(true)

	const msgJSON = `{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER",
		"parts":[{"text":"hello"},{"url":"https://x.test/f.png","filename":"f.png","mediaType":"image/png"}],
		"metadata":{"k":"v","n":1.5,"b":true},"extensions":["https://ext.test/a"],"referenceTaskIds":["task-0"]}`
	const artJSON = `{"artifactId":"art-1","name":"report","description":"the report",
		"parts":[{"text":"chunk"},{"raw":"AAEC/w==","filename":"b.bin","mediaType":"application/octet-stream"},{"data":{"x":1},"mediaType":"application/json"}],
		"metadata":{"a":"b"},"extensions":["https://ext.test/b"]}`
	const agentMsgJSON = `{"messageId":"m-2","contextId":"ctx-1","taskId":"task-1","role":"ROLE_AGENT","parts":[{"text":"working on it"}]}`
	const taskJSON = `{"id":"task-1","contextId":"ctx-1",
		"status":{"state":"TASK_STATE_WORKING","message":` + agentMsgJSON + `,"timestamp":"2025-01-02T03:04:05.678Z"},
		"artifacts":[` + artJSON + `],"history":[` + msgJSON + `,` + agentMsgJSON + `],"metadata":{"owner":"me"}}`

	statusEv := TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", Status: TaskStatus{State: StateCompleted, Timestamp: "2025-01-02T03:04:05.000Z"}, Metadata: Metadata{"m": "n"}}
	const statusJSON = `{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2025-01-02T03:04:05.000Z"},"metadata":{"m":"n"}}`
	artEv := TaskArtifactUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", Artifact: art, Append: true, LastChunk: true, Metadata: Metadata{"m": "n"}}
	const artEvJSON = `{"taskId":"task-1","contextId":"ctx-1","artifact":` + artJSON + `,"append":true,"lastChunk":true,"metadata":{"m":"n"}}`

	push := TaskPushNotificationConfig{Tenant: "acme", ID: "p-1", TaskID: "task-1", URL: "https://hook.test", Token: "tok", Authentication: &AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}
	const pushJSON = `{"tenant":"acme","id":"p-1","taskId":"task-1","url":"https://hook.test","token":"tok","authentication":{"scheme":"Bearer","credentials":"secret"}}`

	send := SendMessageRequest{Tenant: "acme", Message: &msg, Metadata: Metadata{"x": "y"}, Configuration: &SendMessageConfiguration{
		AcceptedOutputModes: []string{"text/plain"}, TaskPushNotificationConfig: &push, HistoryLength: intPtr(3), ReturnImmediately: true,
	}}
	const sendJSON = `{"tenant":"acme","message":` + msgJSON + `,"configuration":{"acceptedOutputModes":["text/plain"],
		"taskPushNotificationConfig":` + pushJSON + `,"historyLength":3,"returnImmediately":true},"metadata":{"x":"y"}}`

	tests := []struct {
		name string
		v    any
		want string
	}{
		{"Message", &msg, msgJSON},
		{"Artifact", &art, artJSON},
		{"Task", &task, taskJSON},
		{"TaskStatus", &TaskStatus{State: StateInputRequired}, `{"state":"TASK_STATE_INPUT_REQUIRED"}`},
		{"TaskStatusUpdateEvent", &statusEv, statusJSON},
		{"TaskArtifactUpdateEvent", &artEv, artEvJSON},
		{"StreamResponse/task", &StreamResponse{Task: &task}, `{"task":` + taskJSON + `}`},
		{"StreamResponse/message", &StreamResponse{Message: &msg}, `{"message":` + msgJSON + `}`},
		{"StreamResponse/statusUpdate", &StreamResponse{StatusUpdate: &statusEv}, `{"statusUpdate":` + statusJSON + `}`},
		{"StreamResponse/artifactUpdate", &StreamResponse{ArtifactUpdate: &artEv}, `{"artifactUpdate":` + artEvJSON + `}`},
		{"AuthenticationInfo", &AuthenticationInfo{Scheme: "Basic"}, `{"scheme":"Basic"}`},
		{"TaskPushNotificationConfig", &push, pushJSON},
		{"TaskPushNotificationConfig/minimal", &TaskPushNotificationConfig{URL: "https://hook.test"}, `{"url":"https://hook.test"}`},
		{"SendMessageConfiguration", send.Configuration, ""},
		{"SendMessageRequest", &send, sendJSON},
		{"SendMessageRequest/minimal", &SendMessageRequest{Message: &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("x")}}},
			`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}`},
		{"GetTaskRequest", &GetTaskRequest{Tenant: "acme", ID: "task-1", HistoryLength: intPtr(0)}, `{"tenant":"acme","id":"task-1","historyLength":0}`},
		{"TaskIDRequest", &TaskIDRequest{Tenant: "acme", ID: "task-1", Metadata: Metadata{"r": "why"}}, `{"tenant":"acme","id":"task-1","metadata":{"r":"why"}}`},
		{"ListTasksRequest", &ListTasksRequest{Tenant: "acme", ContextID: "ctx", Status: StateFailed, PageSize: intPtr(10), PageToken: "pt",
			HistoryLength: intPtr(2), StatusTimestampAfter: "2025-01-01T00:00:00Z", IncludeArtifacts: Bool(true)},
			`{"tenant":"acme","contextId":"ctx","status":"TASK_STATE_FAILED","pageSize":10,"pageToken":"pt","historyLength":2,
			"statusTimestampAfter":"2025-01-01T00:00:00Z","includeArtifacts":true}`},
		{"ListTasksResponse", &ListTasksResponse{Tasks: []Task{task}, NextPageToken: "", PageSize: 50, TotalSize: 1},
			`{"tasks":[` + taskJSON + `],"nextPageToken":"","pageSize":50,"totalSize":1}`},
		{"AgentCard", &card, ""},
		{"AgentSkill", &card.Skills[0], `{"id":"echo","name":"Echo","description":"echo back","tags":["t"],"examples":["hi"],"inputModes":["text/plain"],"outputModes":["text/plain"]}`},
		{"AgentInterface", &card.SupportedInterfaces[1],
			`{"url":"https://mesh.test/t/acme/a2a","protocolBinding":"JSONRPC","tenant":"acme","protocolVersion":"1.0"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.v, tc.want) })
	}
}

// Every key a 1.0 encoding emits must be a field of the proto message (or a
// documented 0.3 compatibility field), and every REQUIRED field must be there.
func TestV10KeysMatchProto(t *testing.T) {
	proto := loadProto(t)
	task := sampleTask()
	msg := sampleMessage()
	art := sampleArtifact()
	card := sampleCard().WithEndpoint("https://mesh.test/a2a", "https://mesh.test/t/acme/a2a", "acme")
	push := TaskPushNotificationConfig{Tenant: "acme", ID: "p", TaskID: "t", URL: "u", Token: "k", Authentication: &AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}
	cardCompat := []string{"protocolVersion", "url", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard"}

	tests := []struct {
		proto  string
		v      any
		compat []string
	}{
		{"Task", task, nil},
		{"TaskStatus", task.Status, nil},
		{"Message", msg, nil},
		{"Artifact", art, nil},
		{"Part", TextPart("x"), nil},
		{"Part", Part{Kind: PartRaw, Raw: []byte("x"), Filename: "f", MediaType: "m", Metadata: Metadata{"a": "b"}}, nil},
		{"Part", Part{Kind: PartURL, URL: "u"}, nil},
		{"Part", DataPart(1), nil},
		{"TaskStatusUpdateEvent", TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateWorking}, Metadata: Metadata{"a": "b"}}, nil},
		{"TaskArtifactUpdateEvent", TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: art, Append: true, LastChunk: true, Metadata: Metadata{"a": "b"}}, nil},
		{"StreamResponse", StreamResponse{Task: &task}, nil},
		{"StreamResponse", StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{}}, nil},
		{"SendMessageResponse", StreamResponse{Message: &msg}, nil},
		{"AuthenticationInfo", *push.Authentication, nil},
		{"TaskPushNotificationConfig", push, nil},
		{"SendMessageConfiguration", SendMessageConfiguration{AcceptedOutputModes: []string{"a"}, TaskPushNotificationConfig: &push, HistoryLength: intPtr(1), ReturnImmediately: true}, nil},
		{"SendMessageRequest", SendMessageRequest{Tenant: "t", Message: &msg, Configuration: &SendMessageConfiguration{}, Metadata: Metadata{"a": "b"}}, nil},
		{"GetTaskRequest", GetTaskRequest{Tenant: "t", ID: "i", HistoryLength: intPtr(1)}, nil},
		{"CancelTaskRequest", TaskIDRequest{Tenant: "t", ID: "i", Metadata: Metadata{"a": "b"}}, nil},
		{"SubscribeToTaskRequest", TaskIDRequest{Tenant: "t", ID: "i"}, nil},
		{"ListTasksRequest", ListTasksRequest{Tenant: "t", ContextID: "c", Status: StateWorking, PageSize: intPtr(1), PageToken: "p", HistoryLength: intPtr(1), StatusTimestampAfter: "2025-01-01T00:00:00Z", IncludeArtifacts: Bool(false)}, nil},
		{"ListTasksResponse", ListTasksResponse{}, nil},
		{"AgentCard", card, cardCompat},
		{"AgentInterface", card.SupportedInterfaces[1], []string{"transport"}},
		{"AgentProvider", *card.Provider, nil},
		{"AgentCapabilities", card.Capabilities, []string{"stateTransitionHistory"}},
		{"AgentExtension", card.Capabilities.Extensions[0], nil},
		{"AgentSkill", card.Skills[0], nil},
	}
	for _, tc := range tests {
		t.Run(tc.proto, func(t *testing.T) {
			pm, ok := proto[tc.proto]
			require.True(t, ok, "proto has no message %s", tc.proto)
			keys := keysOf(t, tc.v)
			allowed := map[string]bool{}
			for k := range pm.fields {
				allowed[k] = true
			}
			for _, k := range tc.compat {
				allowed[k] = true
			}
			for _, k := range sortedKeys(keys) {
				assert.True(t, allowed[k], "%s: key %q is not a field of the proto message (fields %v)", tc.proto, k, sortedKeys(pm.fields))
			}
			for _, k := range sortedKeys(pm.required) {
				if tc.proto == "Part" || tc.proto == "StreamResponse" || tc.proto == "SendMessageResponse" {
					continue // oneof members, none required
				}
				assert.Contains(t, keys, k, "%s: required field %q missing", tc.proto, k)
			}
		})
	}
}

func TestTaskStatePredicates(t *testing.T) {
	tests := []struct {
		s                                      TaskState
		terminal, interrupted, final, validity bool
	}{
		{StateUnspecified, false, false, false, false},
		{"", false, false, false, false},
		{"bogus", false, false, false, false},
		{StateSubmitted, false, false, false, true},
		{StateWorking, false, false, false, true},
		{StateCompleted, true, false, true, true},
		{StateFailed, true, false, true, true},
		{StateCanceled, true, false, true, true},
		{StateRejected, true, false, true, true},
		{StateInputRequired, false, true, true, true},
		{StateAuthRequired, false, true, true, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.s), func(t *testing.T) {
			assert.Equal(t, tc.terminal, tc.s.Terminal(), "Terminal")
			assert.Equal(t, tc.interrupted, tc.s.Interrupted(), "Interrupted")
			assert.Equal(t, tc.final, tc.s.Final(), "Final")
			assert.Equal(t, tc.validity, tc.s.Valid(), "Valid")
		})
	}
}

func TestMessageText(t *testing.T) {
	var nilMsg *Message
	assert.Equal(t, "", nilMsg.Text())
	assert.Equal(t, "", (&Message{}).Text())
	m := &Message{Parts: []Part{
		TextPart("a"),
		DataPart(map[string]int{"x": 1}),
		{Kind: PartURL, URL: "https://x"},
		TextPart(""),
		TextPart("b"),
	}}
	assert.Equal(t, "a\n\nb", m.Text(), "only text parts, newline separated, empty ones kept")
	assert.Equal(t, "solo", (&Message{Parts: []Part{TextPart("solo")}}).Text())
}

func TestWithHistory(t *testing.T) {
	h := []Message{{MessageID: "1"}, {MessageID: "2"}, {MessageID: "3"}}
	ids := func(ms []Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.MessageID)
		}
		return out
	}
	tests := []struct {
		n    int
		want []string
	}{
		{-1, []string{"1", "2", "3"}},
		{-100, []string{"1", "2", "3"}},
		{0, nil},
		{1, []string{"3"}},
		{2, []string{"2", "3"}},
		{3, []string{"1", "2", "3"}},
		{10, []string{"1", "2", "3"}},
	}
	for _, tc := range tests {
		task := Task{ID: "t", History: h}
		got := task.WithHistory(tc.n)
		assert.Equal(t, tc.want, ids(got.History), "n=%d", tc.n)
		assert.Equal(t, "t", got.ID)
		assert.Len(t, task.History, 3, "receiver is not modified")
	}
	assert.Nil(t, Task{ID: "t", History: h}.WithHistory(0).History, "n=0 drops history entirely (omitted in JSON)")
	b, err := json.Marshal(Task{ID: "t", History: h}.WithHistory(0))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "history")
}

func TestTimeFormat(t *testing.T) {
	ts := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("X", 3600))
	assert.Equal(t, "2025-03-04T04:06:07.891Z", FormatTime(ts))
	got, err := ParseTime("2025-03-04T04:06:07.891Z")
	require.NoError(t, err)
	assert.True(t, got.Equal(ts.Truncate(time.Millisecond)))

	for _, s := range []string{"2023-10-27T10:00:00Z", "2023-10-27T10:00:00.123456789+02:00"} {
		_, err := ParseTime(s)
		assert.NoError(t, err, s)
	}
	for _, s := range []string{"", "yesterday", "2023-10-27"} {
		_, err := ParseTime(s)
		assert.Error(t, err, s)
	}

	now := Now()
	parsed, err := ParseTime(now)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), parsed, 5*time.Second)
	assert.Regexp(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`, now)
}
