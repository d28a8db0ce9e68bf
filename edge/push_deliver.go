package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/tracing"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of a push delivery.
const (
	hdrPushToken     = "X-A2A-Notification-Token"
	hdrPushSignature = "X-A2A-Notification-Signature"
)

// Dispatcher tuning.
const (
	// dispatchBatch is the most events one dispatch handles, and the
	// dispatch consumer's MaxAckPending: one batch out at a time, mesh-wide.
	dispatchBatch = 256
	// dispatchAckWait is how long a batch held by an edge that died blocks
	// the others before it is redelivered.
	dispatchAckWait = 30 * time.Second
	// dispatchFetchWait bounds one pull; an edge stopping hands its batch
	// back within about this long.
	dispatchFetchWait = time.Second
	// indexWait bounds the wait for the config index to catch up with the
	// bucket before a batch.
	indexWait = 5 * time.Second
)

// ---- the index of tasks with configs ----

// pushIndex knows, from a watcher on the A2A_PUSH bucket, which tasks have
// configs and from which event each config applies.
type pushIndex struct {
	mu      sync.Mutex
	tasks   map[string]map[string]uint64 // task id → config id → fromSeq
	newest  map[string]time.Time         // task id → when its newest config was stored
	applied uint64                       // last bucket revision applied
	ready   bool                         // initial values applied
	changed chan struct{}                // closed and replaced on every change
	// replay holds the keys a new watcher has replayed so far (nil: none
	// is replaying): at its end, keys it did not replay were deleted
	// while no watcher was looking.
	replay map[string]struct{}
}

// beginReplay starts a new watcher's replay of the bucket.
func (x *pushIndex) beginReplay() {
	x.mu.Lock()
	x.replay = map[string]struct{}{}
	x.mu.Unlock()
}

func newPushIndex() *pushIndex {
	return &pushIndex{tasks: map[string]map[string]uint64{}, newest: map[string]time.Time{}, changed: make(chan struct{})}
}

// expire forgets tasks whose newest config was stored before cutoff: the
// bucket's TTL has removed their configs without a delete marker the
// watcher would see, so the index would otherwise only grow.
func (x *pushIndex) expire(cutoff time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, at := range x.newest {
		if at.Before(cutoff) {
			delete(x.newest, id)
			delete(x.tasks, id)
		}
	}
}

func (x *pushIndex) apply(e jetstream.KeyValueEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	defer x.signal()
	if e == nil {
		x.ready = true
		if x.replay != nil {
			for taskID, m := range x.tasks {
				for configID := range m {
					if _, ok := x.replay[taskID+"."+configID]; !ok {
						delete(m, configID)
					}
				}
				if len(m) == 0 {
					delete(x.tasks, taskID)
					delete(x.newest, taskID)
				}
			}
			x.replay = nil
		}
		return
	}
	x.applied = max(x.applied, e.Revision())
	taskID, configID, ok := strings.Cut(e.Key(), ".")
	if !ok {
		return
	}
	if x.replay != nil {
		x.replay[e.Key()] = struct{}{}
	}
	if e.Operation() != jetstream.KeyValuePut {
		if m := x.tasks[taskID]; m != nil {
			delete(m, configID)
			if len(m) == 0 {
				delete(x.tasks, taskID)
				delete(x.newest, taskID)
			}
		}
		return
	}
	var rec bus.PushRecord
	if json.Unmarshal(e.Value(), &rec) != nil {
		return
	}
	m := x.tasks[taskID]
	if m == nil {
		m = map[string]uint64{}
		x.tasks[taskID] = m
	}
	m[configID] = rec.FromSeq
	if c := e.Created(); c.After(x.newest[taskID]) {
		x.newest[taskID] = c
	}
}

// signal wakes waiters; x.mu is held.
func (x *pushIndex) signal() {
	close(x.changed)
	x.changed = make(chan struct{})
}

// bump records that revision rev can never arrive (it expired).
func (x *pushIndex) bump(rev uint64) {
	x.mu.Lock()
	x.applied = max(x.applied, rev)
	x.signal()
	x.mu.Unlock()
}

