package bus

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Riding out a failover, for the roles: what counts as JetStream being
// briefly unavailable, and a retry loop with backoff that says what it
// waits for. A role starting while a NATS node is down or an election is
// under way waits here instead of exiting; only configuration errors end a
// process.

// FailoverBudget is how long one operation keeps retrying through a
// failover before a caller is told to retry (-32000, ErrUnavailable).
const FailoverBudget = failoverBudget

// IsTransient reports whether err means that JetStream or the NATS
// connection is briefly unavailable (no leader, no responder, no answer, a
// reconnect, a consumer lost with its server) rather than a refusal of the
// request: repeating the request later may succeed. ErrUnavailable (the
// failover budget spent) is transient too.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if transient(err) || errors.Is(err, ErrUnavailable) {
		return true
	}
	switch {
	case errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrStaleConnection),
		errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, jetstream.ErrServerShutdown),
		errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrOrderedConsumerReset),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10023, // insufficient resources: too few peers up to place an R3 asset
			10074: // JetStream not enabled: a node still starting
			return true
		}
		return apiErr.Code == 503 || apiErr.Code == 408
	}
	return false
}

// permanentError marks an error Retry gives up on at once.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks err as one Retry must not retry (a configuration error,
// a refusal that repeating cannot change). Retry returns err unwrapped.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Retry tuning.
const (
	// RetryAttempt bounds one attempt of Retry: the first two get less
	// (retryAttemptFirst, then 3s), so that one request lost with a dead
	// server (it is never answered) costs 2s, not 5s, while a slow
	// JetStream still gets its 5s from the third attempt on.
	RetryAttempt      = 5 * time.Second
	retryAttemptFirst = 2 * time.Second
	// retryFirst and retryMax: the first pause and the longest.
	retryFirst = 250 * time.Millisecond
	retryMax   = 5 * time.Second
	// retryAttempts bounds the attempts (days at retryMax): a loop that
	// never ends has to end somewhere.
	retryAttempts = 100_000
)

// Retry calls fn until it returns nil, an error marked Permanent, or ctx
// ends (then it returns ctx's error). Each call gets a context bounded by
// 2s, then 3s, then RetryAttempt (5s). Between failures it waits with exponential backoff (250ms
// doubling to 5s, with jitter) and logs, at warn level, what it waits for
// (what, e.g. "push config bucket") with the error; once it succeeds after
// a failure it logs how long it waited. Every error is retried unless
// marked Permanent: at start-up a JetStream that refuses (too few peers, a
// stream not yet recovered) cannot be told from one that is still coming
// up, and the log line names what the role waits for.
func Retry(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	wait := retryFirst
	var err error
	for attempt := 1; attempt <= retryAttempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(retryAttemptFirst+time.Duration(attempt-1)*time.Second, RetryAttempt))
		err = fn(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("NATS: "+what+" ready", "attempts", attempt, "waited_ms", time.Since(start).Milliseconds())
			}
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := Jitter(wait)
		log.Warn("NATS: waiting for "+what, "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond),
			"transient", IsTransient(err))
		if !Sleep(ctx, d) {
			return ctx.Err()
		}
		wait = min(2*wait, retryMax)
	}
	return err
}

// Jitter returns d give or take 20%, so that processes retrying after the
// same outage do not all come back at once.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - d/5 + time.Duration(rand.Int64N(int64(2*d/5)+1))
}

// Sleep waits d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
