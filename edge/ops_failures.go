package edge

import (
	"context"
	"time"
)

// fleetFailures bounds the dead letters GET /ops/v1/fleet reads of each
// agent: the newest few, one JetStream get each (bus.RecentDeadLetters).
const fleetFailures = 3

// fleetFailure is one of an agent's newest dead letters.
type fleetFailure struct {
	// TaskID is the task of the work item ("" when it does not decode).
	TaskID string `json:"taskId,omitempty"`
	// Reason is why no worker could process it: "max deliveries",
	// "undecodable" or "task not found".
	Reason string `json:"reason"`
	// Time is when it was dead-lettered (UTC).
	Time time.Time `json:"time"`
}

// fleetFailures reads agent's newest dead letters when it has any (dead
// counts them): none costs no read. A failed read is logged and shows
// as none; the count in the queue's figures still says there are some.
func (e *Edge) fleetFailures(ctx context.Context, agent string, dead uint64) []fleetFailure {
	out := []fleetFailure{}
	if dead == 0 {
		return out
	}
	letters, err := e.bus.RecentDeadLetters(ctx, agent, fleetFailures)
	if err != nil {
		e.log.Warn("ops: fleet: reading dead letters", "agent", agent, "err", err)
	}
	for _, l := range letters {
		out = append(out, fleetFailure{TaskID: l.TaskID, Reason: l.Reason, Time: l.Time.UTC()})
	}
	return out
}