// waitApplied waits until the index is ready and has applied revision rev.
func (x *pushIndex) waitApplied(ctx context.Context, rev uint64, limit time.Duration) bool {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		x.mu.Lock()
		ok, ch := x.ready && x.applied >= rev, x.changed
		x.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// configs returns the configs of a task (nil when it has none).
func (x *pushIndex) configs(taskID string) map[string]uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.tasks[taskID]
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ---- start ----

// start brings up the push machinery, each step that needs JetStream
// retried through a failover (bus.Retry logs what it waits for): the push
// bucket and delivery stream, the signing key, the config index (its
// watcher restarts itself for as long as the edge runs), then the two
// consumers and their loops. It returns nil once they run, ctx's error if
// ctx ends first, and any other error only for a bad key.
func (st *pushState) start(ctx context.Context, e *Edge, keyFile []byte) error {
	err := bus.Retry(ctx, e.log, "the push config bucket and delivery stream", func(ctx context.Context) error {
		store, err := e.bus.OpenPush(ctx)
		st.store = store
		return err
	})
	if err != nil {
		return err
	}
	if st.signer, err = e.loadSigner(ctx, keyFile); err != nil {
		return err
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		st.watchConfigs(ctx, e)
	}()
	for !st.index.waitApplied(ctx, 0, 15*time.Second) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.log.Warn("NATS: waiting for the push config index to load")
	}
	var dispatch, deliver jetstream.Consumer
	err = bus.Retry(ctx, e.log, "consumer "+bus.ConsumerPushDispatch, func(ctx context.Context) error {
		c, err := st.store.DispatchConsumer(ctx, dispatchBatch, dispatchAckWait)
		dispatch = c
		return err
	})
	if err != nil {
		return err
	}
	// A job waits in this edge's queue behind at most one delivery of its
	// shard, and InProgress restarts the clock when its turn comes.
	err = bus.Retry(ctx, e.log, "consumer "+bus.ConsumerPushDeliver, func(ctx context.Context) error {
		c, err := st.store.DeliverConsumer(ctx, st.cfg.MaxAttempts, 2*st.cfg.Timeout+5*time.Second)
		deliver = c
		return err
	})
	if err != nil {
		return err
	}
	st.wg.Add(2)
	go func() {
		defer st.wg.Done()
		st.dispatchLoop(ctx, e, dispatch)
	}()
	go func() {
		defer st.wg.Done()
		st.deliverLoop(ctx, e, deliver)
	}()
	return nil
}

// watchConfigs keeps the config index fed from a watcher on the push
// bucket until ctx ends. A watch that cannot start, or stops, is started
// again with backoff; so is one the dispatcher finds behind the bucket
// (reindex). A new watch replays the bucket: configs deleted meanwhile
// leave the index when the replay is done.
func (st *pushState) watchConfigs(ctx context.Context, e *Edge) {
	retention := e.bus.Config().Retention
	expiry := time.NewTicker(time.Minute)
	defer expiry.Stop()
	wait := 250 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		// The watcher lives as long as ctx (nats.go stops it with ctx).
		w, err := st.store.Watch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bus.Jitter(wait)
			wait = min(2*wait, 5*time.Second)
			e.log.Warn("NATS: waiting for a watch of the push config bucket", "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond))
			bus.Sleep(ctx, d)
			continue
		}
		if attempt > 1 {
			e.log.Info("NATS: watching the push config bucket", "attempts", attempt)
		}
		started := time.Now()
		st.index.beginReplay()
		st.followConfigs(ctx, e, w, expiry.C, retention)
		_ = w.Stop()
		if time.Since(started) > time.Minute {
			attempt, wait = 0, 250*time.Millisecond
			continue
		}
		d := bus.Jitter(wait)
		wait = min(2*wait, 5*time.Second)
		bus.Sleep(ctx, d)
	}
}

