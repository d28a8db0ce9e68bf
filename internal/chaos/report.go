package chaos

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Report is what a chaos run saw: the load, the faults, how the fleet
// recovered, and every violation.
type Report struct {
	mu sync.Mutex

	// The run.
	Seed            int64
	Clients         int
	Duration        time.Duration // of the load
	KillMin         time.Duration
	KillMax         time.Duration
	Faults          []string
	Fleet           string
	StartupTook     time.Duration // fleet start to serving
	Elapsed         time.Duration // the whole run
	Aborted         bool          // stopped early (Ctrl-C)
	FleetSettled    time.Duration // load end to the fleet whole and caught up
	SettledIn       time.Duration // waiting for unfinished acknowledged tasks
	SendDeadline    time.Duration
	RetryBudget     time.Duration
	LoadEnded       time.Duration // since start
	ServerTasks     int           // tasks ListTasks returned
	Verified        int           // acknowledged tasks read back completed
	LogChecked      int           // acknowledged tasks whose event log was read
	LogErrors       int
	Reruns          int            // acknowledged tasks whose turn ran more than once
	Unacked         map[string]int // unacknowledged sends that made a task: outcome → state
	PendingAtSettle int            // acknowledged tasks the clients had not seen completed
	ListTook        time.Duration
	ScanHow         string // list (ListTasks) or bucket
	LogCheckTook    time.Duration

	// The load.
	Sends         map[string]*SendStats // by kind, and "all"
	AttemptErrors map[string]int        // failed attempts by kind (transport, -32000, ...)
	Resumes       int                   // streams resumed on the other edge

	// Slowest sends, with what happened to them.
	Slowest []string
	// MaxConsumers is the most consumers each stream had (sampled every
	// 10s): nats-server refuses more than 1000 per stream by default.
	MaxConsumers map[string]int

	// The faults and the recovery.
	FaultLog  []Fault
	Recovery  []RecoveryRow
	RoleExits []RoleExit

	// What the roles logged, and the end of each role's output.
	Logs  []LogCount
	Tails map[string]string

	Notes           []string
	ViolationCounts map[string]int
	Violations      []Violation // examples, up to 25 per kind
}

// SendStats sums up sends of one kind.
type SendStats struct {
	Sends, Acked, Busy, NoReply, GaveUp, Hung, Aborted int
	Retried                                            int // sends that needed more than one attempt
	P50, P99, Max                                      time.Duration
}

// RecoveryRow sums up one measure over the faults of one kind.
type RecoveryRow struct {
	Fault   string // e.g. "kill worker"
	Measure string
	N       int
	P50     time.Duration
	Max     time.Duration
}

// Err is nil when the run broke no promise; else it names every kind of
// violation with its count and examples.
func (r *Report) Err() error {
	if len(r.ViolationCounts) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %d violations:", r.total())
	for _, k := range sortedKeys(r.ViolationCounts) {
		fmt.Fprintf(&b, " %s ×%d;", k, r.ViolationCounts[k])
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "\n  [%s] %s", v.Kind, v.Detail)
	}
	return errors.New(b.String())
}

// Check lists every violation, one line each (examples; see
// ViolationCounts for the totals).
func (r *Report) Check() []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, "["+v.Kind+"] "+v.Detail)
	}
	return out
}

func (r *Report) total() int {
	n := 0
	for _, c := range r.ViolationCounts {
		n += c
	}
	return n
}

