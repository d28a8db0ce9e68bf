package taskstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
)

// The delegation record: for each task, the tasks it delegated to other
// agents through the mesh (agentrt's Mesh.Send), so that a task's view
// lists its children without scanning tasks. A child names its parent in
// its own metadata (MetaParent); this is the other direction.
// Stream StreamDelegations, one subject per parent task
// (a2a.delegated.<parentTaskId>), an entry per child.

// MaxDelegations is how many children the record keeps per task (the
// oldest are dropped past it).
const MaxDelegations = 1000

// Delegation is one task a task delegated.
type Delegation struct {
	// TaskID is the delegated (child) task.
	TaskID string `json:"taskId"`
	// Agent is the agent it was sent to.
	Agent string    `json:"agent"`
	Time  time.Time `json:"time"`
}

func delegSubject(parentID string) string { return subjDelegPrefix + parentID }

// RecordDelegation records that task parentID delegated d. Recording the
// same child again within the duplicate window (a turn re-run after a
// crash) stores it once.
func (b *Store) RecordDelegation(ctx context.Context, parentID string, d Delegation) error {
	if !bus.ValidToken(parentID) || !bus.ValidToken(d.TaskID) {
		return fmt.Errorf("bus: invalid delegation %q -> %q", parentID, d.TaskID)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: delegSubject(parentID), Data: data, Header: nats.Header{}}
	if _, err := b.bus.Publish(ctx, msg, jetstream.WithMsgID("d-"+d.TaskID)); err != nil {
		return fmt.Errorf("bus: record delegation: %w", err)
	}
	return nil
}

// Delegations returns the tasks parentID delegated, oldest first, at most
// max of them; more says there are others after them.
func (b *Store) Delegations(ctx context.Context, parentID string, max int) (out []Delegation, more bool, err error) {
	if !bus.ValidToken(parentID) {
		return nil, false, nil
	}
	subj := delegSubject(parentID)
	seen := map[string]bool{}
	next := uint64(1)
	for range 2*max + 1 { // a few entries may repeat a child
		m, err := b.delegStream.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, false, nil
		}
		if err != nil {
			return out, false, fmt.Errorf("bus: read delegations of %s: %w", parentID, err)
		}
		next = m.Sequence + 1
		var d Delegation
		if json.Unmarshal(m.Data, &d) != nil || seen[d.TaskID] {
			continue
		}
		if len(out) == max {
			return out, true, nil
		}
		seen[d.TaskID] = true
		out = append(out, d)
	}
	return out, true, nil
}

// MetaParent is the metadata key under which a delegated task names the
// task that delegated it: {"taskId", "contextId", "agent"} (set by the
// agent runtime, agentrt.MetaParent; read by the edge's operator API).
const MetaParent = "a2amesh.parent"
