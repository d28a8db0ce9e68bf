package a2agoexec

import (
	"bytes"
	"encoding/json"
	"fmt"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2amesh/a2amesh/a2a"
)

// The two models describe the same A2A 1.0 ProtoJSON, and their JSON
// agrees for well-formed values (convert_test.go checks it). They are
// converted field by field rather than through JSON because they disagree
// at the edges, where a JSON round trip would fail the whole event:
//
//   - a2a-go's Part can hold no content (nil Content, or an empty URL); it
//     then marshals as {} which neither side decodes. Such parts are
//     dropped, as are nil parts, artifacts and messages in slices.
//   - a2a-go marshals Data{Value: nil} as "data": null but does not decode
//     it; ours keeps it as a data part holding null.
//   - timestamps are *time.Time there (RFC 3339 with the local offset and
//     nanoseconds) and a spec-formatted string here (UTC, milliseconds, Z).
//   - a2a-go's unspecified role and state are "", spelled ROLE_UNSPECIFIED
//     and TASK_STATE_UNSPECIFIED on the wire as here.
//   - a state outside the enum is an error here (ours would record it).

// ---- a2a-go → mesh ----

// fromGoEvent converts an event an executor yielded. It returns nil for an
// event that carries nothing to record (nil, or an artifact update without
// an artifact).
func fromGoEvent(ev a2ago.Event) (*a2a.StreamResponse, error) {
	switch v := ev.(type) {
	case *a2ago.Message:
		if v == nil {
			return nil, nil
		}
		m, err := fromGoMessage(v)
		if err != nil {
			return nil, err
		}
		return &a2a.StreamResponse{Message: m}, nil
	case *a2ago.Task:
		if v == nil {
			return nil, nil
		}
		t, err := fromGoTask(v)
		if err != nil {
			return nil, err
		}
		return &a2a.StreamResponse{Task: t}, nil
	case *a2ago.TaskStatusUpdateEvent:
		if v == nil {
			return nil, nil
		}
		st, err := fromGoStatus(v.Status)
		if err != nil {
			return nil, err
		}
		md, err := copyMeta(v.Metadata)
		if err != nil {
			return nil, err
		}
		return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
			TaskID: string(v.TaskID), ContextID: v.ContextID, Status: st, Metadata: md,
		}}, nil
	case *a2ago.TaskArtifactUpdateEvent:
		if v == nil || v.Artifact == nil {
			return nil, nil
		}
		a, err := fromGoArtifact(v.Artifact)
		if err != nil {
			return nil, err
		}
		md, err := copyMeta(v.Metadata)
		if err != nil {
			return nil, err
		}
		return &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
			TaskID: string(v.TaskID), ContextID: v.ContextID, Artifact: a,
			Append: v.Append, LastChunk: v.LastChunk, Metadata: md,
		}}, nil
	}
	return nil, nil
}

// goEventState is the task state an event sets ("" for none) and whether
// the event is a Message, which ends a turn whatever the state.
func goEventState(ev a2ago.Event) (state a2ago.TaskState, message bool) {
	switch v := ev.(type) {
	case *a2ago.Message:
		return "", v != nil
	case *a2ago.Task:
		if v != nil {
			return v.Status.State, false
		}
	case *a2ago.TaskStatusUpdateEvent:
		if v != nil {
			return v.Status.State, false
		}
	}
	return "", false
}

func fromGoState(s a2ago.TaskState) (a2a.TaskState, error) {
	if s == a2ago.TaskStateUnspecified {
		return a2a.StateUnspecified, nil
	}
	st, ok := a2a.ParseTaskState(string(s))
	if !ok {
		return "", fmt.Errorf("a2agoexec: executor produced unknown task state %q", truncate(string(s), 64))
	}
	return st, nil
}

func fromGoRole(r a2ago.MessageRole) a2a.Role {
	switch r {
	case a2ago.MessageRoleUser:
		return a2a.RoleUser
	case a2ago.MessageRoleAgent:
		return a2a.RoleAgent
	}
	return a2a.RoleUnspecified
}

func fromGoStatus(s a2ago.TaskStatus) (a2a.TaskStatus, error) {
	st, err := fromGoState(s.State)
	if err != nil {
		return a2a.TaskStatus{}, err
	}
	out := a2a.TaskStatus{State: st}
	if s.Timestamp != nil && !s.Timestamp.IsZero() {
		out.Timestamp = a2a.FormatTime(*s.Timestamp)
	}
	if s.Message != nil {
		if out.Message, err = fromGoMessage(s.Message); err != nil {
			return a2a.TaskStatus{}, err
		}
	}
	return out, nil
}

func fromGoMessage(m *a2ago.Message) (*a2a.Message, error) {
	parts, err := fromGoParts(m.Parts)
	if err != nil {
		return nil, err
	}
	md, err := copyMeta(m.Metadata)
	if err != nil {
		return nil, err
	}
	out := &a2a.Message{
		MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID),
		Role: fromGoRole(m.Role), Parts: parts, Metadata: md,
		Extensions: cloneStrings(m.Extensions),
	}
	for _, id := range m.ReferenceTasks {
		out.ReferenceTaskIDs = append(out.ReferenceTaskIDs, string(id))
	}
	return out, nil
}

