package service

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Agents is what the service reads of the agent registry: an agent's
// card, and whether the registry has been read at all.
type Agents interface {
	Lookup(name string) (a2a.AgentCard, bool)
	Loaded() bool
}

// DefaultBlockingTimeout is how long a blocking send waits for its task
// to settle unless Config.BlockingTimeout says otherwise. It is longer
// than the registry's lost grace (30 s), so a send to an agent whose only
// worker crashed and comes back within the grace still gets its answer in
// the same call; and half the worker's default task timeout (120 s), so a
// client learns well before that that its task is still queued or
// working, instead of holding a connection for as long as the task might
// take (or, for an agent with no worker left, for ever).
const DefaultBlockingTimeout = 60 * time.Second

// Config configures a Service. Bus, Agents and Tasks are required.
type Config struct {
	Store  *taskstore.Store
	Agents Agents
	Tasks  *taskstore.Lifecycle
	// Policy decides which caller may do what to which agent (package
	// policy); nil: every caller may do everything, as without a policy.
	Policy *policy.File
	// Audit, when set, records every state-changing call and every
	// denial (package audit); nil: no audit log.
	Audit *audit.Log
	// DefaultAgent serves calls that name no agent and no task.
	DefaultAgent string
	// BlockingTimeout bounds how long SendMessage waits for its task to
	// settle (0: DefaultBlockingTimeout; negative: no bound). Past it the
	// call answers with the task as it stands, still queued or working.
	BlockingTimeout time.Duration
	// KeepAlive is how long a stream may stay quiet before it yields a
	// keep-alive event (default 15s).
	KeepAlive time.Duration
	// PushStore returns the push-config store (nil: push is not
	// supported). Its error answers the call: not supported, or busy
	// while push starts.
	PushStore func() (*push.Store, error)
	// FailoverBudget is how long a call or a stream rides out a failover
	// of JetStream before it answers -32000 (nil: bus.FailoverBudget).
	FailoverBudget func() time.Duration
	// SkillVisible reports whether principal may see a skill that agent's
	// extended card lists and its public card does not (nil: every
	// caller sees every skill). GetExtendedAgentCard leaves out the
	// others (extendedcard.go).
	SkillVisible func(principal, agent, skill string) bool
	Logger       *slog.Logger
}

// Service serves the A2A operations over the bus. It holds no state of
// its own: every edge has one, and any number may share a bus.
type Service struct {
	cfg   Config
	bus   *bus.Bus
	store *taskstore.Store
	tasks *taskstore.Lifecycle
	log   *slog.Logger
}

// New returns the service cfg describes.
func New(cfg Config) *Service {
	if cfg.BlockingTimeout == 0 {
		cfg.BlockingTimeout = DefaultBlockingTimeout
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PushStore == nil {
		cfg.PushStore = func() (*push.Store, error) { return nil, a2a.ErrPushNotificationNotSupported }
	}
	if cfg.Tasks == nil {
		cfg.Tasks = taskstore.NewLifecycle(cfg.Store, taskstore.LifecycleConfig{})
	}
	return &Service{cfg: cfg, bus: cfg.Store.Bus(), store: cfg.Store, tasks: cfg.Tasks, log: cfg.Logger}
}

func (s *Service) failoverBudget() time.Duration {
	if s.cfg.FailoverBudget != nil {
		if d := s.cfg.FailoverBudget(); d > 0 {
			return d
		}
	}
	return bus.FailoverBudget
}

// ToError is the *a2a.Error a failure is answered with, whatever the
// binding. An error of the bus that is JetStream being briefly unavailable
// (no leader, no answer) is -32000 "retry", never -32603: the client's
// retry will likely succeed once the failover is over. A write JetStream
// refused for lack of storage is -32000 too, saying the store is full:
// retrying at once will not help, later will.
func ToError(err error) *a2a.Error {
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return a2a.AsError(err)
	}
	if taskstore.IsStorageFull(err) {
		return a2a.AsError(taskstore.ErrStoreFull)
	}
	if bus.IsTransient(err) {
		return bus.ErrUnavailable
	}
	if errors.Is(err, taskstore.ErrTaskNotFound) {
		// A task the call was working on went from under it: the
		// trimmer evicted it (the mesh over --max-tasks) or retention
		// aged it out. Calls that look a task up answer -32001 before
		// this; here the call had the task, so it is told to retry.
		return errEvicted
	}
	return a2a.AsError(err)
}

