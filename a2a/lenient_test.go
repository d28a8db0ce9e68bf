package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTaskState(t *testing.T) {
	tests := []struct {
		in   string
		want TaskState
		ok   bool
	}{
		{"TASK_STATE_SUBMITTED", StateSubmitted, true},
		{"TASK_STATE_WORKING", StateWorking, true},
		{"TASK_STATE_COMPLETED", StateCompleted, true},
		{"TASK_STATE_FAILED", StateFailed, true},
		{"TASK_STATE_CANCELED", StateCanceled, true},
		{"TASK_STATE_INPUT_REQUIRED", StateInputRequired, true},
		{"TASK_STATE_REJECTED", StateRejected, true},
		{"TASK_STATE_AUTH_REQUIRED", StateAuthRequired, true},
		{"TASK_STATE_UNSPECIFIED", StateUnspecified, true},
		{"task_state_completed", StateCompleted, true},
		{"Task_State_Input_Required", StateInputRequired, true},
		{"submitted", StateSubmitted, true},
		{"working", StateWorking, true},
		{"completed", StateCompleted, true},
		{"COMPLETED", StateCompleted, true},
		{"failed", StateFailed, true},
		{"canceled", StateCanceled, true},
		{"cancelled", StateCanceled, true},
		{"input-required", StateInputRequired, true},
		{"input_required", StateInputRequired, true},
		{"Input-Required", StateInputRequired, true},
		{"rejected", StateRejected, true},
		{"auth-required", StateAuthRequired, true},
		{"auth_required", StateAuthRequired, true},
		{"unknown", StateUnspecified, true},
		{"", "", false},
		{"done", "", false},
		{"TASK_STATE_DONE", "", false},
		{" completed", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseTaskState(tc.in)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestTaskStateUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want TaskState
	}{
		{`"TASK_STATE_COMPLETED"`, StateCompleted},
		{`"completed"`, StateCompleted},
		{`"input-required"`, StateInputRequired},
		{`"auth-required"`, StateAuthRequired},
		{`"unknown"`, StateUnspecified},
		{`0`, StateUnspecified}, // ProtoJSON parsers accept enum numbers
		{`3`, StateCompleted},
		{`6`, StateInputRequired},
		{`8`, StateAuthRequired},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var s TaskState
			require.NoError(t, json.Unmarshal([]byte(tc.in), &s))
			assert.Equal(t, tc.want, s)
		})
	}

	t.Run("null keeps the value", func(t *testing.T) {
		s := StateWorking
		require.NoError(t, json.Unmarshal([]byte(`null`), &s))
		assert.Equal(t, StateWorking, s)
		var st TaskStatus
		require.NoError(t, json.Unmarshal([]byte(`{"state":null}`), &st))
		assert.Equal(t, TaskState(""), st.State)
	})

	for _, in := range []string{`"bogus"`, `""`, `9`, `-1`, `1.5`, `true`, `{}`, `[]`} {
		t.Run("reject "+in, func(t *testing.T) {
			var s TaskState
			err := json.Unmarshal([]byte(in), &s)
			require.Error(t, err)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "got %T", err)
			assert.Equal(t, "state", fe.Field)
		})
	}
	t.Run("long unknown value is truncated in the reason", func(t *testing.T) {
		var s TaskState
		err := json.Unmarshal([]byte(`"`+strings.Repeat("x", 500)+`"`), &s)
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 100)
	})
}

func TestRoleUnmarshal(t *testing.T) {
	tests := []struct {
		in   string
		want Role
	}{
		{`"ROLE_USER"`, RoleUser},
		{`"ROLE_AGENT"`, RoleAgent},
		{`"ROLE_UNSPECIFIED"`, RoleUnspecified},
		{`"user"`, RoleUser},
		{`"agent"`, RoleAgent},
		{`"User"`, RoleUser},
		{`"AGENT"`, RoleAgent},
		{`"role_user"`, RoleUser},
		{`""`, RoleUnspecified},
		{`1`, RoleUser},
		{`2`, RoleAgent},
		{`0`, RoleUnspecified},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var r Role
			require.NoError(t, json.Unmarshal([]byte(tc.in), &r))
			assert.Equal(t, tc.want, r)
		})
	}
	r := RoleAgent
	require.NoError(t, json.Unmarshal([]byte(`null`), &r))
	assert.Equal(t, RoleAgent, r, "null leaves the role unchanged")

	for _, in := range []string{`"system"`, `"assistant"`, `3`, `true`, `{}`} {
		var r Role
		err := json.Unmarshal([]byte(in), &r)
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "%s: got %T %v", in, err, err)
		assert.Equal(t, "role", fe.Field)
	}
}

