package a2a

import "slices"

// Apply folds one entry of a task's event log into t. The log holds the
// initial Task, user turns (a Message with role user, appended to history
// and setting the state back to submitted),
// status updates and artifact updates. Apply is the single definition of how
// a snapshot follows from its events.
//
// Apply never writes to memory reachable from ev: the slices it later grows
// or edits in place are copied when taken from an event, so one event log
// can be folded into several snapshots.
func (t *Task) Apply(ev *StreamResponse) {
	switch {
	case ev.Task != nil:
		*t = *ev.Task
		t.History = slices.Clone(t.History)
		t.Artifacts = cloneArtifacts(t.Artifacts)
	case ev.Message != nil:
		t.History = append(t.History, *ev.Message)
		if ev.Message.Role == RoleUser {
			// A new user turn reopens an interrupted task for a worker.
			t.Status = TaskStatus{State: StateSubmitted}
		}
	case ev.StatusUpdate != nil:
		t.Status = ev.StatusUpdate.Status
		if m := t.Status.Message; m != nil {
			if n := len(t.History); n == 0 || t.History[n-1].MessageID != m.MessageID {
				t.History = append(t.History, *m)
			}
		}
	case ev.ArtifactUpdate != nil:
		t.applyArtifact(ev.ArtifactUpdate)
	}
}

func cloneArtifacts(as []Artifact) []Artifact {
	if as == nil {
		return nil
	}
	out := make([]Artifact, len(as))
	for i, a := range as {
		out[i] = a
		out[i].Parts = slices.Clone(a.Parts)
	}
	return out
}

func (t *Task) applyArtifact(u *TaskArtifactUpdateEvent) {
	for i := range t.Artifacts {
		a := &t.Artifacts[i]
		if a.ArtifactID != u.Artifact.ArtifactID {
			continue
		}
		if u.Append {
			a.Parts = append(a.Parts, u.Artifact.Parts...)
			if u.Artifact.Metadata != nil {
				a.Metadata = u.Artifact.Metadata
			}
		} else {
			*a = u.Artifact
			a.Parts = slices.Clone(a.Parts)
		}
		return
	}
	a := u.Artifact
	a.Parts = slices.Clone(a.Parts)
	t.Artifacts = append(t.Artifacts, a)
}
