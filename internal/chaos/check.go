package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// checker is the final check, once the load stopped and the fleet settled.
type checker struct {
	cfg  *Config
	f    *fleet
	l    *load
	viol *violations
	rep  *Report
	// handovers: for tasks that ran more than once, when one run's last
	// event and the next run's first event were stored (guarded by rep.mu).
	handovers []handover
}

// handover is a task's turn passing from one run to the next.
type handover struct {
	lastOfPrev  time.Time
	firstOfNext time.Time
}

// runSpans lists the handovers in a task's log.
func runSpans(entries []logEntry) []handover {
	var out []handover
	var prevRun string
	var prevLast time.Time
	for _, e := range entries {
		if e.Run == "" {
			continue
		}
		if prevRun != "" && e.Run != prevRun {
			out = append(out, handover{lastOfPrev: prevLast, firstOfNext: e.At})
		}
		prevRun, prevLast = e.Run, e.At
	}
	return out
}

// workerHandovers measures, for each worker kill, how long the tasks it
// held took to run again: over the tasks whose run wrote its last event in
// the 3 s before the kill and whose next run started after it, the time
// from the kill to that next run's first event.
func workerHandovers(faults []Fault, hs []handover) []time.Duration {
	var per []time.Duration
	for _, f := range faults {
		if f.Role != RoleWorker {
			continue
		}
		var worst time.Duration
		for _, h := range hs {
			if h.lastOfPrev.After(f.at) || h.lastOfPrev.Before(f.at.Add(-3*time.Second)) || !h.firstOfNext.After(f.at) {
				continue
			}
			if d := h.firstOfNext.Sub(f.at); d < time.Minute {
				worst = max(worst, d)
			}
		}
		if worst > 0 {
			per = append(per, worst)
		}
	}
	return per
}

