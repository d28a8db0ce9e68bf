package a2a

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	a2a03 "github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The project's own JSON-RPC examples (testdata/examples, see its README)
// are checked twice: against an outside reference of the protocol (the 1.0
// proto descriptor; the 0.3 model and the 0.3 reference SDK), so that they
// are right, and against this package, so that it reads them and writes
// back what it read.

// exchange is one example file: a request and the answers to it.
type exchange struct {
	Request   json.RawMessage   `json:"request"`
	Responses []json.RawMessage `json:"responses"`
}

type exampleFile struct {
	name string
	ex   exchange
}

func loadExamples(t *testing.T, version string) []exampleFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "examples", version, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no examples for %s", version)
	var out []exampleFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		var ex exchange
		require.NoError(t, dec.Decode(&ex), p)
		require.NotEmpty(t, ex.Request, "%s: no request", p)
		require.NotEmpty(t, ex.Responses, "%s: no responses", p)
		out = append(out, exampleFile{name: filepath.Base(p), ex: ex})
	}
	return out
}

// exampleResponse is one JSON-RPC answer of an example.
type exampleResponse struct {
	result json.RawMessage // "null" for a null result
	err    *Error
}

func parseExampleResponse(t *testing.T, b []byte, id json.RawMessage) exampleResponse {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	assert.JSONEq(t, `"2.0"`, string(m["jsonrpc"]))
	assert.JSONEq(t, string(id), string(m["id"]), "a response echoes the request id")
	res, hasResult := m["result"]
	e, hasError := m["error"]
	require.True(t, hasResult != hasError, "exactly one of result and error: %s", b)
	for k := range m {
		assert.Contains(t, []string{"jsonrpc", "id", "result", "error"}, k)
	}
	if hasResult {
		return exampleResponse{result: res}
	}
	var out Error
	dec := json.NewDecoder(strings.NewReader(string(e)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&out), "%s", e)
	return exampleResponse{err: &out}
}

// checkExampleError: the code is one of the package's, and 1.0 details are
// the google.rpc.ErrorInfo the package itself would attach.
func checkExampleError(t *testing.T, v Version, e *Error) {
	t.Helper()
	reason, known := errorReasons[e.Code]
	require.True(t, known, "error code %d is not one of the package's", e.Code)
	assert.NotEmpty(t, e.Message)
	if v == V03 {
		if e.Data != nil {
			_, isObj := e.Data.(map[string]any)
			assert.True(t, isObj, "0.3 error data is an object: %#v", e.Data)
		}
		return
	}
	require.NotNil(t, e.Data, "1.0 errors carry details")
	var details []ErrorInfo
	require.NoError(t, json.Unmarshal(mustMarshal(t, e.Data), &details))
	require.Len(t, details, 1)
	assert.Equal(t, reason, details[0].Reason)
	ours := (&Error{Code: e.Code, Message: e.Message}).WithErrorInfo()
	want := ours.Data.([]ErrorInfo)[0]
	want.Metadata = details[0].Metadata
	assert.Equal(t, want, details[0], "the package writes the same ErrorInfo")
}

// --- 1.0 ---------------------------------------------------------------

// protoParse reads b strictly as the proto message md (unknown fields,
// bad enum values and wrong types are errors).
func protoParse(t *testing.T, md protoreflect.MessageDescriptor, b []byte) proto.Message {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	require.NoError(t, err)
	m := mt.New().Interface()
	require.NoError(t, protojson.Unmarshal(b, m), "as %s: %s", md.FullName(), b)
	return m
}

// paramsTargetV10 is the package's type for a 1.0 method's params; nil for
// the push get/list/delete params, which the edge reads with its own type.
func paramsTargetV10(op Op) any {
	switch op {
	case OpSend, OpStream:
		return &SendMessageRequest{}
	case OpGet:
		return &GetTaskRequest{}
	case OpList:
		return &ListTasksRequest{}
	case OpCancel, OpSubscribe:
		return &TaskIDRequest{}
	case OpPushSet:
		return &TaskPushNotificationConfig{}
	}
	return nil
}

// pushConfigList is the 1.0 ListTaskPushNotificationConfigs result.
type pushConfigList struct {
	Configs       []TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                       `json:"nextPageToken"`
}

