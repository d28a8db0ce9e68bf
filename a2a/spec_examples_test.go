package a2a

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var jsonBlock = regexp.MustCompile("(?s)```json\n(.*?)```")

// specExamples returns the JSON code blocks of a specification.md that
// parse as JSON objects (some blocks are illustrative, with comments).
func specExamples(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]json.RawMessage
	for _, m := range jsonBlock.FindAllSubmatch(b, -1) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(m[1], &obj) == nil {
			out = append(out, obj)
		}
	}
	require.NotEmpty(t, out)
	return out
}

func paramsTarget(op Op) any {
	switch op {
	case OpSend, OpStream:
		return &SendMessageRequest{}
	case OpGet:
		return &GetTaskRequest{}
	case OpList:
		return &ListTasksRequest{}
	case OpCancel, OpSubscribe:
		return &TaskIDRequest{}
	case OpPushSet, OpPushGet, OpPushList, OpPushDelete:
		return &TaskPushNotificationConfig{}
	}
	return &struct{}{}
}

// Every request and result example in both specifications decodes.
func TestSpecExamplesDecode(t *testing.T) {
	v := newSchemaValidator(t)
	for _, spec := range []string{specV10Path, specV03Path} {
		var requests, results, objects int
		for i, ex := range specExamples(t, spec) {
			body, err := json.Marshal(ex)
			require.NoError(t, err)
			name := fmt.Sprintf("%s#%d", strings.TrimPrefix(spec, specDir+"/"), i)
			t.Run(name, func(t *testing.T) {
				switch {
				case ex["method"] != nil:
					requests++
					req, perr := ParseRequest(body)
					require.Nil(t, perr, "%s", body)
					op, _, ok := LookupMethod(req.Method)
					require.True(t, ok, req.Method)
					derr := DecodeParams(req.Params, paramsTarget(op))
					if strings.Contains(string(req.Params), `"data": "<base64`) || strings.Contains(string(req.Params), `"data":"\u003cbase64`) {
						// The 0.3 message/stream example puts a placeholder
						// under file.data instead of file.bytes.
						require.NotNil(t, derr)
						assert.Contains(t, derr.Message, "part.file")
						return
					}
					assert.Nil(t, derr, "%s", req.Params)
				case ex["result"] != nil:
					results++
					var kind struct {
						Kind string `json:"kind"`
					}
					require.NoError(t, json.Unmarshal(ex["result"], &kind))
					switch kind.Kind {
					case "task":
						var task Task
						require.NoError(t, json.Unmarshal(ex["result"], &task))
						assert.NotEmpty(t, task.ID)
						assert.True(t, task.Status.State.Valid(), "state %q", task.Status.State)
						// What we decode, we re-encode as valid 0.3.
						assert.Empty(t, v.validateDef("Task", toGeneric(t, task.ToV03())))
					case "message":
						var m Message
						require.NoError(t, json.Unmarshal(ex["result"], &m))
						assert.NotEmpty(t, m.Parts)
					default:
						t.Fatalf("result of unexpected kind %q", kind.Kind)
					}
				case ex["error"] != nil:
					var resp struct {
						Error *Error `json:"error"`
					}
					require.NoError(t, json.Unmarshal(body, &resp))
					assert.NotZero(t, resp.Error.Code)
				case ex["parts"] != nil && ex["artifactId"] != nil:
					objects++
					var a Artifact
					require.NoError(t, json.Unmarshal(body, &a))
					assert.NotEmpty(t, a.Parts)
				case ex["parts"] != nil:
					objects++
					var m Message
					require.NoError(t, json.Unmarshal(body, &m))
					assert.NotEmpty(t, m.Parts)
				case ex["text"] != nil || ex["raw"] != nil || ex["kind"] != nil:
					objects++
					var p Part
					err := json.Unmarshal(body, &p)
					if strings.Contains(string(body), "...") || strings.Contains(string(body), "fileWithBytes") {
						// Placeholder content ("iVBORw0KGgo...") is not base64, and the
						// migration guide's "fileWithBytes" is not a 0.3 field.
						var fe *FieldError
						assert.ErrorAs(t, err, &fe)
						return
					}
					require.NoError(t, err)
				case ex["name"] != nil && ex["capabilities"] != nil:
					objects++
					var c AgentCard
					require.NoError(t, json.Unmarshal(body, &c))
					assert.NotEmpty(t, c.Name)
				}
			})
		}
		assert.NotZero(t, requests, spec)
		assert.NotZero(t, results+objects, spec)
	}
}