// run checks every send against what the clients saw and what the
// server holds.
func (c *checker) run(ctx context.Context, sends []*sendRec) {
	acked := map[string]*sendRec{}
	for _, s := range sends {
		if s.Outcome == OutcomeAcked {
			acked[s.TaskID] = s
		}
	}
	// 1. Acknowledged tasks the client did not see completed: wait for
	// them (bounded), reading with GetTask.
	pending := map[string]*sendRec{}
	for id, s := range acked {
		if !(s.State == a2a.StateCompleted && (s.Kind == KindBlocking || s.FinalSeen)) {
			pending[id] = s
		}
	}
	c.rep.PendingAtSettle = len(pending)
	settleStart := time.Now()
	deadline := time.Now().Add(c.cfg.SettleBudget)
	for round := 0; len(pending) > 0 && round < 10_000 && time.Now().Before(deadline) && ctx.Err() == nil; round++ {
		for id, s := range pending {
			t, rerr, err := c.getTask(ctx, round, s.Agent, id)
			if err != nil || rerr != nil {
				continue
			}
			if t.Status.State.Terminal() {
				delete(pending, id)
			}
		}
		if len(pending) > 0 {
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	c.rep.SettledIn = time.Since(settleStart)

	// 2. Every task the server holds: with ListTasks per agent, or, for
	// a long run, one pass over the task logs (scanTasks).
	listStart := time.Now()
	listed := map[string]*a2a.Task{}
	scan := c.cfg.ServerScan
	if scan == ScanAuto {
		scan = ScanList
		if len(acked) > 20_000 {
			scan = ScanBucket
		}
	}
	c.rep.ScanHow = scan
	if scan == ScanBucket {
		c.scanBucket(ctx, listed)
	} else {
		for _, agent := range []string{"echo", "slow"} {
			n, err := c.listTasks(ctx, agent, listed)
			c.rep.ServerTasks += n
			if err != nil {
				c.viol.add(VCheck, "ListTasks of %s: %v (after %d tasks)", agent, err, n)
			}
		}
	}
	c.rep.ListTook = time.Since(listStart)
	byMsg := map[string][]string{}
	for id, t := range listed {
		if len(t.History) == 0 {
			continue
		}
		mid := t.History[0].MessageID
		byMsg[mid] = append(byMsg[mid], id)
	}

	// 3. Each send.
	c.rep.Unacked = map[string]int{}
	for _, s := range sends {
		tasks := byMsg[s.MsgID]
		if len(tasks) > 1 {
			c.viol.add(VDuplicateTask, "messageId %s (%s send, %s) made %d tasks: %v (the client was acknowledged task %q)",
				s.MsgID, s.Kind, s.Agent, len(tasks), tasks, s.TaskID)
		}
		if s.Outcome != OutcomeAcked {
			if len(tasks) > 0 {
				c.rep.Unacked[s.Outcome+" → "+shortState(listed[tasks[0]].Status.State)]++
			}
			continue
		}
		if len(tasks) > 0 && tasks[0] != s.TaskID && len(tasks) == 1 {
			c.viol.add(VDuplicateTask, "messageId %s: the client was acknowledged task %s but the server's only task for it is %s", s.MsgID, s.TaskID, tasks[0])
		}
		t := listed[s.TaskID]
		how := "ListTasks"
		if t == nil {
			// Not listed: read it directly to tell a lost task from a
			// list that left it out.
			how = "GetTask"
			var rerr *rpcError
			var err error
			for i := 0; i < 5 && ctx.Err() == nil; i++ {
				t, rerr, err = c.getTask(ctx, i, s.Agent, s.TaskID)
				if err == nil && rerr == nil {
					break
				}
				sleepCtx(ctx, 500*time.Millisecond)
			}
			switch {
			case t != nil:
				c.viol.add(VCheck, "task %s (send %s) is missing from the server's list (%s) of %s but GetTask finds it %s", s.TaskID, s.MsgID, c.rep.ScanHow, s.Agent, shortState(t.Status.State))
			case rerr != nil && rerr.Code == a2a.CodeTaskNotFound:
				c.viol.add(VLost, "acknowledged task %s (%s send %s to %s, acknowledged at %s on edge-%d) does not exist: %s",
					s.TaskID, s.Kind, s.MsgID, s.Agent, c.l.stamp(s.AckAt), s.AckEdge, rerr)
				continue
			default:
				c.viol.add(VCheck, "task %s (send %s): neither listed nor readable: %v %v", s.TaskID, s.MsgID, err, rerr)
				continue
			}
		}
		c.checkTask(s, t, how)
	}
	logStart := time.Now()
	c.checkLogs(ctx, sends)
	c.rep.LogCheckTook = time.Since(logStart)
	if d := sortDurations(workerHandovers(c.rep.FaultLog, c.handovers)); len(d) > 0 {
		c.rep.Recovery = append(c.rep.Recovery, RecoveryRow{Fault: "kill worker", Measure: "its tasks running again elsewhere (log)",
			N: len(d), P50: percentile(d, 0.5), Max: d[len(d)-1]})
		sort.SliceStable(c.rep.Recovery, func(i, j int) bool { return c.rep.Recovery[i].Fault < c.rep.Recovery[j].Fault })
	}
}

// checkTask checks one acknowledged task as the server holds it, and the
// artifacts the client ended with.
func (c *checker) checkTask(s *sendRec, t *a2a.Task, how string) {
	switch st := t.Status.State; {
	case st == a2a.StateCompleted:
	case st.Terminal():
		c.viol.add(VFailed, "acknowledged task %s (%s send %s to %s) ended %s: %q",
			s.TaskID, s.Kind, s.MsgID, s.Agent, shortState(st), statusText(t))
		return
	default:
		c.viol.add(VLost, "acknowledged task %s (%s send %s to %s, acknowledged at %s on edge-%d) is still %s %v after the load stopped (%s)",
			s.TaskID, s.Kind, s.MsgID, s.Agent, c.l.stamp(s.AckAt), s.AckEdge, shortState(st), c.cfg.SettleBudget, how)
		return
	}
	c.rep.Verified++
	if err := checkArtifacts(t.Artifacts, s); err != nil {
		c.viol.add(VArtifact, "task %s (send %s to %s) as the server holds it (%s): %v", s.TaskID, s.MsgID, s.Agent, how, err)
	}
	if s.Agent == "slow" {
		done := fmt.Sprintf("sent %d chunks", s.Chunks)
		if n := countAgentText(t, done); n != 1 {
			c.viol.add(VDoubleCompletion, "task %s (send %s): history has %d %q messages, want 1", s.TaskID, s.MsgID, n, done)
		}
	}
	// What the client itself ended with: a blocking send's result, or the
	// fold of every event its stream delivered.
	clientSaw := (s.Kind == KindBlocking && s.State == a2a.StateCompleted) || (s.Kind == KindStreaming && s.FinalSeen)
	if clientSaw {
		if err := checkArtifacts(s.Arts, s); err != nil {
			c.viol.add(VArtifact, "task %s (%s send %s to %s) as the client saw it: %v", s.TaskID, s.Kind, s.MsgID, s.Agent, err)
		}
	}
}

// checkArtifacts: exactly one artifact, with exactly the expected text
// (slow: exactly its chunks, once each, in order).
func checkArtifacts(arts []a2a.Artifact, s *sendRec) error {
	if len(arts) != 1 {
		var ids []string
		for _, a := range arts {
			ids = append(ids, fmt.Sprintf("%s(%d parts)", a.ArtifactID, len(a.Parts)))
		}
		return fmt.Errorf("%d artifacts %v, want exactly 1", len(arts), ids)
	}
	var text strings.Builder
	for _, p := range arts[0].Parts {
		text.WriteString(p.Text)
	}
	if text.String() != s.Want {
		return fmt.Errorf("artifact text %q, want %q", trunc(text.String(), 300), trunc(s.Want, 300))
	}
	if s.Agent == "slow" && len(arts[0].Parts) != s.Chunks {
		return fmt.Errorf("artifact has %d parts, want %d chunks", len(arts[0].Parts), s.Chunks)
	}
	return nil
}

// checkLogs reads the event log of every acknowledged task (a few at a
// time, within LogCheckBudget): the task completed exactly once, and each
// stream delivered exactly the log's events after its first one, no gap,
// no extra.
func (c *checker) checkLogs(ctx context.Context, sends []*sendRec) {
	var todo []*sendRec
	for _, s := range sends {
		if s.Outcome == OutcomeAcked {
			todo = append(todo, s)
		}
	}
	deadline := time.Now().Add(c.cfg.LogCheckBudget)
	work := make(chan *sendRec)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				entries, err := c.f.admin.taskLog(ctx, s.TaskID)
				mu.Lock()
				if err != nil {
					c.rep.LogErrors++
					if c.rep.LogErrors <= 3 {
						c.rep.Notes = append(c.rep.Notes, fmt.Sprintf("reading the log of %s: %v", s.TaskID, err))
					}
					mu.Unlock()
					continue
				}
				c.rep.LogChecked++
				mu.Unlock()
				c.checkLog(s, entries)
			}
		}()
	}
	skipped := 0
	for _, s := range todo {
		if time.Now().After(deadline) || ctx.Err() != nil {
			skipped++
			continue
		}
		work <- s
	}
	close(work)
	wg.Wait()
	if skipped > 0 {
		c.rep.Notes = append(c.rep.Notes, fmt.Sprintf("%d task logs not read: the log check's budget (%v) ran out", skipped, c.cfg.LogCheckBudget))
	}
}

