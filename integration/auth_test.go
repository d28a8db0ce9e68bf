package integration

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	a2a03 "github.com/a2aproject/a2a-go/a2a"
	a2apbv1 "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

const (
	aliceKey = "alice-secret-0123456789"
	bobKey   = "bob-secret-0123456789abc"
)

var (
	asAlice       = map[string]string{"X-Api-Key": aliceKey}
	asAliceBearer = map[string]string{"Authorization": "Bearer " + aliceKey}
	asBob         = map[string]string{"X-Api-Key": bobKey}
)

func startAuthMesh(t *testing.T) *rawMesh {
	t.Helper()
	auth, err := edge.NewAuth(map[string][]string{"alice": {aliceKey}, "bob": {bobKey}})
	require.NoError(t, err)
	return startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
}

// Calls without valid credentials get 401 with a challenge, before any
// JSON-RPC work (even an unparseable body); cards stay public.
func TestAuthRequiredButCardsPublic(t *testing.T) {
	m := startAuthMesh(t)
	for name, hdr := range map[string]map[string]string{
		"none":          nil,
		"wrong key":     {"X-Api-Key": "not-a-key-0123456789"},
		"wrong bearer":  {"Authorization": "Bearer not-a-key-0123456789"},
		"basic":         {"Authorization": "Basic " + aliceKey},
		"empty key":     {"X-Api-Key": ""},
		"bearer no tok": {"Authorization": "Bearer "},
	} {
		for _, body := range []string{string(rpcBody(t, m.newReqID(), "GetTask", map[string]any{"id": "x"})), "{not json"} {
			r := m.postBody401(t, "/agents/echo", body, hdr)
			assert.Equalf(t, http.StatusUnauthorized, r.StatusCode, "%s", name)
			challenges := strings.Join(r.Header.Values("WWW-Authenticate"), ", ")
			assert.Containsf(t, challenges, "Bearer", "%s: challenge %q", name, challenges)
			assert.Containsf(t, challenges, "X-Api-Key", "%s: challenge %q", name, challenges)
		}
	}
	m.fails(t, "/agents/echo", "GetTask", map[string]any{"id": uuid.NewString()}, -32001, asAlice) // past auth
	for _, path := range []string{"/.well-known/agent-card.json", "/agents", "/agents/echo/.well-known/agent-card.json", "/healthz"} {
		status, _, _ := m.getJSON(t, path, nil)
		assert.Equal(t, http.StatusOK, status, path)
	}
}

