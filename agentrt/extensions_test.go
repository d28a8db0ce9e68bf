package agentrt

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

// An event records the run's activated set when the task's record holds
// another one: after an Activate, and on a re-run whose dead predecessor
// recorded a set this run did not activate. The caller's event and its
// metadata are never modified.
func TestWithExtensions(t *testing.T) {
	md := a2a.Metadata{"k": "v"}
	status := &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", Metadata: md}}
	artifact := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t"}}
	for _, tc := range []struct {
		name          string
		ev            *a2a.StreamResponse
		set, recorded []string
		want          any // the MetaExtensions entry; nil: none
	}{
		{"nothing either side", status, nil, nil, nil},
		{"same as recorded", status, []string{"urn:a"}, []string{"urn:a"}, nil},
		{"newly activated", status, []string{"urn:a"}, nil, []string{"urn:a"}},
		{"on an artifact", artifact, []string{"urn:a", "urn:b"}, []string{"urn:a"}, []string{"urn:a", "urn:b"}},
		{"a re-run that activated none", status, nil, []string{"urn:a"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := withExtensions(tc.ev, tc.set, tc.recorded)
			var got a2a.Metadata
			if out.StatusUpdate != nil {
				got = out.StatusUpdate.Metadata
			} else {
				got = out.ArtifactUpdate.Metadata
			}
			v, ok := got[taskstore.MetaExtensions]
			if tc.want == nil {
				assert.False(t, ok, "%v", got)
				return
			}
			assert.Equal(t, tc.want, v)
		})
	}
	assert.Equal(t, a2a.Metadata{"k": "v"}, md, "the caller's metadata is untouched")
	assert.Nil(t, artifact.ArtifactUpdate.Metadata)

	req := &Request{Extensions: []string{"urn:a"}, act: &activation{}}
	assert.False(t, req.Activate("urn:b"), "not requested")
	assert.True(t, req.Activate("urn:a"))
	assert.True(t, req.Activate("urn:a"))
	assert.Equal(t, []string{"urn:a"}, req.Activated())
}