func TestMessageLenient(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Message
	}{
		{"1.0", `{"messageId":"m","contextId":"c","taskId":"t","role":"ROLE_USER","parts":[{"text":"x"}],"referenceTaskIds":["r"]}`,
			Message{MessageID: "m", ContextID: "c", TaskID: "t", Role: RoleUser, Parts: []Part{TextPart("x")}, ReferenceTaskIDs: []string{"r"}}},
		{"0.3 with kind", `{"kind":"message","messageId":"m","contextId":"c","taskId":"t","role":"agent","parts":[{"kind":"text","text":"x"}]}`,
			Message{MessageID: "m", ContextID: "c", TaskID: "t", Role: RoleAgent, Parts: []Part{TextPart("x")}}},
		{"snake_case", `{"message_id":"m","context_id":"c","task_id":"t","role":"user","parts":[],"reference_task_ids":["r"]}`,
			Message{MessageID: "m", ContextID: "c", TaskID: "t", Role: RoleUser, Parts: []Part{}, ReferenceTaskIDs: []string{"r"}}},
		{"0.2 sessionId", `{"messageId":"m","sessionId":"s","role":"user","parts":[{"type":"text","text":"x"}]}`,
			Message{MessageID: "m", ContextID: "s", Role: RoleUser, Parts: []Part{TextPart("x")}}},
		{"0.2 session_id", `{"messageId":"m","session_id":"s","role":"user","parts":[]}`,
			Message{MessageID: "m", ContextID: "s", Role: RoleUser, Parts: []Part{}}},
		{"contextId beats sessionId", `{"messageId":"a","contextId":"c","sessionId":"s","role":"user","parts":[]}`,
			Message{MessageID: "a", ContextID: "c", Role: RoleUser, Parts: []Part{}}},
		{"contextId beats context_id beats sessionId", `{"messageId":"m","context_id":"cc","sessionId":"s","role":"user","parts":[]}`,
			Message{MessageID: "m", ContextID: "cc", Role: RoleUser, Parts: []Part{}}},
		{"numeric role", `{"messageId":"m","role":2,"parts":[]}`, Message{MessageID: "m", Role: RoleAgent, Parts: []Part{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			require.NoError(t, json.Unmarshal([]byte(tc.in), &m))
			assert.Equal(t, tc.want, m)
		})
	}
	var m Message
	assert.Error(t, json.Unmarshal([]byte(`{"messageId":"a","message_id":"b","role":"user","parts":[]}`), &m), "one field spelled twice")
	assert.Error(t, json.Unmarshal([]byte(`{"messageId":"m","role":"robot","parts":[]}`), &m))
	assert.Error(t, json.Unmarshal([]byte(`{"messageId":1}`), &m))
	assert.Error(t, json.Unmarshal([]byte(`"x"`), &m))
}

