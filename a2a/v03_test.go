package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateV03(t *testing.T) {
	tests := map[TaskState]string{
		StateSubmitted:     "submitted",
		StateWorking:       "working",
		StateCompleted:     "completed",
		StateFailed:        "failed",
		StateCanceled:      "canceled",
		StateInputRequired: "input-required",
		StateRejected:      "rejected",
		StateAuthRequired:  "auth-required",
		StateUnspecified:   "unknown",
		"":                 "unknown",
	}
	for s, want := range tests {
		assert.Equal(t, want, StateV03(s), "state %q", s)
		if s != "" {
			back, ok := ParseTaskState(want)
			assert.True(t, ok)
			assert.Equal(t, s, back, "0.3 spelling parses back")
		}
	}
}

func TestRoleV03(t *testing.T) {
	assert.Equal(t, "user", RoleV03(RoleUser))
	assert.Equal(t, "agent", RoleV03(RoleAgent))
	assert.Equal(t, "user", RoleV03(RoleUnspecified))
	assert.Equal(t, "user", RoleV03(""))
}

func TestPartToV03(t *testing.T) {
	tests := []struct {
		name string
		part Part
		want string
	}{
		{"text", Part{Kind: PartText, Text: "hi", Metadata: Metadata{"a": "b"}}, `{"kind":"text","text":"hi","metadata":{"a":"b"}}`},
		{"empty text", TextPart(""), `{"kind":"text","text":""}`},
		{"raw", Part{Kind: PartRaw, Raw: []byte("hello"), Filename: "h.txt", MediaType: "text/plain"},
			`{"kind":"file","file":{"name":"h.txt","mimeType":"text/plain","bytes":"aGVsbG8="}}`},
		{"empty raw keeps bytes", Part{Kind: PartRaw}, `{"kind":"file","file":{"bytes":""}}`},
		{"url", Part{Kind: PartURL, URL: "https://x.test/a.png", Filename: "a.png", MediaType: "image/png"},
			`{"kind":"file","file":{"name":"a.png","mimeType":"image/png","uri":"https://x.test/a.png"}}`},
		{"empty url keeps uri", Part{Kind: PartURL}, `{"kind":"file","file":{"uri":""}}`},
		{"data object", DataPart(map[string]int{"n": 1}), `{"kind":"data","data":{"n":1}}`},
		{"data object with leading space", Part{Kind: PartData, Data: json.RawMessage(` {"n":1}`)}, `{"kind":"data","data":{"n":1}}`},
		{"data array wrapped", Part{Kind: PartData, Data: json.RawMessage(`[1,2]`)}, `{"kind":"data","data":{"value":[1,2]}}`},
		{"data string wrapped", DataPart("s"), `{"kind":"data","data":{"value":"s"}}`},
		{"data number wrapped", DataPart(3.5), `{"kind":"data","data":{"value":3.5}}`},
		{"data bool wrapped", DataPart(true), `{"kind":"data","data":{"value":true}}`},
		{"data null wrapped", Part{Kind: PartData, Data: json.RawMessage(`null`)}, `{"kind":"data","data":{"value":null}}`},
		{"data empty wrapped", Part{Kind: PartData}, `{"kind":"data","data":{"value":null}}`},
		{"unknown kind becomes empty text", Part{}, `{"kind":"text","text":""}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.part.ToV03())
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

// A part survives 1.0 -> 0.3 -> lenient decode (data parts come back as
// application/json, the only media type 0.3 data has).
func TestPartV03RoundTrip(t *testing.T) {
	for _, p := range []Part{
		TextPart("hi"),
		{Kind: PartText, Text: "x", Metadata: Metadata{"k": "v"}},
		{Kind: PartRaw, Raw: []byte{1, 2, 3}, Filename: "f.bin", MediaType: "application/octet-stream"},
		{Kind: PartRaw, Raw: []byte{}},
		{Kind: PartURL, URL: "https://x.test", Filename: "x", MediaType: "text/html"},
		{Kind: PartURL, URL: ""},
		DataPart(map[string]any{"a": "b"}),
	} {
		b, err := json.Marshal(p.ToV03())
		require.NoError(t, err)
		var got Part
		require.NoError(t, json.Unmarshal(b, &got), "%s", b)
		assert.Equal(t, p, got, "%s", b)
	}
}

func TestMessageToV03(t *testing.T) {
	var nilMsg *Message
	assert.Nil(t, nilMsg.ToV03())

	m := sampleMessage()
	b, err := json.Marshal(m.ToV03())
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"message","messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"user",
		"parts":[{"kind":"text","text":"hello"},{"kind":"file","file":{"name":"f.png","mimeType":"image/png","uri":"https://x.test/f.png"}}],
		"metadata":{"k":"v","n":1.5,"b":true},"extensions":["https://ext.test/a"],"referenceTaskIds":["task-0"]}`, string(b))

	b, err = json.Marshal((&Message{MessageID: "m", Role: RoleAgent}).ToV03())
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"message","messageId":"m","role":"agent","parts":[]}`, string(b), "parts is required, never null")

	var back Message
	require.NoError(t, json.Unmarshal(mustMarshal(t, m.ToV03()), &back))
	assert.Equal(t, m, back, "0.3 message decodes back to the same message")
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestTaskToV03(t *testing.T) {
	var nilTask *Task
	assert.Nil(t, nilTask.ToV03())

	task := sampleTask()
	var got map[string]any
	require.NoError(t, json.Unmarshal(mustMarshal(t, task.ToV03()), &got))
	assert.Equal(t, "task", got["kind"])
	assert.Equal(t, "task-1", got["id"])
	assert.Equal(t, "ctx-1", got["contextId"])
	status := got["status"].(map[string]any)
	assert.Equal(t, "working", status["state"])
	assert.Equal(t, "2025-01-02T03:04:05.678Z", status["timestamp"])
	assert.Equal(t, "message", status["message"].(map[string]any)["kind"])
	assert.Equal(t, "agent", status["message"].(map[string]any)["role"])
	history := got["history"].([]any)
	require.Len(t, history, 2)
	for _, h := range history {
		assert.Equal(t, "message", h.(map[string]any)["kind"])
	}
	arts := got["artifacts"].([]any)
	require.Len(t, arts, 1)
	parts := arts[0].(map[string]any)["parts"].([]any)
	require.Len(t, parts, 3)
	assert.Equal(t, []any{"text", "file", "data"}, []any{parts[0].(map[string]any)["kind"], parts[1].(map[string]any)["kind"], parts[2].(map[string]any)["kind"]})
	assert.NotContains(t, arts[0].(map[string]any), "kind", "0.3 artifacts carry no kind")
	assertNoV10Enums(t, got)

	min := Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateSubmitted}}
	assert.JSONEq(t, `{"kind":"task","id":"t","contextId":"c","status":{"state":"submitted"}}`, string(mustMarshal(t, min.ToV03())))

	// A task whose parts all survive 0.3 decodes back to itself.
	rt := sampleTask()
	rt.Artifacts[0].Parts[2].MediaType = "application/json"
	var back Task
	require.NoError(t, json.Unmarshal(mustMarshal(t, rt.ToV03()), &back))
	assert.Equal(t, rt, back)
}

// assertNoV10Enums fails if a 1.0 enum spelling appears anywhere in v.
func assertNoV10Enums(t *testing.T, v any) {
	t.Helper()
	s := string(mustMarshal(t, v))
	assert.NotContains(t, s, "TASK_STATE_")
	assert.NotContains(t, s, "ROLE_")
}

func TestStreamResponseToV03(t *testing.T) {
	task := sampleTask()
	msg := sampleMessage()
	assert.Nil(t, (&StreamResponse{}).ToV03())

	tv, ok := (&StreamResponse{Task: &task}).ToV03().(*TaskV03)
	require.True(t, ok)
	assert.Equal(t, "task", tv.Kind)

	mv, ok := (&StreamResponse{Message: &msg}).ToV03().(*MessageV03)
	require.True(t, ok)
	assert.Equal(t, "message", mv.Kind)

	art := sampleArtifact()
	av, ok := (&StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: art, Append: true, LastChunk: true, Metadata: Metadata{"m": "n"}}}).ToV03().(*ArtifactUpdateV03)
	require.True(t, ok)
	assert.JSONEq(t, `{"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":true,"metadata":{"m":"n"},
		"artifact":{"artifactId":"art-1","name":"report","description":"the report","metadata":{"a":"b"},"extensions":["https://ext.test/b"],
		"parts":[{"kind":"text","text":"chunk"},{"kind":"file","file":{"name":"b.bin","mimeType":"application/octet-stream","bytes":"AAEC/w=="}},{"kind":"data","data":{"x":1}}]}}`,
		string(mustMarshal(t, av)))
	av2 := (&StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a"}}}).ToV03()
	assert.JSONEq(t, `{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[]}}`, string(mustMarshal(t, av2)))

	// final is true exactly when the stream ends: terminal and interrupted states.
	finals := map[TaskState]bool{
		StateSubmitted: false, StateWorking: false, StateUnspecified: false,
		StateCompleted: true, StateFailed: true, StateCanceled: true, StateRejected: true,
		StateInputRequired: true, StateAuthRequired: true,
	}
	for st, final := range finals {
		ev := &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: st}}}
		sv, ok := ev.ToV03().(*StatusUpdateV03)
		require.True(t, ok)
		assert.Equal(t, final, sv.Final, "final for %s", st)
		var m map[string]any
		require.NoError(t, json.Unmarshal(mustMarshal(t, sv), &m))
		assert.Equal(t, final, m["final"], "final is always emitted (%s)", st)
		assert.Equal(t, "status-update", m["kind"])
		assert.Equal(t, StateV03(st), m["status"].(map[string]any)["state"])
	}

	withMsg := &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Metadata: Metadata{"x": "y"},
		Status: TaskStatus{State: StateInputRequired, Message: &Message{MessageID: "q", Role: RoleAgent, Parts: []Part{TextPart("which?")}}, Timestamp: "2025-01-01T00:00:00.000Z"}}}
	assert.JSONEq(t, `{"kind":"status-update","taskId":"t","contextId":"c","final":true,"metadata":{"x":"y"},
		"status":{"state":"input-required","timestamp":"2025-01-01T00:00:00.000Z",
		"message":{"kind":"message","messageId":"q","role":"agent","parts":[{"kind":"text","text":"which?"}]}}}`,
		string(mustMarshal(t, withMsg.ToV03())))
}

func TestPushConfigToV03(t *testing.T) {
	c := &TaskPushNotificationConfig{Tenant: "acme", ID: "p", TaskID: "t", URL: "https://hook", Token: "k", Authentication: &AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}
	assert.JSONEq(t, `{"taskId":"t","pushNotificationConfig":{"id":"p","url":"https://hook","token":"k","authentication":{"schemes":["Bearer"],"credentials":"c"}}}`,
		string(mustMarshal(t, c.ToV03())))
	assert.JSONEq(t, `{"taskId":"","pushNotificationConfig":{"url":"u"}}`, string(mustMarshal(t, (&TaskPushNotificationConfig{URL: "u"}).ToV03())))

	var back TaskPushNotificationConfig
	require.NoError(t, json.Unmarshal(mustMarshal(t, c.ToV03()), &back))
	want := *c
	want.Tenant = "" // 0.3 has no tenant
	assert.Equal(t, want, back, "0.3 push config decodes back")
}

// --- 0.3 JSON schema conformance ---------------------------------------

// schemaV03Path is the project's own model of the 0.3 JSON-RPC objects
// (see TestV03SchemaMatchesReference for what keeps it honest).
const schemaV03Path = "testdata/v03/schema.json"

// schemaValidator checks a JSON value against the subset of JSON Schema the
// 0.3 model uses: $ref, type, const, enum, required, properties,
// additionalProperties (a schema, or false for a closed object), items,
// anyOf.
type schemaValidator struct {
	defs map[string]any
}

func newSchemaValidator(t testing.TB) *schemaValidator {
	t.Helper()
	b, err := os.ReadFile(schemaV03Path)
	require.NoError(t, err)
	var s struct {
		Definitions map[string]any `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	require.NotEmpty(t, s.Definitions)
	return &schemaValidator{defs: s.Definitions}
}

