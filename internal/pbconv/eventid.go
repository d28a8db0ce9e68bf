package pbconv

import (
	"strconv"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// EventIDKey is the metadata entry of a streamed event (of its task,
// message, statusUpdate or artifactUpdate) that carries the event's id
// over gRPC, which has no per-message headers: the event's position in
// the mesh's event log, as a decimal string, the id SSE sends on its id:
// lines. A client resumes after it with the metadata last-event-id.
const EventIDKey = "a2amesh.eventId"

// eventMetadata is the metadata field of the event ev carries (nil for
// none).
func eventMetadata(ev *a2apb.StreamResponse) **structpb.Struct {
	switch p := ev.GetPayload().(type) {
	case *a2apb.StreamResponse_Task:
		return &p.Task.Metadata
	case *a2apb.StreamResponse_Message:
		return &p.Message.Metadata
	case *a2apb.StreamResponse_StatusUpdate:
		return &p.StatusUpdate.Metadata
	case *a2apb.StreamResponse_ArtifactUpdate:
		return &p.ArtifactUpdate.Metadata
	}
	return nil
}

// SetEventID writes id into the metadata of the event ev carries (0: no
// id, nothing written).
func SetEventID(ev *a2apb.StreamResponse, id uint64) {
	md := eventMetadata(ev)
	if id == 0 || md == nil {
		return
	}
	if *md == nil {
		*md = &structpb.Struct{}
	}
	if (*md).Fields == nil {
		(*md).Fields = map[string]*structpb.Value{}
	}
	(*md).Fields[EventIDKey] = structpb.NewStringValue(strconv.FormatUint(id, 10))
}

// TakeEventID removes the event id from the metadata of the event ev
// carries and returns it ("" when there is none); metadata left empty
// becomes none, as the event was before the id was written.
func TakeEventID(ev *a2apb.StreamResponse) string {
	md := eventMetadata(ev)
	if md == nil || *md == nil {
		return ""
	}
	v, ok := (*md).GetFields()[EventIDKey]
	if !ok {
		return ""
	}
	delete((*md).Fields, EventIDKey)
	if len((*md).Fields) == 0 {
		*md = nil
	}
	return v.GetStringValue()
}
