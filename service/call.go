package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Call is who calls and whom, as the transport knows it, and what the
// service resolved for the call. A transport makes one per request (one
// service method call: the first method resolves the agent, and the Call
// keeps it) and puts it in the context (WithCall); a context without one
// is an anonymous 1.0 call on the mesh endpoint.
type Call struct {
	// Principal is the caller the transport authenticated ("" for
	// anyone). A task belongs to the principal that created it, and only
	// it sees the task.
	Principal string
	// Grants are the caller's scopes or roles, which the access policy
	// matches (Config.Policy; package policy).
	Grants []string
	// Binding and From are how and whence the call came (the audit log:
	// "jsonrpc", "rest", "grpc", "ops"; the client's address).
	Binding, From string
	// Agent is the agent the transport's route names (/agents/{name});
	// empty for the mesh endpoint, where the request's tenant names the
	// agent, or else a call on a task finds it whichever agent owns it.
	Agent string
	// Version is the dialect the caller speaks ("": 1.0). The service
	// returns the 1.0 model whatever it is; it selects only what 0.3
	// defines differently (SubscribeToTask on an ended task, the paging
	// of ListTaskPushNotificationConfigs, the shape a push config is
	// stored in).
	Version a2a.Version
	// Extensions are the extension URIs the client requested (the
	// A2A-Extensions service parameter; a2a.ParseExtensions). After the
	// method returns, ActivatedExtensions is what to echo (extensions.go).
	Extensions []string
	// Legacy02 is a send by a 0.2 method (tasks/send,
	// tasks/sendSubscribe): its message may lack a messageId, and it may
	// name a new task itself.
	Legacy02 bool
	// Log is the call's logger ("agent" and "task_id" are added as the
	// service resolves them); nil: the service's.
	Log *slog.Logger
	// OnAgent, when set, is told the agent the call resolved to; OnTask
	// the task it works on (each time it reads one), for the transport's
	// span.
	OnAgent func(agent string)
	OnTask  func(t TaskRef)

	// Resolved by the service: the agent addressed; pinned when the
	// call named it (route or tenant), so other agents' tasks are not
	// visible through it; routed is the task an unpinned call was
	// routed by, reused once by loadTask.
	agent    string
	pinned   bool
	resolved bool
	routed   *taskstore.TaskRecord
	// activated are the agent's extensions activated for the call.
	activated []string
	// method is the service method called (for the audit log); task the
	// task it worked on, when one was read or created.
	method string
	task   string
}