// decodeResultV10 reads a 1.0 result with the package's types.
func decodeResultV10(t *testing.T, op Op, b []byte) any {
	t.Helper()
	var v any
	switch op {
	case OpSend, OpStream, OpSubscribe:
		r, err := DecodeResult(b)
		require.NoError(t, err, "%s", b)
		return r
	case OpGet, OpCancel:
		v = &Task{}
	case OpList:
		v = &ListTasksResponse{}
	case OpPushSet, OpPushGet:
		v = &TaskPushNotificationConfig{}
	case OpPushList:
		v = &pushConfigList{}
	case OpExtendedCard:
		v = &AgentCard{}
	case OpPushDelete:
		v = &struct{}{}
	}
	require.NotNil(t, v, "op %d", op)
	require.NoError(t, json.Unmarshal(b, v), "%s", b)
	return v
}

// walkJSON calls fn on every object in a JSON value, with the key it sits
// under ("" at the top and in arrays under no key).
func walkJSON(v any, key string, fn func(key string, obj map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(key, x)
		for k, c := range x {
			walkJSON(c, k, fn)
		}
	case []any:
		for _, c := range x {
			walkJSON(c, key, fn)
		}
	}
}

func TestProtocolExamplesV10(t *testing.T) {
	svc := protoV10(t).Services().Get(0)
	rpcsWithResult := map[string]bool{}
	shapes := map[string]bool{} // part members and stream-response members seen
	codes := map[int]bool{}
	for _, f := range loadExamples(t, "v1.0") {
		t.Run(f.name, func(t *testing.T) {
			req, perr := ParseRequest(f.ex.Request)
			require.Nil(t, perr, "%s", f.ex.Request)
			assert.Equal(t, req.Method+".json", f.name, "a 1.0 example file is named after its method")
			op, v, ok := LookupMethod(req.Method)
			require.True(t, ok, req.Method)
			require.Equal(t, V10, v)
			md := svc.Methods().ByName(protoreflect.Name(req.Method))
			require.NotNil(t, md, "rpc %s", req.Method)

			// The params are the rpc's input message, and the package reads
			// them without losing anything.
			in := protoParse(t, md.Input(), req.Params)
			if target := paramsTargetV10(op); target != nil {
				require.Nil(t, DecodeParams(req.Params, target), "%s", req.Params)
				back := mustMarshal(t, target)
				assert.True(t, proto.Equal(in, protoParse(t, md.Input(), back)), "params changed in a round trip:\n%s\n%s", req.Params, back)
			}

			for i, raw := range f.ex.Responses {
				resp := parseExampleResponse(t, raw, req.ID)
				if resp.err != nil {
					codes[resp.err.Code] = true
					checkExampleError(t, V10, resp.err)
					continue
				}
				rpcsWithResult[req.Method] = true
				if md.IsStreamingServer() {
					assert.Equal(t, protoreflect.FullName("lf.a2a.v1.StreamResponse"), md.Output().FullName())
				}
				out := protoParse(t, md.Output(), resp.result)
				ours := decodeResultV10(t, op, resp.result)
				back := mustMarshal(t, ours)
				assert.True(t, proto.Equal(out, protoParse(t, md.Output(), back)), "response %d changed in a round trip:\n%s\n%s", i, resp.result, back)
				var g any
				require.NoError(t, json.Unmarshal(resp.result, &g))
				if op.Streaming() || op == OpSend {
					for k := range g.(map[string]any) {
						shapes["result."+k] = true
					}
				}
			}
			var g any
			require.NoError(t, json.Unmarshal(f.ex.Request, &g))
			for _, r := range f.ex.Responses {
				var rg any
				require.NoError(t, json.Unmarshal(r, &rg))
				g = []any{g, rg}
			}
			walkJSON(g, "", func(key string, obj map[string]any) {
				if key != "parts" {
					return
				}
				for _, member := range []string{"text", "raw", "url", "data"} {
					if _, ok := obj[member]; ok {
						shapes["part."+member] = true
					}
				}
			})
		})
	}
	for i := 0; i < svc.Methods().Len(); i++ {
		name := string(svc.Methods().Get(i).Name())
		assert.True(t, rpcsWithResult[name], "no 1.0 example with a result for %s", name)
	}
	for _, s := range []string{"part.text", "part.raw", "part.url", "part.data",
		"result.task", "result.message", "result.statusUpdate", "result.artifactUpdate"} {
		assert.True(t, shapes[s], "no 1.0 example has %s", s)
	}
	assert.GreaterOrEqual(t, len(codes), 5, "1.0 examples cover several error codes")
}

