package a2a

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func nested(open, close string, n int, inner string) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

func TestParseRequestValid(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		id     string
		method string
		params string
	}{
		{"string id", `{"jsonrpc":"2.0","id":"abc","method":"SendMessage","params":{"a":1}}`, `"abc"`, "SendMessage", `{"a":1}`},
		{"number id", `{"jsonrpc":"2.0","id":42,"method":"GetTask","params":{}}`, `42`, "GetTask", `{}`},
		{"negative fractional id", `{"jsonrpc":"2.0","id":-1.5e3,"method":"GetTask"}`, `-1.5e3`, "GetTask", ``},
		{"zero id", `{"jsonrpc":"2.0","id":0,"method":"m"}`, `0`, "m", ``},
		{"empty string id", `{"jsonrpc":"2.0","id":"","method":"m"}`, `""`, "m", ``},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"m"}`, `null`, "m", ``},
		{"null params", `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, `1`, "m", `null`},
		{"surrounding whitespace", " \n\t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\n ", `1`, "m", ``},
		{"key order irrelevant", `{"params":{"x":[1]},"method":"message/send","id":"7","jsonrpc":"2.0"}`, `"7"`, "message/send", `{"x":[1]}`},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":1,"method":"m","extra":true}`, `1`, "m", ``},
		{"deep but allowed", `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`{"a":`, `}`, MaxDepth-1, `1`) + `}`, `1`, "m",
			nested(`{"a":`, `}`, MaxDepth-1, `1`)},
		{"brackets in strings do not nest", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + strings.Repeat("[{", 500) + `"}}`, `1`, "m",
			`{"s":"` + strings.Repeat("[{", 500) + `"}`},
		{"escaped quotes in strings", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\"[[[[\\","t":"\\\"{{{{"}}`, `1`, "m",
			`{"s":"\"[[[[\\","t":"\\\"{{{{"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(tc.body))
			require.Nil(t, err, "unexpected error %v", err)
			require.NotNil(t, req)
			assert.Equal(t, "2.0", req.JSONRPC)
			assert.Equal(t, tc.id, string(req.ID))
			assert.Equal(t, tc.method, req.Method)
			assert.Equal(t, tc.params, string(req.Params))
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	deep := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`[`, `]`, n-1, ``) + `}`
	}
	tests := []struct {
		name   string
		body   string
		code   int
		msg    string // substring of the message
		wantID string // id echoed back ("" = no request returned)
	}{
		{"empty body", ``, CodeInvalidRequest, "empty", ""},
		{"whitespace body", " \n\t ", CodeInvalidRequest, "empty", ""},
		{"invalid JSON", `{"jsonrpc":"2.0",`, CodeParseError, "Invalid JSON", ""},
		{"garbage", `hello`, CodeParseError, "", ""},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"m"} x`, CodeParseError, "", ""},
		{"two objects", `{"jsonrpc":"2.0","id":1,"method":"m"}{}`, CodeParseError, "", ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, CodeInvalidRequest, "batch", ""},
		{"empty batch", `[]`, CodeInvalidRequest, "batch", ""},
		{"string", `"hello"`, CodeInvalidRequest, "object", ""},
		{"number", `42`, CodeInvalidRequest, "object", ""},
		{"null", `null`, CodeInvalidRequest, "object", ""},
		{"true", `true`, CodeInvalidRequest, "object", ""},
		{"missing jsonrpc", `{"id":1,"method":"m"}`, CodeInvalidRequest, "jsonrpc", "1"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"m"}`, CodeInvalidRequest, "jsonrpc", "1"},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":1,"method":"m"}`, CodeInvalidRequest, "jsonrpc", "1"},
		{"jsonrpc null", `{"jsonrpc":null,"id":"x","method":"m"}`, CodeInvalidRequest, "jsonrpc", `"x"`},
		{"jsonrpc padded", `{"jsonrpc":" 2.0","id":1,"method":"m"}`, CodeInvalidRequest, "jsonrpc", "1"},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, "method", "1"},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, "method", "1"},
		{"null method", `{"jsonrpc":"2.0","id":1,"method":null}`, CodeInvalidRequest, "method", "1"},
		{"number method", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, "method", "1"},
		{"object method", `{"jsonrpc":"2.0","id":1,"method":{}}`, CodeInvalidRequest, "method", "1"},
		{"missing id", `{"jsonrpc":"2.0","method":"m"}`, CodeInvalidRequest, "id", ""},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, CodeInvalidRequest, "id must be", ""},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"m"}`, CodeInvalidRequest, "id must be", ""},
		{"bool id true", `{"jsonrpc":"2.0","id":true,"method":"m"}`, CodeInvalidRequest, "id must be", ""},
		{"bool id false", `{"jsonrpc":"2.0","id":false,"method":"m"}`, CodeInvalidRequest, "id must be", ""},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`, CodeInvalidParams, "params", "1"},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, CodeInvalidParams, "params", "1"},
		{"params number", `{"jsonrpc":"2.0","id":"a","method":"m","params":3}`, CodeInvalidParams, "params", `"a"`},
		{"params bool", `{"jsonrpc":"2.0","id":1,"method":"m","params":false}`, CodeInvalidParams, "params", "1"},
		{"nesting over MaxDepth", deep(MaxDepth + 1), CodeInvalidRequest, "nested", ""},
		{"nesting way over MaxDepth", deep(100000), CodeInvalidRequest, "nested", ""},
		{"nesting over MaxDepth, unbalanced", nested(`[`, ``, MaxDepth+1, ``), CodeInvalidRequest, "nested", ""},
		{"object nesting over MaxDepth", `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`{"a":`, `}`, MaxDepth, `1`) + `}`, CodeInvalidRequest, "nested", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(tc.body))
			require.NotNil(t, err, "expected an error")
			assert.Equal(t, tc.code, err.Code, "message: %s", err.Message)
			assert.Contains(t, err.Message, tc.msg)
			if tc.wantID == "" {
				if req != nil {
					assert.Empty(t, req.ID, "no id to echo")
				}
			} else {
				require.NotNil(t, req, "request returned so the id can be echoed")
				assert.Equal(t, tc.wantID, string(req.ID))
			}
			// Whatever happens, the error is a well-formed response.
			resp := NewError(idOf(req), err)
			b, mErr := json.Marshal(resp)
			require.NoError(t, mErr)
			assert.True(t, json.Valid(b))
		})
	}
}

func idOf(r *Request) json.RawMessage {
	if r == nil {
		return nil
	}
	return r.ID
}

func TestParseRequestDepthBoundary(t *testing.T) {
	// The body object is level 1; params adds levels below it.
	ok := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`[`, `]`, MaxDepth-1, ``) + `}`
	_, err := ParseRequest([]byte(ok))
	assert.Equal(t, CodeInvalidParams, err.Code, "depth exactly MaxDepth passes the depth check (then fails as array params)")

	okObj := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`{"a":`, `}`, MaxDepth-1, `1`) + `}`
	req, err := ParseRequest([]byte(okObj))
	require.Nil(t, err)
	assert.Equal(t, "m", req.Method)

	tooDeep := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + nested(`{"a":`, `}`, MaxDepth, `1`) + `}`
	_, err = ParseRequest([]byte(tooDeep))
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidRequest, err.Code)

	assert.False(t, depthExceeds([]byte(nested("[", "]", 3, "")), 3))
	assert.True(t, depthExceeds([]byte(nested("[", "]", 4, "")), 3))
	assert.False(t, depthExceeds([]byte(`["[[[[[[", "\\\"[[[[[["]`), 1))
	assert.False(t, depthExceeds([]byte(`[[],[],[],[]]`), 2), "siblings do not add up")
	assert.False(t, depthExceeds([]byte(`"\\"`), 0))
}

func TestResponses(t *testing.T) {
	b, err := json.Marshal(NewResult(json.RawMessage(`"a"`), map[string]int{"x": 1}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"a","result":{"x":1}}`, string(b))

	b, err = json.Marshal(NewError(json.RawMessage(`7`), ErrTaskNotFound))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Task not found"}}`, string(b))

	b, err = json.Marshal(NewError(nil, ErrParse))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Invalid JSON payload"}}`, string(b), "unknown id is null")

	b, err = json.Marshal(NewResult(nil, true))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"result":true}`, string(b))

	b, err = json.Marshal(NewError(json.RawMessage(`1`), &Error{Code: CodeInvalidParams, Message: "bad", Data: map[string]string{"field": "id"}}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":{"field":"id"}}}`, string(b))
}