// def returns a definition (fails the test if it is not there).
func (v *schemaValidator) def(t testing.TB, name string) map[string]any {
	t.Helper()
	d, ok := v.defs[name].(map[string]any)
	require.True(t, ok, "0.3 model has no definition %s", name)
	return d
}

// required returns the required property names of a definition.
func (v *schemaValidator) required(t testing.TB, name string) []string {
	t.Helper()
	var out []string
	for _, r := range asSlice(v.def(t, name)["required"]) {
		out = append(out, r.(string))
	}
	return out
}

func asSlice(x any) []any {
	s, _ := x.([]any)
	return s
}

func (v *schemaValidator) validateDef(name string, val any) []string {
	return v.validate(map[string]any{"$ref": "#/definitions/" + name}, val, name)
}

func jsonType(val any) string {
	switch x := val.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func (v *schemaValidator) validate(schema map[string]any, val any, path string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/definitions/")
		def, ok := v.defs[name].(map[string]any)
		if !ok {
			return []string{path + ": unresolved " + ref}
		}
		return v.validate(def, val, path)
	}
	var errs []string
	if anyOf, ok := schema["anyOf"].([]any); ok {
		var branchErrs []string
		matched := false
		for _, br := range anyOf {
			e := v.validate(br.(map[string]any), val, path)
			if len(e) == 0 {
				matched = true
				break
			}
			branchErrs = append(branchErrs, e...)
		}
		if !matched {
			errs = append(errs, fmt.Sprintf("%s: matches no anyOf branch: %v", path, branchErrs))
		}
	}
	if ty, ok := schema["type"]; ok {
		got := jsonType(val)
		okType := false
		var types []any
		if s, isStr := ty.(string); isStr {
			types = []any{s}
		} else {
			types = ty.([]any)
		}
		for _, want := range types {
			if want == got || (want == "number" && got == "integer") {
				okType = true
			}
		}
		if !okType {
			return append(errs, fmt.Sprintf("%s: type %s, want %v", path, got, ty))
		}
	}
	if c, ok := schema["const"]; ok && c != val {
		errs = append(errs, fmt.Sprintf("%s: %v, want const %v", path, val, c))
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if e == val {
				found = true
			}
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %v not in enum %v", path, val, enum))
		}
	}
	if obj, ok := val.(map[string]any); ok {
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, present := obj[r.(string)]; !present {
					errs = append(errs, fmt.Sprintf("%s: required %q missing", path, r))
				}
			}
		}
		props, _ := schema["properties"].(map[string]any)
		for k, fv := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, v.validate(ps, fv, path+"."+k)...)
			} else if ap, ok := schema["additionalProperties"].(map[string]any); ok {
				errs = append(errs, v.validate(ap, fv, path+"."+k)...)
			} else if schema["additionalProperties"] == false {
				errs = append(errs, fmt.Sprintf("%s: unexpected property %q", path, k))
			}
		}
	}
	if arr, ok := val.([]any); ok {
		if items, ok := schema["items"].(map[string]any); ok {
			for i, it := range arr {
				errs = append(errs, v.validate(items, it, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return errs
}

func toGeneric(t testing.TB, v any) any {
	t.Helper()
	return decodeGeneric(t, mustMarshal(t, v))
}

// decodeGeneric decodes JSON keeping numbers as json.Number, so any valid
// JSON number (1e400 included) can be checked.
func decodeGeneric(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	require.NoError(t, dec.Decode(&out), "%s", b)
	return out
}

// The validator must reject what the schema rejects, or the conformance test
// below proves nothing.
func TestSchemaValidatorRejects(t *testing.T) {
	v := newSchemaValidator(t)
	bad := []struct {
		def string
		val string
	}{
		{"Message", `{"kind":"message","messageId":"m","role":"user"}`},
		{"Message", `{"kind":"message","messageId":"m","role":"ROLE_USER","parts":[]}`},
		{"Message", `{"kind":"msg","messageId":"m","role":"user","parts":[]}`},
		{"Message", `{"kind":"message","messageId":"m","role":"user","parts":[{"text":"x"}]}`},
		{"Task", `{"kind":"task","id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`},
		{"TaskStatusUpdateEvent", `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"}}`},
		{"FilePart", `{"kind":"file","file":{"name":"x"}}`},
		{"DataPart", `{"kind":"data","data":[1]}`},
		{"AgentCard", `{"name":"n"}`},
		// Closed objects: a 1.0 member in a 0.3 object is an error.
		{"Task", `{"kind":"task","id":"t","contextId":"c","status":{"state":"working"},"tenant":"x"}`},
		{"TextPart", `{"kind":"text","text":"x","mediaType":"text/plain"}`},
		{"Message", `{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"u","filename":"f"}}]}`},
		{"FilePart", `{"kind":"file","file":{"uri":"u","bytes":"eA=="}}`},
		{"TaskPushNotificationConfig", `{"taskId":"t","pushNotificationConfig":{"url":"u","authentication":{"scheme":"Bearer"}}}`},
	}
	for _, tc := range bad {
		assert.NotEmpty(t, v.validateDef(tc.def, decodeGeneric(t, []byte(tc.val))), "%s %s should be rejected", tc.def, tc.val)
	}
	ok := decodeGeneric(t, []byte(`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}]}`))
	assert.Empty(t, v.validateDef("Message", ok))
}

func TestV03SchemaConformance(t *testing.T) {
	v := newSchemaValidator(t)
	for _, name := range []string{"TaskStatusUpdateEvent", "TaskArtifactUpdateEvent", "Task", "Message", "TextPart", "FilePart", "DataPart", "AgentCard"} {
		require.NotEmpty(t, v.required(t, name), "the 0.3 model lists required fields for %s", name)
	}

	task := sampleTask()
	msg := sampleMessage()
	art := sampleArtifact()
	art.Parts = append(art.Parts, Part{Kind: PartRaw}, Part{Kind: PartURL}, DataPart([]int{1}), Part{Kind: PartData})
	task.Artifacts = []Artifact{art, {ArtifactID: "empty"}}
	card := sampleCard().WithEndpoint("https://mesh.test/a2a", "https://mesh.test/t/acme/a2a", "acme")

	cases := []struct {
		def string
		v   any
	}{
		{"Task", task.ToV03()},
		{"Task", (&Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateSubmitted}}).ToV03()},
		{"Message", msg.ToV03()},
		{"Message", (&Message{MessageID: "m"}).ToV03()},
		{"TextPart", TextPart("x").ToV03()},
		{"FilePart", Part{Kind: PartRaw, Raw: []byte("x"), MediaType: "text/plain", Filename: "x"}.ToV03()},
		{"FilePart", Part{Kind: PartRaw}.ToV03()},
		{"FilePart", Part{Kind: PartURL, URL: "https://x"}.ToV03()},
		{"FilePart", Part{Kind: PartURL}.ToV03()},
		{"DataPart", DataPart(map[string]int{"a": 1}).ToV03()},
		{"DataPart", DataPart([]int{1}).ToV03()},
		{"DataPart", DataPart("s").ToV03()},
		{"DataPart", Part{Kind: PartData}.ToV03()},
		{"Artifact", art.toV03()},
		{"AgentCard", card},
		{"AgentCard", sampleCard().WithEndpoint("https://mesh.test/a2a", "", "")},
		{"TaskPushNotificationConfig", (&TaskPushNotificationConfig{TaskID: "t", URL: "u", Authentication: &AuthenticationInfo{Scheme: "Bearer"}}).ToV03()},
	}
	for st := range map[TaskState]bool{StateSubmitted: true, StateWorking: true, StateCompleted: true, StateFailed: true, StateCanceled: true,
		StateInputRequired: true, StateRejected: true, StateAuthRequired: true, StateUnspecified: true} {
		cases = append(cases,
			struct {
				def string
				v   any
			}{"TaskStatusUpdateEvent", (&StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c",
				Status: TaskStatus{State: st, Message: &msg, Timestamp: Now()}}}).ToV03()})
	}
	cases = append(cases,
		struct {
			def string
			v   any
		}{"TaskArtifactUpdateEvent", (&StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: art, Append: true, LastChunk: true}}).ToV03()},
		struct {
			def string
			v   any
		}{"TaskArtifactUpdateEvent", (&StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a"}}}).ToV03()},
	)

	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.def, i), func(t *testing.T) {
			g := toGeneric(t, tc.v)
			// Explicit required-list check against the marshalled keys...
			obj, ok := g.(map[string]any)
			require.True(t, ok)
			for _, r := range v.required(t, tc.def) {
				assert.Contains(t, obj, r, "%s: required field %q missing", tc.def, r)
			}
			// ...and the full recursive check (nested parts, messages, artifacts, enums, kinds).
			assert.Empty(t, v.validateDef(tc.def, g))
		})
	}
}