// followConfigs applies w's updates to the index until ctx ends, w stops,
// or the dispatcher asks for a new watch.
func (st *pushState) followConfigs(ctx context.Context, e *Edge, w jetstream.KeyWatcher, expiry <-chan time.Time, retention time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-expiry:
			st.index.expire(now.Add(-retention))
		case <-st.reindex:
			e.log.Warn("push: config index behind the bucket; watching the bucket again")
			return
		case en, ok := <-w.Updates():
			if !ok {
				if ctx.Err() == nil {
					e.log.Warn("push: config watcher stopped; watching again")
				}
				return
			}
			st.index.apply(en)
		}
	}
}

// failStreak paces and logs a loop's failures in a row: a pause growing
// from 250ms to 5s, one log line per failure until the pause is long, then
// one per 30s, and a line when it works again.
type failStreak struct {
	n      int
	since  time.Time
	logged time.Time
}

func (f *failStreak) failed(e *Edge, msg string, err error) {
	now := time.Now()
	if f.n == 0 {
		f.since = now
	}
	f.n++
	if f.n <= 5 || now.Sub(f.logged) >= 30*time.Second {
		f.logged = now
		e.log.Warn(msg, "err", err, "failures", f.n, "failing_for_ms", now.Sub(f.since).Milliseconds())
	}
}

func (f *failStreak) ok(e *Edge, msg string) {
	if f.n > 0 {
		e.log.Info(msg, "after_failures", f.n, "failed_for_ms", time.Since(f.since).Milliseconds())
		f.n = 0
	}
}

func (f *failStreak) pause() time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < f.n && d < 5*time.Second; i++ {
		d *= 2
	}
	return bus.Jitter(min(d, 5*time.Second))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ---- dispatch ----

func (st *pushState) dispatchLoop(ctx context.Context, e *Edge, cons jetstream.Consumer) {
	var fails failStreak
	for ctx.Err() == nil {
		batch, err := cons.Fetch(dispatchBatch, jetstream.FetchMaxWait(dispatchFetchWait))
		if err != nil {
			if ctx.Err() == nil {
				fails.failed(e, "push: dispatch fetch failed; retrying", err)
			}
			sleepCtx(ctx, fails.pause())
			continue
		}
		fails.ok(e, "push: dispatch fetches again")
		msgs := batch.Messages()
		for {
			group := collect(ctx, msgs)
			if len(group) == 0 {
				break
			}
			if ctx.Err() != nil {
				nakAll(group, 0) // hand them to another edge now
				continue
			}
			st.dispatch(ctx, e, group)
		}
	}
}

// collect returns the next messages of a fetch: it waits for one (until the
// fetch ends), then takes those that follow closely, up to a batch. When
// ctx ends it still drains the fetch, so the caller can hand messages back.
func collect(ctx context.Context, msgs <-chan jetstream.Msg) []jetstream.Msg {
	first, ok := <-msgs
	if !ok {
		return nil
	}
	group := []jetstream.Msg{first}
	linger := time.NewTimer(2 * time.Millisecond)
	defer linger.Stop()
	for len(group) < dispatchBatch {
		select {
		case m, ok := <-msgs:
			if !ok {
				return group
			}
			group = append(group, m)
		case <-linger.C:
			return group
		case <-ctx.Done():
			return group
		}
	}
	return group
}

func nakAll(msgs []jetstream.Msg, delay time.Duration) {
	for _, m := range msgs {
		if delay > 0 {
			_ = m.NakWithDelay(delay)
		} else {
			_ = m.Nak()
		}
	}
}