// errEvicted answers a call whose task was removed while it ran.
var errEvicted = a2a.ErrServerBusy.With("the task was removed before it settled: the mesh was over its bound of retained tasks (--max-tasks); retry later")

// answer turns a method's failure into what it returns: an *a2a.Error,
// with an internal cause logged (not shown to the caller). A failure of a
// call whose client went away is returned as it is: nobody reads it.
func (s *Service) answer(ctx context.Context, c *Call, err error) error {
	if err == nil {
		s.audit(ctx, c, nil)
		return nil
	}
	if ctx.Err() != nil {
		s.audit(ctx, c, a2a.ErrServerBusy.With("the client went away"))
		return err
	}
	ae := ToError(err)
	if ae.Code == a2a.CodeInternalError {
		c.logger(s.log).Error("request failed", "err", err)
	}
	s.audit(ctx, c, ae)
	return ae
}

// changesState are the methods the audit log records whatever their
// outcome; any other method is recorded only when the policy denied it.
var changesState = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "CancelTask": true,
	"CreateTaskPushNotificationConfig": true, "DeleteTaskPushNotificationConfig": true,
}

// audit records c in the audit log (Config.Audit) when it changed state or
// was denied. It never waits: the log publishes in the background.
func (s *Service) audit(ctx context.Context, c *Call, ae *a2a.Error) {
	if s.cfg.Audit == nil || c.method == "" {
		return
	}
	denied := ae != nil && ae.Code == a2a.CodePermissionDenied
	if !denied && !changesState[c.method] {
		return
	}
	e := audit.Entry{Principal: c.Principal, From: c.From, Binding: c.Binding, Method: c.method,
		Agent: c.agent, Task: c.task, Outcome: audit.OK}
	switch {
	case denied:
		e.Outcome, e.Code = audit.Denied, ae.Code
	case ae != nil:
		e.Outcome, e.Code = audit.Failed, ae.Code
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		e.TraceID = sc.TraceID().String()
	}
	s.cfg.Audit.Record(e)
}

// readTask loads a task, riding out a failover: a transient error of the
// bus is retried within the failover budget (the last error is returned
// past it, which the caller answers with -32000).
func (s *Service) readTask(ctx context.Context, id string) (*taskstore.TaskRecord, error) {
	start := time.Now()
	wait := 100 * time.Millisecond
	budget := s.failoverBudget()
	var (
		rec *taskstore.TaskRecord
		err error
	)
	for attempt := 0; attempt < 100; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attempt > 0 { // a retry ends with the budget (the bus's own reads retry too)
			actx, cancel = context.WithDeadline(ctx, start.Add(budget))
		}
		rec, err = s.store.LoadTask(actx, id)
		cancel()
		// The bus rides out a failover for its own budget, then says
		// ErrUnavailable; a call whose budget is longer (a stream's,
		// say) goes on asking until its own is spent.
		if err == nil || !bus.IsTransient(err) || ctx.Err() != nil || time.Since(start)+wait >= budget {
			return rec, err
		}
		if attempt == 0 {
			s.log.Warn("task read failed; retrying through the failover", "task_id", trunc(id, 64), "err", err)
		}
		if !bus.Sleep(ctx, bus.Jitter(wait)) {
			break
		}
		wait = min(2*wait, time.Second)
	}
	return rec, err
}

// loadTask loads a task visible to the call: it exists, belongs to the
// caller, and to the addressed agent when one was named.
func (s *Service) loadTask(ctx context.Context, c *Call, id string) (*taskstore.TaskRecord, error) {
	if id == "" {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: id is required")
	}
	var (
		rec *taskstore.TaskRecord
		err error
	)
	if c.routed != nil && c.routed.Task.ID == id {
		rec, c.routed = c.routed, nil // read by route an instant ago
	} else {
		rec, err = s.readTask(ctx, id)
	}
	if errors.Is(err, taskstore.ErrTaskNotFound) {
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64))
	}
	if err != nil {
		return nil, err
	}
	if rec.Owner != c.Principal || (c.pinned && rec.Agent != c.agent) || rec.Task.IsReply() {
		// A task that ended as a message reply is hidden: its send was
		// answered with the message, and the client never learned its id.
		return nil, a2a.ErrTaskNotFound.With("Task not found: %s", trunc(id, 64))
	}
	c.noteTask(rec)
	return rec, nil
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func historyLen(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