// Print writes the report as tables.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "chaos: %s; load %v at %d clients, faults %s every %v–%v, seed %d; run took %v\n",
		r.Fleet, r.Duration, r.Clients, strings.Join(r.Faults, ","), r.KillMin, r.KillMax, r.Seed, r.Elapsed.Round(time.Second))
	if r.Aborted {
		fmt.Fprintln(w, "ABORTED before the end: the check below is partial")
	}
	fmt.Fprintf(w, "fleet serving %v after start; after the load, fleet whole and caught up in %v, unfinished tasks settled in %v\n\n",
		r.StartupTook.Round(time.Millisecond), r.FleetSettled.Round(time.Millisecond), r.SettledIn.Round(time.Millisecond))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sends\tn\tacked\t-32000 after budget\tno reply\tgave up\thung\taborted\tretried\tp50\tp99\tmax\t")
	for _, k := range []string{KindBlocking, KindStreaming, "all"} {
		s := r.Sends[k]
		if s == nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", k, s.Sends, s.Acked, s.Busy, s.NoReply, s.GaveUp, s.Hung, s.Aborted,
			s.Retried, fmtD(s.P50), fmtD(s.P99), fmtD(s.Max))
	}
	tw.Flush()
	fmt.Fprintf(w, "latency: blocking = send to result; streaming = send to final event (resumes included). Streams resumed: %d\n", r.Resumes)
	if len(r.AttemptErrors) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.AttemptErrors) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, r.AttemptErrors[k]))
		}
		fmt.Fprintf(w, "failed attempts: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "server (%s): %d tasks listed (in %v); %d acknowledged tasks read back completed; %d event logs checked (%d unreadable, in %v); %d tasks ran their turn more than once\n",
		r.ScanHow, r.ServerTasks, r.ListTook.Round(time.Millisecond), r.Verified, r.LogChecked, r.LogErrors, r.LogCheckTook.Round(time.Millisecond), r.Reruns)
	if len(r.Unacked) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.Unacked) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Unacked[k]))
		}
		fmt.Fprintf(w, "tasks of unacknowledged sends: %s\n", strings.Join(parts, ", "))
	}

	if len(r.MaxConsumers) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.MaxConsumers) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.MaxConsumers[k]))
		}
		fmt.Fprintf(w, "most consumers per stream (sampled every 10s): %s\n", strings.Join(parts, ", "))
	}
	if len(r.Slowest) > 0 {
		fmt.Fprintln(w, "slowest sends:")
		for _, s := range r.Slowest {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	fmt.Fprintf(w, "\nfaults: %d", len(r.FaultLog))
	byKind := map[string]int{}
	for _, f := range r.FaultLog {
		byKind[f.Kind+" "+f.Role]++
	}
	for _, k := range sortedKeys(byKind) {
		fmt.Fprintf(w, "; %s ×%d", k, byKind[k])
	}
	fmt.Fprintf(w, "; role exits (not caused by the harness): %d\n", len(r.RoleExits))
	if len(r.Recovery) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "fault\tmeasure\tn\tp50\tmax\t")
		for _, row := range r.Recovery {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", row.Fault, row.Measure, row.N, fmtD(row.P50), fmtD(row.Max))
		}
		tw.Flush()
	}
	for _, f := range r.FaultLog {
		if f.ReadyErr != "" || f.CaughtUpErr != "" || len(f.Notes) > 0 {
			fmt.Fprintf(w, "  %s of %s at +%.1fs: %s %s %s\n", f.Kind, f.Member, f.At.Seconds(), f.ReadyErr, f.CaughtUpErr, strings.Join(f.Notes, "; "))
		}
	}
	for _, e := range r.RoleExits {
		fmt.Fprintf(w, "\nROLE EXIT: %s (pid %d) at +%.1fs after %v up: %s; its last lines:\n%s\n", e.Member, e.Pid, e.At.Seconds(),
			e.Uptime.Round(time.Millisecond), e.Status, indent(e.Tail, "    "))
	}
	if len(r.Logs) > 0 {
		fmt.Fprintln(w, "\nWARN/ERROR lines of the roles (count, role, level, message; example):")
		for _, c := range r.Logs {
			fmt.Fprintf(w, "  %5d  %-15s %-5s %s\n         e.g. %s\n", c.N, c.Member, c.Level, trunc(c.Msg, 100), trunc(c.Example, 400))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(r.ViolationCounts) == 0 {
		fmt.Fprintln(w, "\nOK: no violations")
		return
	}
	fmt.Fprintf(w, "\nVIOLATIONS: %d\n", r.total())
	for _, k := range sortedKeys(r.ViolationCounts) {
		fmt.Fprintf(w, "  %-18s %d\n", k, r.ViolationCounts[k])
	}
	fmt.Fprintln(w, "examples:")
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  [%s] %s\n", v.Kind, v.Detail)
	}
}