// dispatch turns the events of a batch that have configs into delivery
// jobs, then acks the batch with one cumulative ack.
func (st *pushState) dispatch(ctx context.Context, e *Edge, group []jetstream.Msg) {
	rev, err := st.store.LastRevision(ctx)
	if err != nil {
		e.log.Warn("push: could not read the config bucket's state; retrying the batch", "err", err)
		nakAll(group, time.Second)
		return
	}
	if !st.index.waitApplied(ctx, rev, indexWait) {
		if ctx.Err() == nil && st.store.RevisionGone(ctx, rev) {
			st.index.bump(rev) // the bucket's last entry expired
		} else {
			e.log.Warn("push: config index behind the bucket; retrying the batch", "revision", rev)
			select {
			case st.reindex <- struct{}{}: // its watcher may have lost its server
			default:
			}
			nakAll(group, time.Second)
			return
		}
	}
	for _, m := range group {
		taskID, ok := bus.TaskIDOfEvent(m.Subject())
		if !ok {
			continue
		}
		cfgs := st.index.configs(taskID)
		if cfgs == nil {
			continue
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		var ev a2a.StreamResponse
		if json.Unmarshal(m.Data(), &ev) != nil || !pushWorthy(&ev) {
			continue
		}
		seq := meta.Sequence.Stream
		for configID, from := range cfgs {
			if seq <= from {
				continue
			}
			if err := st.store.PublishJob(ctx, bus.PushJob{TaskID: taskID, ConfigID: configID, Seq: seq}); err != nil {
				e.log.Warn("push: could not queue a delivery; retrying the batch", "task_id", taskID, "err", err)
				nakAll(group, time.Second)
				return
			}
		}
	}
	// AckAll: acking the last message acks the whole batch.
	if err := group[len(group)-1].DoubleAck(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("push: dispatch ack failed; the batch will be dispatched again (duplicates are dropped)", "err", err)
	}
}

// ---- delivery ----

func (st *pushState) deliverLoop(ctx context.Context, e *Edge, cons jetstream.Consumer) {
	n := st.cfg.Workers
	var it jetstream.MessagesContext
	err := bus.Retry(ctx, e.log, "the push deliverer's pull subscription", func(context.Context) error {
		var err error
		it, err = cons.Messages(jetstream.PullMaxMessages(n))
		return err
	})
	if err != nil {
		return // ctx ended
	}
	// Jobs are sharded by task: one edge delivers a task's notifications
	// one at a time, in the order it receives them.
	shards := make([]chan jetstream.Msg, n)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = make(chan jetstream.Msg, 1)
		wg.Add(1)
		go func(ch chan jetstream.Msg) {
			defer wg.Done()
			for m := range ch {
				if ctx.Err() != nil {
					_ = m.Nak()
					continue
				}
				st.deliver(ctx, e, m)
			}
		}(shards[i])
	}
	var fails failStreak
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				// The subscription ended under us: pull again.
				fails.failed(e, "push: deliverer subscription closed; pulling again", err)
				sleepCtx(ctx, fails.pause())
				if next, err := cons.Messages(jetstream.PullMaxMessages(n)); err == nil {
					it = next
				}
				continue
			}
			fails.failed(e, "push: deliverer fetch failed; retrying", err)
			sleepCtx(ctx, fails.pause())
			continue
		}
		fails.ok(e, "push: deliverer fetches again")
		h := fnv.New32a()
		_, _ = h.Write([]byte(m.Subject()))
		select {
		case shards[h.Sum32()%uint32(n)] <- m:
		case <-ctx.Done():
			_ = m.Nak()
		}
	}
	// Hand back what this edge holds, so another edge delivers it now
	// rather than after the ack wait.
	it.Drain()
	for i := 0; i < 4*n; i++ {
		m, err := it.Next(jetstream.NextMaxWait(100 * time.Millisecond))
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
func (st *pushState) backoff(attempt uint64) time.Duration {
	d := st.cfg.Backoff
	for i := uint64(1); i < attempt && d < st.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, st.cfg.MaxBackoff)
}

