package a2a

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var requestSeeds = []string{
	``,
	` `,
	`{}`,
	`[]`,
	`null`,
	`"x"`,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"t","history_length":2}}`,
	`{"jsonrpc":"2.0","id":-1.5e3,"method":"GetTask","params":null}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"m"}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"[[[[{{{{\"\\"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat(`{"a":`, 63) + `1` + strings.Repeat(`}`, 63) + `}`,
	`{"JSONRPC":"2.0","ID":1,"METHOD":"m"}`,
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"} trailing`,
	"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
	`{"jsonrpc":"2.0","id":"\ud800","method":"\u0000"}`,
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if err != nil {
			require.Contains(t, []int{CodeParseError, CodeInvalidRequest, CodeInvalidParams}, err.Code, "message %q", err.Message)
			require.NotEmpty(t, err.Message)
			// The error can always be sent back.
			var id json.RawMessage
			if req != nil {
				id = req.ID
				if len(id) > 0 {
					require.True(t, json.Valid(id), "echoed id %q is valid JSON", id)
				}
			}
			b, mErr := json.Marshal(NewError(id, err))
			require.NoError(t, mErr)
			require.True(t, json.Valid(b))
			return
		}
		require.NotNil(t, req)
		require.Equal(t, "2.0", req.JSONRPC)
		require.NotEmpty(t, req.Method)
		require.True(t, json.Valid(req.ID), "id %q", req.ID)
		var idVal any
		require.NoError(t, json.Unmarshal(req.ID, &idVal))
		switch idVal.(type) {
		case string, float64, nil:
		default:
			t.Fatalf("id of type %T accepted: %s", idVal, req.ID)
		}
		if p := bytes.TrimSpace(req.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			var obj map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(p, &obj), "params %q is an object", p)
		}
		require.False(t, depthExceeds(body, MaxDepth))
		// An accepted request re-encodes to an accepted request.
		b, mErr := json.Marshal(req)
		require.NoError(t, mErr)
		again, err2 := ParseRequest(b)
		require.Nil(t, err2, "re-encoded %s", b)
		require.Equal(t, req.Method, again.Method)
	})
}

var partSeeds = []string{
	`{"text":"hi"}`,
	`{"text":""}`,
	`{"raw":"aGVsbG8=","filename":"h.txt","mediaType":"text/plain"}`,
	`{"raw":"_-8"}`,
	`{"raw":"!!"}`,
	`{"url":"https://x.test/a.png","mediaType":"image/png"}`,
	`{"data":{"a":[1,2,{"b":null}]},"metadata":{"k":"v"}}`,
	`{"data":"<&>"}`,
	`{"data":null}`,
	`{"text":"a","url":"b"}`,
	`{}`,
	`null`,
	`[]`,
	`{"kind":"text","text":"hi"}`,
	`{"type":"text","text":"hi"}`,
	`{"kind":"file","file":{"name":"a","mimeType":"text/plain","bytes":"aGk="}}`,
	`{"kind":"file","file":{"uri":"https://x"}}`,
	`{"type":"file","file":{"bytes_data":"aGk","mime_type":"text/plain"}}`,
	`{"kind":"data","data":{"x":1}}`,
	`{"kind":"image"}`,
	`{"kind":null,"text":"x"}`,
	`{"file":{"url":"u"}}`,
	`{"Kind":"TEXT","TEXT":"x"}`,
	`{"text":"\ud800\u2028"}`,
	`{"metadata":{"n":-0},"text":"x"}`,
	`{"data":1e400}`,
}

func FuzzPartUnmarshal(f *testing.F) {
	for _, s := range partSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var p Part
		if err := json.Unmarshal(in, &p); err != nil {
			return
		}
		require.Contains(t, []PartKind{PartText, PartRaw, PartURL, PartData}, p.Kind)
		b, err := json.Marshal(p)
		require.NoError(t, err, "decoded part %#v must marshal", p)
		var back Part
		require.NoError(t, json.Unmarshal(b, &back), "re-marshalled %s", b)
		// An empty metadata object is omitted on output; nil and {} are the same.
		if len(p.Metadata) == 0 {
			p.Metadata = nil
		}
		assert.Equal(t, p, back, "in %s, re-marshalled %s", in, b)

		// The 0.3 encoding is always valid JSON our own decoder reads.
		v3, err := json.Marshal(p.ToV03())
		require.NoError(t, err)
		var fromV03 Part
		require.NoError(t, json.Unmarshal(v3, &fromV03), "0.3 form %s", v3)
		if p.Kind != PartData {
			assert.Equal(t, p.Kind, fromV03.Kind)
		}
	})
}