// --- 0.3 ---------------------------------------------------------------

// v03Method names the 0.3 model's definitions of a method's params and
// result ("" for none: no params, or a null result).
type v03Method struct{ params, result string }

var v03Methods = map[string]v03Method{
	"message/send":                        {"MessageSendParams", "SendMessageResult"},
	"message/stream":                      {"MessageSendParams", "StreamEvent"},
	"tasks/get":                           {"TaskQueryParams", "Task"},
	"tasks/cancel":                        {"TaskIdParams", "Task"},
	"tasks/resubscribe":                   {"TaskIdParams", "StreamEvent"},
	"tasks/pushNotificationConfig/set":    {"TaskPushNotificationConfig", "TaskPushNotificationConfig"},
	"tasks/pushNotificationConfig/get":    {"GetTaskPushNotificationConfigParams", "TaskPushNotificationConfig"},
	"tasks/pushNotificationConfig/list":   {"ListTaskPushNotificationConfigParams", "TaskPushNotificationConfigs"},
	"tasks/pushNotificationConfig/delete": {"DeleteTaskPushNotificationConfigParams", ""},
	"agent/getAuthenticatedExtendedCard":  {"", "AgentCard"},
}

// v02Aliases are the 0.2 spellings the method table also accepts.
var v02Aliases = []string{"tasks/send", "tasks/sendSubscribe", "tasks/pushNotification/set", "tasks/pushNotification/get"}

// refDecodeV03 reads a value of a 0.3 model definition with the 0.3
// reference SDK (a2a-go v0.3), which tells parts and events apart by kind.
var refDecodeV03 = map[string]func([]byte) error{
	"MessageSendParams":                      func(b []byte) error { return json.Unmarshal(b, &a2a03.MessageSendParams{}) },
	"TaskQueryParams":                        func(b []byte) error { return json.Unmarshal(b, &a2a03.TaskQueryParams{}) },
	"TaskIdParams":                           func(b []byte) error { return json.Unmarshal(b, &a2a03.TaskIDParams{}) },
	"TaskPushNotificationConfig":             func(b []byte) error { return json.Unmarshal(b, &a2a03.TaskPushConfig{}) },
	"GetTaskPushNotificationConfigParams":    func(b []byte) error { return json.Unmarshal(b, &a2a03.GetTaskPushConfigParams{}) },
	"ListTaskPushNotificationConfigParams":   func(b []byte) error { return json.Unmarshal(b, &a2a03.ListTaskPushConfigParams{}) },
	"DeleteTaskPushNotificationConfigParams": func(b []byte) error { return json.Unmarshal(b, &a2a03.DeleteTaskPushConfigParams{}) },
	"Task":                                   func(b []byte) error { return json.Unmarshal(b, &a2a03.Task{}) },
	"TaskPushNotificationConfigs":            func(b []byte) error { return json.Unmarshal(b, &[]a2a03.TaskPushConfig{}) },
	"AgentCard":                              func(b []byte) error { return json.Unmarshal(b, &a2a03.AgentCard{}) },
	"SendMessageResult":                      func(b []byte) error { _, err := a2a03.UnmarshalEventJSON(b); return err },
	"StreamEvent":                            func(b []byte) error { _, err := a2a03.UnmarshalEventJSON(b); return err },
}