func TestPartLenientV03(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Part
	}{
		{"0.3 text", `{"kind":"text","text":"hi","metadata":{"a":"b"}}`, Part{Kind: PartText, Text: "hi", Metadata: Metadata{"a": "b"}}},
		{"0.2 type text", `{"type":"text","text":"hi"}`, TextPart("hi")},
		{"kind upper case", `{"kind":"TEXT","text":"hi"}`, TextPart("hi")},
		{"0.3 empty text", `{"kind":"text","text":""}`, TextPart("")},
		{"0.3 file bytes", `{"kind":"file","file":{"name":"a.txt","mimeType":"text/plain","bytes":"aGk="}}`,
			Part{Kind: PartRaw, Raw: []byte("hi"), Filename: "a.txt", MediaType: "text/plain"}},
		{"0.3 file empty bytes", `{"kind":"file","file":{"bytes":""}}`, Part{Kind: PartRaw, Raw: []byte{}}},
		{"0.3 file uri", `{"kind":"file","file":{"name":"a.png","mimeType":"image/png","uri":"https://x.test/a.png"}}`,
			Part{Kind: PartURL, URL: "https://x.test/a.png", Filename: "a.png", MediaType: "image/png"}},
		{"0.2 file bytes_data mime_type", `{"type":"file","file":{"bytes_data":"aGk","mime_type":"text/plain"}}`,
			Part{Kind: PartRaw, Raw: []byte("hi"), MediaType: "text/plain"}},
		{"file url spelling", `{"kind":"file","file":{"url":"https://x"}}`, Part{Kind: PartURL, URL: "https://x"}},
		{"bytes win over uri", `{"kind":"file","file":{"bytes":"aGk=","uri":"https://x"}}`, Part{Kind: PartRaw, Raw: []byte("hi")}},
		{"file without kind", `{"file":{"uri":"https://x"}}`, Part{Kind: PartURL, URL: "https://x"}},
		{"0.3 data object", `{"kind":"data","data":{ "a" : 1 }}`, Part{Kind: PartData, Data: json.RawMessage(`{"a":1}`), MediaType: "application/json"}},
		{"0.2 data", `{"type":"data","data":{"a":1}}`, Part{Kind: PartData, Data: json.RawMessage(`{"a":1}`), MediaType: "application/json"}},
		{"empty kind, text present", `{"kind":"","text":"x"}`, TextPart("x")},
		{"empty kind, data present", `{"kind":"","data":[1]}`, Part{Kind: PartData, Data: json.RawMessage(`[1]`), MediaType: "application/json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Part
			require.NoError(t, json.Unmarshal([]byte(tc.in), &p))
			assert.Equal(t, tc.want, p)
		})
	}

	bad := []struct {
		in    string
		field string
	}{
		{`{"kind":"text"}`, "part.text"},
		{`{"kind":"text","text":null}`, "part.text"},
		{`{"kind":"data"}`, "part.data"},
		{`{"kind":"file"}`, "part.file"},
		{`{"kind":"file","file":null}`, "part.file"},
		{`{"kind":"file","file":{}}`, "part.file"},
		{`{"kind":"file","file":{"name":"x"}}`, "part.file"},
		{`{"kind":"file","file":{"bytes":"!"}}`, "part.file.bytes"},
		{`{"kind":"image","text":"x"}`, "part.kind"},
		{`{"type":"","kind":""}`, "part.kind"},
	}
	for _, tc := range bad {
		t.Run("reject "+tc.in, func(t *testing.T) {
			var p Part
			err := json.Unmarshal([]byte(tc.in), &p)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "got %T %v", err, err)
			assert.Equal(t, tc.field, fe.Field)
		})
	}
	var p Part
	assert.Error(t, json.Unmarshal([]byte(`{"kind":1,"text":"x"}`), &p), "non-string kind")
	assert.Error(t, json.Unmarshal([]byte(`{"kind":"file","file":"x"}`), &p), "file not an object")
}

func TestSendMessageConfigurationLenient(t *testing.T) {
	push := &TaskPushNotificationConfig{URL: "https://hook.test", Token: "tok"}
	tests := []struct {
		name string
		in   string
		want SendMessageConfiguration
	}{
		{"1.0", `{"acceptedOutputModes":["a"],"historyLength":2,"returnImmediately":true,"taskPushNotificationConfig":{"url":"https://hook.test","token":"tok"}}`,
			SendMessageConfiguration{AcceptedOutputModes: []string{"a"}, HistoryLength: intPtr(2), ReturnImmediately: true, TaskPushNotificationConfig: push}},
		{"snake_case", `{"accepted_output_modes":["a"],"history_length":2,"return_immediately":true,"task_push_notification_config":{"url":"https://hook.test","token":"tok"}}`,
			SendMessageConfiguration{AcceptedOutputModes: []string{"a"}, HistoryLength: intPtr(2), ReturnImmediately: true, TaskPushNotificationConfig: push}},
		{"0.3 blocking false", `{"acceptedOutputModes":["a"],"blocking":false,"pushNotificationConfig":{"url":"https://hook.test","token":"tok"}}`,
			SendMessageConfiguration{AcceptedOutputModes: []string{"a"}, ReturnImmediately: true, TaskPushNotificationConfig: push}},
		{"0.3 blocking true", `{"blocking":true}`, SendMessageConfiguration{ReturnImmediately: false}},
		{"push_notification_config", `{"push_notification_config":{"url":"https://hook.test","token":"tok"}}`, SendMessageConfiguration{TaskPushNotificationConfig: push}},
		{"0.2 pushNotification", `{"pushNotification":{"url":"https://hook.test","token":"tok"}}`, SendMessageConfiguration{TaskPushNotificationConfig: push}},
		{"history zero is kept", `{"historyLength":0}`, SendMessageConfiguration{HistoryLength: intPtr(0)}},
		{"returnImmediately beats blocking", `{"returnImmediately":false,"blocking":false}`, SendMessageConfiguration{ReturnImmediately: false}},
		{"return_immediately beats blocking", `{"return_immediately":true,"blocking":true}`, SendMessageConfiguration{ReturnImmediately: true}},
		{"1.0 push beats 0.3 push", `{"taskPushNotificationConfig":{"url":"https://hook.test","token":"tok"},"pushNotificationConfig":{"url":"other"}}`,
			SendMessageConfiguration{TaskPushNotificationConfig: push}},
		{"empty", `{}`, SendMessageConfiguration{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c SendMessageConfiguration
			require.NoError(t, json.Unmarshal([]byte(tc.in), &c))
			assert.Equal(t, tc.want, c)
		})
	}
}