func fromGoTask(t *a2ago.Task) (*a2a.Task, error) {
	st, err := fromGoStatus(t.Status)
	if err != nil {
		return nil, err
	}
	md, err := copyMeta(t.Metadata)
	if err != nil {
		return nil, err
	}
	out := &a2a.Task{ID: string(t.ID), ContextID: t.ContextID, Status: st, Metadata: md}
	for _, a := range t.Artifacts {
		if a == nil {
			continue
		}
		c, err := fromGoArtifact(a)
		if err != nil {
			return nil, err
		}
		out.Artifacts = append(out.Artifacts, c)
	}
	for _, m := range t.History {
		if m == nil {
			continue
		}
		c, err := fromGoMessage(m)
		if err != nil {
			return nil, err
		}
		out.History = append(out.History, *c)
	}
	return out, nil
}

func fromGoArtifact(a *a2ago.Artifact) (a2a.Artifact, error) {
	parts, err := fromGoParts(a.Parts)
	if err != nil {
		return a2a.Artifact{}, err
	}
	md, err := copyMeta(a.Metadata)
	if err != nil {
		return a2a.Artifact{}, err
	}
	return a2a.Artifact{
		ArtifactID: string(a.ID), Name: a.Name, Description: a.Description,
		Parts: parts, Metadata: md, Extensions: cloneStrings(a.Extensions),
	}, nil
}

// fromGoParts converts parts, dropping those without content. The result
// is never nil, so it encodes as [] rather than null.
func fromGoParts(ps a2ago.ContentParts) ([]a2a.Part, error) {
	out := make([]a2a.Part, 0, len(ps))
	for _, p := range ps {
		if p == nil {
			continue
		}
		md, err := copyMeta(p.Metadata)
		if err != nil {
			return nil, err
		}
		c := a2a.Part{Filename: p.Filename, MediaType: p.MediaType, Metadata: md}
		switch v := p.Content.(type) {
		case a2ago.Text:
			c.Kind, c.Text = a2a.PartText, string(v)
		case a2ago.Raw:
			c.Kind, c.Raw = a2a.PartRaw, bytes.Clone([]byte(v))
			if c.Raw == nil {
				c.Raw = []byte{}
			}
		case a2ago.URL:
			if v == "" {
				continue
			}
			c.Kind, c.URL = a2a.PartURL, string(v)
		case a2ago.Data:
			b, err := json.Marshal(v.Value)
			if err != nil {
				return nil, fmt.Errorf("a2agoexec: data part does not encode as JSON: %w", err)
			}
			c.Kind, c.Data = a2a.PartData, b
		default:
			continue // nil content
		}
		out = append(out, c)
	}
	return out, nil
}

// ---- mesh → a2a-go ----

func toGoRole(r a2a.Role) a2ago.MessageRole {
	switch r {
	case a2a.RoleUser:
		return a2ago.MessageRoleUser
	case a2a.RoleAgent:
		return a2ago.MessageRoleAgent
	}
	return a2ago.MessageRoleUnspecified
}

// toGoMessage converts a message of the task for the executor. Metadata is
// copied, so the executor cannot change the worker's copy of the task.
func toGoMessage(m *a2a.Message) *a2ago.Message {
	out := &a2ago.Message{
		ID: m.MessageID, ContextID: m.ContextID, TaskID: a2ago.TaskID(m.TaskID),
		Role: toGoRole(m.Role), Parts: toGoParts(m.Parts), Metadata: copyMetaLoose(m.Metadata),
		Extensions: cloneStrings(m.Extensions),
	}
	for _, id := range m.ReferenceTaskIDs {
		out.ReferenceTasks = append(out.ReferenceTasks, a2ago.TaskID(id))
	}
	return out
}

func toGoArtifact(a *a2a.Artifact) *a2ago.Artifact {
	return &a2ago.Artifact{
		ID: a2ago.ArtifactID(a.ArtifactID), Name: a.Name, Description: a.Description,
		Parts: toGoParts(a.Parts), Metadata: copyMetaLoose(a.Metadata), Extensions: cloneStrings(a.Extensions),
	}
}

func toGoParts(ps []a2a.Part) a2ago.ContentParts {
	out := make(a2ago.ContentParts, 0, len(ps))
	for _, p := range ps {
		c := &a2ago.Part{Filename: p.Filename, MediaType: p.MediaType, Metadata: copyMetaLoose(p.Metadata)}
		switch p.Kind {
		case a2a.PartText:
			c.Content = a2ago.Text(p.Text)
		case a2a.PartRaw:
			c.Content = a2ago.Raw(bytes.Clone(p.Raw))
		case a2a.PartURL:
			c.Content = a2ago.URL(p.URL)
		case a2a.PartData:
			var v any
			if len(p.Data) > 0 && json.Unmarshal(p.Data, &v) != nil {
				continue // not JSON: cannot happen for a decoded part
			}
			c.Content = a2ago.Data{Value: v}
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// ---- helpers ----

// copyMeta deep-copies metadata through JSON, which also checks that it
// encodes (the mesh stores it as JSON).
func copyMeta(m map[string]any) (a2a.Metadata, error) {
	if m == nil {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("a2agoexec: metadata does not encode as JSON: %w", err)
	}
	var out a2a.Metadata
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("a2agoexec: metadata does not decode: %w", err)
	}
	return out, nil
}

// copyMetaLoose is copyMeta for metadata that came from JSON (it cannot
// fail); on failure it falls back to a shallow copy.
func copyMetaLoose(m map[string]any) map[string]any {
	c, err := copyMeta(m)
	if err != nil {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
