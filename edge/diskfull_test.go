package edge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/taskstore"
)

// A write JetStream refuses for lack of storage reaches a client as
// -32000 saying the store is full (not "failover", not -32603), whether the
// bus recognised it (an append) or passed JetStream's error on (an
// enqueue, a push config).
func TestRPCErrorOfStorageFull(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("bus: enqueue for echo: %w", &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}),
		fmt.Errorf("x: %w", &jetstream.APIError{Code: 500, ErrorCode: 10047, Description: "insufficient storage resources available"}),
		fmt.Errorf("x: %w", &jetstream.APIError{Code: 400, ErrorCode: 10002, Description: "resource limits exceeded for account"}),
		fmt.Errorf("%w: %w", taskstore.ErrStoreFull, &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}),
	} {
		got := rpcError(err)
		want := a2a.AsError(taskstore.ErrStoreFull)
		if got.Code != a2a.CodeServerBusy || got.Message != want.Message {
			t.Errorf("%v: %d %q, want %d %q", err, got.Code, got.Message, a2a.CodeServerBusy, want.Message)
		}
		if strings.Contains(got.Message, "nats") || strings.Contains(got.Message, "insufficient") {
			t.Errorf("%v: internal text in %q", err, got.Message)
		}
	}
	// The events-per-task bound keeps its own message.
	if got := rpcError(fmt.Errorf("%w: x", taskstore.ErrTaskLogFull)); got.Code != a2a.CodeServerBusy || !strings.Contains(got.Message, "events per task") {
		t.Errorf("task log full: %d %q", got.Code, got.Message)
	}
}