func TestPushConfigLenient(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want TaskPushNotificationConfig
	}{
		{"1.0", `{"tenant":"t","id":"p","taskId":"task","url":"u","token":"k","authentication":{"scheme":"Bearer","credentials":"c"}}`,
			TaskPushNotificationConfig{Tenant: "t", ID: "p", TaskID: "task", URL: "u", Token: "k", Authentication: &AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}},
		{"0.3 schemes", `{"url":"u","authentication":{"schemes":["Basic","Bearer"],"credentials":"c"}}`,
			TaskPushNotificationConfig{URL: "u", Authentication: &AuthenticationInfo{Scheme: "Basic", Credentials: "c"}}},
		{"0.3 empty schemes", `{"url":"u","authentication":{"schemes":[]}}`,
			TaskPushNotificationConfig{URL: "u", Authentication: &AuthenticationInfo{}}},
		{"scheme beats schemes", `{"url":"u","authentication":{"scheme":"A","schemes":["B"]}}`,
			TaskPushNotificationConfig{URL: "u", Authentication: &AuthenticationInfo{Scheme: "A"}}},
		{"task_id", `{"task_id":"task","url":"u"}`, TaskPushNotificationConfig{TaskID: "task", URL: "u"}},
		{"0.3 wrapper", `{"taskId":"task","pushNotificationConfig":{"id":"p","url":"u","token":"k","authentication":{"schemes":["Bearer"]}}}`,
			TaskPushNotificationConfig{TaskID: "task", ID: "p", URL: "u", Token: "k", Authentication: &AuthenticationInfo{Scheme: "Bearer"}}},
		{"0.3 wrapper task_id", `{"task_id":"task","pushNotificationConfig":{"url":"u"}}`, TaskPushNotificationConfig{TaskID: "task", URL: "u"}},
		{"0.3 wrapper tenant outside", `{"tenant":"t","taskId":"task","pushNotificationConfig":{"url":"u"}}`, TaskPushNotificationConfig{Tenant: "t", TaskID: "task", URL: "u"}},
		{"0.3 wrapper inner taskId fallback", `{"pushNotificationConfig":{"taskId":"inner","url":"u"}}`, TaskPushNotificationConfig{TaskID: "inner", URL: "u"}},
		{"authentication null", `{"url":"u","authentication":null}`, TaskPushNotificationConfig{URL: "u"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c TaskPushNotificationConfig
			require.NoError(t, json.Unmarshal([]byte(tc.in), &c))
			assert.Equal(t, tc.want, c)
		})
	}
}

