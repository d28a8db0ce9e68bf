package a2agoexec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/a2a"
)

// The enum spellings of both models are the 1.0 ProtoJSON names.
func TestEnumNamesAgree(t *testing.T) {
	states := map[a2a.TaskState]a2ago.TaskState{
		a2a.StateUnspecified:   a2ago.TaskStateUnspecified,
		a2a.StateSubmitted:     a2ago.TaskStateSubmitted,
		a2a.StateWorking:       a2ago.TaskStateWorking,
		a2a.StateCompleted:     a2ago.TaskStateCompleted,
		a2a.StateFailed:        a2ago.TaskStateFailed,
		a2a.StateCanceled:      a2ago.TaskStateCanceled,
		a2a.StateInputRequired: a2ago.TaskStateInputRequired,
		a2a.StateRejected:      a2ago.TaskStateRejected,
		a2a.StateAuthRequired:  a2ago.TaskStateAuthRequired,
	}
	for ours, theirs := range states {
		a, _ := json.Marshal(ours)
		b, _ := json.Marshal(theirs)
		if string(a) != string(b) {
			t.Errorf("state %s: ours %s, a2a-go %s", ours, a, b)
		}
		got, err := fromGoState(theirs)
		if err != nil || got != ours {
			t.Errorf("fromGoState(%q) = %q, %v; want %q", theirs, got, err, ours)
		}
	}
	roles := map[a2a.Role]a2ago.MessageRole{
		a2a.RoleUnspecified: a2ago.MessageRoleUnspecified,
		a2a.RoleUser:        a2ago.MessageRoleUser,
		a2a.RoleAgent:       a2ago.MessageRoleAgent,
	}
	for ours, theirs := range roles {
		a, _ := json.Marshal(ours)
		b, _ := json.Marshal(theirs)
		if string(a) != string(b) {
			t.Errorf("role %s: ours %s, a2a-go %s", ours, a, b)
		}
		if fromGoRole(theirs) != ours || toGoRole(ours) != theirs {
			t.Errorf("role %s does not convert to %q and back", ours, theirs)
		}
	}
}

// goSample is an event of every kind with every field and part kind set to
// values both models can carry.
func goSamples() []a2ago.Event {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 123_000_000, time.UTC)
	info := a2ago.TaskInfo{TaskID: "t1", ContextID: "c1"}
	parts := a2ago.ContentParts{
		a2ago.NewTextPart("hi"),
		{Content: a2ago.Raw([]byte{0, 1, 2, 250}), Filename: "b.bin", MediaType: "application/octet-stream"},
		a2ago.NewFileURLPart("https://example.com/x.png", "image/png"),
		{Content: a2ago.Data{Value: map[string]any{"n": 1.5, "list": []any{"a", true}}}, Metadata: map[string]any{"k": "v"}},
	}
	msg := &a2ago.Message{
		ID: "m1", ContextID: "c1", TaskID: "t1", Role: a2ago.MessageRoleAgent, Parts: parts,
		Metadata: map[string]any{"x": map[string]any{"y": 2.0}}, Extensions: []string{"urn:ext"},
		ReferenceTasks: []a2ago.TaskID{"t0"},
	}
	art := &a2ago.Artifact{ID: "a1", Name: "out", Description: "d", Parts: parts, Metadata: map[string]any{"m": "n"}, Extensions: []string{"urn:e"}}
	return []a2ago.Event{
		msg,
		&a2ago.Task{
			ID: "t1", ContextID: "c1", Artifacts: []*a2ago.Artifact{art},
			History:  []*a2ago.Message{{ID: "u1", Role: a2ago.MessageRoleUser, Parts: a2ago.ContentParts{a2ago.NewTextPart("q")}}},
			Metadata: map[string]any{"a": "b"},
			Status:   a2ago.TaskStatus{State: a2ago.TaskStateWorking, Message: msg, Timestamp: &ts},
		},
		&a2ago.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: a2ago.TaskStatus{State: a2ago.TaskStateInputRequired, Message: msg, Timestamp: &ts}, Metadata: map[string]any{"s": 1.0}},
		a2ago.NewArtifactUpdateEvent(info, "a1", a2ago.NewTextPart("more")),
		&a2ago.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Artifact: art, LastChunk: true, Metadata: map[string]any{"z": false}},
	}
}