func TestV03MethodTableMatchesExamples(t *testing.T) {
	var want []string
	for m := range v03Methods {
		want = append(want, m)
	}
	want = append(want, v02Aliases...)
	var got []string
	for name, m := range methods {
		if m.version == V03 {
			got = append(got, name)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got, "the 0.3 methods the examples cover are the ones the package serves")
}

func TestProtocolExamplesV03(t *testing.T) {
	v := newSchemaValidator(t)
	withResult := map[string]bool{}
	kinds := map[string]bool{}
	codes := map[int]bool{}
	for _, f := range loadExamples(t, "v0.3") {
		t.Run(f.name, func(t *testing.T) {
			req, perr := ParseRequest(f.ex.Request)
			require.Nil(t, perr, "%s", f.ex.Request)
			assert.Equal(t, strings.ReplaceAll(req.Method, "/", "_")+".json", f.name, "a 0.3 example file is named after its method")
			op, ver, ok := LookupMethod(req.Method)
			require.True(t, ok, req.Method)
			require.Equal(t, V03, ver)
			m, ok := v03Methods[req.Method]
			require.True(t, ok, "%s is not a 0.3 method (0.2 aliases have no examples)", req.Method)

			// Params: the 0.3 model and the reference SDK accept them, and
			// the package reads them without losing anything.
			if m.params == "" {
				assert.Empty(t, req.Params, "%s takes no params", req.Method)
			} else {
				assert.Empty(t, v.validateDef(m.params, decodeGeneric(t, req.Params)), "params: %s", req.Params)
				require.NoError(t, refDecodeV03[m.params](req.Params), "reference SDK reading params %s", req.Params)
				checkParamsV03(t, op, req.Params)
			}

			for i, raw := range f.ex.Responses {
				resp := parseExampleResponse(t, raw, req.ID)
				if resp.err != nil {
					codes[resp.err.Code] = true
					checkExampleError(t, V03, resp.err)
					continue
				}
				withResult[req.Method] = true
				if m.result == "" {
					assert.JSONEq(t, "null", string(resp.result), "response %d", i)
					continue
				}
				assert.Empty(t, v.validateDef(m.result, decodeGeneric(t, resp.result)), "response %d: %s", i, resp.result)
				require.NoError(t, refDecodeV03[m.result](resp.result), "reference SDK reading response %d: %s", i, resp.result)
				checkResultV03(t, v, op, resp.result)
				walkJSON(decodeGeneric(t, resp.result), "", func(key string, obj map[string]any) {
					if k, ok := obj["kind"].(string); ok {
						kinds[k] = true
					}
					if key == "file" {
						for _, member := range []string{"bytes", "uri"} {
							if _, ok := obj[member]; ok {
								kinds["file."+member] = true
							}
						}
					}
				})
			}
			walkJSON(decodeGeneric(t, f.ex.Request), "", func(key string, obj map[string]any) {
				if k, ok := obj["kind"].(string); ok {
					kinds[k] = true
				}
				if key == "file" {
					for _, member := range []string{"bytes", "uri"} {
						if _, ok := obj[member]; ok {
							kinds["file."+member] = true
						}
					}
				}
			})
		})
	}
	for name := range v03Methods {
		assert.True(t, withResult[name], "no 0.3 example with a result for %s", name)
	}
	for _, k := range []string{"task", "message", "status-update", "artifact-update", "text", "file", "data", "file.bytes", "file.uri"} {
		assert.True(t, kinds[k], "no 0.3 example has kind %s", k)
	}
	assert.GreaterOrEqual(t, len(codes), 5, "0.3 examples cover several error codes")
}

// checkParamsV03 decodes 0.3 params with the package and checks that what
// it read is what the example says. The push get/list/delete params are
// the edge's to read (edge/push.go), not this package's.
func checkParamsV03(t *testing.T, op Op, params json.RawMessage) {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(params, &fields))
	switch op {
	case OpSend, OpStream:
		var r SendMessageRequest
		require.Nil(t, DecodeParams(params, &r), "%s", params)
		back := r.ToV03()
		assert.JSONEq(t, string(fields["message"]), string(mustMarshal(t, back.Message)), "message read and written back")
		if c, ok := fields["configuration"]; ok {
			assert.JSONEq(t, string(c), string(mustMarshal(t, back.Configuration)), "configuration read and written back")
		}
		if md, ok := fields["metadata"]; ok {
			assert.JSONEq(t, string(md), string(mustMarshal(t, back.Metadata)))
		}
	case OpGet:
		var r GetTaskRequest
		require.Nil(t, DecodeParams(params, &r), "%s", params)
		assert.JSONEq(t, string(params), string(mustMarshal(t, r)))
	case OpCancel, OpSubscribe:
		var r TaskIDRequest
		require.Nil(t, DecodeParams(params, &r), "%s", params)
		assert.JSONEq(t, string(params), string(mustMarshal(t, r)))
	case OpPushSet:
		var r TaskPushNotificationConfig
		require.Nil(t, DecodeParams(params, &r), "%s", params)
		assert.JSONEq(t, string(params), string(mustMarshal(t, r.ToV03())))
	}
}

