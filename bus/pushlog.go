package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The push delivery log: what became of each POST of a task's push
// notifications, kept for operators (the console's task view, GET
// /ops/v1/tasks/{id}/pushes). One subject per (task, config) holds its
// last PushLogDepth attempts; entries age out with the task (Retention).
// The deliverer writes it after each attempt, best effort: a lost entry
// loses a line of the view, never a delivery.
//
// (named in names.go, created with the push layout by OpenPush).
const (
	// PushLogDepth is how many attempts the log keeps per config.
	PushLogDepth = 20
)

// Outcomes of a push attempt.
const (
	// PushDelivered: the receiver answered 2xx.
	PushDelivered = "delivered"
	// PushFailed: the receiver answered another status or could not be
	// reached; the attempt is retried at NextRetry.
	PushFailed = "failed"
	// PushRefused: the SSRF guard refused the webhook's address; the
	// notification is not delivered and not retried.
	PushRefused = "refused"
	// PushGaveUp: the last allowed attempt failed; no more retries.
	PushGaveUp = "gave-up"
)

// PushAttempt is one POST of a notification, as the push log keeps it.
type PushAttempt struct {
	// Seq is the event of the task's log the notification carried.
	Seq uint64 `json:"seq"`
	// Attempt counts the POSTs of this notification, from 1.
	Attempt uint64    `json:"attempt"`
	Time    time.Time `json:"time"`
	// Outcome is PushDelivered, PushFailed, PushRefused or PushGaveUp.
	Outcome string `json:"outcome"`
	// Status is the receiver's HTTP status (0: none came back).
	Status int `json:"status,omitempty"`
	// Error says why a POST got no answer (transport, SSRF guard).
	Error string `json:"error,omitempty"`
	// NextRetry is when a failed attempt is tried again.
	NextRetry *time.Time `json:"nextRetry,omitempty"`
}

// pushLogSubject holds the attempts of one config of a task.
func pushLogSubject(taskID, configID string) string {
	return subjPushLogPrefix + taskID + "." + configID
}

// pushLogConfig is the push log stream's configuration.
func (b *Bus) pushLogConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              StreamPushLog,
		Description:       "a2amesh: the last push delivery attempts of each task's configs",
		Subjects:          []string{subjPushLogPrefix + "*.*"},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            b.cfg.Retention,
		MaxMsgsPerSubject: PushLogDepth,
		MaxMsgs:           b.cfg.MaxQueued,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          b.cfg.Replicas,
	}
}

// RecordAttempt appends one attempt to the push log of a task's config.
func (p *PushStore) RecordAttempt(ctx context.Context, taskID, configID string, a PushAttempt) error {
	if !ValidToken(taskID) || !ValidToken(configID) {
		return fmt.Errorf("bus: invalid push config key %q.%q", taskID, configID)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := p.b.Publish(ctx, &nats.Msg{Subject: pushLogSubject(taskID, configID), Data: data, Header: nats.Header{}}); err != nil {
		return fmt.Errorf("bus: record push attempt: %w", err)
	}
	return nil
}

// Attempts returns the attempts the push log keeps for a task's config,
// oldest first (at most PushLogDepth).
func (p *PushStore) Attempts(ctx context.Context, taskID, configID string) ([]PushAttempt, error) {
	if !ValidToken(taskID) || !ValidToken(configID) {
		return nil, nil
	}
	subj := pushLogSubject(taskID, configID)
	var out []PushAttempt
	next := uint64(1)
	for range 2 * PushLogDepth { // the stream keeps PushLogDepth; a few more may land meanwhile
		m, err := p.log.GetMsg(ctx, next, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("bus: read push log of %s: %w", taskID, err)
		}
		next = m.Sequence + 1
		var a PushAttempt
		if json.Unmarshal(m.Data, &a) == nil {
			out = append(out, a)
		}
	}
	if len(out) > PushLogDepth {
		out = out[len(out)-PushLogDepth:]
	}
	return out, nil
}
