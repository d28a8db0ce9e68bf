package bench

// What `a2amesh bench` prints: each benchmark's tables, and the verdict
// of those that check what they measure.

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
)

func fmtLatency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func fmtMiB(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// fmtDur renders d with three significant digits or so, in µs, ms or s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// reportErrors writes a run's errors, if any, with their summary.
func reportErrors(w io.Writer, who string, clients int, r Result) {
	if r.Errors == 0 {
		return
	}
	fmt.Fprintf(w, "%s at %d clients: %d errors\n", who, clients, r.Errors)
	for _, s := range r.ErrorSummary() {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

// durationRow writes a markdown row of a measure's summary (nothing for
// no samples).
func durationRow(w io.Writer, name string, v []time.Duration) {
	if len(v) == 0 {
		return
	}
	s := Summarize(v)
	fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", name, s.N, fmtDur(s.Min), fmtDur(s.Median), fmtDur(s.P90), fmtDur(s.Max))
}

// ReportScale writes the table of a scale run made with o (as given to
// RunScale) to w and its notes to errw. It fails when a worker ran more
// tasks at once than its concurrency.
func ReportScale(w, errw io.Writer, o ScaleOptions, rows []ScaleResult) error {
	edgeMode := "inprocess"
	if o.EdgeBin != "" {
		edgeMode = "process"
	}
	fmt.Fprintf(w, "bench scale: agent slow (waits %v per task), %s, %d clients, worker concurrency %d, %v per count (+%v warmup), edge %s\n",
		o.Work, o.Method, o.Clients, o.Concurrency, o.Duration, o.Warmup, edgeMode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tideal/s\ttasks/s\tvs 1\tefficiency\tp50\tp99\terrors\tmax in-flight per worker\tmax in-flight\tmax acked-pending\tmax queued\tbench heap peak\tedge RSS start / 1st / 2nd half / peak\t")
	for _, r := range rows {
		edgeMem := "-"
		if r.EdgeRSSPeak > 0 {
			edgeMem = fmt.Sprintf("%s / %s / %s / %s", fmtMiB(r.EdgeRSSStart), fmtMiB(r.EdgeRSSFirstHalf), fmtMiB(r.EdgeRSSSecondHalf), fmtMiB(r.EdgeRSSPeak))
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.1f\t%.2fx\t%.0f%%\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t\n",
			r.Workers, r.Ideal, r.Result.Throughput, r.Speedup, 100*r.Efficiency,
			fmtLatency(r.Result.P50), fmtLatency(r.Result.P99), r.Result.Errors,
			FormatInFlight(r.MaxInFlight), r.MaxInFlightTotal, r.MaxAckPending, r.MaxQueued,
			fmtMiB(r.PeakHeap), edgeMem)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "ideal = min(workers×concurrency, clients) / work; efficiency = tasks/s ÷ ideal; vs 1 = tasks/s ÷ tasks/s of 1 worker (of the first count when 1 is not measured)")
	fmt.Fprintln(w, "max in-flight: agent runs at once (counted in the agent); acked-pending and queued: the agent's consumer, sampled every 100ms")
	fmt.Fprintln(w, "bench heap: Go heap of this process (load generator, NATS, workers, and the edge with --edge inprocess)")
	for _, r := range rows {
		if r.Workers*r.Concurrency > r.Clients {
			fmt.Fprintf(errw, "note: at %d workers there are fewer clients (%d) than slots (%d): the clients, not the workers, bound throughput\n",
				r.Workers, r.Clients, r.Workers*r.Concurrency)
		}
		reportErrors(errw, fmt.Sprintf("%d workers", r.Workers), o.Clients, r.Result)
		if m := MaxOf(r.MaxInFlight); m > int64(o.Concurrency) {
			return fmt.Errorf("backpressure violated: a worker ran %d tasks at once, above its concurrency %d", m, o.Concurrency)
		}
	}
	return nil
}

// PrintRegistry writes the table of a registry run of mode (RunRegistryOn)
// whose workers ran agent.
func PrintRegistry(w io.Writer, mode, agent string, res RegistryResult) {
	fmt.Fprintf(w, "bench registry: --mode %s, agent %s, registry TTL %v, heartbeat every %v (TTL/3); edges probe each worker connection every %v\n\n",
		mode, agent, res.TTL, res.Heartbeat.Round(time.Millisecond), RegistryProbeEvery)
	start := "process start"
	stop, kill := "SIGTERM", "SIGKILL"
	if mode == RegistryInProcess {
		start, stop, kill = "Worker.Run", "context cancel", "connection closed, then cancel"
	}
	fmt.Fprintln(w, "| measure | n | min | median | p90 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	row := func(name string, v []time.Duration) { durationRow(w, name, v) }
	row("join: "+start+" → a live worker in a Table", res.JoinTable)
	row("join: "+start+" → a live worker in the edge's GET /agents", res.JoinEdge)
	row("leave, graceful: "+stop+" → no live worker in a Table", res.LeaveTable)
	row("leave, graceful: "+stop+" → the edge shows no live worker", res.LeaveEdge)
	row("leave, graceful: "+stop+" → worker exited", res.StopExit)
	row("leave, crash: "+kill+" → no live worker in a Table", res.CrashTable)
	row("leave, crash: "+kill+" → the edge shows no live worker", res.CrashEdge)
	row("join: "+start+" → a live worker at the edge with a 30s lost grace", res.JoinGraceEdge)
	row("leave, graceful: "+stop+" → no live worker at the edge with a 30s lost grace", res.LeaveGraceEdge)
	row("leave, crash: "+kill+" → no live worker at the edge with a 30s lost grace", res.CrashGraceEdge)
}

// PrintManyAgents writes the tables of a many-agents run
// (RunManyAgentsOnProcs) of n agents of the built-in agent.
func PrintManyAgents(w io.Writer, n int, agent string, res ManyResult) {
	fmt.Fprintf(w, "bench registry --agents %d: %d agents (%s cards) registered over %d connections; 2 edge processes; registry TTL %v; "+
		"edges probe each connection every %v (%.0f probes/s in all)\n\n",
		n, res.Agents, agent, res.Conns, res.TTL, RegistryProbeEvery, res.ProbesPerSec)
	fmt.Fprintln(w, "| measure | edge 1 | edge 2 |")
	fmt.Fprintln(w, "|---|---|---|")
	pair := func(name string, f func(i int) string) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, f(0), f(1))
	}
	if len(res.RSSBefore) == 2 && len(res.RSSAfter) == 2 {
		pair("RSS, no agent", func(i int) string { return fmtMiB(res.RSSBefore[i]) })
		pair(fmt.Sprintf("RSS, %d agents", res.Agents), func(i int) string { return fmtMiB(res.RSSAfter[i]) })
		pair("RSS per agent", func(i int) string {
			return fmt.Sprintf("%.1f KiB", (float64(res.RSSAfter[i])-float64(res.RSSBefore[i]))/1024/float64(res.Agents))
		})
	}
	if len(res.CPUIdle) == 2 && len(res.CPULoaded) == 2 {
		pair("CPU at rest, no agent", func(i int) string { return fmt.Sprintf("%.3f cores", res.CPUIdle[i]) })
		pair(fmt.Sprintf("CPU at rest, %d agents (heartbeats, probes)", res.Agents), func(i int) string { return fmt.Sprintf("%.3f cores", res.CPULoaded[i]) })
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measure | n | min | median | p90 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	row := func(name string, v []time.Duration) { durationRow(w, name, v) }
	row(fmt.Sprintf("GET /agents (%d agents, %d KiB)", res.Agents, res.AgentsBytes>>10), res.AgentsGET)
	row("a new agent: Publish → a live worker at every edge", res.Join)
	row("a new agent: Publish → a live worker at one edge", res.JoinEach)
	row("its connection closed → every edge shows no live worker", res.Crash)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Registering all %d agents: %v to be listed by both edges. A registry.Table of %d agents: %d KiB of Go heap; Table.Lookup (a send's route lookup): %.0f ns.\n",
		res.Agents, res.Register.Round(time.Millisecond), res.Agents, res.TableHeap>>10, res.LookupNs)
}

// PrintMemory writes a memory run's tables; idle is the rest before the
// idle figures (MemoryOptions.Idle).
func PrintMemory(w io.Writer, r MemoryResult, idle time.Duration) {
	if len(r.Levels) == 0 {
		return
	}
	fmt.Fprintf(w, "bench memory: --roles %s, --max-tasks %d, %d clients, blocking SendMessage to echo\n\n", r.Roles, r.MaxTasks, r.Clients)
	fmt.Fprintln(w, "| tasks sent | completed/s | errors | retained (task logs) | settle | log msgs / subjects | work msgs | data dir |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, l := range r.Levels {
		lg, wq := l.Stream(taskstore.StreamLog), l.Stream(bus.StreamWork)
		fmt.Fprintf(w, "| %d | %.0f | %d | %d | %s | %d / %d | %d | %s (%d files) |\n",
			l.Sent, l.Fill.Throughput, l.Fill.Errors, l.Retained, l.Settled.Round(100*time.Millisecond),
			lg.Msgs, lg.Subjects, wq.Msgs, fmtMiB(l.DataDir), l.DataFiles)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| tasks sent | process | RSS under load | RSS idle (%v) | RSS after GC | high-water | heap live / in use / runtime total |\n", idle)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, l := range r.Levels {
		for _, p := range l.Procs {
			gc, heap := "-", "-"
			if p.GC > 0 {
				gc = fmtMiB(p.GC)
				heap = fmt.Sprintf("%s / %s / %s", fmtMiB(p.HeapAlloc), fmtMiB(p.HeapInuse), fmtMiB(p.Sys))
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", l.Sent, p.Role, fmtMiB(p.Load), fmtMiB(p.Idle), gc, fmtMiB(p.HWM), heap)
		}
	}
	fmt.Fprintln(w)
	heads := make([]string, len(r.Levels))
	for i, l := range r.Levels {
		heads[i] = strconv.FormatInt(l.Sent, 10) + " sent"
	}
	fmt.Fprintln(w, "| stream | "+strings.Join(heads, " | ")+" |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---|", len(r.Levels)))
	for _, name := range memStreams {
		cells := make([]string, len(r.Levels))
		for i, l := range r.Levels {
			s := l.Stream(name)
			switch {
			case s.Missing:
				cells[i] = "-"
			case s.Unreadable:
				cells[i] = "?"
			default:
				cells[i] = fmt.Sprintf("%d msgs, %d subj, %d deleted, %s", s.Msgs, s.Subjects, s.Deleted, fmtMiB(s.Bytes))
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	// Memory per retained task: the growth over the level before any task
	// (after GC where the process serves profiles, idle otherwise),
	// divided by the tasks retained.
	base := r.Levels[0]
	fmt.Fprintln(w)
	fmt.Fprintln(w, "memory per retained task (RSS after GC, or idle RSS without profiles, minus the same before any task; ÷ retained tasks):")
	for _, l := range r.Levels[1:] {
		if l.Retained == 0 {
			continue
		}
		var parts []string
		var total float64
		for _, p := range l.Procs {
			now, was := p.GC, base.Proc(p.Role).GC
			if now == 0 {
				now, was = p.Idle, base.Proc(p.Role).Idle
			}
			per := (float64(now) - float64(was)) / float64(l.Retained)
			total += per
			s := fmt.Sprintf("%s %.2f KiB", p.Role, per/1024)
			if p.HeapAlloc > 0 {
				s += fmt.Sprintf(" (live heap %.2f KiB)", (float64(p.HeapAlloc)-float64(base.Proc(p.Role).HeapAlloc))/float64(l.Retained)/1024)
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(w, "  at %d sent, %d retained: %s; all %.2f KiB; disk %.2f KiB\n", l.Sent, l.Retained, strings.Join(parts, ", "), total/1024,
			(float64(l.DataDir)-float64(base.DataDir))/float64(l.Retained)/1024)
	}
	for _, l := range r.Levels {
		if l.Fill.Errors > 0 {
			fmt.Fprintf(w, "errors sending up to %d tasks:\n", l.Sent)
			for _, e := range l.Fill.ErrorSummary() {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	var profiles []string
	for _, l := range r.Levels {
		profiles = append(profiles, l.Profiles...)
	}
	if len(profiles) > 0 {
		fmt.Fprintf(w, "heap profiles: %s\n", strings.Join(profiles, " "))
	}
}

// Line is the level's figures on one line, as a memory run reports a
// level once it is measured.
func (l MemoryLevel) Line() string {
	ev := l.Stream(taskstore.StreamLog)
	s := fmt.Sprintf("level %d sent (%d errors, %.0f/s): %d retained, log %d msgs / %d subjects, data dir %s;",
		l.Sent, l.Fill.Errors, l.Fill.Throughput, l.Retained, ev.Msgs, ev.Subjects, fmtMiB(l.DataDir))
	for _, p := range l.Procs {
		s += fmt.Sprintf(" %s RSS load %s idle %s", p.Role, fmtMiB(p.Load), fmtMiB(p.Idle))
		if p.GC > 0 {
			s += fmt.Sprintf(" gc %s heap %s;", fmtMiB(p.GC), fmtMiB(p.HeapAlloc))
		} else {
			s += ";"
		}
	}
	return s
}

// ReportStreams writes a streams run's figures; hold is how long the
// streams were held (StreamsOptions.Hold). It fails when a stream broke
// order or missed events.
func ReportStreams(w io.Writer, r StreamsResult, hold time.Duration) error {
	fmt.Fprintf(w, "bench streams: %d SSE streams (SubscribeToTask) on %d slow tasks, a chunk every %v, held %v; open-files limit %d\n",
		r.Streams, r.Tasks, r.ChunkDelay, hold, r.NoFile)
	fmt.Fprintf(w, "  open:     all in %v (%.0f/s); first event p50 %s, p99 %s; CPU edge %.2f, nats %.2f cores\n",
		r.OpenTime.Round(time.Millisecond), float64(r.Streams)/r.OpenTime.Seconds(), fmtLatency(r.OpenP50), fmtLatency(r.OpenP99),
		r.EdgeCPUOpen, r.NATSCPUOpen)
	if r.EdgeRSSHold > 0 {
		fmt.Fprintf(w, "  edge:     RSS %s before the streams, %s held (peak %s): %.1f KiB per stream; CPU %.2f cores held\n",
			fmtMiB(r.EdgeRSSBefore), fmtMiB(r.EdgeRSSHold), fmtMiB(r.EdgeRSSPeak), float64(r.PerStream)/1024, r.EdgeCPUHold)
		fmt.Fprintf(w, "  nats:     RSS %s before the streams, %s held (peak %s); CPU %.2f cores held\n",
			fmtMiB(r.NATSRSSBefore), fmtMiB(r.NATSRSSHold), fmtMiB(r.NATSRSSPeak), r.NATSCPUHold)
	}
	fmt.Fprintf(w, "  events:   %d chunks delivered while held (%.0f/s); latency append→SSE p50 %s, p99 %s, max %s (%d samples)\n",
		r.Events, float64(r.Events)/hold.Seconds(), fmtLatency(r.LatencyP50), fmtLatency(r.LatencyP99), fmtLatency(r.LatencyMax), r.Latencies)
	if r.WorkerCPUHold > 0 {
		fmt.Fprintf(w, "  others:   CPU held: slow worker %.2f, this bench's clients %.2f cores (of %d)\n", r.WorkerCPUHold, r.BenchCPUHold, runtime.NumCPU())
	}
	fmt.Fprintf(w, "  checked:  %d streams, %d broken\n", r.Checked, r.Failed)
	for _, f := range r.Failures {
		fmt.Fprintln(w, "    "+f)
	}
	if r.Failed > 0 {
		return fmt.Errorf("%d of %d streams broke order or missed events", r.Failed, r.Checked)
	}
	return nil
}
