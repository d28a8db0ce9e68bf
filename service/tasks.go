package service

import (
	"context"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// GetTask returns a task of the caller, its history trimmed to the
// request's historyLength.
func (s *Service) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (_ *a2a.Task, err error) {
	c, err := s.resolve(ctx, req.Tenant, req.ID, false)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: historyLength must not be negative")
	}
	rec, err := s.loadTask(ctx, c, req.ID)
	if err != nil {
		return nil, err
	}
	t := rec.Task.WithHistory(historyLen(req.HistoryLength))
	return &t, nil
}

// CancelTask cancels a task of the caller: the canceled state is written
// to the log at once (so it holds whatever the worker does), then the
// worker holding the task is told to stop.
func (s *Service) CancelTask(ctx context.Context, req *a2a.TaskIDRequest) (_ *a2a.Task, err error) {
	c, err := s.resolve(ctx, req.Tenant, req.ID, false)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	rec, err := s.loadTask(ctx, c, req.ID)
	if err != nil {
		return nil, err
	}
	next, err := s.tasks.Cancel(ctx, req.ID, rec, "")
	if err != nil {
		return nil, err
	}
	return &next.Task, nil
}

const (
	listDefaultPageSize = 50
	// ListMaxPageSize is the largest page ListTasks and
	// ListTaskPushNotificationConfigs serve.
	ListMaxPageSize = 100
)

// ListTasks returns the caller's tasks (of the addressed agent when the
// call names one), newest status first, with cursor paging.
func (s *Service) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (_ *a2a.ListTasksResponse, err error) {
	c, err := s.resolve(ctx, req.Tenant, "", false)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	size := listDefaultPageSize
	if req.PageSize != nil {
		if *req.PageSize < 1 || *req.PageSize > ListMaxPageSize {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageSize must be between 1 and %d", ListMaxPageSize)
		}
		size = *req.PageSize
	}
	if req.HistoryLength != nil && *req.HistoryLength < 0 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: historyLength must not be negative")
	}
	if req.Status != "" && req.Status != a2a.StateUnspecified && !req.Status.Valid() {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: unknown status")
	}
	var after time.Time
	if req.StatusTimestampAfter != "" {
		t, err := a2a.ParseTime(req.StatusTimestampAfter)
		if err != nil {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: statusTimestampAfter must be an ISO 8601 timestamp")
		}
		after = t
	}
	var cursor *listCursor
	if req.PageToken != "" {
		cur, ok := decodeCursor(req.PageToken)
		if !ok {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
		}
		cursor = cur
	}
	recs, err := s.bus.ListTasks(ctx, func(r *bus.TaskRecord) bool {
		switch {
		case r.Owner != c.Principal:
		case c.pinned && r.Agent != c.agent:
		case req.ContextID != "" && r.Task.ContextID != req.ContextID:
		case req.Status != "" && req.Status != a2a.StateUnspecified && r.Task.Status.State != req.Status:
		case !after.IsZero() && statusTime(r).Before(after):
		default:
			return true
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(recs, func(i, j int) bool { return before(recs[i], recs[j]) })
	start := 0
	if cursor != nil {
		start = sort.Search(len(recs), func(i int) bool { return cursor.less(recs[i]) })
	}
	end := min(start+size, len(recs))
	out := &a2a.ListTasksResponse{Tasks: make([]a2a.Task, 0, end-start), PageSize: size, TotalSize: len(recs)}
	includeArtifacts := req.IncludeArtifacts != nil && *req.IncludeArtifacts
	for _, r := range recs[start:end] {
		t := r.Task.WithHistory(historyLen(req.HistoryLength))
		if !includeArtifacts {
			t.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, t)
	}
	if end < len(recs) {
		out.NextPageToken = encodeCursor(recs[end-1])
	}
	return out, nil
}

// GetExtendedAgentCardRequest is the request of GetExtendedAgentCard.
type GetExtendedAgentCardRequest struct {
	Tenant string `json:"tenant,omitempty"`
}

// GetExtendedAgentCard answers that the mesh has no extended card.
func (s *Service) GetExtendedAgentCard(ctx context.Context, req *GetExtendedAgentCardRequest) (_ *a2a.AgentCard, err error) {
	c, err := s.resolve(ctx, req.Tenant, "", false)
	defer func() { err = s.answer(ctx, c, err) }()
	if err != nil {
		return nil, err
	}
	return nil, a2a.ErrExtendedCardNotConfigured
}

func statusTime(r *bus.TaskRecord) time.Time {
	for _, s := range []string{r.Task.Status.Timestamp, r.Updated, r.Created} {
		if t, err := a2a.ParseTime(s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// before orders tasks newest status first, then by id.
func before(a, b *bus.TaskRecord) bool {
	ta, tb := statusTime(a), statusTime(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Task.ID < b.Task.ID
}

// listCursor is the position after the last task of a page.
type listCursor struct {
	t  time.Time
	id string
}

// less reports whether r comes after the cursor position.
func (c *listCursor) less(r *bus.TaskRecord) bool {
	t := statusTime(r)
	if !t.Equal(c.t) {
		return t.Before(c.t)
	}
	return r.Task.ID > c.id
}

func encodeCursor(r *bus.TaskRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(statusTime(r).UTC().Format(time.RFC3339Nano) + "|" + r.Task.ID))
}

func decodeCursor(s string) (*listCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok || !bus.ValidToken(id) {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, false
	}
	return &listCursor{t: t, id: id}, true
}
