package service

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
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

// Bounds on what one ListTasks call reads of the index, so that a filter
// few tasks pass costs a bounded time however many tasks are retained
// (at 10^6 an unbounded status filter took 6 s to over 30 s; an index
// entry costs about 5 µs to read):
//
//   - listScanBound: the entries a page looks at. A page that reaches it
//     with fewer tasks than asked for ends there, with a nextPageToken
//     from which the next page goes on (cursor paging allows short
//     pages; the client follows the token until it is empty).
//   - listCountBound: the entries read to count totalSize under a status
//     or time filter. Past it, totalSize is an estimate: the matches
//     counted, plus the rest of the caller's entries at the rate seen.
//
// Variables for tests.
var (
	listScanBound  = 20_000
	listCountBound = 100_000
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
	var before uint64
	if req.PageToken != "" {
		seq, ok := decodeCursor(req.PageToken)
		if !ok {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
		}
		before = seq
	}
	q := bus.IndexQuery{Owner: c.Principal, ContextID: req.ContextID}
	if c.pinned {
		q.Agent = c.agent
	}
	state := req.Status
	if state == a2a.StateUnspecified {
		state = ""
	}
	keep := func(r *bus.TaskRecord) bool {
		switch {
		case r.Owner != c.Principal:
		case c.pinned && r.Agent != c.agent:
		case r.Task.IsReply(): // a message reply: the client never saw the task
		case req.ContextID != "" && r.Task.ContextID != req.ContextID:
		case state != "" && r.Task.Status.State != state:
		case !after.IsZero() && statusTime(r).Before(after):
		default:
			return true
		}
		return false
	}
	// hint says whether an index entry may stand for a task that passes
	// the state and time filters: a terminal state is the task's last,
	// so such an entry is the truth about both; any other entry may be
	// behind its task, which is then read to decide.
	hint := func(e bus.IndexEntry) bool {
		if !e.State.Terminal() {
			return true
		}
		if state != "" && e.State != state {
			return false
		}
		if !after.IsZero() {
			if t, err := a2a.ParseTime(e.StatusTime); err == nil && t.Before(after) {
				return false
			}
		}
		return true
	}
	var (
		recs    []*bus.TaskRecord
		seqs    []uint64 // each listed task's index position
		hasMore bool
		readErr error
		scanned int
		stopAt  uint64 // where a page cut short by listScanBound stopped (0: it was not)
	)
	// read returns the task an entry stands for when it passes every
	// filter (nil when not, or when it is gone).
	read := func(e bus.IndexEntry) (*bus.TaskRecord, error) {
		if !hint(e) {
			return nil, nil
		}
		r, err := s.bus.ReadTask(ctx, e.TaskID)
		if errors.Is(err, bus.ErrTaskNotFound) {
			return nil, nil // evicted or expired since
		}
		if err != nil || !keep(r) {
			return nil, err
		}
		return r, nil
	}
	top := before
	if top == 0 {
		if top, err = s.bus.IndexTop(ctx); err != nil {
			return nil, err
		}
		listScanStarts()
	}
	err = s.bus.ScanIndex(ctx, q, top, size+1, func(e bus.IndexEntry) (took, more bool) {
		if !after.IsZero() && e.Written.Before(after.Add(-indexSkew)) {
			return false, false // written before the bound: so are all older entries
		}
		if scanned++; scanned > listScanBound && len(recs) < size {
			// Looked at enough for one call: the next page goes on
			// from this entry (its cursor excludes what is above).
			stopAt, hasMore = e.Seq+1, true
			return false, false
		}
		r, err := read(e)
		if err != nil {
			readErr = err
			return false, false
		}
		if r == nil {
			return false, true
		}
		if len(recs) == size {
			hasMore = true
			return true, false
		}
		recs, seqs = append(recs, r), append(seqs, e.Seq)
		return true, true
	})
	if err == nil {
		err = readErr
	}
	if err == nil && before == 0 {
		// A task whose status changed while the scan ran left the part
		// already read for a place past where it started: the first
		// page takes such tasks in too, newest first, as they now are.
		recs, seqs, hasMore, err = s.movedDuringScan(ctx, q, top, size, read, recs, seqs, hasMore)
	}
	if err != nil {
		return nil, err
	}
	total, err := s.countTasks(ctx, q, state, after, hint)
	if err != nil {
		return nil, err
	}
	out := &a2a.ListTasksResponse{Tasks: make([]a2a.Task, 0, len(recs)), PageSize: size, TotalSize: max(total, len(recs))}
	includeArtifacts := req.IncludeArtifacts != nil && *req.IncludeArtifacts
	for _, r := range recs {
		t := r.Task.WithHistory(historyLen(req.HistoryLength))
		if !includeArtifacts {
			t.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, t)
	}
	switch {
	case stopAt > 0:
		out.NextPageToken = encodeCursor(stopAt)
	case hasMore:
		out.NextPageToken = encodeCursor(seqs[len(seqs)-1])
	}
	return out, nil
}

