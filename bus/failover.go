package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
)

// A JetStream cluster keeps serving through the loss of one node of three,
// but every raft group that node led (a stream, a bucket) needs a new
// leader first. After a crash that takes the election timeout, several
// seconds, during which a publish finds no responder, or reaches the dead
// leader and never gets its ack. Writes that are safe to repeat ride that
// out here, within failoverBudget, instead of failing a task or a client's
// call on the first lost request.

const (
	// failoverBudget bounds how long one write keeps retrying.
	failoverBudget = 15 * time.Second
	// AttemptTimeout bounds one publish request, so a request lost with a
	// dead leader is sent again once a new one is elected.
	AttemptTimeout = 3 * time.Second
	// retryWait is the pause between attempts.
	retryWait = 250 * time.Millisecond
)

// ErrUnavailable is returned, wrapping the cause, when JetStream could not
// be reached within the failover budget. It is a JSON-RPC server error
// (-32000), so a remote caller is told to retry rather than shown an
// internal error.
var ErrUnavailable = a2a.ErrServerBusy.With("the mesh's message bus is not answering (a failover, or its store is out of space); retry shortly")

// transient reports whether err is JetStream being briefly unreachable (no
// leader, no responder, no answer) rather than refusing the request.
func transient(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10008, // JetStream system temporarily unavailable
			10009, // JetStream cluster can not handle request (not leader)
			10158, // duplicate message id is in process
			10163, // expected last sequence per subject temporarily unavailable
			10202: // cluster member change is in progress
			return true
		}
	}
	return false
}

// Publish publishes msg, retrying transient failures within the failover
// budget and ctx. Only a message carrying a Nats-Msg-Id may be retried: a
// repeat of an attempt that was stored after all is then acknowledged as a
// duplicate of it, with its sequence, instead of being stored twice.
func (b *Bus) Publish(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return Read(ctx, func(c context.Context) (*jetstream.PubAck, error) { return b.js.PublishMsg(c, msg, opts...) })
}

// Read runs one request to JetStream (a get through the stream leader, or
// a publish that is safe to repeat), retrying transient failures within
// the failover budget and ctx, each attempt bounded by AttemptTimeout: a
// request that reached a leader that has just died, or a node that is
// still joining, is otherwise never answered and would hold its caller
// until ctx ends. Past the budget it fails with ErrUnavailable.
func Read[T any](ctx context.Context, get func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	var (
		v   T
		err error
	)
	for attempt := 0; attempt < 100; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(retryWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, err
			case <-t.C:
			}
		}
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		v, err = get(actx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil || time.Since(start)+retryWait >= failoverBudget {
			break
		}
	}
	if err != nil && transient(err) && ctx.Err() == nil {
		return v, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return v, err
}
