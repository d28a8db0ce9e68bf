package edge

import (
	"context"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/service"
)

// Push notifications: the A2A push-config methods, over the config store
// of package push, and the key set receivers verify deliveries with. The
// delivery itself is the push.Deliverer component: its host runs it beside
// the HTTP server and gives it as Config.PushDeliverer (NewPushDeliverer
// makes it from Config.Push).

// PushConfig configures push-notification delivery (see push.Config).
type PushConfig = push.Config

// NewPushDeliverer makes the push deliverer cfg.Push describes, signing
// with cfg.PublicURL as issuer, logging to cfg.Logger and counting in
// cfg.Metrics (where cfg.Push leaves them empty); nil when push is off.
// It fails on a configuration error only (see push.Config.Check).
func NewPushDeliverer(cfg Config) (*push.Deliverer, error) {
	pc := cfg.Push
	if !pc.Enabled {
		return nil, nil
	}
	if pc.Issuer == "" {
		pc.Issuer = strings.TrimRight(cfg.PublicURL, "/")
	}
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	if pc.Metrics == nil {
		pc.Metrics = cfg.Metrics
	}
	return push.New(cfg.Store, pc)
}

// pushEnabled reports whether this edge offers push notifications (what
// cards advertise): its deliverer runs or is starting (perhaps waiting for
// NATS: calls are then answered -32000, retry), and has not stopped.
func (e *Edge) pushEnabled() bool {
	if e.pusher == nil {
		return false
	}
	s := e.pusher.State()
	return s == push.Starting || s == push.Running
}

// pushWaiting reports whether push is configured but not delivering yet
// (what /healthz waits for as "push delivery").
func (e *Edge) pushWaiting() bool {
	if e.pusher == nil {
		return e.cfg.Push.Enabled // a bad push config: never ready
	}
	return e.pusher.State() != push.Running
}

// errPushStarting answers push calls while the push deliverer waits for
// NATS (start-up, or a failover during it).
var errPushStarting = a2a.ErrServerBusy.With("push notifications are starting on this edge (waiting for NATS); retry shortly")

// pushStore returns the config store for a call that needs it: the "not
// supported" error when push is off, -32000 while it starts.
func (e *Edge) pushStore() (*push.Store, error) {
	if e.pusher == nil {
		return nil, a2a.ErrPushNotificationNotSupported
	}
	if s := e.pusher.Store(); s != nil {
		return s, nil
	}
	if e.pusher.State() == push.Starting {
		return nil, errPushStarting
	}
	return nil, a2a.ErrPushNotificationNotSupported
}

// ---- JSON-RPC: the push-config methods ----

// pushIDParams reads the params of get, list and delete in both shapes:
// 1.0 {taskId, id} and 0.3 {id: taskId, pushNotificationConfigId}.
type pushIDParams struct {
	Tenant                   string       `json:"tenant,omitempty"`
	TaskID                   string       `json:"taskId"`
	ID                       string       `json:"id"`
	PushNotificationConfigID string       `json:"pushNotificationConfigId"`
	PageSize                 *int         `json:"pageSize"`
	PageToken                string       `json:"pageToken"`
	Metadata                 a2a.Metadata `json:"metadata,omitempty"`
}

// UnmarshalJSON reads each field under its JSON or its proto name
// (task_id, page_size, ...), as for every request type.
func (p *pushIDParams) UnmarshalJSON(b []byte) error {
	type plain pushIDParams
	return a2a.UnmarshalProtoJSON(b, "params", (*plain)(p))
}

// check refuses what the call's version requires and p lacks. In 1.0 the
// task is always taskId (a 1.0 call without it must not be read as 0.3,
// where "id" names the task), and get and delete name the config by id.
func (p *pushIDParams) check(c *call) error {
	if c.version != a2a.V10 {
		return nil
	}
	if p.TaskID == "" {
		return a2a.ErrInvalidParams.With("Invalid parameters: taskId is required")
	}
	if (c.op == a2a.OpPushGet || c.op == a2a.OpPushDelete) && p.ID == "" && p.PushNotificationConfigID == "" {
		return a2a.ErrInvalidParams.With("Invalid parameters: id is required (the push notification config's id)")
	}
	return nil
}

// ids returns the task id and config id the params name.
func (p *pushIDParams) ids() (taskID, configID string) {
	if p.TaskID != "" { // 1.0: the config's own id is "id"
		if p.ID != "" {
			return p.TaskID, p.ID
		}
		return p.TaskID, p.PushNotificationConfigID
	}
	return p.ID, p.PushNotificationConfigID // 0.3: "id" is the task's
}

// pushConfigCall serves the four push-config methods of both versions:
// it decodes the params in the version's shape, calls the service, and
// encodes the result in that shape.
func (e *Edge) pushConfigCall(ctx context.Context, c *call) (any, error) {
	if c.op == a2a.OpPushSet {
		var cfg a2a.TaskPushNotificationConfig
		if err := a2a.DecodeParams(c.req.Params, &cfg); err != nil {
			return nil, err
		}
		out, err := e.svc.CreateTaskPushNotificationConfig(ctx, &cfg)
		if err != nil {
			return nil, err
		}
		return c.encodePushConfig(out), nil
	}
	var p pushIDParams
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	if err := p.check(c); err != nil {
		return nil, err
	}
	taskID, configID := p.ids()
	switch c.op {
	case a2a.OpPushGet:
		out, err := e.svc.GetTaskPushNotificationConfig(ctx, &service.PushConfigRequest{Tenant: p.Tenant, TaskID: taskID, ID: configID})
		if err != nil {
			return nil, err
		}
		return c.encodePushConfig(out), nil
	case a2a.OpPushList:
		res, err := e.svc.ListTaskPushNotificationConfigs(ctx, &service.ListPushConfigsRequest{Tenant: p.Tenant, TaskID: taskID,
			PageSize: p.PageSize, PageToken: p.PageToken})
		if err != nil {
			return nil, err
		}
		configs := make([]any, 0, len(res.Configs))
		for i := range res.Configs {
			configs = append(configs, c.encodePushConfig(&res.Configs[i]))
		}
		if c.version == a2a.V03 {
			return configs, nil
		}
		return struct {
			Configs       []any  `json:"configs"`
			NextPageToken string `json:"nextPageToken"`
		}{Configs: configs, NextPageToken: res.NextPageToken}, nil
	case a2a.OpPushDelete:
		if err := e.svc.DeleteTaskPushNotificationConfig(ctx, &service.PushConfigRequest{Tenant: p.Tenant, TaskID: taskID, ID: configID}); err != nil {
			return nil, err
		}
		if c.version == a2a.V03 {
			return nil, nil // result null
		}
		return struct{}{}, nil // google.protobuf.Empty
	}
	return nil, a2a.ErrMethodNotFound
}

// encodePushConfig shapes a config for the call's version.
func (c *call) encodePushConfig(cfg *a2a.TaskPushNotificationConfig) any {
	if c.version == a2a.V03 {
		return cfg.ToV03()
	}
	return cfg
}