func (c *checker) checkLog(s *sendRec, entries []logEntry) {
	completed := 0
	runs := map[string]bool{}
	var terminal []string
	for _, e := range entries {
		st := e.state()
		if st == a2a.StateCompleted {
			completed++
		}
		if st.Terminal() {
			terminal = append(terminal, fmt.Sprintf("%d:%s", e.Seq, shortState(st)))
		}
		if e.Run != "" {
			runs[e.Run] = true
		}
	}
	if len(terminal) > 1 || (len(terminal) == 1 && completed == 0 && s.State == a2a.StateCompleted) {
		c.viol.add(VDoubleCompletion, "task %s (send %s): its log has terminal events %v", s.TaskID, s.MsgID, terminal)
	}
	if len(runs) > 1 {
		c.rep.mu.Lock()
		c.rep.Reruns++
		c.handovers = append(c.handovers, runSpans(entries)...)
		c.rep.mu.Unlock()
	}
	if s.Kind != KindStreaming || !s.FinalSeen || len(s.Events) == 0 {
		return
	}
	// The stream's events after its first (the snapshot) must be exactly
	// the log's streamed entries after the snapshot, up to the final one.
	last := s.Events[len(s.Events)-1].ID
	var want []uint64
	for _, e := range entries {
		if e.Seq > s.FirstID && e.Seq <= last && e.streamed() {
			want = append(want, e.Seq)
		}
	}
	got := map[uint64]bool{}
	for _, ev := range s.Events[1:] {
		got[ev.ID] = true
	}
	inLog := map[uint64]bool{}
	for _, e := range entries {
		inLog[e.Seq] = true
	}
	var missing, extra []uint64
	for _, id := range want {
		if !got[id] {
			missing = append(missing, id)
		}
	}
	for _, ev := range s.Events[1:] {
		if !inLog[ev.ID] {
			extra = append(extra, ev.ID)
		}
	}
	if len(missing) > 0 {
		c.viol.add(VStreamGap, "stream of task %s (send %s, %d resumes): missed log events %v; got %s", s.TaskID, s.MsgID, s.Resumes, missing, describeEvents(s.Events))
	}
	if len(extra) > 0 {
		c.viol.add(VStream, "stream of task %s (send %s): events %v are not in the task's log; got %s", s.TaskID, s.MsgID, extra, describeEvents(s.Events))
	}
}

