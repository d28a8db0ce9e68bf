package a2a

// Strict where the A2A spec is strict (message.role is required in a
// send), lenient where ProtoJSON is (every field also under its proto
// name), for every type this package decodes: the types are found by
// parsing the package's own source, so a type or field added later is
// covered or the test says what to do.

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strictDecoded are the struct types read from requests (params and every
// message nested in them), each with the struct whose json tags give its
// wire fields.
var strictDecoded = map[string]struct{ typ, wire reflect.Type }{
	"Message":                    {reflect.TypeFor[Message](), nil},
	"Part":                       {reflect.TypeFor[Part](), reflect.TypeFor[partV1]()},
	"AuthenticationInfo":         {reflect.TypeFor[AuthenticationInfo](), nil},
	"TaskPushNotificationConfig": {reflect.TypeFor[TaskPushNotificationConfig](), nil},
	"SendMessageConfiguration":   {reflect.TypeFor[SendMessageConfiguration](), nil},
	"SendMessageRequest":         {reflect.TypeFor[SendMessageRequest](), nil},
	"GetTaskRequest":             {reflect.TypeFor[GetTaskRequest](), nil},
	"TaskIDRequest":              {reflect.TypeFor[TaskIDRequest](), nil},
	"ListTasksRequest":           {reflect.TypeFor[ListTasksRequest](), nil},
}

// strictNotDecoded are the struct types that are not read from a request,
// with the reason: they keep their JSON names only.
var strictNotDecoded = map[string]string{
	"partV1": "the wire form of Part, checked through Part",
	// Results: written by servers, whose ProtoJSON printers use the JSON
	// names; read back from the mesh's own store on every task load, which
	// a decoding wrapper per object would slow by a third.
	"TaskStatus":              "a result, not request params",
	"Artifact":                "a result, not request params",
	"Task":                    "a result, not request params",
	"TaskStatusUpdateEvent":   "a result, not request params",
	"TaskArtifactUpdateEvent": "a result, not request params",
	"StreamResponse":          "a result, not request params",
	"ListTasksResponse":       "a result, not request params",
	"keySpan":                 "internal",
	"fscan":                   "internal",
	"Status":                  "how an error is answered over HTTP+JSON and gRPC, never read",
	"protoFields":             "internal",
	"methodInfo":              "internal",
	"FieldError":              "an error, not JSON",
	"Request":                 "the JSON-RPC envelope, not a proto message",
	"Response":                "the JSON-RPC envelope, not a proto message",
	"Error":                   "the JSON-RPC error object, not a proto message",
	"ErrorInfo":               "encoded only",
	"fileV03":                 "0.3 encoding only",
	"PartV03":                 "0.3 encoding only",
	"MessageV03":              "0.3 encoding only",
	"TaskStatusV03":           "0.3 encoding only",
	"ArtifactV03":             "0.3 encoding only",
	"TaskV03":                 "0.3 encoding only",
	"StatusUpdateV03":         "0.3 encoding only",
	"ArtifactUpdateV03":       "0.3 encoding only",
	"PushConfigV03":           "0.3 encoding only",
	"SendParamsV03":           "0.3 encoding only",
	"SendConfigV03":           "0.3 encoding only",
	"AgentInterface":          "agent cards are not request params",
	"AgentInterfaceV03":       "agent cards are not request params",
	"AgentProvider":           "agent cards are not request params",
	"AgentExtension":          "agent cards are not request params",
	"AgentCapabilities":       "agent cards are not request params",
	"AgentSkill":              "agent cards are not request params",
	"AgentCard":               "agent cards are not request params",
	"AgentCardSignature":      "agent cards are not request params",
}

// strictStructTypes lists the struct types declared in the package's
// non-test source.
func strictStructTypes(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var names []string
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.StructType); ok {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestStrictEveryStructTypeIsClassified(t *testing.T) {
	names := strictStructTypes(t)
	require.Contains(t, names, "Message", "the source was parsed")
	for _, n := range names {
		_, dec := strictDecoded[n]
		_, not := strictNotDecoded[n]
		assert.True(t, dec != not, "struct type %s: list it in strictDecoded (read from input: give it an UnmarshalJSON "+
			"that calls unmarshalProto) or in strictNotDecoded with the reason", n)
	}
}

// strictSample builds a JSON object giving every wire field of t a
// non-zero value, in lowerCamelCase as the json tags spell it.
func strictSample(t reflect.Type) map[string]any {
	if t == reflect.TypeFor[Part]() || t == reflect.TypeFor[partV1]() {
		// One content only (a oneof), with every other field.
		return map[string]any{"text": "v", "filename": "f.txt", "mediaType": "text/plain", "metadata": map[string]any{"k": "v"}}
	}
	out := map[string]any{}
	strictFill(t, out)
	return out
}

func strictFill(t reflect.Type, out map[string]any) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			strictFill(f.Type, out)
			continue
		}
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		out[name] = strictValue(f.Type)
	}
}

