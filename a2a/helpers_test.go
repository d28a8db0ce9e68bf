package a2a

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Shared fixtures and helpers for the package's tests.

// specDir holds the protocol specifications (outside the module).
const (
	specDir       = "../../shared/spec"
	protoPath     = specDir + "/v1.0.1/a2a.proto"
	schemaV03Path = specDir + "/v0.3.0/a2a.json"
	specV10Path   = specDir + "/v1.0.1/specification.md"
	specV03Path   = specDir + "/v0.3.0/specification.md"
)

func intPtr(i int) *int { return &i }

func sampleMessage() Message {
	return Message{
		MessageID:        "m-1",
		ContextID:        "ctx-1",
		TaskID:           "task-1",
		Role:             RoleUser,
		Parts:            []Part{TextPart("hello"), {Kind: PartURL, URL: "https://x.test/f.png", MediaType: "image/png", Filename: "f.png"}},
		Metadata:         Metadata{"k": "v", "n": 1.5, "b": true},
		Extensions:       []string{"https://ext.test/a"},
		ReferenceTaskIDs: []string{"task-0"},
	}
}

func sampleArtifact() Artifact {
	return Artifact{
		ArtifactID:  "art-1",
		Name:        "report",
		Description: "the report",
		Parts:       []Part{TextPart("chunk"), {Kind: PartRaw, Raw: []byte{0, 1, 2, 0xff}, MediaType: "application/octet-stream", Filename: "b.bin"}, DataPart(map[string]any{"x": 1})},
		Metadata:    Metadata{"a": "b"},
		Extensions:  []string{"https://ext.test/b"},
	}
}

func sampleTask() Task {
	agentMsg := Message{MessageID: "m-2", ContextID: "ctx-1", TaskID: "task-1", Role: RoleAgent, Parts: []Part{TextPart("working on it")}}
	return Task{
		ID:        "task-1",
		ContextID: "ctx-1",
		Status:    TaskStatus{State: StateWorking, Message: &agentMsg, Timestamp: "2025-01-02T03:04:05.678Z"},
		Artifacts: []Artifact{sampleArtifact()},
		History:   []Message{sampleMessage(), agentMsg},
		Metadata:  Metadata{"owner": "me"},
	}
}

func sampleCard() AgentCard {
	return AgentCard{
		Name:        "echo",
		Description: "echoes",
		Provider:    &AgentProvider{URL: "https://prov.test", Organization: "Prov"},
		Version:     "1.2.3",
		Capabilities: AgentCapabilities{
			Streaming:         Bool(true),
			PushNotifications: Bool(false),
			Extensions:        []AgentExtension{{URI: "https://ext.test/a", Description: "ext", Required: true, Params: Metadata{"p": "q"}}},
			ExtendedAgentCard: Bool(false),
		},
		DocumentationURL:   "https://docs.test",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             []AgentSkill{{ID: "echo", Name: "Echo", Description: "echo back", Tags: []string{"t"}, Examples: []string{"hi"}, InputModes: []string{"text/plain"}, OutputModes: []string{"text/plain"}}},
		IconURL:            "https://icon.test/i.png",
	}
}

// keysOf marshals v and returns its top-level object keys.
func keysOf(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), "marshalled %T is not an object: %s", v, b)
	return m
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// protoMessage is what the tests need of one message of a2a.proto.
type protoMessage struct {
	fields   map[string]bool // lowerCamel JSON names
	required map[string]bool
}

var (
	protoOnce sync.Once
	protoMsgs map[string]protoMessage
	protoErr  error
)

var (
	protoMsgStart = regexp.MustCompile(`^message (\w+) \{`)
	protoField    = regexp.MustCompile(`^\s+(?:optional |repeated )?(?:map<[^>]+>|[\w.]+) (\w+) = \d+`)
)

func lowerCamel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// loadProto parses the field names of every top-level message in a2a.proto.
func loadProto(t *testing.T) map[string]protoMessage {
	t.Helper()
	protoOnce.Do(func() {
		b, err := os.ReadFile(protoPath)
		if err != nil {
			protoErr = err
			return
		}
		protoMsgs = map[string]protoMessage{}
		var cur string
		depth := 0
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, "//"); i >= 0 {
				line = line[:i]
			}
			if depth == 0 {
				if m := protoMsgStart.FindStringSubmatch(line); m != nil {
					cur = m[1]
					protoMsgs[cur] = protoMessage{fields: map[string]bool{}, required: map[string]bool{}}
				}
			}
			if cur != "" && depth >= 1 {
				if m := protoField.FindStringSubmatch(line); m != nil {
					name := lowerCamel(m[1])
					protoMsgs[cur].fields[name] = true
					if strings.Contains(line, "REQUIRED") {
						protoMsgs[cur].required[name] = true
					}
				}
			}
			depth += strings.Count(line, "{") - strings.Count(line, "}")
			if depth == 0 {
				cur = ""
			}
		}
	})
	require.NoError(t, protoErr)
	require.NotEmpty(t, protoMsgs)
	return protoMsgs
}

// schemaV03 loads the 0.3 JSON schema's definitions.
func schemaV03(t *testing.T) map[string]struct {
	Required []string `json:"required"`
} {
	t.Helper()
	b, err := os.ReadFile(schemaV03Path)
	require.NoError(t, err)
	var s struct {
		Definitions map[string]struct {
			Required []string `json:"required"`
		} `json:"definitions"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	require.NotEmpty(t, s.Definitions)
	return s.Definitions
}

func readProto(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(protoPath)
	require.NoError(t, err)
	return string(b)
}
