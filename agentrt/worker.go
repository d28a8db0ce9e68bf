package agentrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/lazylog"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Worker runs one Agent against the mesh.
type Worker struct {
	Store *taskstore.Store
	Agent Agent
	// Name is the agent's name in the mesh (subject token); defaults to
	// the card's name when that is a valid token.
	Name string
	// Instance names this worker in the registry (default: random).
	Instance string
	// Concurrency bounds tasks run at once by this worker (default 16).
	Concurrency int
	// Timeout bounds one run of the agent (default 120s); past it the task
	// fails with a message saying so.
	Timeout time.Duration
	// DelegateWait bounds how long a run's call to another agent
	// (Request.Mesh().Send) waits for the called task (0: DefaultMaxWait;
	// negative: only the run's Timeout). See Mesh.MaxWait.
	DelegateWait time.Duration
	// StaleAfter is how long a task may sit submitted with no work queued
	// before this worker re-enqueues it (default 30s; see janitor.go).
	StaleAfter time.Duration
	// SweepEvery is how often, after the first sweep StaleAfter after
	// start, the worker looks for such tasks (default 10m: a sweep reads
	// the task bucket).
	SweepEvery time.Duration
	// Metrics, when set, records the worker's runs and reports its work
	// consumer's statistics (nil: off).
	Metrics *metrics.Metrics
	Logger  *slog.Logger

	handMu   sync.Mutex
	handBack []*bus.Msg // work interrupted by shutdown, to Nak once fetching stopped

	lifecycle *taskstore.Lifecycle // the caller's side of the store, for calls to other agents
	runCtx    context.Context      // Run's context, for what runs as long as the worker
	routes    routes               // the live fleet, for calls to other agents (routes.go)
	cancels   cancels              // the runs in hand that a cancel stops
}

// cancels routes the mesh's cancels to this worker's runs: one
// subscription for every task (Bus.OnCancels) and a table of the tasks in
// hand, rather than a subscription per run.
type cancels struct {
	mu   sync.Mutex
	sub  *bus.Subscription // nil: subscribe per run (Bus.OnCancel)
	runs map[string][]*func()
}

// start subscribes to the mesh's cancels; on failure runs subscribe one
// by one, as they did before.
func (c *cancels) start(ctx context.Context, b *bus.Bus, log *slog.Logger) {
	sub, err := b.OnCancels(ctx, c.cancel)
	if err != nil {
		log.Warn("could not subscribe to cancels; each run subscribes to its own", "err", err)
		return
	}
	c.mu.Lock()
	c.sub = sub
	c.mu.Unlock()
}

func (c *cancels) stop() {
	c.mu.Lock()
	sub := c.sub
	c.sub = nil
	c.mu.Unlock()
	sub.Stop()
}

func (c *cancels) cancel(taskID string) {
	c.mu.Lock()
	fns := append([]*func(){}, c.runs[taskID]...)
	c.mu.Unlock()
	for _, fn := range fns {
		(*fn)()
	}
}

// watch calls fn when task id is canceled, until the returned stop.
func (c *cancels) watch(b *bus.Bus, id string, fn func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sub == nil {
		sub, err := b.OnCancel(id, fn)
		if err != nil {
			return func() {}
		}
		return sub.Stop
	}
	if c.runs == nil {
		c.runs = map[string][]*func(){}
	}
	p := &fn
	c.runs[id] = append(c.runs[id], p)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		runs := c.runs[id]
		for i, q := range runs {
			if q == p {
				runs = append(runs[:i], runs[i+1:]...)
				break
			}
		}
		if len(runs) == 0 {
			delete(c.runs, id)
		} else {
			c.runs[id] = runs
		}
	}
}

