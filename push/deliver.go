package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// Headers of a push delivery.
const (
	hdrPushToken     = "X-A2A-Notification-Token"
	hdrPushSignature = "X-A2A-Notification-Signature"
)

func (d *Deliverer) deliverLoop(ctx context.Context, cons bus.Consumer) {
	n := d.cfg.Workers
	var it *bus.MsgStream
	err := bus.Retry(ctx, d.log, "the push deliverer's pull subscription", func(context.Context) error {
		var err error
		it, err = cons.Messages(n)
		return err
	})
	if err != nil {
		return // ctx ended
	}
	// Jobs are sharded by task: one deliverer delivers a task's notifications
	// one at a time, in the order it receives them.
	shards := make([]chan *bus.Msg, n)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = make(chan *bus.Msg, 1)
		wg.Add(1)
		go func(ch chan *bus.Msg) {
			defer wg.Done()
			for m := range ch {
				if ctx.Err() != nil {
					_ = m.Nak()
					continue
				}
				d.deliver(ctx, m)
			}
		}(shards[i])
	}
	var fails failStreak
	for {
		m, err := it.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, bus.ErrStreamClosed) {
				// The subscription ended under us: pull again.
				fails.failed(d.log, "push: deliverer subscription closed; pulling again", err)
				sleepCtx(ctx, fails.pause())
				if next, err := cons.Messages(n); err == nil {
					it = next
				}
				continue
			}
			fails.failed(d.log, "push: deliverer fetch failed; retrying", err)
			sleepCtx(ctx, fails.pause())
			continue
		}
		fails.ok(d.log, "push: deliverer fetches again")
		h := fnv.New32a()
		_, _ = h.Write([]byte(m.Subject()))
		select {
		case shards[h.Sum32()%uint32(n)] <- m:
		case <-ctx.Done():
			_ = m.Nak()
		}
	}
	// Hand back what this deliverer holds, so another one delivers it now
	// rather than after the ack wait.
	it.Drain()
	for i := 0; i < 4*n; i++ {
		m, err := it.NextWait(100 * time.Millisecond)
		if err != nil {
			break
		}
		_ = m.Nak()
	}
	for _, ch := range shards {
		close(ch)
	}
	wg.Wait()
}

// backoff is the delay after the attempt-th failed delivery.
func (d *Deliverer) backoff(attempt uint64) time.Duration {
	wait := d.cfg.Backoff
	for i := uint64(1); i < attempt && wait < d.cfg.MaxBackoff; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.MaxBackoff)
}

// deliver POSTs one job and settles its message: ack on 2xx or when there
// is nothing to deliver any more (config deleted, event expired), a delayed
// nak to retry, term on the last attempt or an address the guard refuses.
func (d *Deliverer) deliver(ctx context.Context, m *bus.Msg) {
	_ = m.InProgress()
	var job Job
	if err := json.Unmarshal(m.Data(), &job); err != nil || !bus.ValidToken(job.TaskID) || !bus.ValidToken(job.ConfigID) {
		d.log.Error("push: malformed delivery job dropped", "subject", m.Subject())
		d.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Term()
		return
	}
	var attempt uint64 = 1
	if meta, err := m.Info(); err == nil {
		attempt = meta.NumDelivered
	}
	log := d.log.With("task_id", job.TaskID, "push_config", job.ConfigID, "seq", job.Seq, "attempt", attempt)
	// posted, when set, is the attempt a POST made: retry records its
	// outcome in the push log.
	var posted *Attempt
	retry := func(why string, err error) {
		if ctx.Err() != nil {
			_ = m.Nak() // this deliverer is stopping: another one retries at once
			return
		}
		if int(attempt) >= d.cfg.MaxAttempts {
			log.Error("push: notification not delivered; giving up", "reason", why, "err", err, "attempts", attempt)
			d.cfg.Metrics.PushDelivery(metrics.PushGaveUp)
			d.record(ctx, &job, posted, GaveUp, 0)
			_ = m.Term()
			return
		}
		wait := d.backoff(attempt)
		log.Warn("push: delivery failed; will retry", "reason", why, "err", err, "retry_in", wait)
		d.cfg.Metrics.PushDelivery(metrics.PushRetried)
		d.record(ctx, &job, posted, Failed, wait)
		_ = m.NakWithDelay(wait)
	}
	var rec *Record
	err := d.rideOut(ctx, m, func() (err error) {
		rec, err = d.kv.Get(ctx, job.TaskID, job.ConfigID)
		return err
	})
	if errors.Is(err, errConfigNotFound) {
		d.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Ack() // deleted: no more deliveries
		return
	}
	if err != nil {
		retry("config unreadable", err)
		return
	}
	var ev *a2a.StreamResponse
	err = d.rideOut(ctx, m, func() (err error) {
		ev, err = d.tasks.EventAt(ctx, job.TaskID, job.Seq)
		return err
	})
	if errors.Is(err, taskstore.ErrTaskNotFound) {
		log.Warn("push: event no longer in the log; dropped")
		d.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Ack()
		return
	}
	if err != nil {
		retry("event unreadable", err)
		return
	}
	if !pushWorthy(ev) {
		_ = m.Ack()
		return
	}
	var payload any = ev
	if rec.Version == a2a.V03 {
		payload = ev.ToV03()
	}
	body, err := json.Marshal(payload)
	if err != nil {
		log.Error("push: event not encodable; dropped", "err", err)
		d.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Term()
		return
	}
	pctx, span := d.startSpan(ctx, &job, attempt)
	if sc := span.SpanContext(); sc.IsValid() {
		log = log.With("trace_id", sc.TraceID().String())
	}
	status, err := d.post(pctx, rec, body)
	endPushSpan(span, status, err)
	posted = &Attempt{Seq: job.Seq, Attempt: attempt, Time: time.Now().UTC(), Status: status}
	if err != nil {
		posted.Error = err.Error()
	}
	switch {
	case err == nil && status/100 == 2:
		log.Debug("push: delivered", "status", status)
		d.cfg.Metrics.PushDelivery(metrics.PushDelivered)
		d.record(ctx, &job, posted, Delivered, 0)
		_ = m.Ack()
	case errors.Is(err, ssrf.ErrBlocked):
		log.Warn("push: webhook address refused by the SSRF guard; not delivered", "err", err)
		d.cfg.Metrics.PushDelivery(metrics.PushGaveUp)
		d.record(ctx, &job, posted, Refused, 0)
		_ = m.Term()
	case err != nil:
		retry("transport", err)
	default:
		retry("HTTP status "+http.StatusText(status), nil)
	}
}