var paramsSeeds = []string{
	``,
	`null`,
	`{}`,
	`[]`,
	`"x"`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":3,"returnImmediately":true}}`,
	`{"message":{"kind":"message","messageId":"m","contextId":"c","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"https://x"}},{"kind":"data","data":{"a":1}}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"u","authentication":{"schemes":["Bearer"]}}}}`,
	`{"id":"t","sessionId":"s","message":{"role":"user","parts":[{"type":"text","text":"hi"}]},"acceptedOutputModes":["text"],"historyLength":1,"pushNotification":{"url":"u"}}`,
	`{"message":{"message_id":"m","context_id":"c","task_id":"t","role":"agent","parts":[],"reference_task_ids":["r"]}}`,
	`{"configuration":{"accepted_output_modes":["a"],"history_length":2,"return_immediately":true,"task_push_notification_config":{"task_id":"t","url":"u"}}}`,
	`{"configuration":{"pushNotificationConfig":{"pushNotificationConfig":{"url":5}}}}`,
	`{"message":{"messageId":1}}`,
	`{"message":{"parts":[{"raw":"!!"}]}}`,
	`{"message":{"role":3}}`,
	`{"message":"x"}`,
	`{"metadata":{"a":1e400}}`,
	`{"message":{"parts":[null]}}`,
}

func FuzzSendMessageRequest(f *testing.F) {
	for _, s := range paramsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		var r SendMessageRequest
		err := DecodeParams(params, &r)
		for _, v := range []any{&GetTaskRequest{}, &TaskIDRequest{}, &ListTasksRequest{}, &TaskPushNotificationConfig{}} {
			if e := DecodeParams(params, v); e != nil {
				require.Equal(t, CodeInvalidParams, e.Code)
			}
		}
		if err != nil {
			require.Equal(t, CodeInvalidParams, err.Code)
			for _, bad := range []string{"plain", "a2a.", "struct {", "json:", "Go value"} {
				require.NotContains(t, err.Message, bad, "message leaks Go internals")
			}
			if strings.Contains(err.Message, "must be a JSON object") {
				require.False(t, bytes.HasPrefix(bytes.TrimSpace(params), []byte("{")), "object params %s reported as not an object", params)
			}
			return
		}
		// A decoded request marshals, and its 1.0 form is a fixed point.
		b, mErr := json.Marshal(r)
		require.NoError(t, mErr, "decoded %#v", r)
		var r2 SendMessageRequest
		require.Nil(t, DecodeParams(b, &r2), "re-marshalled %s", b)
		b2, mErr := json.Marshal(r2)
		require.NoError(t, mErr)
		var r3 SendMessageRequest
		require.Nil(t, DecodeParams(b2, &r3))
		assert.Equal(t, r2, r3, "1.0 form %s", b2)
		if r.Message != nil {
			_, mErr = json.Marshal(r.Message.ToV03())
			require.NoError(t, mErr)
		}
	})
}

var streamSeeds = []string{
	`{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`,
	`{"task":{"id":"t","contextId":"c","status":{"state":"input-required","message":{"messageId":"m","role":"agent","parts":[{"text":"?"}]}},
		"artifacts":[{"artifactId":"a","parts":[{"raw":""},{"url":""},{"data":[1]},{"data":null},{"kind":"data","data":{"a":1}}]}],
		"history":[{"messageId":"u","role":"ROLE_USER","parts":[]}],"metadata":{"k":"v"}}}`,
	`{"message":{"messageId":"m","parts":[{"kind":"file","file":{"bytes":"aGk=","name":"n"}}]}}`,
	`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"auth-required"}}}`,
	`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":null}}}`,
	`{"message":{"messageId":"m","parts":[{"data":1e400},{"data":-0.0},{"text":"x","metadata":{"n":1e300}}]}}`,
	`{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a"},"append":true,"lastChunk":true}}`,
	`{}`,
}

// Whatever stream item we can decode, its 0.3 encoding satisfies the 0.3
// schema (the object a 0.3 client receives on message/send or a stream).
func FuzzStreamResponseToV03(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	v := newSchemaValidator(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		var r StreamResponse
		if json.Unmarshal(in, &r) != nil {
			return
		}
		out := r.ToV03()
		var def string
		switch out.(type) {
		case *TaskV03:
			def = "Task"
		case *MessageV03:
			def = "Message"
		case *StatusUpdateV03:
			def = "TaskStatusUpdateEvent"
		case *ArtifactUpdateV03:
			def = "TaskArtifactUpdateEvent"
		case nil:
			require.Nil(t, r.Task)
			require.Nil(t, r.Message)
			require.Nil(t, r.StatusUpdate)
			require.Nil(t, r.ArtifactUpdate)
			return
		default:
			t.Fatalf("unexpected %T", out)
		}
		b, err := json.Marshal(out)
		require.NoError(t, err)
		require.Empty(t, v.validateDef(def, decodeGeneric(t, b)), "0.3 %s: %s", def, b)
	})
}
