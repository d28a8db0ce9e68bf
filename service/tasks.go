package service

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/taskstore"
)

// GetTask returns a task of the caller, its history trimmed to the
// request's historyLength.
func (s *Service) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (_ *a2a.Task, err error) {
	c, err := s.resolve(ctx, "GetTask", policy.Read, req.Tenant, req.ID)
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
	c, err := s.resolve(ctx, "CancelTask", policy.Cancel, req.Tenant, req.ID)
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
// (at 10^6 an unbounded status filter took 6 s to over 30 s; a page
// reads an index entry in about 20 µs of CPU, bus.ScanIndex):
//
//   - listScanBound: the entries a page looks at. A page that reaches it
//     with fewer tasks than asked for ends there, with a nextPageToken
//     from which the next page goes on (cursor paging allows short
//     pages; the client follows the token until it is empty).
//   - listCountBound: the caller's entries up to which totalSize under a
//     status or time filter is counted by reading them. Past it, totalSize
//     is an estimate: the caller's count (bus.TaskCount) at the rate at
//     which the entries the page looked at passed the filter, carried in
//     the page token so that every page of one listing says the same.
//
// Variables for tests.
var (
	listScanBound  = 5_000
	listCountBound = 10_000
)

// ListTasks returns the caller's tasks (of the addressed agent when the
// call names one), newest status first, with cursor paging.
func (s *Service) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (_ *a2a.ListTasksResponse, err error) {
	c, err := s.resolve(ctx, "ListTasks", policy.Read, req.Tenant, "")
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
	carried := -1 // totalSize an earlier page estimated
	if req.PageToken != "" {
		seq, total, ok := decodeCursor(req.PageToken)
		if !ok {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
		}
		before, carried = seq, total
	}
	q := taskstore.IndexQuery{Owner: c.Principal, ContextID: req.ContextID}
	if c.pinned {
		q.Agent = c.agent
	}
	state := req.Status
	if state == a2a.StateUnspecified {
		state = ""
	}
	keep := func(r *taskstore.TaskRecord) bool {
		switch {
		case r.Owner != c.Principal:
		case c.pinned && r.Agent != c.agent:
		case !c.pinned && !s.allows(c, policy.Read, r.Agent): // the policy filters a list across agents
		case r.Task.IsReply(): // a message reply: the client never saw the task
		case req.ContextID != "" && r.Task.ContextID != req.ContextID:
		case state != "" && r.Task.Status.State != state:
		case !after.IsZero() && statusTime(r).Before(after):
		default:
			return true
		}
		return false
	}
	// passes says whether an index entry's recorded status passes the
	// state and time filters; hint whether the entry may stand for a task
	// that passes them: a terminal state is the task's last, so such an
	// entry is the truth about both; any other entry may be behind its
	// task, which is then read to decide.
	passes := func(e taskstore.IndexEntry) bool {
		if state != "" && e.State != state {
			return false
		}
		if !c.pinned && !s.allows(c, policy.Read, e.Agent) {
			return false
		}
		// The message that set the status was written after the status
		// was stamped, within indexSkew of it.
		return after.IsZero() || !e.Written.Add(indexSkew).Before(after)
	}
	hint := func(e taskstore.IndexEntry) bool { return !e.State.Terminal() || passes(e) }
	var (
		recs    []*taskstore.TaskRecord
		seqs    []uint64 // each listed task's index position
		hasMore bool
		readErr error
		scanned int
		stopAt  uint64 // where a page cut short by listScanBound stopped (0: it was not)
		sample  countSample
		stopped bool // the scan ended before the entries did
	)
	// read returns the task an entry stands for when it passes every
	// filter (nil when not, or when it is gone).
	read := func(e taskstore.IndexEntry) (*taskstore.TaskRecord, error) {
		if !hint(e) {
			return nil, nil
		}
		r, err := s.store.LoadTask(ctx, e.TaskID)
		if errors.Is(err, taskstore.ErrTaskNotFound) {
			return nil, nil // evicted or expired since
		}
		if err != nil || !keep(r) {
			return nil, err
		}
		if !e.Current(r) {
			// An older message of a task that changed since: the task is
			// listed where its last message is (above, on an earlier
			// page, or at the front when it changed during this one).
			return nil, nil
		}
		return r, nil
	}
	top := before
	if top == 0 {
		if top, err = s.store.IndexTop(ctx); err != nil {
			return nil, err
		}
		listScanStarts()
	}
	err = s.store.ScanIndex(ctx, q, top, size+1, func(e taskstore.IndexEntry) (took, more bool) {
		if !after.IsZero() && e.Written.Before(after.Add(-indexSkew)) {
			return false, false // written before the bound: so are all older entries
		}
		if scanned++; scanned > listScanBound && len(recs) < size {
			// Looked at enough for one call: the next page goes on
			// from this entry (its cursor excludes what is above).
			stopAt, hasMore, stopped = e.Seq+1, true, true
			return false, false
		}
		sample.seen++
		if passes(e) {
			sample.passed++
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
			hasMore, stopped = true, true
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
	filtered := state != "" || !after.IsZero() || (!c.pinned && s.cfg.Policy.Policy() != nil)
	total, estimated := carried, carried >= 0
	if !estimated {
		sample.whole = before == 0 && !stopped
		total, estimated, err = s.countTasks(ctx, q, filtered, passes, sample)
		if err != nil {
			return nil, err
		}
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
	if !estimated {
		total = -1 // the next page counts again
	}
	switch {
	case stopAt > 0:
		out.NextPageToken = encodeCursor(stopAt, total)
	case hasMore:
		out.NextPageToken = encodeCursor(seqs[len(seqs)-1], total)
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
func (s *Service) movedDuringScan(ctx context.Context, q taskstore.IndexQuery, top uint64, size int,
	read func(taskstore.IndexEntry) (*taskstore.TaskRecord, error), recs []*taskstore.TaskRecord, seqs []uint64, hasMore bool) ([]*taskstore.TaskRecord, []uint64, bool, error) {
	moved, err := s.store.IndexSince(ctx, q, top, 4*ListMaxPageSize)
	if err != nil || len(moved) == 0 {
		return recs, seqs, hasMore, err
	}
	var (
		front    []*taskstore.TaskRecord
		frontSeq []uint64
		ids      = map[string]bool{}
	)
	for i := len(moved) - 1; i >= 0; i-- {
		if ids[moved[i].TaskID] {
			// Its entry moved twice while the entries past top were
			// read one at a time: the newest place stands.
			continue
		}
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

// countSample is what a page's scan saw of the caller's entries, newest
// first: how many it looked at, how many of those passed the filters by
// the status they record, and whether it looked at all there are.
type countSample struct {
	seen, passed int
	whole        bool
}

// countTasks is ListTasks' totalSize, and whether it is an estimate.
// Without a state or time filter it is the caller's count (TaskCount, no
// entry read). With one, it is counted from the entries by the status
// they record (a running task whose entry is behind counts as its entry
// says): those the page's scan saw when it saw them all, else every
// entry of the caller while there are at most listCountBound, else the
// caller's count at the rate the scan's entries passed.
func (s *Service) countTasks(ctx context.Context, q taskstore.IndexQuery, filtered bool, passes func(taskstore.IndexEntry) bool, sm countSample) (int, bool, error) {
	all, err := s.store.TaskCount(ctx, q)
	if err != nil || !filtered {
		return all, false, err
	}
	if sm.whole {
		return sm.passed, false, nil
	}
	if all <= listCountBound {
		n, read := 0, 0
		err := s.store.ReadIndex(ctx, q, time.Time{}, func(e taskstore.IndexEntry) bool {
			if e.Reply {
				return true // not listed
			}
			if read++; read > listCountBound {
				return false // more than the count said: estimate below
			}
			if passes(e) {
				n++
			}
			return true
		})
		if err != nil || read <= listCountBound {
			return n, false, err
		}
	}
	if sm.seen == 0 {
		return 0, true, nil
	}
	return int(float64(all)*float64(sm.passed)/float64(sm.seen) + 0.5), true, nil
}

func statusTime(r *taskstore.TaskRecord) time.Time {
	for _, s := range []string{r.Task.Status.Timestamp, r.Updated, r.Created} {
		if t, err := a2a.ParseTime(s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// A page token is the index position of the page's last task (the next
// page starts below it) and, when the listing's totalSize was estimated,
// that estimate (the next pages say the same).
const cursorPrefix = "i"

func encodeCursor(seq uint64, total int) string {
	s := cursorPrefix + strconv.FormatUint(seq, 10)
	if total >= 0 {
		s += "." + strconv.Itoa(total)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// decodeCursor returns a token's position, and its estimated totalSize
// (-1: none).
func decodeCursor(s string) (uint64, int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, 0, false
	}
	n, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, 0, false
	}
	n, t, hasTotal := strings.Cut(n, ".")
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || seq == 0 {
		return 0, 0, false
	}
	total := -1
	if hasTotal {
		if total, err = strconv.Atoi(t); err != nil || total < 0 {
			return 0, 0, false
		}
	}
	return seq, total, true
}