// The cards declare both schemes, in the 1.0 and the 0.3 shape, and the
// fields validate against the 1.0 proto and the 0.3 schema.
func TestAuthCardDeclaresSchemes(t *testing.T) {
	m := startAuthMesh(t)
	_, _, body := m.getJSON(t, "/agents/echo/.well-known/agent-card.json", nil)
	var card struct {
		SecuritySchemes map[string]map[string]json.RawMessage `json:"securitySchemes"`
		SecurityReqs    []map[string]map[string]struct {
			List []string `json:"list"`
		} `json:"securityRequirements"`
		Security []map[string][]string `json:"security"`
	}
	require.NoError(t, json.Unmarshal(body, &card))
	require.Len(t, card.SecuritySchemes, 2)

	proto := protoFields(t, "SecurityScheme", "APIKeySecurityScheme", "HTTPAuthSecurityScheme", "SecurityRequirement", "StringList")
	var sawAPIKey, sawBearer bool
	for name, s := range card.SecuritySchemes {
		// 1.0: exactly one member of the SecurityScheme oneof, whose fields
		// are the proto's.
		var oneof []string
		for k := range s {
			if proto["SecurityScheme"][k] {
				oneof = append(oneof, k)
			}
		}
		require.Lenf(t, oneof, 1, "scheme %s: one 1.0 oneof member", name)
		var inner map[string]any
		require.NoError(t, json.Unmarshal(s[oneof[0]], &inner))
		msg := map[string]string{"apiKeySecurityScheme": "APIKeySecurityScheme", "httpAuthSecurityScheme": "HTTPAuthSecurityScheme"}[oneof[0]]
		require.NotEmptyf(t, msg, "scheme %s: unexpected member %s", name, oneof[0])
		for k := range inner {
			assert.Truef(t, proto[msg][k], "scheme %s: %s has no field %s in a2a.proto", name, msg, k)
		}
		requireProtoJSON(t, msg, s[oneof[0]])
		// 0.3: the OpenAPI-style fields the schema requires.
		var v03 map[string]any
		b, _ := json.Marshal(s)
		require.NoError(t, json.Unmarshal(b, &v03))
		switch v03["type"] {
		case "apiKey":
			sawAPIKey = true
			assert.Equal(t, "header", v03["in"])
			assert.Equal(t, "header", inner["location"])
			assert.True(t, strings.EqualFold("x-api-key", v03["name"].(string)))
			requireSchemaFields(t, "APIKeySecurityScheme", v03)
		case "http":
			sawBearer = true
			assert.True(t, strings.EqualFold("bearer", v03["scheme"].(string)))
			assert.True(t, strings.EqualFold("bearer", inner["scheme"].(string)))
			requireSchemaFields(t, "HTTPAuthSecurityScheme", v03)
		default:
			t.Errorf("scheme %s: 0.3 type %v", name, v03["type"])
		}
	}
	assert.True(t, sawAPIKey && sawBearer)
	require.Len(t, card.SecurityReqs, 2)
	var rawReqs struct {
		SecurityReqs []json.RawMessage `json:"securityRequirements"`
	}
	require.NoError(t, json.Unmarshal(body, &rawReqs))
	for _, r := range rawReqs.SecurityReqs {
		requireProtoJSON(t, "SecurityRequirement", r)
	}
	for _, r := range card.SecurityReqs {
		require.Len(t, r, 1)
		for field, schemes := range r {
			assert.True(t, proto["SecurityRequirement"][field], field)
			for name := range schemes {
				assert.Contains(t, card.SecuritySchemes, name)
			}
		}
	}
	require.Len(t, card.Security, 2)
	for _, r := range card.Security {
		for name := range r {
			assert.Contains(t, card.SecuritySchemes, name)
		}
	}
}

// Tasks belong to the principal that created them: another principal sees
// -32001 for every call on them, with the same message as for a task that
// does not exist.
func TestAuthPrincipalIsolation(t *testing.T) {
	m := startAuthMesh(t)
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			msg := p.msg("mine")
			task := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(msg, nil), asAlice))
			require.Equal(t, p.completed, task.Status.State)
			// Alice reads it with either credential form.
			m.ok(t, "/agents/echo", p.get, map[string]any{"id": task.ID}, asAlice)
			m.ok(t, "/agents/echo", p.get, map[string]any{"id": task.ID}, asAliceBearer)

			ghost := uuid.NewString()
			for _, method := range []string{p.get, p.cancel} {
				theirs := m.fails(t, "/agents/echo", method, map[string]any{"id": task.ID}, -32001, asBob)
				none := m.fails(t, "/agents/echo", method, map[string]any{"id": ghost}, -32001, asBob)
				assert.Equal(t, strings.ReplaceAll(none.Message, ghost, "ID"), strings.ReplaceAll(theirs.Message, task.ID, "ID"),
					"%s: another principal's task must look like no task", method)
			}
			// Subscribe: an error, as JSON or as an SSE event, never the task.
			s, r := m.openStream(t, "/agents/echo", rpcBody(t, m.newReqID(), p.resub, map[string]any{"id": task.ID}), asBob)
			if r != nil {
				require.NotNil(t, r.Error)
				assert.Equal(t, -32001, r.Error.Code)
			} else {
				f := s.readFrame(t, p, nil)
				require.NotNil(t, f)
				require.NotNil(t, f.Reply.Error, "bob's subscribe must fail")
				assert.Equal(t, -32001, f.Reply.Error.Code)
			}
			// Bob cannot continue it either.
			m.fails(t, "/agents/echo", p.send, sendParams(inTask(p.msg("hijack"), task.ID, ""), nil), -32001, asBob)

			// The same messageId from Bob is Bob's own task, not Alice's.
			bobs := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(msg, nil), asBob))
			assert.NotEqual(t, task.ID, bobs.ID)
		})
	}
	// ListTasks shows each principal only their own.
	var alice, bob struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal(m.ok(t, "/agents/echo", "ListTasks", map[string]any{}, asAlice), &alice))
	require.NoError(t, json.Unmarshal(m.ok(t, "/agents/echo", "ListTasks", map[string]any{}, asBob), &bob))
	require.NotEmpty(t, alice.Tasks)
	require.NotEmpty(t, bob.Tasks)
	seen := map[string]bool{}
	for _, tk := range alice.Tasks {
		seen[tk.ID] = true
	}
	for _, tk := range bob.Tasks {
		assert.False(t, seen[tk.ID], "bob lists alice's task %s", tk.ID)
	}
}