func TestDecodeParams(t *testing.T) {
	t.Run("empty and null params decode as {}", func(t *testing.T) {
		for _, p := range []string{"", "null"} {
			var r GetTaskRequest
			assert.Nil(t, DecodeParams(json.RawMessage(p), &r))
			assert.Equal(t, GetTaskRequest{}, r)
		}
	})
	t.Run("ok", func(t *testing.T) {
		var r SendMessageRequest
		require.Nil(t, DecodeParams(json.RawMessage(`{"message":{"messageId":"m","role":"user","parts":[{"text":"x"}]}}`), &r))
		assert.Equal(t, "m", r.Message.MessageID)
	})

	tests := []struct {
		name   string
		params string
		v      func() any
		field  string // must appear in the message
	}{
		{"wrong type top-level field", `{"id":5}`, func() any { return &GetTaskRequest{} }, "id"},
		{"wrong type nested", `{"message":{"messageId":1}}`, func() any { return &SendMessageRequest{} }, "message.messageId"},
		{"wrong type parts", `{"message":{"parts":"x"}}`, func() any { return &SendMessageRequest{} }, "message.parts"},
		{"wrong type in part", `{"message":{"parts":[{"text":1}]}}`, func() any { return &SendMessageRequest{} }, "message.parts.text"},
		{"part not an object", `{"message":{"parts":["x"]}}`, func() any { return &SendMessageRequest{} }, "message.parts"},
		{"message not an object", `{"message":"x"}`, func() any { return &SendMessageRequest{} }, "message"},
		{"configuration wrong type", `{"configuration":[]}`, func() any { return &SendMessageRequest{} }, "configuration"},
		{"history length string", `{"configuration":{"historyLength":"x"}}`, func() any { return &SendMessageRequest{} }, "configuration.historyLength"},
		{"snake history length string", `{"configuration":{"history_length":"x"}}`, func() any { return &SendMessageRequest{} }, "configuration.history_length"},
		{"push wrapper url number", `{"configuration":{"pushNotificationConfig":{"pushNotificationConfig":{"url":5}}}}`, func() any { return &SendMessageRequest{} }, "url"},
		{"metadata array", `{"metadata":[]}`, func() any { return &SendMessageRequest{} }, "metadata"},
		{"number out of range", `{"message":{"metadata":{"a":1e400}}}`, func() any { return &SendMessageRequest{} }, "message.metadata"},
		{"unknown role", `{"message":{"role":"robot"}}`, func() any { return &SendMessageRequest{} }, "role"},
		{"unknown state", `{"status":"finished"}`, func() any { return &ListTasksRequest{} }, "state"},
		{"invalid part", `{"message":{"parts":[{}]}}`, func() any { return &SendMessageRequest{} }, "part"},
		{"two contents", `{"message":{"parts":[{"text":"a","url":"b"}]}}`, func() any { return &SendMessageRequest{} }, "part"},
		{"invalid base64", `{"message":{"parts":[{"raw":"!!"}]}}`, func() any { return &SendMessageRequest{} }, "part.raw"},
		{"invalid 0.3 base64", `{"message":{"parts":[{"kind":"file","file":{"bytes":"!!"}}]}}`, func() any { return &SendMessageRequest{} }, "part.file.bytes"},
		{"unknown part kind", `{"message":{"parts":[{"kind":"video"}]}}`, func() any { return &SendMessageRequest{} }, "part.kind"},
		{"params array", `[]`, func() any { return &SendMessageRequest{} }, "object"},
		{"params string", `"x"`, func() any { return &TaskIDRequest{} }, "object"},
		{"invalid JSON", `{"id":`, func() any { return &TaskIDRequest{} }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeParams(json.RawMessage(tc.params), tc.v())
			require.NotNil(t, err)
			assert.Equal(t, CodeInvalidParams, err.Code)
			assert.Contains(t, err.Message, tc.field)
			assertNoGoInternals(t, err.Message)
		})
	}
}