func TestSendMessageRequestLenient(t *testing.T) {
	t.Run("1.0", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"tenant":"acme","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},
			"configuration":{"acceptedOutputModes":["text/plain"],"returnImmediately":true},"metadata":{"k":"v"}}`), &r))
		assert.Equal(t, SendMessageRequest{
			Tenant:        "acme",
			Message:       &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("hi")}},
			Configuration: &SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, ReturnImmediately: true},
			Metadata:      Metadata{"k": "v"},
		}, r)
	})
	t.Run("0.3 message/send", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"message":{"kind":"message","messageId":"m","contextId":"c","role":"user",
			"parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"https://x","mimeType":"image/png"}},{"kind":"data","data":{"a":1}}]},
			"configuration":{"acceptedOutputModes":["text/plain"],"blocking":false,"historyLength":1,
			"pushNotificationConfig":{"url":"https://hook","authentication":{"schemes":["Bearer"]}}}}`), &r))
		require.NotNil(t, r.Message)
		assert.Equal(t, "c", r.Message.ContextID)
		assert.Equal(t, RoleUser, r.Message.Role)
		assert.Equal(t, []Part{
			TextPart("hi"),
			{Kind: PartURL, URL: "https://x", MediaType: "image/png"},
			{Kind: PartData, Data: json.RawMessage(`{"a":1}`), MediaType: "application/json"},
		}, r.Message.Parts)
		require.NotNil(t, r.Configuration)
		assert.True(t, r.Configuration.ReturnImmediately, "blocking:false => ReturnImmediately")
		assert.Equal(t, intPtr(1), r.Configuration.HistoryLength)
		assert.Equal(t, &TaskPushNotificationConfig{URL: "https://hook", Authentication: &AuthenticationInfo{Scheme: "Bearer"}}, r.Configuration.TaskPushNotificationConfig)
	})
	t.Run("0.2 tasks/send", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"id":"task-9","sessionId":"sess-1",
			"message":{"role":"user","parts":[{"type":"text","text":"hi"},{"type":"file","file":{"bytes_data":"aGk=","mime_type":"text/plain","name":"a"}}]},
			"acceptedOutputModes":["text"],"historyLength":5,"pushNotification":{"url":"https://hook"}}`), &r))
		require.NotNil(t, r.Message)
		assert.Equal(t, "task-9", r.Message.TaskID)
		assert.Equal(t, "sess-1", r.Message.ContextID)
		assert.Equal(t, []Part{TextPart("hi"), {Kind: PartRaw, Raw: []byte("hi"), MediaType: "text/plain", Filename: "a"}}, r.Message.Parts)
		assert.Equal(t, &SendMessageConfiguration{AcceptedOutputModes: []string{"text"}, HistoryLength: intPtr(5),
			TaskPushNotificationConfig: &TaskPushNotificationConfig{URL: "https://hook"}}, r.Configuration)
	})
	t.Run("message ids beat 0.2 outer ids", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"id":"outer","sessionId":"outer-s","message":{"taskId":"inner","contextId":"inner-c","role":"user","parts":[]}}`), &r))
		assert.Equal(t, "inner", r.Message.TaskID)
		assert.Equal(t, "inner-c", r.Message.ContextID)
	})
	t.Run("configuration beats 0.2 outer fields", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"configuration":{"acceptedOutputModes":["a"],"historyLength":1},"acceptedOutputModes":["b"],"historyLength":2}`), &r))
		assert.Equal(t, []string{"a"}, r.Configuration.AcceptedOutputModes)
		assert.Equal(t, intPtr(1), r.Configuration.HistoryLength)
	})
	t.Run("0.2 outer fields without message", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"id":"t","historyLength":0}`), &r))
		assert.Nil(t, r.Message)
		require.NotNil(t, r.Configuration)
		assert.Equal(t, intPtr(0), r.Configuration.HistoryLength)
	})
	t.Run("no configuration stays nil", func(t *testing.T) {
		var r SendMessageRequest
		require.NoError(t, json.Unmarshal([]byte(`{"message":{"role":"user","parts":[]}}`), &r))
		assert.Nil(t, r.Configuration)
	})
}

func TestGetTaskRequestLenient(t *testing.T) {
	tests := []struct {
		in   string
		want GetTaskRequest
	}{
		{`{"id":"t","historyLength":3}`, GetTaskRequest{ID: "t", HistoryLength: intPtr(3)}},
		{`{"id":"t","history_length":3}`, GetTaskRequest{ID: "t", HistoryLength: intPtr(3)}},
		{`{"tenant":"a","id":"t","metadata":{}}`, GetTaskRequest{Tenant: "a", ID: "t"}},
		{`{"id":"t"}`, GetTaskRequest{ID: "t"}},
	}
	for _, tc := range tests {
		var r GetTaskRequest
		require.NoError(t, json.Unmarshal([]byte(tc.in), &r), tc.in)
		assert.Equal(t, tc.want, r, tc.in)
	}
}

func TestListTasksRequestLenientStatus(t *testing.T) {
	for in, want := range map[string]TaskState{
		`{"status":"working"}`:                StateWorking,
		`{"status":"TASK_STATE_WORKING"}`:     StateWorking,
		`{"status":2}`:                        StateWorking,
		`{"status":null}`:                     "",
		`{}`:                                  "",
		`{"status":"TASK_STATE_UNSPECIFIED"}`: StateUnspecified,
	} {
		var r ListTasksRequest
		require.NoError(t, json.Unmarshal([]byte(in), &r), in)
		assert.Equal(t, want, r.Status, in)
	}
}

func TestFieldError(t *testing.T) {
	fe := &FieldError{Field: "message.role", Reason: "unknown role"}
	assert.Equal(t, "message.role: unknown role", fe.Error())
	assert.Equal(t, `"abc"`, quote("abc"))
	q := quote(strings.Repeat("é", 100))
	assert.Less(t, len(q), 100, "quote truncates")
	assert.True(t, json.Valid([]byte(q)), "quote stays valid JSON even when cutting a rune")
}
