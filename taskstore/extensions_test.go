package taskstore

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// The fold keeps the activated set the latest event recorded, through a
// JSON round trip (as the log stores events), and a new user turn clears
// it.
func TestRecordFoldsActivatedExtensions(t *testing.T) {
	logged := func(ev *a2a.StreamResponse) *a2a.StreamResponse {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		var out a2a.StreamResponse
		require.NoError(t, json.Unmarshal(b, &out))
		return &out
	}
	status := func(exts any) *a2a.StreamResponse {
		u := &a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.StateWorking}}
		if exts != nil {
			u.Metadata = a2a.Metadata{MetaExtensions: exts}
		}
		return logged(&a2a.StreamResponse{StatusUpdate: u})
	}
	rec := &TaskRecord{Task: a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.StateSubmitted}}}
	rec = rec.apply(status(nil), 1, "")
	assert.Nil(t, rec.Extensions)
	rec = rec.apply(logged(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t",
		Artifact: a2a.Artifact{ArtifactID: "a"}, Metadata: a2a.Metadata{MetaExtensions: []string{"urn:a"}}}}), 2, "")
	assert.Equal(t, []string{"urn:a"}, rec.Extensions, "an artifact update records the set")
	rec = rec.apply(status(nil), 3, "")
	assert.Equal(t, []string{"urn:a"}, rec.Extensions, "an event without the key keeps it")
	rec = rec.apply(status([]string{"urn:a", "urn:b"}), 4, "")
	assert.Equal(t, []string{"urn:a", "urn:b"}, rec.Extensions)
	rec = rec.apply(status([]string{}), 5, "")
	assert.Empty(t, rec.Extensions, "an empty list clears it (a re-run that activated none)")
	rec = rec.apply(status([]string{"urn:c"}), 6, "")
	rec = rec.apply(logged(&a2a.StreamResponse{Message: &a2a.Message{MessageID: "m2", Role: a2a.RoleUser}}), 7, "")
	assert.Nil(t, rec.Extensions, "a new user turn starts without")

	b, err := json.Marshal(&TaskRecord{Task: a2a.Task{Status: a2a.TaskStatus{State: a2a.StateWorking}}, Extensions: []string{"urn:x"}})
	require.NoError(t, err)
	var back TaskRecord
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, []string{"urn:x"}, back.Extensions, "the snapshot keeps the set")
}