// assertNoGoInternals fails if msg shows Go type names or package paths.
func assertNoGoInternals(t *testing.T, msg string) {
	t.Helper()
	for _, bad := range []string{"plain", "a2a.", "struct", "Go ", "json:", "[]", "*", "map[", "float64", "int"} {
		assert.NotContains(t, msg, bad, "message leaks Go internals: %q", msg)
	}
}

func TestPublicFieldPath(t *testing.T) {
	assert.Equal(t, "message.parts.text", publicFieldPath("plain.message.plain.parts.text"))
	assert.Equal(t, "message", publicFieldPath(".plain.message"))
	assert.Equal(t, "", publicFieldPath("plain"))
	assert.Equal(t, "id", publicFieldPath("id"))
}

// A response carries exactly one of result and error, and always an id.
func TestResponseExactlyOneMember(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{"nil result still present", *NewResult(json.RawMessage(`1`), nil), `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"empty result", *NewResult(json.RawMessage(`1`), struct{}{}), `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"false result", *NewResult(json.RawMessage(`"x"`), false), `{"jsonrpc":"2.0","id":"x","result":false}`},
		{"error wins over result", Response{JSONRPC: "2.0", ID: json.RawMessage(`2`), Result: "r", Error: ErrInternal},
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}`},
		{"literal without id", Response{JSONRPC: "2.0", Result: 1}, `{"jsonrpc":"2.0","id":null,"result":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.resp)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
			bp, err := json.Marshal(&tc.resp)
			require.NoError(t, err)
			assert.Equal(t, string(b), string(bp), "pointer and value marshal the same")
		})
	}
	// A decoded response reads back.
	var back Response
	require.NoError(t, json.Unmarshal([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Task not found"}}`), &back))
	assert.ErrorIs(t, back.Error, ErrTaskNotFound)
	assert.Equal(t, "3", string(back.ID))
}
