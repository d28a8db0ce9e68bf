package pbconv

import (
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/types/known/structpb"
)

// An event id written into any kind of stream event is taken back out,
// leaving the event's own metadata as it was.
func TestEventID(t *testing.T) {
	keep, _ := structpb.NewStruct(map[string]any{"keep": "me"})
	for name, ev := range map[string]*a2apb.StreamResponse{
		"task":     {Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{Id: "t"}}},
		"message":  {Payload: &a2apb.StreamResponse_Message{Message: &a2apb.Message{MessageId: "m", Metadata: keep}}},
		"status":   {Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{TaskId: "t"}}},
		"artifact": {Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{TaskId: "t"}}},
	} {
		SetEventID(ev, 42)
		assert.Equal(t, "42", TakeEventID(ev), name)
		assert.Equal(t, "", TakeEventID(ev), "%s: taken once", name)
		if m := ev.GetMessage(); m != nil {
			assert.Equal(t, "me", m.GetMetadata().GetFields()["keep"].GetStringValue())
		} else {
			assert.Nil(t, *eventMetadata(ev), "%s: no metadata left behind", name)
		}
	}
	ev := &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{Id: "t"}}}
	SetEventID(ev, 0)
	assert.Nil(t, ev.GetTask().GetMetadata(), "id 0: nothing written")
	SetEventID(&a2apb.StreamResponse{}, 7) // no payload: no panic
	assert.Equal(t, "", TakeEventID(nil))
}
