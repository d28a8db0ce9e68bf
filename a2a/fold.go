package a2a

// Apply folds one entry of a task's event log into t. The log holds the
// initial Task, user turns (a Message with role user, appended to history),
// status updates and artifact updates. Apply is the single definition of how
// a snapshot follows from its events.
func (t *Task) Apply(ev *StreamResponse) {
	switch {
	case ev.Task != nil:
		*t = *ev.Task
	case ev.Message != nil:
		t.History = append(t.History, *ev.Message)
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
		}
		return
	}
	t.Artifacts = append(t.Artifacts, u.Artifact)
}