// recordTimeout bounds the write of one push log entry.
const recordTimeout = 2 * time.Second

// record writes what became of a POST (a, nil when no POST was made) to
// the push log: outcome, and for a retried one when it is tried again
// (retryIn from now). It is best effort: the notification's fate does not
// depend on it, and a log entry that cannot be written is only logged.
func (d *Deliverer) record(ctx context.Context, job *Job, a *Attempt, outcome string, retryIn time.Duration) {
	if a == nil {
		return
	}
	a.Outcome = outcome
	if retryIn > 0 {
		next := a.Time.Add(retryIn)
		a.NextRetry = &next
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	if err := d.kv.RecordAttempt(ctx, job.TaskID, job.ConfigID, *a); err != nil {
		d.log.Debug("push: delivery attempt not recorded", "task_id", job.TaskID, "push_config", job.ConfigID, "err", err)
	}
}

// rideOut runs read, retrying it while it fails with JetStream briefly
// unavailable, within the failover budget, and telling JetStream the job
// is in progress meanwhile: a failover does not use up the job's bounded
// attempts (each nak is one) on reads that would have worked a moment
// later. It returns read's last error.
func (d *Deliverer) rideOut(ctx context.Context, m *bus.Msg, read func() error) error {
	start := time.Now()
	wait := 250 * time.Millisecond
	var err error
	for i := 0; i < 100; i++ {
		if err = read(); err == nil || !bus.IsTransient(err) || ctx.Err() != nil || time.Since(start)+wait >= bus.FailoverBudget {
			return err
		}
		if !bus.Sleep(ctx, bus.Jitter(wait)) {
			return err
		}
		_ = m.InProgress()
		wait = min(2*wait, 2*time.Second)
	}
	return err
}

// post sends one notification and returns the receiver's HTTP status.
func (d *Deliverer) post(ctx context.Context, rec *Record, body []byte) (int, error) {
	cfg := rec.Config
	if err := d.guard.CheckURL(cfg.URL); err != nil {
		return 0, err // the allow-list may have changed since the config was set
	}
	jwt, err := d.signer.Sign(cfg.TaskID, cfg.URL, body, time.Now(), uuid.NewString())
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	// application/json rather than 1.0's application/a2a+json: common
	// webhook stacks only parse the former.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "a2amesh-push")
	if tok := pushToken(cfg); tok != "" {
		req.Header.Set(hdrPushToken, tok)
	}
	req.Header.Set(hdrPushSignature, jwt)
	if a := cfg.Authentication; a != nil && a.Scheme != "" && a.Credentials != "" {
		req.Header.Set("Authorization", a.Scheme+" "+a.Credentials)
	} else {
		req.Header.Set("Authorization", "Bearer "+jwt)
	}
	tracing.Inject(rctx, req.Header)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// pushWorthy reports whether an event of the log is notified: what a
// stream shows, so not the task's creation entry nor the user's own turns.
func pushWorthy(ev *a2a.StreamResponse) bool {
	if ev.Task != nil || a2a.IsClaimEvent(ev) || a2a.IsReplyEvent(ev) {
		// a worker's claim of an undecided turn is the mesh's own; a
		// message reply answered the send itself and hides its task
		return false
	}
	return ev.Message == nil || ev.Message.Role != a2a.RoleUser
}

// pushToken is the config's shared-secret token in either shape: the
// top-level token, else authentication.credentials (top-level wins).
func pushToken(cfg a2a.TaskPushNotificationConfig) string {
	if cfg.Token != "" {
		return cfg.Token
	}
	if cfg.Authentication != nil {
		return cfg.Authentication.Credentials
	}
	return ""
}

// scope is the push component's instrumentation scope.
const scope = "github.com/a2amesh/a2amesh/push"

// startSpan starts the client span of one push delivery, a child of the
// span that created the task (read from its record only while tracing
// records: a delivery has no other parent).
func (d *Deliverer) startSpan(ctx context.Context, job *Job, attempt uint64) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return ctx, noopSpan
	}
	if rec, err := d.tasks.LoadTask(ctx, job.TaskID); err == nil {
		if sc, ok := tracing.ParseTraceparent(rec.Trace); ok {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	ctx, span := tracing.Tracer(scope).Start(ctx, "push POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			tracing.AttrTaskID.String(job.TaskID),
			attribute.String("a2a.push.config_id", job.ConfigID),
			attribute.Int64("a2a.push.event_seq", int64(job.Seq)),
			attribute.Int64("a2a.push.attempt", int64(attempt)),
			attribute.String("http.request.method", http.MethodPost),
		))
	return ctx, span
}

var noopSpan = trace.SpanFromContext(context.Background())

func endPushSpan(span trace.Span, status int, err error) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, "not delivered")
	case status/100 != 2:
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
	}
}
