package a2a

import (
	"encoding/json"
	"sort"
	"testing"

	a2apbv1 "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Shared fixtures and helpers for the package's tests.

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

// protoMessage is what the tests need of one message of the 1.0 a2a.proto.
type protoMessage struct {
	fields   map[string]bool     // JSON (lowerCamel) names
	required map[string]bool     // fields marked google.api.field_behavior REQUIRED
	oneofs   map[string][]string // real (non-synthetic) oneof name -> member JSON names
}

// protoMessages returns the top-level messages of a proto file descriptor
// by name.
func protoMessages(fd protoreflect.FileDescriptor) map[string]protoMessage {
	out := map[string]protoMessage{}
	for i := 0; i < fd.Messages().Len(); i++ {
		md := fd.Messages().Get(i)
		pm := protoMessage{fields: map[string]bool{}, required: map[string]bool{}, oneofs: map[string][]string{}}
		for j := 0; j < md.Fields().Len(); j++ {
			f := md.Fields().Get(j)
			pm.fields[f.JSONName()] = true
			if fieldRequired(f) {
				pm.required[f.JSONName()] = true
			}
			if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
				pm.oneofs[string(o.Name())] = append(pm.oneofs[string(o.Name())], f.JSONName())
			}
		}
		out[string(md.Name())] = pm
	}
	return out
}

func fieldRequired(f protoreflect.FieldDescriptor) bool {
	fb, _ := proto.GetExtension(f.Options(), annotations.E_FieldBehavior).([]annotations.FieldBehavior)
	for _, b := range fb {
		if b == annotations.FieldBehavior_REQUIRED {
			return true
		}
	}
	return false
}

// protoV10 is the file descriptor of the 1.0 a2a.proto, as compiled into
// the a2a-go v2 SDK's generated package (the tests' source of truth for
// 1.0 method, field and enum names).
func protoV10(t testing.TB) protoreflect.FileDescriptor {
	t.Helper()
	fd := a2apbv1.File_a2av1_proto
	require.NotNil(t, fd)
	require.Equal(t, protoreflect.FullName("lf.a2a.v1"), fd.Package(), "the 1.0 proto package")
	require.Equal(t, 1, fd.Services().Len(), "one service in the 1.0 proto")
	return fd
}

// loadProto returns the messages of the 1.0 a2a.proto.
func loadProto(t testing.TB) map[string]protoMessage {
	t.Helper()
	msgs := protoMessages(protoV10(t))
	require.NotEmpty(t, msgs)
	// The descriptor must carry the REQUIRED annotations, or every
	// "required field" check below would pass vacuously.
	require.True(t, msgs["Task"].required["id"] && msgs["Message"].required["role"], "the 1.0 descriptor lost its field_behavior annotations")
	return msgs
}

// protoEnumValues returns the value names of a top-level enum of fd.
func protoEnumValues(t testing.TB, fd protoreflect.FileDescriptor, name string) []string {
	t.Helper()
	ed := fd.Enums().ByName(protoreflect.Name(name))
	require.NotNil(t, ed, "enum %s in %s", name, fd.Path())
	var out []string
	for i := 0; i < ed.Values().Len(); i++ {
		out = append(out, string(ed.Values().Get(i).Name()))
	}
	return out
}