func (w *Worker) defaults() error {
	if w.Name == "" {
		w.Name = w.Agent.Card().Name
	}
	if !bus.ValidToken(w.Name) {
		return fmt.Errorf("agentrt: agent name %q must be 1-128 of [A-Za-z0-9_-]", w.Name)
	}
	if w.Instance == "" {
		w.Instance = newID()[:8]
	}
	if w.Concurrency <= 0 {
		w.Concurrency = 16
	}
	if w.Timeout <= 0 {
		w.Timeout = 120 * time.Second
	}
	if w.StaleAfter <= 0 {
		w.StaleAfter = 30 * time.Second
	}
	if w.SweepEvery <= 0 {
		w.SweepEvery = 10 * time.Minute
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	// Formatted once; what each task adds only when a line is written.
	w.Logger = lazylog.New(w.Logger.With("agent", w.Name, "instance", w.Instance))
	return nil
}

// Run consumes the agent's work queue until ctx ends, then waits for the
// tasks in hand: a task interrupted by shutdown is handed back to the queue
// for another worker.
func (w *Worker) Run(ctx context.Context) error {
	if w.Store == nil {
		return errors.New("agentrt: Worker.Store is required")
	}
	w.lifecycle = taskstore.NewLifecycle(w.Store, taskstore.LifecycleConfig{})
	if err := w.defaults(); err != nil {
		return err
	}
	w.runCtx = ctx
	cons, err := w.workConsumer(ctx)
	if err != nil {
		return err
	}
	w.Metrics.AddConsumers(metrics.StreamConsumers(w.Store.Bus(), bus.StreamWork, bus.ConsumerName(w.Name)))
	w.cancels.start(ctx, w.Store.Bus(), w.Logger)
	// Both cards as edges serve them: named for the worker, and listing
	// the message-replies extension when the agent declares replies.
	meshCard := func(c a2a.AgentCard) a2a.AgentCard {
		c.Name = w.Name
		if replies(w.Agent) {
			c = withRepliesExtension(c)
		}
		return c
	}
	cards := func() (a2a.AgentCard, *a2a.AgentCard) { // read at every heartbeat: an agent's card may change
		var ext *a2a.AgentCard
		if x, ok := w.Agent.(ExtendedCarder); ok {
			if e := x.ExtendedCard(); e != nil {
				c := meshCard(*e)
				ext = &c
			}
		}
		return meshCard(w.Agent.Card()), ext
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		entry := registry.Entry{Agent: w.Name, Instance: w.Instance}
		if cc, ok := w.Agent.(CardChecker); ok { // a proxy: what it verified of its upstream's card
			entry.Check = cc.CardCheck
		}
		if err := registry.PublishCards(ctx, w.Store.Bus(), entry, cards, w.Logger); err != nil {
			w.Logger.Error("registry publish failed", "err", err)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.janitor(ctx)
	}()
	w.Logger.Info("worker started", "concurrency", w.Concurrency)
	// One pull loop per slot: a slot fetches a task only when it is free, so
	// no task waits in this process while its ack timer runs.
	var slots sync.WaitGroup
	for i := 0; i < w.Concurrency; i++ {
		slots.Add(1)
		go func() {
			defer slots.Done()
			w.slot(ctx, cons)
		}()
	}
	slots.Wait()
	w.cancels.stop()
	w.handBackAll()
	wg.Wait()
	w.routes.wait()
	w.Logger.Info("worker stopped")
	return nil
}

// workConsumer opens the agent's work consumer, waiting through a NATS
// failover or a cluster that is still forming: only ctx ending or an
// invalid agent name stops it.
func (w *Worker) workConsumer(ctx context.Context) (bus.Consumer, error) {
	for attempt := 1; ; attempt++ {
		cons, err := w.Store.Bus().WorkConsumer(ctx, w.Name)
		if err == nil {
			return cons, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !bus.ValidToken(w.Name) {
			return nil, err
		}
		delay := min(time.Duration(attempt)*500*time.Millisecond, 5*time.Second)
		w.Logger.Warn("waiting for NATS to create the work consumer", "err", err, "attempt", attempt, "retry_in", delay)
		sleepCtx(ctx, delay)
	}
}

// handBackAll returns the work interrupted by shutdown to the queue. It
// runs once every slot stopped fetching, after a flush: JetStream hands a
// Nak'ed message to the next waiting pull request, and one this worker left
// behind (its subscription gone, the server not yet told) would hold it
// until AckWait instead of another worker getting it at once.
func (w *Worker) handBackAll() {
	w.handMu.Lock()
	msgs := w.handBack
	w.handBack = nil
	w.handMu.Unlock()
	if len(msgs) == 0 {
		return
	}
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = w.Store.Bus().Flush(fctx)
	cancel()
	for _, m := range msgs {
		_ = m.Nak()
	}
}

func (w *Worker) slot(ctx context.Context, cons bus.Consumer) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		batch, err := cons.Fetch(fctx, 1)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				w.Logger.Warn("fetch failed", "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		for m := range batch {
			w.handle(ctx, m)
		}
		cancel()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// handle runs one work item to its end. It acks when the turn is settled
// (final or interrupted state recorded), naks when the worker is stopping.
func (w *Worker) handle(ctx context.Context, m *bus.Msg) {
	bg := context.Background()
	meta, err := m.Info()
	if err != nil {
		_ = m.Term()
		return
	}
	var item taskstore.WorkItem
	if err := json.Unmarshal(m.Data(), &item); err != nil || !bus.ValidToken(item.TaskID) {
		w.Logger.Error("undecodable work item, dead-lettered", "err", err)
		_ = w.Store.Bus().DeadLetter(bg, w.Name, m.Data(), "undecodable")
		_ = m.Term()
		return
	}
	span := w.startConsume(m, &item, &meta)
	defer span.End()
	log := w.Logger.With("task_id", item.TaskID, "context_id", item.ContextID, "attempt", meta.NumDelivered)
	if sc := span.SpanContext(); sc.IsValid() {
		log = log.With("trace_id", sc.TraceID().String())
	}
	// A first delivery runs from the task its work item carries (its
	// first append is a compare-and-set on it: a task changed since, a
	// cancel say, is caught there); a redelivery reads the task.
	rec := taskstore.DecodeWorkTask(item.Task, item.TaskID)
	if rec == nil || meta.NumDelivered > 1 {
		opCtx, cancelOp := context.WithTimeout(bg, 20*time.Second)
		rec, err = w.Store.LoadTask(opCtx, item.TaskID)
		cancelOp()
	}
	switch {
	case errors.Is(err, taskstore.ErrTaskNotFound):
		w.taskNotFound(log, m, &meta, &item)
		return
	case err != nil:
		log.Warn("load task failed; will retry", "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	case rec.Task.Status.State.Terminal():
		_ = m.Ack() // canceled while queued, or a late redelivery
		return
	}
	wr := &writer{b: w.Store, taskID: item.TaskID, ctxID: rec.Task.ContextID, turn: item.Message.MessageID, timeout: 10 * time.Second, rec: rec, state: rec.Task.Status.State, linger: defaultLinger,
		run: fmt.Sprintf("%d.%d", meta.Seq, meta.NumDelivered), act: &activation{}, replies: replies(w.Agent)}
	defer wr.stop()
	switch v := w.redelivered(bg, rec, &item, &meta); v {
	case taskstore.RunIt:
	case taskstore.GiveUp:
		// Runs of this turn that claimed the task and did not settle it:
		// the next one would be run number TurnRuns+1. Deliveries the bus
		// refused before they could run (a failover, a full disk) do not
		// count.
		runs := rec.TurnRuns
		log.Error("task abandoned after repeated worker failures", "runs", runs)
		if !w.settle(log, m, item.TaskID, wr.Fail(fmt.Sprintf("task could not be processed: %d delivery attempts failed", runs+1))) {
			return
		}
		if err := w.Store.Bus().DeadLetter(bg, w.Name, m.Data(), "max deliveries"); err != nil {
			log.Error("could not dead-letter the abandoned work item", "err", err)
		}
		_ = m.Ack()
		return
	default:
		log.Info("work item not run: "+v.String(), "state", rec.Task.Status.State)
		_ = m.Ack()
		return
	}

	runCtx, cancelRun := context.WithCancelCause(trace.ContextWithSpan(ctx, span))
	defer cancelRun(nil)
	defer w.cancels.watch(w.Store.Bus(), item.TaskID, func() { cancelRun(ErrCanceled) })()
	stopBeat := w.heartbeat(m)
	defer stopBeat()

	if err := wr.claim(); err != nil {
		if errors.Is(err, ErrTaskClosed) {
			_ = m.Ack()
			return
		}
		log.Warn("could not mark task working; will retry", "err", err)
		w.noticeStoreFull(item.TaskID, err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	req := &Request{
		TaskID: item.TaskID, ContextID: rec.Task.ContextID, Message: item.Message,
		History: historyBefore(rec.Task.History, item.Message.MessageID), Artifacts: rec.Task.Artifacts,
		AcceptedOutputModes: item.AcceptedOutputModes, Metadata: item.Metadata, Attempt: int(meta.NumDelivered),
		Extensions: item.Extensions, owner: rec.Owner, act: wr.act,
	}
	req.mesh = &Mesh{store: w.Store, lc: w.lifecycle, parent: req, agent: w.Name, live: w.liveAgent, MaxWait: w.DelegateWait}
	timeoutCtx, cancelTimeout := context.WithTimeoutCause(runCtx, w.Timeout, ErrTimedOut)
	defer cancelTimeout()
	runEnded := w.Metrics.RunStarted(w.Name, meta.Timestamp)
	outcome := metrics.RunSettled
	started := time.Now()
	defer func() {
		state := runState(wr, outcome)
		runEnded(state, outcome)
		if log.Enabled(bg, slog.LevelDebug) {
			log.Debug("run ended", "state", state, "outcome", outcome, "duration_ms", float64(time.Since(started).Microseconds())/1000)
		}
	}()
	runErr := w.runTraced(timeoutCtx, req, wr)

	cause := context.Cause(timeoutCtx)
	if wr.wasSuperseded() {
		// This run stalled past AckWait and the work was redelivered; the
		// newer run owns the task and the message now.
		log.Warn("run superseded by a redelivery of the same work; its events were refused")
		outcome = metrics.RunSuperseded
		return
	}
	switch {
	case wr.finalState().Final():
		// The agent settled the turn itself.
	case ctx.Err() != nil && !errors.Is(cause, ErrCanceled) && !errors.Is(cause, ErrTimedOut):
		// Worker shutting down: hand the task to another worker, with
		// what the run recorded so far (the events its writer still
		// held: the agent was told they were written).
		if err := wr.flush(); err != nil && !errors.Is(err, ErrTaskClosed) {
			log.Warn("could not record the run's last events before handing the task back", "err", err)
		}
		log.Info("worker stopping; task handed back to the queue")
		outcome = metrics.RunHandedBack
		w.handMu.Lock()
		w.handBack = append(w.handBack, m)
		w.handMu.Unlock()
		return
	case errors.Is(cause, ErrCanceled) || errors.Is(runErr, ErrTaskClosed):
		// Canceled (or closed by someone else): the log already says so.
	case errors.Is(cause, ErrTimedOut):
		log.Warn("task timed out", "timeout", w.Timeout)
		if !w.settle(log, m, item.TaskID, wr.Fail(fmt.Sprintf("task timed out after %s", w.Timeout))) {
			outcome = metrics.RunRetried
			return
		}
	case runErr != nil && wr.writeFailed() != nil && !errors.Is(wr.writeFailed(), taskstore.ErrTaskLogFull):
		// The bus, not the agent, failed (a NATS node lost, say): run the
		// turn again once it is back rather than fail the task.
		log.Warn("could not record the agent's events; the turn will run again", "err", wr.writeFailed())
		w.noticeStoreFull(item.TaskID, wr.writeFailed())
		outcome = metrics.RunRetried
		_ = m.NakWithDelay(2 * time.Second)
		return
	case runErr != nil:
		log.Error("agent failed", "err", runErr)
		if !w.settle(log, m, item.TaskID, wr.Fail(failureText(runErr))) {
			outcome = metrics.RunRetried
			return
		}
	default:
		if !w.settle(log, m, item.TaskID, wr.Complete("")) {
			outcome = metrics.RunRetried
			return
		}
	}
	_ = m.Ack()
}

// taskNotFound handles a work item whose task cannot be read. The task is
// read through the stream leader (bus/ensure.go), so a miss is not a
// replica behind a write; still, a work item is never dropped on a first
// miss: it comes back with a growing delay, and only after MaxDeliver
// deliveries (about a minute) is it given up, into the dead-letter stream
// where an operator can see it, never silently.
func (w *Worker) taskNotFound(log *slog.Logger, m *bus.Msg, meta *bus.MsgInfo, item *taskstore.WorkItem) {
	n := int(meta.NumDelivered)
	if n >= w.Store.Bus().Config().MaxDeliver {
		log.Error("work item for a task that stayed not found; dead-lettered", "deliveries", n)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w.Store.Bus().DeadLetter(ctx, w.Name, m.Data(), "task not found"); err != nil {
			log.Error("could not dead-letter the work item; will retry", "err", err)
			_ = m.NakWithDelay(notFoundMaxDelay)
			return
		}
		_ = m.Ack()
		return
	}
	delay := min(time.Second<<min(n-1, 8), notFoundMaxDelay)
	log.Warn("work item for a task not found; will retry", "retry_in", delay, "enqueued", item.Enqueued)
	_ = m.NakWithDelay(delay)
}

// notFoundMaxDelay bounds the wait between deliveries of a work item whose
// task was not found.
const notFoundMaxDelay = 8 * time.Second

// redelivered judges the delivery of item by the task's rules
// (taskstore.Redelivered): whether its turn runs, was served already, or
// has failed too often. It asks the bus whether another work item of the
// same turn is still held only when that item's run claimed the task.
func (w *Worker) redelivered(ctx context.Context, rec *taskstore.TaskRecord, item *taskstore.WorkItem, meta *bus.MsgInfo) taskstore.Verdict {
	held := func(seq uint64) bool {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		h, err := w.Store.Bus().WorkHeld(c, seq)
		return err == nil && h
	}
	return taskstore.Redelivered(rec, item.Message.MessageID, meta.Seq, w.Store.Config().MaxDeliver, held)
}

// runState is the state label of a run's duration: the final state the
// run left the task in (completed, input_required, ...), handed_back, or
// unsettled when none was recorded (canceled or closed elsewhere, retried).
func runState(wr *writer, outcome string) string {
	if outcome == metrics.RunHandedBack {
		return outcome
	}
	if s := wr.finalState(); s.Final() {
		return strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_"))
	}
	return "unsettled"
}

// settle checks the write of a turn's final state: if the bus failed it,
// the work goes back to the queue (the turn runs again) instead of being
// acked with the task left working. It reports whether to ack.
func (w *Worker) settle(log *slog.Logger, m *bus.Msg, taskID string, err error) bool {
	if err == nil || errors.Is(err, ErrTaskClosed) {
		return true
	}
	if errors.Is(err, taskstore.ErrTaskLogFull) {
		// Running again would hit the same bound: the task stays as last
		// recorded (until retention removes it).
		log.Error("task reached the events-per-task limit; its final state could not be recorded", "err", err)
		return true
	}
	log.Warn("could not record the task's final state; the turn will run again", "err", err)
	w.noticeStoreFull(taskID, err)
	_ = m.NakWithDelay(2 * time.Second)
	return false
}

// The context.Cause of a run's context when it ends because the task was
// canceled, or because the run outlived Worker.Timeout. Any other cause
// means the worker is stopping and the task goes back to the queue (an
// agent forwarding work elsewhere should leave that work running).
var (
	ErrCanceled = errors.New("task canceled")
	ErrTimedOut = errors.New("task timed out")
)

// runAgent runs the agent, turning a panic into an error.
func (w *Worker) runAgent(ctx context.Context, req *Request, wr EventWriter) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = agentPanic{r}
		}
	}()
	return w.Agent.Run(ctx, req, wr)
}

// agentPanic is a panic of the agent, recovered.
type agentPanic struct{ v any }

func (p agentPanic) Error() string { return fmt.Sprintf("agent panicked: %v", p.v) }

// PublicError is an agent error whose message the client may see; any
// other error reaches the client only as its kind (see failureText).
type PublicError interface {
	error
	PublicMessage() string
}

// failureText is what a client sees of an agent error: its kind, never its
// internal text (which goes to the log with the task id). An error
// implementing PublicError speaks for itself.
func failureText(err error) string {
	var pub PublicError
	if errors.As(err, &pub) {
		return pub.PublicMessage()
	}
	var p agentPanic
	switch {
	case errors.As(err, &p):
		return "the agent failed while processing the task (it crashed)"
	case errors.Is(err, context.DeadlineExceeded):
		return "the agent failed while processing the task (an operation it waited on timed out)"
	case errors.Is(err, context.Canceled):
		return "the agent failed while processing the task (an operation it waited on was canceled)"
	}
	return "the agent failed while processing the task (internal error)"
}

// heartbeat tells JetStream the task is still in progress every quarter
// of AckWait, until the returned stop is called: three beats may be lost
// (a NATS node failing over) before the task is redelivered.
func (w *Worker) heartbeat(m *bus.Msg) func() {
	every := w.Store.Bus().Config().AckWait / 4
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// historyBefore returns history up to (not including) the message with id.
func historyBefore(h []a2a.Message, id string) []a2a.Message {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].MessageID == id {
			return h[:i]
		}
	}
	return h
}

// noticeStoreFull tells a blocking send waiting for the task that its turn
// waits for space when err says the store is full (bus.NoticeStoreFull).
func (w *Worker) noticeStoreFull(taskID string, err error) {
	if errors.Is(err, taskstore.ErrStoreFull) {
		w.Store.NoticeStoreFull(taskID)
	}
}