// listScanStarts runs when a first page has taken the index's end, before
// it reads back from there (a test moves an entry then).
var listScanStarts = func() {}

// movedDuringScan puts at the front of a first page the tasks whose index
// entries were written at or after top (where the page's scan started),
// newest first, dropping their older places in the page; a page grown
// past size keeps its newest size tasks and has more.
func (s *Service) movedDuringScan(ctx context.Context, q bus.IndexQuery, top uint64, size int,
	read func(bus.IndexEntry) (*bus.TaskRecord, error), recs []*bus.TaskRecord, seqs []uint64, hasMore bool) ([]*bus.TaskRecord, []uint64, bool, error) {
	moved, err := s.bus.IndexSince(ctx, q, top, 4*ListMaxPageSize)
	if err != nil || len(moved) == 0 {
		return recs, seqs, hasMore, err
	}
	var (
		front    []*bus.TaskRecord
		frontSeq []uint64
		ids      = map[string]bool{}
	)
	for i := len(moved) - 1; i >= 0; i-- {
		r, err := read(moved[i])
		if err != nil {
			return nil, nil, false, err
		}
		if r != nil {
			front, frontSeq = append(front, r), append(frontSeq, moved[i].Seq)
			ids[r.Task.ID] = true
		}
	}
	for i, r := range recs {
		if !ids[r.Task.ID] {
			front, frontSeq = append(front, r), append(frontSeq, seqs[i])
		}
	}
	if len(front) > size {
		front, frontSeq, hasMore = front[:size], frontSeq[:size], true
	}
	return front, frontSeq, hasMore, nil
}

// indexSkew is how much earlier than its index entry a task's status
// timestamp may be (the writer's clock against the server's, and the
// time between the two writes): a statusTimestampAfter bound stops the
// scan only at entries written this long before it.
const indexSkew = time.Minute

// countTasks is ListTasks' totalSize. Without a state or time filter the
// server counts the index entries under the owner, agent and context
// subject filter without reading them. With one, the entries are read
// (small, never the snapshots) and judged by the status they record: a
// running task whose entry is behind counts as its entry says. Past
// listCountBound entries the count is an estimate (see listCountBound).
func (s *Service) countTasks(ctx context.Context, q bus.IndexQuery, state a2a.TaskState, after time.Time, hint func(bus.IndexEntry) bool) (int, error) {
	if state == "" && after.IsZero() {
		return s.bus.CountIndex(ctx, q)
	}
	var since time.Time
	if !after.IsZero() {
		since = after.Add(-indexSkew)
	}
	n, read := 0, 0
	err := s.bus.ReadIndex(ctx, q, since, func(e bus.IndexEntry) bool {
		if read++; read > listCountBound {
			return false
		}
		if !hint(e) {
			return true
		}
		if state != "" && e.State != state {
			return true
		}
		if !after.IsZero() {
			if t, err := a2a.ParseTime(e.StatusTime); err == nil && t.Before(after) {
				return true
			}
		}
		n++
		return true
	})
	if err != nil || read <= listCountBound {
		return n, err
	}
	// Too many to read in one call: the rest of the caller's entries
	// count at the rate the first listCountBound did. (ReadIndex reads
	// oldest first; with a time filter, from the bound on.)
	all, err := s.bus.CountIndex(ctx, q)
	if err != nil {
		return 0, err
	}
	rest := max(0, all-listCountBound)
	return n + int(float64(rest)*float64(n)/float64(listCountBound)+0.5), nil
}

func statusTime(r *bus.TaskRecord) time.Time {
	for _, s := range []string{r.Task.Status.Timestamp, r.Updated, r.Created} {
		if t, err := a2a.ParseTime(s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// A page token is the index position of the page's last task: the next
// page starts below it.
const cursorPrefix = "i"

func encodeCursor(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatUint(seq, 10)))
}

func decodeCursor(s string) (uint64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	n, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || seq == 0 {
		return 0, false
	}
	return seq, true
}