// For well-formed values the field-by-field conversion gives what a round
// trip through the two models' JSON gives.
func TestFromGoMatchesJSON(t *testing.T) {
	for _, ev := range goSamples() {
		direct, err := fromGoEvent(ev)
		if err != nil {
			t.Fatalf("%T: %v", ev, err)
		}
		b, err := json.Marshal(a2ago.StreamResponse{Event: ev})
		if err != nil {
			t.Fatalf("%T: a2a-go marshal: %v", ev, err)
		}
		var viaJSON a2a.StreamResponse
		if err := json.Unmarshal(b, &viaJSON); err != nil {
			t.Fatalf("%T: our model does not decode a2a-go's JSON %s: %v", ev, b, err)
		}
		if !reflect.DeepEqual(direct, &viaJSON) {
			d, _ := json.Marshal(direct)
			v, _ := json.Marshal(&viaJSON)
			t.Errorf("%T converts differently:\n direct %s\n   json %s", ev, d, v)
		}
		// And our encoding of it decodes in a2a-go to the same event.
		ours, err := json.Marshal(direct)
		if err != nil {
			t.Fatalf("%T: our marshal: %v", ev, err)
		}
		var back a2ago.StreamResponse
		if err := json.Unmarshal(ours, &back); err != nil {
			t.Fatalf("%T: a2a-go does not decode our JSON %s: %v", ev, ours, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(b) {
			t.Errorf("%T: a2a-go JSON differs after a trip through ours:\n before %s\n  after %s", ev, b, again)
		}
	}
}

func TestToGoMatchesJSON(t *testing.T) {
	m := a2a.Message{
		MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			a2a.TextPart("hello"),
			{Kind: a2a.PartRaw, Raw: []byte("raw\x00"), Filename: "f", MediaType: "application/octet-stream"},
			{Kind: a2a.PartURL, URL: "https://example.com/f", MediaType: "text/plain"},
			a2a.DataPart(map[string]any{"k": []any{1, "two"}}),
		},
		Metadata: a2a.Metadata{"trace": "abc", "n": 3.0}, Extensions: []string{"urn:x"}, ReferenceTaskIDs: []string{"t0"},
	}
	direct := toGoMessage(&m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var viaJSON a2ago.Message
	if err := json.Unmarshal(b, &viaJSON); err != nil {
		t.Fatalf("a2a-go does not decode our message %s: %v", b, err)
	}
	if !reflect.DeepEqual(direct, &viaJSON) {
		d, _ := json.Marshal(direct)
		t.Errorf("message converts differently:\n direct %s\n   json %s", d, b)
	}

	a := a2a.Artifact{ArtifactID: "a1", Name: "n", Description: "d", Parts: m.Parts, Metadata: a2a.Metadata{"x": "y"}}
	ga := toGoArtifact(&a)
	b, _ = json.Marshal(a)
	var gaJSON a2ago.Artifact
	if err := json.Unmarshal(b, &gaJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ga, &gaJSON) {
		t.Errorf("artifact converts differently: %+v vs %+v", ga, &gaJSON)
	}
}

// Where the models' JSON disagrees, the conversion still gives an event the
// mesh can record.
func TestFromGoOddValues(t *testing.T) {
	t.Run("nil events", func(t *testing.T) {
		for _, ev := range []a2ago.Event{nil, (*a2ago.Task)(nil), (*a2ago.Message)(nil),
			(*a2ago.TaskStatusUpdateEvent)(nil), (*a2ago.TaskArtifactUpdateEvent)(nil),
			&a2ago.TaskArtifactUpdateEvent{TaskID: "t"}} {
			sr, err := fromGoEvent(ev)
			if sr != nil || err != nil {
				t.Errorf("%#v: got %+v, %v; want nothing", ev, sr, err)
			}
		}
	})
	t.Run("parts without content", func(t *testing.T) {
		m := &a2ago.Message{ID: "m", Role: a2ago.MessageRoleAgent, Parts: a2ago.ContentParts{
			nil, {}, {Content: a2ago.URL("")}, a2ago.NewTextPart(""), {Content: a2ago.Raw(nil)}, {Content: a2ago.Data{}},
		}}
		sr, err := fromGoEvent(m)
		if err != nil {
			t.Fatal(err)
		}
		got := sr.Message.Parts
		if len(got) != 3 || got[0].Kind != a2a.PartText || got[1].Kind != a2a.PartRaw || got[2].Kind != a2a.PartData || string(got[2].Data) != "null" {
			t.Fatalf("parts %+v, want the empty text, the empty raw and the null data", got)
		}
		if _, err := json.Marshal(sr); err != nil {
			t.Errorf("converted message does not encode: %v", err)
		}
	})
	t.Run("no parts", func(t *testing.T) {
		sr, _ := fromGoEvent(&a2ago.TaskArtifactUpdateEvent{Artifact: &a2ago.Artifact{ID: "a"}})
		b, _ := json.Marshal(sr)
		if !strings.Contains(string(b), `"parts":[]`) {
			t.Errorf("artifact without parts encodes as %s, want parts []", b)
		}
	})
	t.Run("timestamp normalized", func(t *testing.T) {
		ts := time.Date(2026, 1, 2, 5, 4, 5, 678_901_234, time.FixedZone("x", 2*3600))
		sr, err := fromGoEvent(&a2ago.TaskStatusUpdateEvent{Status: a2ago.TaskStatus{State: a2ago.TaskStateWorking, Timestamp: &ts}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sr.StatusUpdate.Status.Timestamp; got != "2026-01-02T03:04:05.678Z" {
			t.Errorf("timestamp %q, want UTC with milliseconds", got)
		}
		sr, _ = fromGoEvent(&a2ago.TaskStatusUpdateEvent{Status: a2ago.TaskStatus{State: a2ago.TaskStateWorking, Timestamp: &time.Time{}}})
		if got := sr.StatusUpdate.Status.Timestamp; got != "" {
			t.Errorf("zero timestamp became %q, want none", got)
		}
	})
	t.Run("states", func(t *testing.T) {
		if _, err := fromGoEvent(&a2ago.TaskStatusUpdateEvent{Status: a2ago.TaskStatus{State: "TASK_STATE_DREAMING"}}); err == nil {
			t.Error("unknown state accepted")
		}
		sr, err := fromGoEvent(&a2ago.Task{Status: a2ago.TaskStatus{State: "completed"}})
		if err != nil || sr.Task.Status.State != a2a.StateCompleted {
			t.Errorf("0.3 spelling: %+v, %v", sr, err)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		bad := []a2ago.Event{
			&a2ago.Message{Parts: a2ago.ContentParts{a2ago.NewDataPart(make(chan int))}},
			&a2ago.Message{Metadata: map[string]any{"f": func() {}}},
			&a2ago.TaskStatusUpdateEvent{Status: a2ago.TaskStatus{State: a2ago.TaskStateWorking}, Metadata: map[string]any{"c": make(chan int)}},
			&a2ago.TaskArtifactUpdateEvent{Artifact: &a2ago.Artifact{Parts: a2ago.ContentParts{{Content: a2ago.Text("x"), Metadata: map[string]any{"c": make(chan int)}}}}},
		}
		for _, ev := range bad {
			if _, err := fromGoEvent(ev); err == nil {
				t.Errorf("%T with a value JSON cannot encode was accepted", ev)
			}
		}
	})
	t.Run("copies", func(t *testing.T) {
		raw := []byte("abc")
		md := map[string]any{"k": "v"}
		sr, _ := fromGoEvent(&a2ago.Message{Parts: a2ago.ContentParts{{Content: a2ago.Raw(raw), Metadata: md}}, Metadata: md})
		raw[0], md["k"] = 'X', "changed"
		p := sr.Message.Parts[0]
		if string(p.Raw) != "abc" || p.Metadata["k"] != "v" || sr.Message.Metadata["k"] != "v" {
			t.Error("converted event shares memory with the executor's")
		}
	})
}
