package service

import (
	"context"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Push notifications: the four push-config methods over the config store
// of package push (Config.PushStore), and the config a send carries.

// PushConfigRequest names one push config of a task
// (GetTaskPushNotificationConfig, DeleteTaskPushNotificationConfig). An
// empty ID asks Get for the task's oldest config (0.3's get without
// pushNotificationConfigId).
type PushConfigRequest struct {
	Tenant string
	TaskID string
	ID     string
}

// ListPushConfigsRequest is the request of ListTaskPushNotificationConfigs.
type ListPushConfigsRequest struct {
	Tenant    string
	TaskID    string
	PageSize  *int
	PageToken string
}

// ListPushConfigsResponse is a page of a task's push configs;
// NextPageToken is empty on the last page.
type ListPushConfigsResponse struct {
	Configs       []a2a.TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                           `json:"nextPageToken"`
}

// CreateTaskPushNotificationConfig stores a push config for a task of the
// caller and returns it as stored (credentials included).
func (s *Service) CreateTaskPushNotificationConfig(ctx context.Context, req *a2a.TaskPushNotificationConfig) (_ *a2a.TaskPushNotificationConfig, err error) {
	c, err := s.resolve(ctx, "CreateTaskPushNotificationConfig", policy.Push, req.Tenant, req.TaskID)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	st, err := s.cfg.PushStore()
	if err != nil {
		return nil, err
	}
	cfg := *req
	if cfg.TaskID == "" {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: taskId is required")
	}
	rec, err := s.loadTask(ctx, c, cfg.TaskID)
	if err != nil {
		return nil, err
	}
	if err := st.Validate(&cfg); err != nil {
		return nil, err
	}
	pr, err := s.savePushConfig(ctx, c, st, rec, cfg)
	if err != nil {
		return nil, err
	}
	out := pr.Config
	return &out, nil
}

// GetTaskPushNotificationConfig returns a push config of a task of the
// caller, without its credentials.
func (s *Service) GetTaskPushNotificationConfig(ctx context.Context, req *PushConfigRequest) (_ *a2a.TaskPushNotificationConfig, err error) {
	c, err := s.resolve(ctx, "GetTaskPushNotificationConfig", policy.Push, req.Tenant, req.TaskID)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	st, err := s.cfg.PushStore()
	if err != nil {
		return nil, err
	}
	if _, err := s.loadTask(ctx, c, req.TaskID); err != nil {
		return nil, err
	}
	var pr *push.Record
	if req.ID == "" {
		// 0.3 get without pushNotificationConfigId: the task's config
		// (the oldest when it has several).
		pr, err = st.First(ctx, req.TaskID)
	} else {
		pr, err = st.Get(ctx, req.TaskID, req.ID)
	}
	if err != nil {
		return nil, err
	}
	return readBack(pr.Config), nil
}

// ListTaskPushNotificationConfigs returns a page of a task's push
// configs, without their credentials. A 0.3 call gets them all.
func (s *Service) ListTaskPushNotificationConfigs(ctx context.Context, req *ListPushConfigsRequest) (_ *ListPushConfigsResponse, err error) {
	c, err := s.resolve(ctx, "ListTaskPushNotificationConfigs", policy.Push, req.Tenant, req.TaskID)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	st, err := s.cfg.PushStore()
	if err != nil {
		return nil, err
	}
	if req.PageSize != nil && (*req.PageSize < 0 || *req.PageSize > ListMaxPageSize) {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageSize must be between 0 and %d", ListMaxPageSize)
	}
	start, err := push.ParsePageToken(req.PageToken)
	if err != nil {
		return nil, err
	}
	if _, err := s.loadTask(ctx, c, req.TaskID); err != nil {
		return nil, err
	}
	list, err := st.List(ctx, req.TaskID)
	if err != nil {
		return nil, err
	}
	next := ""
	if !c.v03() {
		size := 0
		if req.PageSize != nil {
			size = *req.PageSize
		}
		list, next = push.Page(list, start, size)
	}
	out := &ListPushConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, 0, len(list)), NextPageToken: next}
	for _, pr := range list {
		out.Configs = append(out.Configs, *readBack(pr.Config))
	}
	return out, nil
}

// DeleteTaskPushNotificationConfig deletes a push config of a task of the
// caller.
func (s *Service) DeleteTaskPushNotificationConfig(ctx context.Context, req *PushConfigRequest) (err error) {
	c, err := s.resolve(ctx, "DeleteTaskPushNotificationConfig", policy.Push, req.Tenant, req.TaskID)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return err
	}
	st, err := s.cfg.PushStore()
	if err != nil {
		return err
	}
	if req.ID == "" {
		return a2a.ErrInvalidParams.With("Invalid parameters: the push notification config id is required")
	}
	if _, err := s.loadTask(ctx, c, req.TaskID); err != nil {
		return err
	}
	return st.Delete(ctx, req.TaskID, req.ID)
}

// readBack is a config as get and list return it: without
// authentication.credentials, as the A2A docs say.
func readBack(cfg a2a.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	if cfg.Authentication != nil {
		a := *cfg.Authentication
		a.Credentials = ""
		cfg.Authentication = &a
	}
	return &cfg
}

// savePushConfig stores a validated config of task rec for the caller,
// in the shapes of the call's version. Its tenant is kept (and echoed in
// 1.0) only when it names the agent called.
func (s *Service) savePushConfig(ctx context.Context, c *Call, st *push.Store, rec *taskstore.TaskRecord, cfg a2a.TaskPushNotificationConfig) (*push.Record, error) {
	if cfg.Tenant != c.agent {
		cfg.Tenant = ""
	}
	v := c.Version
	if v == "" {
		v = a2a.V10
	}
	return st.Save(ctx, rec, cfg, v)
}

// checkSendPush validates the push config of a send before the send records
// anything, including the per-task limit when it continues task taskID.
func (s *Service) checkSendPush(ctx context.Context, taskID string, cfg *a2a.TaskPushNotificationConfig) error {
	st, err := s.cfg.PushStore()
	if err != nil {
		return err
	}
	if err := st.Validate(cfg); err != nil {
		return err
	}
	if taskID == "" {
		return nil
	}
	return st.CheckRoom(ctx, taskID)
}

// storeSendPush stores the push config of a send once its turn is recorded
// and before it is enqueued, so every event of the agent's run is delivered.
// Without a client-given id, the id derives from the task and the turn's
// messageId: a retried send stores the same config again, not a second one.
func (s *Service) storeSendPush(ctx context.Context, c *Call, p *sendPlan) error {
	if p.req.Configuration == nil || p.req.Configuration.TaskPushNotificationConfig == nil {
		return nil
	}
	st, err := s.cfg.PushStore()
	if err != nil {
		return err
	}
	cfg := *p.req.Configuration.TaskPushNotificationConfig
	if cfg.ID == "" {
		cfg.ID = uuid.NewSHA1(taskstore.IDSpace, []byte("push\x00"+p.rec.Task.ID+"\x00"+p.req.Message.MessageID)).String()
	}
	_, err = s.savePushConfig(ctx, c, st, p.rec, cfg)
	return err
}
