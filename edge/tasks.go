package edge

import (
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// getTask serves GetTask / tasks/get.
func (e *Edge) getTask(c *call) (any, error) {
	var p a2a.GetTaskRequest
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: historyLength must not be negative")
	}
	rec, err := e.loadTask(c.r.Context(), c, p.ID)
	if err != nil {
		return nil, err
	}
	t := rec.Task.WithHistory(historyLen(p.HistoryLength))
	return c.encodeTask(&t), nil
}

// cancelTask serves CancelTask / tasks/cancel: the canceled state is
// written to the log at once (so it holds whatever the worker does), then
// the worker holding the task is told to stop.
func (e *Edge) cancelTask(c *call) (any, error) {
	var p a2a.TaskIDRequest
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	rec, err := e.loadTask(ctx, c, p.ID)
	if err != nil {
		return nil, err
	}
	next, err := e.tasks.Cancel(ctx, p.ID, rec, "")
	if err != nil {
		return nil, err
	}
	return c.encodeTask(&next.Task), nil
}

const (
	listDefaultPageSize = 50
	listMaxPageSize     = 100
)

// listTasks serves ListTasks: the caller's tasks (of the addressed agent
// when one is named), newest status first, with cursor paging.
func (e *Edge) listTasks(c *call) (any, error) {
	var p a2a.ListTasksRequest
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	size := listDefaultPageSize
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > listMaxPageSize {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageSize must be between 1 and %d", listMaxPageSize)
		}
		size = *p.PageSize
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: historyLength must not be negative")
	}
	if p.Status != "" && p.Status != a2a.StateUnspecified && !p.Status.Valid() {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: unknown status")
	}
	var after time.Time
	if p.StatusTimestampAfter != "" {
		t, err := a2a.ParseTime(p.StatusTimestampAfter)
		if err != nil {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: statusTimestampAfter must be an ISO 8601 timestamp")
		}
		after = t
	}
	var cursor *listCursor
	if p.PageToken != "" {
		cur, ok := decodeCursor(p.PageToken)
		if !ok {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
		}
		cursor = cur
	}
	recs, err := e.bus.ListTasks(c.r.Context(), func(r *bus.TaskRecord) bool {
		switch {
		case r.Owner != c.owner:
		case c.pinned && r.Agent != c.agent:
		case p.ContextID != "" && r.Task.ContextID != p.ContextID:
		case p.Status != "" && p.Status != a2a.StateUnspecified && r.Task.Status.State != p.Status:
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
	out := a2a.ListTasksResponse{Tasks: make([]a2a.Task, 0, end-start), PageSize: size, TotalSize: len(recs)}
	includeArtifacts := p.IncludeArtifacts != nil && *p.IncludeArtifacts
	for _, r := range recs[start:end] {
		t := r.Task.WithHistory(historyLen(p.HistoryLength))
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