// postBody401 posts a raw body and returns the HTTP response (body read
// and checked to be JSON, not a stack trace).
func (m *rawMesh) postBody401(t *testing.T, path, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, m.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := m.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return resp
}

// protoFields returns the JSON field names (oneof members included) of
// the named messages of the 1.0 a2a.proto, read from the descriptor
// compiled into a2a-go v2's a2apb/v1.
func protoFields(t *testing.T, names ...string) map[string]map[string]bool {
	t.Helper()
	fd := a2apbv1.File_a2av1_proto
	require.NotNil(t, fd)
	out := map[string]map[string]bool{}
	for _, name := range names {
		md := fd.Messages().ByName(protoreflect.Name(name))
		require.NotNilf(t, md, "message %s in the 1.0 proto", name)
		out[name] = map[string]bool{}
		for i := 0; i < md.Fields().Len(); i++ {
			out[name][md.Fields().Get(i).JSONName()] = true
		}
		require.NotEmptyf(t, out[name], "fields of %s", name)
	}
	return out
}

// requireProtoJSON checks b parses strictly (no unknown field, right
// types) as the named message of the 1.0 proto.
func requireProtoJSON(t *testing.T, msg string, b []byte) {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(a2apbv1.File_a2av1_proto.Package().Append(protoreflect.Name(msg)))
	require.NoError(t, err, msg)
	require.NoErrorf(t, protojson.Unmarshal(b, mt.New().Interface()), "as 1.0 %s: %s", msg, b)
}

// v03SchemeTypes are the 0.3 reference SDK's (a2a-go v0.3) types of the
// security schemes the mesh declares.
var v03SchemeTypes = map[string]any{
	"APIKeySecurityScheme":   a2a03.APIKeySecurityScheme{},
	"HTTPAuthSecurityScheme": a2a03.HTTPAuthSecurityScheme{},
}

// requireSchemaFields checks obj against the 0.3 shape of definition def,
// as the 0.3 reference SDK has it: the fields it requires (json tags
// without omitempty), string fields as strings, the "type" discriminator
// it writes, and the apiKey locations it knows.
func requireSchemaFields(t *testing.T, def string, obj map[string]any) {
	t.Helper()
	ref, ok := v03SchemeTypes[def]
	require.True(t, ok, def)
	rt := reflect.TypeOf(ref)
	for i := 0; i < rt.NumField(); i++ {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		v, present := obj[name]
		if !strings.Contains(opts, "omitempty") {
			assert.Containsf(t, obj, name, "%s requires %s", def, name)
		}
		if present && rt.Field(i).Type.Kind() == reflect.String {
			_, isStr := v.(string)
			assert.Truef(t, isStr, "%s.%s must be a string", def, name)
		}
	}
	b, err := json.Marshal(ref)
	require.NoError(t, err)
	var zero map[string]any
	require.NoError(t, json.Unmarshal(b, &zero))
	require.NotEmpty(t, zero["type"], "the reference SDK writes a type for %s", def)
	assert.Equal(t, zero["type"], obj["type"], "%s.type", def)
	if in, ok := obj["in"]; ok {
		assert.Contains(t, []any{string(a2a03.APIKeySecuritySchemeInHeader), string(a2a03.APIKeySecuritySchemeInQuery), string(a2a03.APIKeySecuritySchemeInCookie)}, in, "%s.in", def)
	}
	// And the reference SDK reads it as that scheme.
	var named a2a03.NamedSecuritySchemes
	require.NoError(t, json.Unmarshal(mustJSON(t, map[string]any{"s": obj}), &named))
	assert.IsType(t, ref, named["s"], "the 0.3 reference SDK reads a %s", def)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