// deliver POSTs one job and settles its message: ack on 2xx or when there
// is nothing to deliver any more (config deleted, event expired), a delayed
// nak to retry, term on the last attempt or an address the guard refuses.
func (st *pushState) deliver(ctx context.Context, e *Edge, m jetstream.Msg) {
	_ = m.InProgress()
	var job bus.PushJob
	if err := json.Unmarshal(m.Data(), &job); err != nil || !bus.ValidToken(job.TaskID) || !bus.ValidToken(job.ConfigID) {
		e.log.Error("push: malformed delivery job dropped", "subject", m.Subject())
		e.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Term()
		return
	}
	var attempt uint64 = 1
	if meta, err := m.Metadata(); err == nil {
		attempt = meta.NumDelivered
	}
	log := e.log.With("task_id", job.TaskID, "push_config", job.ConfigID, "seq", job.Seq, "attempt", attempt)
	retry := func(why string, err error) {
		if ctx.Err() != nil {
			_ = m.Nak() // this edge is stopping: another one retries at once
			return
		}
		if int(attempt) >= st.cfg.MaxAttempts {
			log.Error("push: notification not delivered; giving up", "reason", why, "err", err, "attempts", attempt)
			e.cfg.Metrics.PushDelivery(metrics.PushGaveUp)
			_ = m.Term()
			return
		}
		d := st.backoff(attempt)
		log.Warn("push: delivery failed; will retry", "reason", why, "err", err, "retry_in", d)
		e.cfg.Metrics.PushDelivery(metrics.PushRetried)
		_ = m.NakWithDelay(d)
	}
	var rec *bus.PushRecord
	err := st.rideOut(ctx, e, m, func() (err error) {
		rec, err = st.store.Get(ctx, job.TaskID, job.ConfigID)
		return err
	})
	if errors.Is(err, bus.ErrPushConfigNotFound) {
		e.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Ack() // deleted: no more deliveries
		return
	}
	if err != nil {
		retry("config unreadable", err)
		return
	}
	var ev *a2a.StreamResponse
	err = st.rideOut(ctx, e, m, func() (err error) {
		ev, err = e.bus.EventAt(ctx, job.TaskID, job.Seq)
		return err
	})
	if errors.Is(err, bus.ErrTaskNotFound) {
		log.Warn("push: event no longer in the log; dropped")
		e.cfg.Metrics.PushDelivery(metrics.PushDropped)
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
		e.cfg.Metrics.PushDelivery(metrics.PushDropped)
		_ = m.Term()
		return
	}
	pctx, span := e.startPushSpan(ctx, &job, attempt)
	if sc := span.SpanContext(); sc.IsValid() {
		log = log.With("trace_id", sc.TraceID().String())
	}
	status, err := st.post(pctx, rec, body)
	endPushSpan(span, status, err)
	switch {
	case err == nil && status/100 == 2:
		log.Debug("push: delivered", "status", status)
		e.cfg.Metrics.PushDelivery(metrics.PushDelivered)
		_ = m.Ack()
	case errors.Is(err, ssrf.ErrBlocked):
		log.Warn("push: webhook address refused by the SSRF guard; not delivered", "err", err)
		e.cfg.Metrics.PushDelivery(metrics.PushGaveUp)
		_ = m.Term()
	case err != nil:
		retry("transport", err)
	default:
		retry("HTTP status "+http.StatusText(status), nil)
	}
}

// rideOut runs read, retrying it while it fails with JetStream briefly
// unavailable, within the failover budget, and telling JetStream the job
// is in progress meanwhile: a failover does not use up the job's bounded
// attempts (each nak is one) on reads that would have worked a moment
// later. It returns read's last error.
func (st *pushState) rideOut(ctx context.Context, e *Edge, m jetstream.Msg, read func() error) error {
	start := time.Now()
	wait := 250 * time.Millisecond
	var err error
	for i := 0; i < 100; i++ {
		if err = read(); err == nil || !bus.IsTransient(err) || ctx.Err() != nil || time.Since(start)+wait >= e.failoverBudget() {
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
func (st *pushState) post(ctx context.Context, rec *bus.PushRecord, body []byte) (int, error) {
	cfg := rec.Config
	if err := st.guard.CheckURL(cfg.URL); err != nil {
		return 0, err // the allow-list may have changed since the config was set
	}
	jwt, err := st.signer.Sign(cfg.TaskID, cfg.URL, body, time.Now(), uuid.NewString())
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, st.cfg.Timeout)
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
	resp, err := st.client.Do(req)
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
	if ev.Task != nil {
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
