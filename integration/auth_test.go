package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/devmesh"
	"github.com/a2amesh/a2amesh/internal/meshtest"
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
	return startRawMesh(t, meshtest.WithConfig(func(c *devmesh.Config) { c.Edge.Auth = auth }))
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

// protoFields returns the JSON field names of the named messages of the
// 1.0 a2a.proto.
func protoFields(t *testing.T, names ...string) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../shared/spec/v1.0.1/a2a.proto")
	require.NoError(t, err)
	out := map[string]map[string]bool{}
	field := regexp.MustCompile(`^\s+(?:optional |repeated )?(?:map<[^>]+>|[\w.]+) (\w+) = \d+`)
	for _, name := range names {
		start := strings.Index(string(b), "\nmessage "+name+" {")
		require.GreaterOrEqualf(t, start, 0, "message %s in a2a.proto", name)
		out[name] = map[string]bool{}
		depth := 0
		for _, line := range strings.Split(string(b[start+1:]), "\n") {
			if i := strings.Index(line, "//"); i >= 0 {
				line = line[:i]
			}
			if m := field.FindStringSubmatch(line); m != nil && depth >= 1 { // oneof members sit one deeper
				parts := strings.Split(m[1], "_")
				for i := 1; i < len(parts); i++ {
					parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
				}
				out[name][strings.Join(parts, "")] = true
			}
			depth += strings.Count(line, "{") - strings.Count(line, "}")
			if depth == 0 && strings.Contains(line, "}") {
				break
			}
		}
		require.NotEmptyf(t, out[name], "fields of %s", name)
	}
	return out
}

// requireSchemaFields checks obj has the fields the 0.3 JSON schema
// requires of definition def, with the schema's enum and const values.
func requireSchemaFields(t *testing.T, def string, obj map[string]any) {
	t.Helper()
	b, err := os.ReadFile("../../shared/spec/v0.3.0/a2a.json")
	require.NoError(t, err)
	var s struct {
		Definitions map[string]struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Type  any   `json:"type"`
				Enum  []any `json:"enum"`
				Const any   `json:"const"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	d, ok := s.Definitions[def]
	require.True(t, ok, def)
	for _, f := range d.Required {
		assert.Containsf(t, obj, f, "%s requires %s", def, f)
	}
	for name, prop := range d.Properties {
		v, ok := obj[name]
		if !ok {
			continue
		}
		if prop.Type == any("string") {
			str, isStr := v.(string)
			require.Truef(t, isStr, "%s.%s must be a string", def, name)
			if prop.Const != nil {
				assert.Equal(t, prop.Const, str, "%s.%s", def, name)
			}
			if len(prop.Enum) > 0 {
				assert.Contains(t, prop.Enum, any(str), "%s.%s", def, name)
			}
		}
	}
}