func describeEvents(evs []streamEvent) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d@e%d:%s", e.ID, e.Edge, e.What)
		if b.Len() > 1500 {
			b.WriteString(", …")
			break
		}
	}
	return b.String()
}

// scanBucket reads every task of the events stream (scanTasks) into
// into; unfinished ones are read again with GetTask, as the edge reads
// them.
func (c *checker) scanBucket(ctx context.Context, into map[string]*a2a.Task) {
	recs, err := c.f.admin.scanTasks(ctx, c.cfg.ListBudget)
	if err != nil {
		c.viol.add(VCheck, "scanning the task logs: %v (after %d tasks)", err, len(recs))
	}
	for i := range recs {
		r := &recs[i]
		if r.Agent != "echo" && r.Agent != "slow" {
			continue
		}
		c.rep.ServerTasks++
		t := r.Task
		if !t.Status.State.Final() {
			if fresh, rerr, err := c.getTask(ctx, i, r.Agent, t.ID); err == nil && rerr == nil {
				t = *fresh
			}
		}
		into[t.ID] = &t
	}
}

// getTask reads a task with GetTask, from edge i%edges.
func (c *checker) getTask(ctx context.Context, i int, agent, id string) (*a2a.Task, *rpcError, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a := c.l.rpc.call(cctx, c.l.edgeURL(i%len(c.f.edges)), agent, "GetTask", map[string]any{"id": id}, false, 0)
	switch {
	case a.transport != nil:
		return nil, nil, a.transport
	case a.bad != "":
		return nil, nil, fmt.Errorf("%s", a.bad)
	case a.rpcErr != nil:
		return nil, a.rpcErr, nil
	}
	var t a2a.Task
	if err := json.Unmarshal(a.result, &t); err != nil {
		return nil, nil, err
	}
	return &t, nil, nil
}

// listTasks pages through ListTasks of agent (artifacts and whole
// history included) into into; it returns how many tasks it read.
func (c *checker) listTasks(ctx context.Context, agent string, into map[string]*a2a.Task) (int, error) {
	token := ""
	n := 0
	deadline := time.Now().Add(c.cfg.ListBudget)
	for page := 0; page < 100_000; page++ {
		params := map[string]any{"pageSize": 100, "includeArtifacts": true}
		if token != "" {
			params["pageToken"] = token
		}
		var a answer
		for try := 0; try < 5; try++ {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			a = c.l.rpc.call(cctx, c.l.edgeURL((page+try)%len(c.f.edges)), agent, "ListTasks", params, false, 0)
			cancel()
			if a.transport == nil && a.bad == "" && a.rpcErr == nil {
				break
			}
			sleepCtx(ctx, time.Second)
		}
		switch {
		case a.transport != nil:
			return n, a.transport
		case a.bad != "":
			return n, fmt.Errorf("%s", a.bad)
		case a.rpcErr != nil:
			return n, fmt.Errorf("%s", a.rpcErr)
		}
		var r a2a.ListTasksResponse
		if err := json.Unmarshal(a.result, &r); err != nil {
			return n, err
		}
		for i := range r.Tasks {
			t := r.Tasks[i]
			if _, dup := into[t.ID]; !dup {
				n++
			}
			into[t.ID] = &t
		}
		if r.NextPageToken == "" {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("listing took longer than %v (page %d of ~%d)", c.cfg.ListBudget, page+1, (r.TotalSize+99)/100)
		}
		token = r.NextPageToken
	}
	return n, fmt.Errorf("too many pages")
}

func shortState(s a2a.TaskState) string { return strings.TrimPrefix(string(s), "TASK_STATE_") }

func statusText(t *a2a.Task) string {
	if t.Status.Message == nil {
		return ""
	}
	return t.Status.Message.Text()
}

func countAgentText(t *a2a.Task, text string) int {
	n := 0
	for _, m := range t.History {
		if m.Role == a2a.RoleAgent && m.Text() == text {
			n++
		}
	}
	return n
}