// checkResultV03 decodes a 0.3 result with the package and checks that
// writing it back for a 0.3 client gives the same JSON.
func checkResultV03(t *testing.T, v *schemaValidator, op Op, result json.RawMessage) {
	t.Helper()
	switch op {
	case OpSend, OpStream, OpSubscribe:
		r, err := DecodeResult(result)
		require.NoError(t, err, "%s", result)
		assert.JSONEq(t, string(result), string(mustMarshal(t, r.ToV03())))
	case OpGet, OpCancel:
		var task Task
		require.NoError(t, json.Unmarshal(result, &task))
		assert.JSONEq(t, string(result), string(mustMarshal(t, task.ToV03())))
	case OpPushSet, OpPushGet:
		var c TaskPushNotificationConfig
		require.NoError(t, json.Unmarshal(result, &c))
		assert.JSONEq(t, string(result), string(mustMarshal(t, c.ToV03())))
	case OpPushList:
		var cs []TaskPushNotificationConfig
		require.NoError(t, json.Unmarshal(result, &cs))
		back := make([]any, len(cs))
		for i := range cs {
			back[i] = cs[i].ToV03()
		}
		assert.JSONEq(t, string(result), string(mustMarshal(t, back)))
	case OpExtendedCard:
		var c AgentCard
		require.NoError(t, json.Unmarshal(result, &c))
		var want, got map[string]any
		require.NoError(t, json.Unmarshal(result, &want))
		require.NoError(t, json.Unmarshal(mustMarshal(t, c), &got))
		for k, val := range want {
			assert.Equal(t, val, got[k], "card field %s read and written back", k)
		}
		assert.Empty(t, v.validateDef("AgentCard", toGeneric(t, c)), "the card written back is valid 0.3")
	default:
		t.Fatalf("no result check for op %d", op)
	}
}

// Wrong parts that an outside reference rejects, the package rejects too,
// with an error naming the part field.
func TestProtocolExamplesRejectedParts(t *testing.T) {
	v := newSchemaValidator(t)
	partMD := protoV10(t).Messages().ByName("Part")
	require.NotNil(t, partMD)
	tests := []struct {
		name, version, part, field string
		modelOnlyString            bool // the 0.3 model types bytes as a plain string
	}{
		{"0.3 file content under data", "0.3", `{"kind":"file","file":{"data":"aGk=","mimeType":"text/plain"}}`, "part.file", false},
		{"0.3 file bytes not base64", "0.3", `{"kind":"file","file":{"bytes":"aGk...","name":"x"}}`, "part.file.bytes", true},
		{"0.3 proto-style fileWithBytes", "0.3", `{"kind":"file","file":{"fileWithBytes":"aGk="}}`, "part.file", false},
		{"1.0 raw not base64", "1.0", `{"raw":"iVBOR...","mediaType":"image/png"}`, "part.raw", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.modelOnlyString:
			case tc.version == "0.3":
				assert.NotEmpty(t, v.validateDef("Part", decodeGeneric(t, []byte(tc.part))), "the 0.3 model rejects it")
			default:
				mt, err := protoregistry.GlobalTypes.FindMessageByName(partMD.FullName())
				require.NoError(t, err)
				assert.Error(t, protojson.Unmarshal([]byte(tc.part), mt.New().Interface()), "the 1.0 proto rejects it")
			}
			params := `{"message":{"messageId":"m","role":"` + map[string]string{"0.3": "user", "1.0": "ROLE_USER"}[tc.version] + `","parts":[` + tc.part + `]}}`
			err := DecodeParams(json.RawMessage(params), &SendMessageRequest{})
			require.NotNil(t, err, "the package rejects %s", tc.part)
			assert.Equal(t, CodeInvalidParams, err.Code)
			assert.Contains(t, err.Message, tc.field)
		})
	}
}
