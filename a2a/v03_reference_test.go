package a2a

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	a2a03 "github.com/a2aproject/a2a-go/a2a"
	a2apbv03 "github.com/a2aproject/a2a-go/a2apb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The 0.3 model (testdata/v03/schema.json) is the project's own writing;
// these tests hold it to two outside references, so that a wrong or
// loosened definition fails here rather than letting a wrong 0.3 encoding
// pass the conformance tests:
//   - the 0.3 reference Go SDK (a2a-go v0.3, generated from the 0.3 JSON
//     schema): property names, which are required (not omitempty), JSON
//     types, the kind/type discriminators and the enums;
//   - the 0.3 proto (a2a-go v0.3's a2apb): field names of the messages the
//     JSON-RPC form shares with it, and the task states.

// v03RefTypes maps each object definition of the model to its type in the
// reference SDK.
var v03RefTypes = map[string]any{
	"TextPart":                               a2a03.TextPart{},
	"FilePart":                               a2a03.FilePart{},
	"DataPart":                               a2a03.DataPart{},
	"FileWithBytes":                          a2a03.FileBytes{},
	"FileWithUri":                            a2a03.FileURI{},
	"Message":                                a2a03.Message{},
	"TaskStatus":                             a2a03.TaskStatus{},
	"Artifact":                               a2a03.Artifact{},
	"Task":                                   a2a03.Task{},
	"TaskStatusUpdateEvent":                  a2a03.TaskStatusUpdateEvent{},
	"TaskArtifactUpdateEvent":                a2a03.TaskArtifactUpdateEvent{},
	"PushNotificationAuthenticationInfo":     a2a03.PushAuthInfo{},
	"PushNotificationConfig":                 a2a03.PushConfig{},
	"TaskPushNotificationConfig":             a2a03.TaskPushConfig{},
	"MessageSendConfiguration":               a2a03.MessageSendConfig{},
	"MessageSendParams":                      a2a03.MessageSendParams{},
	"TaskQueryParams":                        a2a03.TaskQueryParams{},
	"TaskIdParams":                           a2a03.TaskIDParams{},
	"GetTaskPushNotificationConfigParams":    a2a03.GetTaskPushConfigParams{},
	"ListTaskPushNotificationConfigParams":   a2a03.ListTaskPushConfigParams{},
	"DeleteTaskPushNotificationConfigParams": a2a03.DeleteTaskPushConfigParams{},
	"AgentProvider":                          a2a03.AgentProvider{},
	"AgentExtension":                         a2a03.AgentExtension{},
	"AgentCapabilities":                      a2a03.AgentCapabilities{},
	"AgentSkill":                             a2a03.AgentSkill{},
	"AgentInterface":                         a2a03.AgentInterface{},
	"AgentCardSignature":                     a2a03.AgentCardSignature{},
	"APIKeySecurityScheme":                   a2a03.APIKeySecurityScheme{},
	"HTTPAuthSecurityScheme":                 a2a03.HTTPAuthSecurityScheme{},
	"OAuth2SecurityScheme":                   a2a03.OAuth2SecurityScheme{},
	"OpenIdConnectSecurityScheme":            a2a03.OpenIDConnectSecurityScheme{},
	"MutualTLSSecurityScheme":                a2a03.MutualTLSSecurityScheme{},
	"OAuthFlows":                             a2a03.OAuthFlows{},
	"AuthorizationCodeOAuthFlow":             a2a03.AuthorizationCodeOAuthFlow{},
	"ClientCredentialsOAuthFlow":             a2a03.ClientCredentialsOAuthFlow{},
	"ImplicitOAuthFlow":                      a2a03.ImplicitOAuthFlow{},
	"PasswordOAuthFlow":                      a2a03.PasswordOAuthFlow{},
	"AgentCard":                              a2a03.AgentCard{},
}

// refField is one JSON property of a reference type.
type refField struct {
	required bool
	jsonType string // "" when the Go type does not fix it (an interface)
}

// refFields lists the JSON properties of a struct from its json tags
// (embedded structs flattened); a property without omitempty is required.
func refFields(t reflect.Type) map[string]refField {
	out := map[string]refField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if f.Anonymous && !hasTag {
			for k, v := range refFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		out[name] = refField{required: !strings.Contains(","+opts+",", ",omitempty,"), jsonType: goJSONType(f.Type)}
	}
	return out
}

func goJSONType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(time.Time{}) {
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "" // interface
}

// refDiscriminator returns the kind/type member the reference SDK adds when
// it writes a value of t ("" if none), and its value.
func refDiscriminator(t *testing.T, v any) (string, string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		// Interfaces left nil (a file part's content) cannot be written;
		// fill the one the model needs.
		if fp, ok := v.(a2a03.FilePart); ok {
			fp.File = a2a03.FileURI{}
			b, err = json.Marshal(fp)
		}
	}
	require.NoError(t, err, "%T", v)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	fields := refFields(reflect.TypeOf(v))
	for _, k := range []string{"kind", "type"} {
		if s, ok := m[k].(string); ok {
			if _, declared := fields[k]; !declared {
				return k, s
			}
		}
	}
	return "", ""
}

// schemaType resolves a property schema's "type" (following $ref).
func (v *schemaValidator) schemaType(t *testing.T, s map[string]any) string {
	t.Helper()
	for i := 0; i < 10; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		s = v.def(t, strings.TrimPrefix(ref, "#/definitions/"))
	}
	ty, _ := s["type"].(string)
	return ty
}