// TaskRef names the task a call works on: its ids, and the traceparent of
// the span it was created under ("" for none).
type TaskRef struct {
	ID, ContextID, Trace string
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call in ctx (a new anonymous one when there is
// none).
func CallFrom(ctx context.Context) *Call {
	if c, ok := ctx.Value(callKey{}).(*Call); ok && c != nil {
		return c
	}
	return &Call{}
}

// ResolvedAgent is the agent the service resolved the call to ("" before
// it did, or when there is none).
func (c *Call) ResolvedAgent() string { return c.agent }

func (c *Call) v03() bool { return c.Version == a2a.V03 }

func (c *Call) logger(fallback *slog.Logger) *slog.Logger {
	if c.Log == nil {
		c.Log = fallback
	}
	return c.Log
}

func (c *Call) noteTask(rec *taskstore.TaskRecord) {
	c.task = rec.Task.ID
	if c.OnTask != nil {
		c.OnTask(TaskRef{ID: rec.Task.ID, ContextID: rec.Task.ContextID, Trace: rec.Trace})
	}
}

// errNoDefaultAgent answers a send on the mesh endpoint of an edge run
// without a default agent when it names no agent. It is -32602 (invalid
// params), not -32601: the method exists and works once the agent is
// named, by the tenant param or by the endpoint.
var errNoDefaultAgent = a2a.ErrInvalidParams.With("this edge has no default agent: POST to /agents/<name>, " +
	"or name the agent in the tenant field (GET /agents lists the live agents)")

// errUnknownAgent refuses a send to a name that is not a known agent: it
// never registered, or was removed, or forgotten after its retention. A
// known agent with no live worker is not refused: its sends wait in its
// queue for the next worker.
func errUnknownAgent(agent string) *a2a.Error {
	return a2a.ErrInvalidParams.With("unknown agent %q: no agent of that name is registered with the mesh", trunc(agent, 64))
}

// errRegistryLoading answers a send that names an agent the registry
// table cannot vouch for yet: it has not loaded the registry (the edge is
// starting, or NATS is electing a leader for the bucket).
var errRegistryLoading = a2a.ErrServerBusy.With("this edge is starting: the agent registry is not loaded yet; retry shortly")

// resolve picks the agent a call addresses: the transport's, else the
// request's tenant, else, for a call on a task (taskID: GetTask,
// CancelTask, SubscribeToTask, the push-config methods, a send whose
// message names a taskId) the agent of that task, else the default agent.
// Sends (send) need a live agent; task calls only need a name to scope by.
//
// Task ids are unique across the mesh, so the mesh endpoint finds a task
// whichever agent owns it; a call that names its agent sees only that
// agent's tasks. The task must still belong to the caller: a task of
// another principal leaves the call on the default agent, where the
// method answers "Task not found" as for any task it cannot see.
//
// The access policy (Config.Policy) then decides whether the caller may do
// act to that agent, before the agent's existence is checked (a denied
// caller learns nothing of which agents exist) and before any work is
// recorded. A call with no agent yet (ListTasks across agents) is
// filtered by the method.
func (s *Service) resolve(ctx context.Context, method string, act policy.Action, tenant, taskID string) (*Call, error) {
	send := act == policy.Send
	c := CallFrom(ctx)
	c.logger(s.log)
	c.method = method
	if err := s.route(ctx, c, tenant, taskID); err != nil {
		return c, err
	}
	if c.agent != "" && !s.allows(c, act, c.agent) {
		return c, denied(c, act, c.agent)
	}
	if c.agent != "" && !bus.ValidToken(c.agent) {
		return c, a2a.ErrInvalidParams.With("unknown agent %q", trunc(c.agent, 64))
	}
	if send {
		if c.agent == "" {
			return c, errNoDefaultAgent
		}
		if _, ok := s.cfg.Agents.Lookup(c.agent); !ok {
			if !s.cfg.Agents.Loaded() {
				// Not "unknown": this edge has not read the registry yet.
				return c, errRegistryLoading
			}
			if !c.pinned && c.routed == nil {
				return c, a2a.ErrInvalidParams.With("the default agent of this edge, %q, is not a known agent: "+
					"POST to /agents/<name> or name the agent in the tenant field (GET /agents lists the known agents)", c.agent)
			}
			return c, errUnknownAgent(c.agent)
		}
	}
	return c, s.checkRequired(c)
}

func (s *Service) route(ctx context.Context, c *Call, tenant, taskID string) error {
	if c.resolved {
		return nil
	}
	c.resolved = true
	defer func() {
		c.Log = c.Log.With("agent", c.agent)
		if c.OnAgent != nil {
			c.OnAgent(c.agent)
		}
	}()
	switch {
	case c.Agent != "":
		c.agent, c.pinned = c.Agent, true
		return nil
	case tenant != "":
		c.agent, c.pinned = tenant, true
		return nil
	}
	c.agent = s.cfg.DefaultAgent
	return s.routeByTask(ctx, c, taskID)
}

// routeByTask points an unpinned call on a task at the task's agent: it
// reads the task, and when the caller owns it, the call addresses its
// agent (and the method reuses the record). A task that does not exist,
// or is another principal's, leaves the call as it was.
func (s *Service) routeByTask(ctx context.Context, c *Call, id string) error {
	if id == "" || !bus.ValidToken(id) {
		return nil
	}
	rec, err := s.readTask(ctx, id)
	switch {
	case errors.Is(err, taskstore.ErrTaskNotFound):
		return nil
	case err != nil:
		return err
	case rec.Owner != c.Principal:
		return nil
	}
	c.agent, c.routed = rec.Agent, rec
	return nil
}

// allows reports whether the access policy lets c's caller do act to agent.
func (s *Service) allows(c *Call, act policy.Action, agent string) bool {
	return s.cfg.Policy.Policy().Allows(policy.Caller{Principal: c.Principal, Grants: c.Grants}, act, agent)
}

// actionWords say an action in a denial's message.
var actionWords = map[policy.Action]string{
	policy.Send:         "send to",
	policy.Read:         "read the tasks of",
	policy.Cancel:       "cancel the tasks of",
	policy.Push:         "configure push notifications for",
	policy.ExtendedCard: "read the extended card of",
	policy.Ops:          "use the operator API on",
	policy.Audit:        "read the audit log of",
	policy.Remove:       "remove",
}

// denied is the answer to a call the policy does not allow: it says who,
// which action and which agent, nothing else (SHOULD of A2A §3.3.2).
func denied(c *Call, act policy.Action, agent string) *a2a.Error {
	who := "an unauthenticated caller"
	if c.Principal != "" {
		who = fmt.Sprintf("principal %q", trunc(c.Principal, 64))
	}
	return a2a.ErrPermissionDenied.With("Permission denied: %s may not %s agent %q (action %q of the access policy)",
		who, actionWords[act], trunc(agent, 64), act)
}
