package push

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

// The push delivery log: what became of each POST of a task's push
// notifications, kept for operators (the console's task view, GET
// /ops/v1/tasks/{id}/pushes). One subject per (task, config) holds its
// last LogDepth attempts; entries age out with the task (Retention).
// The deliverer writes it after each attempt, best effort: a lost entry
// loses a line of the view, never a delivery.
//
//	A2A_PUSH_LOG  stream, Limits  a2a.pushlog.<taskId>.<configId>
//
// (created with the rest of push's layout by openConfigs).
const (
	// LogDepth is how many attempts the log keeps per config.
	LogDepth = 20

	streamLog     = "A2A_PUSH_LOG"
	subjLogPrefix = "a2a.pushlog."
)

// Outcomes of a push attempt.
const (
	// Delivered: the receiver answered 2xx.
	Delivered = "delivered"
	// Failed: the receiver answered another status or could not be
	// reached; the attempt is retried at NextRetry.
	Failed = "failed"
	// Refused: the SSRF guard refused the webhook's address; the
	// notification is not delivered and not retried.
	Refused = "refused"
	// GaveUp: the last allowed attempt failed; no more retries.
	GaveUp = "gave-up"
)

// Attempt is one POST of a notification, as the push log keeps it.
type Attempt struct {
	// Seq is the event of the task's log the notification carried.
	Seq uint64 `json:"seq"`
	// Attempt counts the POSTs of this notification, from 1.
	Attempt uint64    `json:"attempt"`
	Time    time.Time `json:"time"`
	// Outcome is Delivered, Failed, Refused or GaveUp.
	Outcome string `json:"outcome"`
	// Status is the receiver's HTTP status (0: none came back).
	Status int `json:"status,omitempty"`
	// Error says why a POST got no answer (transport, SSRF guard).
	Error string `json:"error,omitempty"`
	// NextRetry is when a failed attempt is tried again.
	NextRetry *time.Time `json:"nextRetry,omitempty"`
}

// logSubject holds the attempts of one config of a task.
func logSubject(taskID, configID string) string {
	return subjLogPrefix + taskID + "." + configID
}

// logConfig is the push log stream's configuration on a bus configured
// with c.
func logConfig(c bus.Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              streamLog,
		Description:       "a2amesh: the last push delivery attempts of each task's configs",
		Subjects:          []string{subjLogPrefix + "*.*"},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            c.Retention,
		MaxMsgsPerSubject: LogDepth,
		MaxMsgs:           c.MaxQueued,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          c.Replicas,
	}
}

// RecordAttempt appends one attempt to the push log of a task's config.
func (p *configs) RecordAttempt(ctx context.Context, taskID, configID string, a Attempt) error {
	if !bus.ValidToken(taskID) || !bus.ValidToken(configID) {
		return fmt.Errorf("push: invalid config key %q.%q", taskID, configID)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := p.b.Publish(ctx, &nats.Msg{Subject: logSubject(taskID, configID), Data: data, Header: nats.Header{}}); err != nil {
		return fmt.Errorf("push: record attempt: %w", err)
	}
	return nil
}

// Attempts returns the attempts the push log keeps for a task's config,
// oldest first (at most LogDepth).
func (p *configs) Attempts(ctx context.Context, taskID, configID string) ([]Attempt, error) {
	if !bus.ValidToken(taskID) || !bus.ValidToken(configID) {
		return nil, nil
	}
	subj := logSubject(taskID, configID)
	var out []Attempt
	next := uint64(1)
	for range 2 * LogDepth { // the stream keeps LogDepth; a few more may land meanwhile
		m, err := p.log.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("push: read the push log of %s: %w", taskID, err)
		}
		next = m.Sequence + 1
		var a Attempt
		if json.Unmarshal(m.Data, &a) == nil {
			out = append(out, a)
		}
	}
	if len(out) > LogDepth {
		out = out[len(out)-LogDepth:]
	}
	return out, nil
}