func TestV03SchemaMatchesReferenceSDK(t *testing.T) {
	v := newSchemaValidator(t)
	for name, ref := range v03RefTypes {
		t.Run(name, func(t *testing.T) {
			d := v.def(t, name)
			assert.Equal(t, "object", d["type"])
			props, _ := d["properties"].(map[string]any)
			require.NotEmpty(t, props)
			fields := refFields(reflect.TypeOf(ref))
			disc, discValue := refDiscriminator(t, ref)

			var want, got, wantReq []string
			for k, f := range fields {
				want = append(want, k)
				if f.required {
					wantReq = append(wantReq, k)
				}
			}
			if disc != "" {
				want = append(want, disc)
				wantReq = append(wantReq, disc)
				ps, _ := props[disc].(map[string]any)
				require.NotNil(t, ps, "%s has no %s", name, disc)
				assert.Equal(t, discValue, ps["const"], "%s.%s is the constant the reference SDK writes", name, disc)
			}
			for k := range props {
				got = append(got, k)
			}
			sort.Strings(want)
			sort.Strings(got)
			assert.Equal(t, want, got, "%s: properties", name)
			gotReq := v.required(t, name)
			sort.Strings(wantReq)
			sort.Strings(gotReq)
			assert.Equal(t, wantReq, gotReq, "%s: required properties", name)

			for k, f := range fields {
				ps, ok := props[k].(map[string]any)
				if !ok || f.jsonType == "" {
					continue
				}
				st := v.schemaType(t, ps)
				if st == "" { // an anyOf of objects (a file part's content)
					_, isAnyOf := ps["anyOf"]
					assert.True(t, isAnyOf, "%s.%s has no type", name, k)
					continue
				}
				assert.Equal(t, f.jsonType, st, "%s.%s: JSON type", name, k)
			}
		})
	}

	enum := func(def string) []string {
		var out []string
		for _, e := range asSlice(v.def(t, def)["enum"]) {
			out = append(out, e.(string))
		}
		sort.Strings(out)
		return out
	}
	states := []string{}
	for _, s := range []a2a03.TaskState{a2a03.TaskStateSubmitted, a2a03.TaskStateWorking, a2a03.TaskStateInputRequired,
		a2a03.TaskStateAuthRequired, a2a03.TaskStateCompleted, a2a03.TaskStateFailed, a2a03.TaskStateCanceled,
		a2a03.TaskStateRejected, a2a03.TaskStateUnknown} {
		states = append(states, string(s))
	}
	sort.Strings(states)
	assert.Equal(t, states, enum("TaskState"))
	roles := []string{string(a2a03.MessageRoleAgent), string(a2a03.MessageRoleUser)}
	sort.Strings(roles)
	assert.Equal(t, roles, enum("Role"))
	in := []string{string(a2a03.APIKeySecuritySchemeInCookie), string(a2a03.APIKeySecuritySchemeInHeader), string(a2a03.APIKeySecuritySchemeInQuery)}
	sort.Strings(in)
	var gotIn []string
	for _, e := range asSlice(v.def(t, "APIKeySecurityScheme")["properties"].(map[string]any)["in"].(map[string]any)["enum"]) {
		gotIn = append(gotIn, e.(string))
	}
	sort.Strings(gotIn)
	assert.Equal(t, in, gotIn)
}

func TestV03SchemaMatchesProto(t *testing.T) {
	v := newSchemaValidator(t)
	fd := a2apbv03.File_a2a_proto
	require.NotNil(t, fd)
	msgs := protoMessages(fd)
	// Definitions whose JSON-RPC form has the proto message's fields (plus
	// its kind). Parts, push-config wrappers and security schemes are
	// shaped differently in the two 0.3 bindings and are left to the
	// reference-SDK test.
	shared := map[string]string{
		"Task": "Task", "TaskStatus": "TaskStatus", "Message": "Message", "Artifact": "Artifact",
		"TaskStatusUpdateEvent": "TaskStatusUpdateEvent", "TaskArtifactUpdateEvent": "TaskArtifactUpdateEvent",
		"PushNotificationConfig": "PushNotificationConfig", "PushNotificationAuthenticationInfo": "AuthenticationInfo",
		"AgentCard": "AgentCard", "AgentCapabilities": "AgentCapabilities", "AgentExtension": "AgentExtension",
		"AgentSkill": "AgentSkill", "AgentInterface": "AgentInterface", "AgentProvider": "AgentProvider",
		"AgentCardSignature": "AgentCardSignature",
	}
	for def, msg := range shared {
		pm, ok := msgs[msg]
		require.True(t, ok, "0.3 proto message %s", msg)
		props, _ := v.def(t, def)["properties"].(map[string]any)
		var got, want []string
		for k := range props {
			if k != "kind" {
				got = append(got, k)
			}
		}
		for k := range pm.fields {
			want = append(want, k)
		}
		sort.Strings(got)
		sort.Strings(want)
		assert.Equal(t, want, got, "%s: properties (but kind) are the fields of proto %s", def, msg)
	}

	// TASK_STATE_INPUT_REQUIRED is "input-required"; the proto's British
	// CANCELLED is the JSON "canceled"; UNSPECIFIED is "unknown".
	var states []string
	for _, n := range protoEnumValues(t, fd, "TaskState") {
		s := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(n, "TASK_STATE_")), "_", "-")
		switch s {
		case "cancelled":
			s = "canceled"
		case "unspecified":
			s = "unknown"
		}
		states = append(states, s)
	}
	sort.Strings(states)
	var model []string
	for _, e := range asSlice(v.def(t, "TaskState")["enum"]) {
		model = append(model, e.(string))
	}
	sort.Strings(model)
	assert.Equal(t, states, model, "the model's task states are the proto's")
}