func strictValue(t reflect.Type) any {
	switch t {
	case reflect.TypeFor[Role]():
		return "ROLE_AGENT"
	case reflect.TypeFor[TaskState]():
		return "TASK_STATE_WORKING"
	case reflect.TypeFor[Metadata]():
		return map[string]any{"k": "v"}
	case reflect.TypeFor[Part]():
		return strictSample(t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return strictValue(t.Elem())
	case reflect.String:
		return "v"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return 2
	case reflect.Bool:
		return true
	case reflect.Slice:
		return []any{strictValue(t.Elem())}
	case reflect.Struct:
		return strictSample(t)
	}
	panic("strictValue: add a sample for " + t.String())
}

// strictSnake is the proto name of a JSON name, written independently of
// the package's own conversion.
func strictSnake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// strictSnakeAll renames every key of v, at every depth, to its proto name.
func strictSnakeAll(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[strictSnake(k)] = strictSnakeAll(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strictSnakeAll(x)
		}
		return out
	}
	return v
}

func strictDecode(t *testing.T, typ reflect.Type, v any) (any, error) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	p := reflect.New(typ)
	err = json.Unmarshal(b, p.Interface())
	return p.Elem().Interface(), err
}

// strictAllSet fails for each field of v left zero (Part: its content and
// the fields beside it).
func strictAllSet(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if p, ok := v.Interface().(Part); ok {
		assert.True(t, p.Kind == PartText && p.Filename != "" && p.MediaType != "" && p.Metadata != nil, "%s: part lost a field: %+v", path, p)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if assert.False(t, v.IsNil(), "%s was not decoded", path) {
			strictAllSet(t, v.Elem(), path)
		}
	case reflect.Slice:
		if assert.Positive(t, v.Len(), "%s was not decoded", path) {
			strictAllSet(t, v.Index(0), path+"[0]")
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				strictAllSet(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	default:
		assert.False(t, v.IsZero(), "%s was not decoded", path)
	}
}

// Every field of every decoded type is read under its proto name as under
// its JSON name, at every depth; a field given under both is refused.
func TestStrictProtoFieldNames(t *testing.T) {
	for name, d := range strictDecoded {
		t.Run(name, func(t *testing.T) {
			wire := d.wire
			if wire == nil {
				wire = d.typ
			}
			sample := strictSample(wire)
			camel, err := strictDecode(t, d.typ, sample)
			require.NoError(t, err, "lowerCamelCase sample %v", sample)
			strictAllSet(t, reflect.ValueOf(camel), name)

			snake := strictSnakeAll(sample)
			got, err := strictDecode(t, d.typ, snake)
			require.NoError(t, err, "proto-name sample %v", snake)
			assert.Equal(t, camel, got, "decoded from proto names %v", snake)

			for key := range sample {
				if strictSnake(key) == key {
					continue
				}
				both := map[string]any{}
				for k, v := range sample {
					both[k] = v
				}
				both[strictSnake(key)] = sample[key]
				_, err := strictDecode(t, d.typ, both)
				var fe *FieldError
				if assert.True(t, errors.As(err, &fe), "%s and %s both given: got %v", key, strictSnake(key), err) {
					assert.Contains(t, fe.Reason, key+" and "+strictSnake(key))
					assert.Equal(t, CodeInvalidParams, AsError(err).Code)
				}
			}
		})
	}
}

// Spellings the 0.3 and 0.2 shapes add are read under their snake_case
// names too (accepting them costs nothing and no client is hurt).
func TestStrictLegacySpellingsSnake(t *testing.T) {
	var c SendMessageConfiguration
	require.NoError(t, json.Unmarshal([]byte(`{"push_notification_config":{"url":"u"},"blocking":false}`), &c))
	assert.Equal(t, &TaskPushNotificationConfig{URL: "u"}, c.TaskPushNotificationConfig)
	assert.True(t, c.ReturnImmediately)

	var m Message
	require.NoError(t, json.Unmarshal([]byte(`{"message_id":"m","session_id":"s","role":"user","parts":[]}`), &m))
	assert.Equal(t, "s", m.ContextID)

	var r SendMessageRequest
	require.NoError(t, json.Unmarshal([]byte(`{"id":"t","session_id":"s","accepted_output_modes":["a"],"history_length":1,
		"message":{"parts":[{"type":"text","text":"x"}]}}`), &r))
	assert.Equal(t, "s", r.Message.ContextID)
	require.NotNil(t, r.Configuration)
	assert.Equal(t, []string{"a"}, r.Configuration.AcceptedOutputModes)

	var cfg TaskPushNotificationConfig
	require.NoError(t, json.Unmarshal([]byte(`{"task_id":"t","push_notification_config":{"url":"u","authentication":{"schemes":["Basic"]}}}`), &cfg))
	assert.Equal(t, TaskPushNotificationConfig{TaskID: "t", URL: "u", Authentication: &AuthenticationInfo{Scheme: "Basic"}}, cfg)
}

// A type error names the field as the caller spelled it.
func TestStrictTypeErrorNamesCallersSpelling(t *testing.T) {
	var r ListTasksRequest
	e := DecodeParams(json.RawMessage(`{"page_size":"ten"}`), &r)
	require.NotNil(t, e)
	assert.Equal(t, CodeInvalidParams, e.Code)
	assert.Contains(t, e.Message, "page_size")
	e = DecodeParams(json.RawMessage(`{"pageSize":"ten"}`), &r)
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "pageSize")
}

// message.role is required in a send, in 1.0 and 0.3; only the 0.2
// tasks/send shape (its task id beside the message) defaults it to user.
func TestStrictSendRoleRequired(t *testing.T) {
	for _, params := range []string{
		`{"message":{"messageId":"m","parts":[{"text":"x"}]}}`,
		`{"message":{"messageId":"m","role":"ROLE_UNSPECIFIED","parts":[{"text":"x"}]}}`,
		`{"message":{"messageId":"m","role":0,"parts":[{"text":"x"}]}}`,
		`{"message":{"messageId":"m","role":"","parts":[{"text":"x"}]}}`,
		`{"message":{"messageId":"m","role":null,"parts":[{"text":"x"}]}}`,
		`{"message":{"kind":"message","messageId":"m","parts":[{"kind":"text","text":"x"}]}}`,
		`{"message":{"message_id":"m","parts":[{"text":"x"}]},"configuration":{"blocking":true}}`,
	} {
		var r SendMessageRequest
		e := DecodeParams(json.RawMessage(params), &r)
		if assert.NotNil(t, e, params) {
			assert.Equal(t, CodeInvalidParams, e.Code, params)
			assert.Contains(t, e.Message, "message.role is required", params)
		}
	}
	for params, want := range map[string]Role{
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}`:            RoleUser,
		`{"message":{"messageId":"m","role":"agent","parts":[]}}`:                RoleAgent,
		`{"message":{"messageId":"m","role":1,"parts":[]}}`:                      RoleUser,
		`{"id":"task","message":{"parts":[{"type":"text","text":"x"}]}}`:         RoleUser,
		`{"id":"task","sessionId":"s","message":{"role":"agent","parts":[]}}`:    RoleAgent,
		`{"sessionId":"s","message":{"parts":[{"type":"text","text":"x"}]}}`:     RoleUser,
		`{"id":"task","message":{"role":"ROLE_UNSPECIFIED","parts":[]}}`:         RoleUser,
		`{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]},"id":"x"}`:  RoleAgent,
		`{"message":{"messageId":"m","role":"user","parts":[]},"metadata":null}`: RoleUser,
	} {
		var r SendMessageRequest
		require.Nil(t, DecodeParams(json.RawMessage(params), &r), params)
		assert.Equal(t, want, r.Message.Role, params)
	}
	// A message read back from storage or from an agent is not a send:
	// its decoder does not add the requirement.
	var m Message
	require.NoError(t, json.Unmarshal([]byte(`{"messageId":"m","parts":[]}`), &m))
	assert.Equal(t, Role(""), m.Role)
}

// objectKeys finds exactly the top-level keys, whatever the values hold.
func TestStrictObjectKeys(t *testing.T) {
	in := `{ "a_b" : {"c_d":1,"x":[{"e_f":2}]}, "s":"x\"_y\":1,", "k\u005fz":[1,{"n_m":3}] , "last":null}`
	var names []string
	for _, k := range objectKeys([]byte(in), nil) {
		names = append(names, k.name())
		assert.Equal(t, byte('"'), in[k.start])
		assert.Equal(t, byte('"'), in[k.end-1])
	}
	assert.Equal(t, []string{"a_b", "s", "k_z", "last"}, names)
	assert.Nil(t, objectKeys([]byte(`[{"a_b":1}]`), nil))
	assert.Nil(t, objectKeys([]byte(`null`), nil))
	assert.Empty(t, objectKeys([]byte(`{}`), nil))

	for in, want := range map[string]bool{
		`{"role":"ROLE_USER","parts":[{"text":"a_b"}]}`: false,
		`{"message_id":"m"}`:                            true,
		`{"a":{"x_y" :1}}`:                              true, // nested: a false yes, harmless
		`{"s":"a_b\":"}`:                                true, // escaped quote: a false yes, harmless
		`{"state":"TASK_STATE_WORKING"}`:                false,
		`{}`:                                            false,
	} {
		assert.Equal(t, want, maybeSnakeKey([]byte(in)), in)
	}
}

// objectKeys agrees with encoding/json's tokenizer on the top-level keys of
// any valid JSON object.
func FuzzStrictObjectKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a_b":1}`, `{"a":{"b_c":[1,{"d":2}]},"e\"_f":"}{,"}`, ` {"k\u005fz" : [ ] , "x":null}`, `[1]`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) || !utf8.Valid(b) { // the edge refuses bodies that are not UTF-8
			return
		}
		var want, wantStrings []string
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if tok, _ := dec.Token(); tok == json.Delim('{') {
			want = []string{}
			for dec.More() {
				k, err := dec.Token()
				require.NoError(t, err)
				want = append(want, k.(string))
				var v json.RawMessage
				require.NoError(t, dec.Decode(&v))
				if v[0] == '"' {
					wantStrings = append(wantStrings, string(v))
				} else {
					wantStrings = append(wantStrings, "")
				}
			}
		}
		var got, gotStrings []string
		keys := objectKeys(b, nil)
		if keys != nil || want != nil {
			got = []string{}
			for _, k := range keys {
				got = append(got, k.name())
				require.Equal(t, k.name(), string(keyText(b[k.start:k.end])))
				gotStrings = append(gotStrings, string(b[k.vstart:k.vend]))
			}
		}
		require.Equal(t, want, got, "%s", b)
		require.Equal(t, wantStrings, gotStrings, "string values of %s", b)
		// The cheap pre-check never misses a key that could be a proto name.
		for _, k := range keys {
			if strings.Contains(k.name(), "_") && !strings.ContainsAny(k.name(), "\"\\") && !bytes.Contains(b[k.start:k.end], []byte(`\`)) {
				require.True(t, maybeSnakeKey(b), "key %q of %s", k.name(), b)
			}
		}
	})
}

// ProtoJSON reads an integer field given as a string of digits; only
// integer fields, and only digits.
func TestStrictQuotedIntegers(t *testing.T) {
	n := func(i int) *int { return &i }
	for in, want := range map[string]GetTaskRequest{
		`{"id":"t","historyLength":"3"}`:         {ID: "t", HistoryLength: n(3)},
		`{"id":"t","history_length":"-1"}`:       {ID: "t", HistoryLength: n(-1)},
		`{"id":"5","historyLength":4}`:           {ID: "5", HistoryLength: n(4)},
		`{"id":"t","historyLength":"007"}`:       {ID: "t", HistoryLength: n(7)},
		`{"id":"t","historyLength":null}`:        {ID: "t"},
		`{"historyLength":"2","id":"12"}`:        {ID: "12", HistoryLength: n(2)},
		`{ "id" : "t" , "historyLength" : "1" }`: {ID: "t", HistoryLength: n(1)},
	} {
		var r GetTaskRequest
		require.Nil(t, DecodeParams(json.RawMessage(in), &r), in)
		assert.Equal(t, want, r, in)
	}
	for _, in := range []string{`{"pageSize":"ten"}`, `{"pageSize":"1.5"}`, `{"pageSize":""}`, `{"pageSize":"-"}`,
		`{"pageSize":"99999999999999999999"}`, `{"page_size":" 1"}`, `{"pageSize":"1e2"}`} {
		var r ListTasksRequest
		e := DecodeParams(json.RawMessage(in), &r)
		if assert.NotNil(t, e, in) {
			assert.Equal(t, CodeInvalidParams, e.Code, in)
		}
	}
	var c SendMessageConfiguration
	require.NoError(t, json.Unmarshal([]byte(`{"history_length":"2","acceptedOutputModes":["5"]}`), &c))
	assert.Equal(t, n(2), c.HistoryLength)
	assert.Equal(t, []string{"5"}, c.AcceptedOutputModes)
	var m Message
	require.NoError(t, json.Unmarshal([]byte(`{"messageId":"42","metadata":{"n":"7"},"role":"ROLE_USER","parts":[{"text":"9"}]}`), &m))
	assert.Equal(t, "42", m.MessageID, "a string field keeps its digits as text")
	assert.Equal(t, Metadata{"n": "7"}, m.Metadata)
	assert.Equal(t, "9", m.Parts[0].Text)
}
