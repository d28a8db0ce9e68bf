package agentrt

import (
	"testing"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
)

// A re-run of a turn (after a worker died mid-run) must name its artifacts
// as the first run did, so its first chunk replaces the partial artifact.
func TestArtifactIDStablePerTurn(t *testing.T) {
	req := func(task, msg string) *Request {
		return &Request{TaskID: task, Message: a2a.Message{MessageID: msg}}
	}
	id := req("t1", "m1").ArtifactID("chunks")
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("ArtifactID %q is not a UUID: %v", id, err)
	}
	if again := req("t1", "m1").ArtifactID("chunks"); again != id {
		t.Errorf("same task, turn and name: %s then %s", id, again)
	}
	for _, other := range []string{
		req("t2", "m1").ArtifactID("chunks"),
		req("t1", "m2").ArtifactID("chunks"),
		req("t1", "m1").ArtifactID("other"),
	} {
		if other == id {
			t.Errorf("a different task, turn or name got the same id %s", id)
		}
	}
	// The writer names the n-th unnamed artifact of a turn the same way.
	if a, b := turnArtifactID("t1", "m1", "#1"), turnArtifactID("t1", "m1", "#1"); a != b || a == turnArtifactID("t1", "m1", "#2") {
		t.Errorf("unnamed artifact ids: run 1 %s, run 2 %s", a, b)
	}
}
