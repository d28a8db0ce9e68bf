package taskstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Every -32000 of the bus is an *a2a.Error, and a2a.Error's Is compares
// codes: the retention errors must still be told apart. A worker that took
// a failover past its budget, or a full store, for a full task log would
// settle the turn for good (ack the work, the task left working) instead
// of running it again once the bus is back.
func TestRetentionErrorsAreDistinct(t *testing.T) {
	apiFull := &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}
	unavailable := fmt.Errorf("%w: %w", bus.ErrUnavailable, context.DeadlineExceeded)
	storeFull := fmt.Errorf("%w: %w", ErrStoreFull, apiFull)
	logFull := fmt.Errorf("%w: %w", ErrTaskLogFull, errors.New("maximum messages per subject exceeded"))
	for _, c := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"failover is not a full log", unavailable, ErrTaskLogFull, false},
		{"a full store is not a full log", storeFull, ErrTaskLogFull, false},
		{"a full log is one", logFull, ErrTaskLogFull, true},
		{"a full log is not a full store", logFull, ErrStoreFull, false},
		{"failover is not a full store", unavailable, ErrStoreFull, false},
		{"a full store is one", storeFull, ErrStoreFull, true},
		{"a full store is still -32000", storeFull, a2a.ErrServerBusy, true},
		{"a full log is still -32000", logFull, a2a.ErrServerBusy, true},
	} {
		if got := errors.Is(c.err, c.target); got != c.want {
			t.Errorf("%s: errors.Is = %v, want %v", c.name, got, c.want)
		}
	}
	for _, err := range []error{storeFull, logFull} {
		if e := a2a.AsError(err); e.Code != a2a.CodeServerBusy || e.Message == "" {
			t.Errorf("%v: answered %d %q", err, e.Code, e.Message)
		}
	}
}

// JetStream's refusals for lack of storage are recognised, on their own
// and wrapped; other errors are not.
func TestIsStorageFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}, true},
		{fmt.Errorf("bus: enqueue: %w", &jetstream.APIError{Code: 500, ErrorCode: 10047, Description: "insufficient storage resources available"}), true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10028, Description: "insufficient memory resources available"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10002, Description: "resource limits exceeded for account"}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, false},
		{context.DeadlineExceeded, false},
		{bus.ErrUnavailable, false},
		{nil, false},
	} {
		if got := IsStorageFull(c.err); got != c.want {
			t.Errorf("IsStorageFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