// PrintTails writes the end of every role's output (at most max bytes
// each).
func (r *Report) PrintTails(w io.Writer, max int) {
	for _, k := range sortedKeys(r.Tails) {
		t := r.Tails[k]
		if len(t) > max {
			t = "…" + t[len(t)-max:]
		}
		fmt.Fprintf(w, "\n----- %s -----\n%s\n", k, t)
	}
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

func fmtD(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// percentile of sorted durations (p in [0,1]).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}

func sortDurations(d []time.Duration) []time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// sendStats sums up the sends.
func sendStats(sends []*sendRec) map[string]*SendStats {
	out := map[string]*SendStats{}
	lat := map[string][]time.Duration{}
	for _, s := range sends {
		for _, k := range []string{s.Kind, "all"} {
			st := out[k]
			if st == nil {
				st = &SendStats{}
				out[k] = st
			}
			st.Sends++
			if s.Hung {
				st.Hung++
			}
			if s.Attempts > 1 || s.Resumes > 0 {
				st.Retried++
			}
			switch s.Outcome {
			case OutcomeAcked:
				st.Acked++
				if end := s.doneAt(); !end.IsZero() {
					lat[k] = append(lat[k], end.Sub(s.Start))
				}
			case OutcomeBusy:
				st.Busy++
			case OutcomeNoReply:
				st.NoReply++
			case OutcomeGaveUp:
				st.GaveUp++
			case OutcomeHung:
				st.Hung++
			case OutcomeAborted:
				st.Aborted++
			}
		}
	}
	for k, st := range out {
		l := sortDurations(lat[k])
		st.P50, st.P99 = percentile(l, 0.5), percentile(l, 0.99)
		if len(l) > 0 {
			st.Max = l[len(l)-1]
		}
	}
	return out
}

// slowest describes the n sends that took longest.
func slowest(sends []*sendRec, n int, t0 time.Time) []string {
	sorted := append([]*sendRec(nil), sends...)
	took := func(s *sendRec) time.Duration {
		if s.End.IsZero() {
			return 0
		}
		return s.End.Sub(s.Start)
	}
	sort.Slice(sorted, func(i, j int) bool { return took(sorted[i]) > took(sorted[j]) })
	var out []string
	for _, s := range sorted[:min(n, len(sorted))] {
		line := fmt.Sprintf("%v %s %s to %s from +%.1fs: %s, task %s, %d attempts, %d resumes", took(s).Round(time.Millisecond), s.Kind, s.MsgID, s.Agent,
			s.Start.Sub(t0).Seconds(), s.Outcome, s.TaskID, s.Attempts, s.Resumes)
		if len(s.Errs) > 0 {
			line += "; failures: " + strings.Join(tail(s.Errs, 6), " | ")
		}
		if len(s.Events) > 0 {
			var evs []string
			for _, e := range s.Events {
				evs = append(evs, fmt.Sprintf("%d@+%.1fs", e.ID, e.At.Sub(t0).Seconds()))
			}
			line += "; events " + strings.Join(evs, " ")
		}
		out = append(out, trunc(line, 1500))
	}
	return out
}

// doneAt is when the client had its answer: a blocking send's result, a
// stream's final event (zero when it never came).
func (s *sendRec) doneAt() time.Time {
	if s.Kind == KindBlocking {
		return s.AckAt
	}
	if s.FinalSeen && len(s.Events) > 0 {
		return s.Events[len(s.Events)-1].At
	}
	return time.Time{}
}

// recovery measures, per fault kind and role, how the clients fared after
// each fault:
//   - stream stall: over the streams open at the fault, the longest wait
//     from the fault to the stream's next event;
//   - blocking wait: over the blocking sends in flight at the fault, the
//     longest time from the fault to their result;
//   - serving again: restart (or fault end) to the role serving;
//   - caught up (NATS): fault end to every replica current.
//
// Faults come every few seconds, so a long recovery may overlap the next
// fault: each fault is charged everything that waited across it.
func recovery(faults []Fault, sends []*sendRec) []RecoveryRow {
	type acc struct{ stall, wait, ready, caught, isolated []time.Duration }
	accs := map[string]*acc{}
	var order []string
	for _, f := range faults {
		key := f.Kind + " " + f.Role
		a := accs[key]
		if a == nil {
			a = &acc{}
			accs[key] = a
			order = append(order, key)
		}
		var stall, wait time.Duration
		var nStall, nWait int
		for _, s := range sends {
			if s.Outcome != OutcomeAcked {
				continue
			}
			switch s.Kind {
			case KindStreaming:
				if s.AckAt.After(f.at) || !s.FinalSeen {
					continue
				}
				if end := s.doneAt(); end.Before(f.at) {
					continue
				}
				for _, ev := range s.Events {
					if ev.At.After(f.at) {
						stall = max(stall, ev.At.Sub(f.at))
						nStall++
						break
					}
				}
			case KindBlocking:
				if s.Start.After(f.at) || s.AckAt.Before(f.at) {
					continue
				}
				wait = max(wait, s.AckAt.Sub(f.at))
				nWait++
			}
		}
		if nStall > 0 {
			a.stall = append(a.stall, stall)
		}
		if nWait > 0 {
			a.wait = append(a.wait, wait)
		}
		if f.Ready > 0 && f.ReadyErr == "" {
			a.ready = append(a.ready, f.Ready)
		}
		if f.CaughtUp > 0 {
			a.caught = append(a.caught, f.CaughtUp)
		}
		if f.Isolated {
			a.isolated = append(a.isolated, f.IsolatedAfter)
		}
	}
	sort.Strings(order)
	var rows []RecoveryRow
	add := func(key, measure string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		d = sortDurations(d)
		rows = append(rows, RecoveryRow{Fault: key, Measure: measure, N: len(d), P50: percentile(d, 0.5), Max: d[len(d)-1]})
	}
	for _, key := range order {
		a := accs[key]
		add(key, "longest stream stall after it", a.stall)
		add(key, "longest blocking send after it", a.wait)
		add(key, "restart → serving", a.ready)
		add(key, "seen cut off by the other nodes", a.isolated)
		add(key, "→ all replicas current", a.caught)
	}
	return rows
}
