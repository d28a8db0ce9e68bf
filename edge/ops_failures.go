package edge

import (
	"context"
	"sync"
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

// fleetFailuresReads bounds the agents whose dead letters one fleet call
// reads at once.
const fleetFailuresReads = 8

// fleetFailures sets the Failures of each agent: its newest dead letters,
// read for the agents that have some (Queue.DeadLetters), a few agents at
// once; an agent with none costs no read. A failed read is logged and
// shows as none; the count in the queue's figures still says there are
// some.
func (e *Edge) fleetFailures(ctx context.Context, agents []fleetAgent) {
	sem := make(chan struct{}, fleetFailuresReads)
	var wg sync.WaitGroup
	for i := range agents {
		a := &agents[i]
		a.Failures = []fleetFailure{}
		if a.Queue.DeadLetters == 0 {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			letters, err := e.bus.RecentDeadLetters(ctx, a.Name, fleetFailures)
			if err != nil {
				e.log.Warn("ops: fleet: reading dead letters", "agent", a.Name, "err", err)
			}
			for _, l := range letters {
				a.Failures = append(a.Failures, fleetFailure{TaskID: l.TaskID, Reason: l.Reason, Time: l.Time.UTC()})
			}
		}()
	}
	wg.Wait()
}
