package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// Send kinds.
const (
	KindBlocking  = "blocking"
	KindStreaming = "streaming"
)

// Outcomes of a send.
const (
	OutcomeAcked   = "acked"   // a JSON-RPC result, or a first SSE event
	OutcomeBusy    = "busy"    // a clear -32000 after the retry budget
	OutcomeNoReply = "noreply" // the budget ran out on transport errors alone
	OutcomeHung    = "hung"    // past the send's deadline
	OutcomeAborted = "aborted" // the harness stopped (Ctrl-C)
	OutcomeGaveUp  = "gaveup"  // the budget ran out with other errors (each already a violation)
)

// sendRec is one client send and everything seen of it.
type sendRec struct {
	Seq      int
	Client   int
	Agent    string
	Kind     string
	MsgID    string
	Text     string
	Want     string // the artifact text the task must end with
	Chunks   int    // slow: parts of the artifact
	Start    time.Time
	End      time.Time
	Attempts int
	Errs     []string // every failed attempt, stamped
	Outcome  string
	TaskID   string
	AckAt    time.Time
	AckEdge  int
	State    a2a.TaskState // last state the client saw
	// Artifacts the client ended with: the blocking result's, or the
	// fold of every stream item.
	Arts []a2a.Artifact
	// streams
	FirstID   uint64
	Events    []streamEvent
	Resumes   int
	FinalSeen bool
	// Hung: an acknowledged stream that did not reach its final event
	// before the deadline.
	Hung bool
	last uint64
}

type streamEvent struct {
	ID   uint64
	At   time.Time
	Edge int
	What string
}

// load runs the clients.
type load struct {
	cfg   *Config
	f     *fleet
	rpc   *rpcClient
	t0    time.Time
	run   string
	viol  *violations
	mu    sync.Mutex
	sends []*sendRec
	seq   int
	errs  map[string]int // failed attempts by kind

	nDone, nAcked, nBusy, nHung atomic.Int64 // progress, as sends end
	maxConsumers                map[string]int
}

func (l *load) stamp(t time.Time) string { return fmt.Sprintf("+%.3fs", t.Sub(l.t0).Seconds()) }

func (l *load) countErr(kind string) {
	l.mu.Lock()
	l.errs[kind]++
	l.mu.Unlock()
}

// runClients runs cfg.Clients clients until ctx ends; each makes one send
// at a time. Even clients send blocking, odd ones stream; agents
// alternate per send.
func (l *load) runClients(ctx, parent context.Context) {
	var wg sync.WaitGroup
	for c := 0; c < l.cfg.Clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(l.cfg.Seed), uint64(c)+1))
			kind := KindBlocking
			if c%2 == 1 {
				kind = KindStreaming
			}
			for i := 0; ctx.Err() == nil && i < 10_000_000; i++ {
				s := l.newSend(c, kind, i, rng)
				l.do(parent, s)
			}
		}()
	}
	wg.Wait()
}

func (l *load) newSend(client int, kind string, i int, rng *rand.Rand) *sendRec {
	l.mu.Lock()
	l.seq++
	s := &sendRec{Seq: l.seq, Client: client, Kind: kind, AckEdge: -1}
	l.sends = append(l.sends, s)
	l.mu.Unlock()
	s.MsgID = fmt.Sprintf("chaos-%s-c%d-%d", l.run, client, i)
	if (i+client/2)%2 == 0 {
		s.Agent = "echo"
		s.Text = fmt.Sprintf("echo %s %x", s.MsgID, rng.Uint64())
		s.Want = s.Text
		s.Chunks = 1
	} else {
		s.Agent = "slow"
		s.Chunks = 3 + rng.IntN(4)
		delay := time.Duration(50+50*rng.IntN(3)) * time.Millisecond
		s.Text = fmt.Sprintf("chunks=%d delay=%s", s.Chunks, delay)
		var b strings.Builder
		for k := 1; k <= s.Chunks; k++ {
			fmt.Fprintf(&b, "chunk %d/%d\n", k, s.Chunks)
		}
		s.Want = b.String()
	}
	return s
}

func (l *load) params(s *sendRec) map[string]any {
	return map[string]any{"message": map[string]any{
		"messageId": s.MsgID, "role": "ROLE_USER",
		"parts": []any{map[string]any{"text": s.Text}},
	}}
}

// do runs one send to its end (acknowledged and, for a stream, read to
// the final event; or given up; or hung). parent ends only when the
// harness is stopped (Ctrl-C): the send is then aborted, not hung.
func (l *load) do(parent context.Context, s *sendRec) {
	s.Start = time.Now()
	deadline := s.Start.Add(l.cfg.SendDeadline)
	sctx, cancel := context.WithDeadline(parent, deadline)
	defer cancel()
	defer l.progress(s)
	if s.Kind == KindBlocking {
		l.blocking(sctx, s)
	} else {
		l.streaming(sctx, s)
	}
	s.End = time.Now()
	if s.Outcome == "" {
		s.Outcome = OutcomeHung
	}
	if s.Outcome == OutcomeHung && parent.Err() != nil {
		s.Outcome = OutcomeAborted
	}
	if s.Outcome == OutcomeAcked && s.Kind == KindStreaming && !s.FinalSeen && parent.Err() == nil {
		s.Hung = true
		l.viol.add(VHung, "stream of acknowledged task %s (send %s to %s, started at %s) did not reach its final event within %v: last id %d, %d resumes; %s; attempts: %s",
			s.TaskID, s.MsgID, s.Agent, l.stamp(s.Start), l.cfg.SendDeadline, s.last, s.Resumes, describeEvents(s.Events), strings.Join(tail(s.Errs, 8), " | "))
	}
	if s.Outcome == OutcomeHung {
		l.viol.add(VHung, "%s send %s (%s) not answered %v after it started at %s; attempts: %s",
			s.Kind, s.MsgID, s.Agent, l.cfg.SendDeadline, l.stamp(s.Start), strings.Join(tail(s.Errs, 8), " | "))
	}
}

// failed records a failed attempt and reports whether it was a -32000.
// Any code but -32000 is a violation (the client still retries within its
// budget, to see what becomes of the task).
func (l *load) failed(s *sendRec, edge int, what string, a answer) (busy bool) {
	now := time.Now()
	var msg string
	switch {
	case a.transport != nil:
		msg = "transport: " + a.transport.Error()
		l.countErr("transport")
	case a.bad != "":
		msg = a.bad
		l.countErr("not JSON-RPC")
		l.viol.add(VBadAnswer, "%s send %s: %s from edge-%d at %s", what, s.MsgID, a.bad, edge, l.stamp(now))
	case a.rpcErr != nil:
		msg = a.rpcErr.String()
		l.countErr(fmt.Sprint(a.rpcErr.Code))
		switch {
		case a.rpcErr.Code == a2a.CodeServerBusy:
			busy = true
		case a.rpcErr.Code == a2a.CodeInvalidParams && strings.Contains(a.rpcErr.Message, "unknown agent"):
			l.viol.add(VUnknownAgent, "%s %s (task %q) at %s on edge-%d: %s", what, s.MsgID, s.TaskID, l.stamp(now), edge, a.rpcErr)
		case a.rpcErr.Code == a2a.CodeTaskNotFound && s.TaskID != "":
			l.viol.add(VNotFound, "%s of acknowledged task %s (send %s) at %s on edge-%d: %s", what, s.TaskID, s.MsgID, l.stamp(now), edge, a.rpcErr)
		case a.rpcErr.Code == a2a.CodeInternalError:
			l.viol.add(VInternal, "%s %s (task %q) at %s on edge-%d: %s", what, s.MsgID, s.TaskID, l.stamp(now), edge, a.rpcErr)
		default:
			l.viol.add(VBadCode, "%s %s (task %q) at %s on edge-%d: %s", what, s.MsgID, s.TaskID, l.stamp(now), edge, a.rpcErr)
		}
	}
	s.Errs = append(s.Errs, fmt.Sprintf("%s edge-%d %s: %s", l.stamp(now), edge, what, msg))
	return busy
}

// retryWait is the pause before attempt n (n >= 1): 100ms doubling, at
// most 2s.
func retryWait(n int) time.Duration {
	d := 100 * time.Millisecond << min(n-1, 5)
	return min(d, 2*time.Second)
}

// budgetLeft reports whether a send may make another attempt.
func (l *load) budgetLeft(s *sendRec) bool {
	return s.Attempts < l.cfg.MaxAttempts && time.Since(s.Start) < l.cfg.RetryBudget
}

func (l *load) edgeURL(i int) string { return l.f.edges[i].baseURL }

// firstEdge spreads first attempts over the edges, per send.
func (l *load) firstEdge(s *sendRec) int { return (s.Client/2 + s.Seq) % len(l.f.edges) }

// giveUp sets the outcome of a send whose budget ran out unacknowledged.
func (l *load) giveUp(s *sendRec, sawBusy, sawOther bool) {
	switch {
	case sawBusy:
		s.Outcome = OutcomeBusy
	case sawOther:
		s.Outcome = OutcomeGaveUp
	default:
		s.Outcome = OutcomeNoReply
		l.viol.add(VNoReply, "%s send %s (%s): no answer from any edge within its budget (%d attempts): %s",
			s.Kind, s.MsgID, s.Agent, s.Attempts, strings.Join(s.Errs, " | "))
	}
}

// blocking makes a blocking SendMessage, retrying the same messageId on
// the other edge after a transport error or an error answer.
func (l *load) blocking(ctx context.Context, s *sendRec) {
	edge := l.firstEdge(s)
	sawBusy, sawOther := false, false
	for s.Attempts = 0; ; {
		if s.Attempts > 0 {
			if !l.budgetLeft(s) {
				l.giveUp(s, sawBusy, sawOther)
				return
			}
			sleepCtx(ctx, retryWait(s.Attempts))
			edge = (edge + 1) % len(l.f.edges)
		}
		if ctx.Err() != nil {
			return // hung (or aborted)
		}
		s.Attempts++
		a := l.rpc.call(ctx, l.edgeURL(edge), s.Agent, "SendMessage", l.params(s), false, 0)
		if ctx.Err() != nil {
			return
		}
		if a.transport != nil || a.bad != "" || a.rpcErr != nil {
			if l.failed(s, edge, "SendMessage", a) {
				sawBusy = true
			} else if a.transport == nil {
				sawOther = true
			}
			continue
		}
		var r a2a.StreamResponse
		if err := json.Unmarshal(a.result, &r); err != nil || r.Task == nil || r.Task.ID == "" {
			l.viol.add(VBadAnswer, "SendMessage %s: result is not a task: %s", s.MsgID, trunc(string(a.result), 300))
			sawOther = true
			continue
		}
		s.Outcome, s.TaskID, s.AckAt, s.AckEdge = OutcomeAcked, r.Task.ID, time.Now(), edge
		s.State, s.Arts = r.Task.Status.State, r.Task.Artifacts
		return
	}
}

// streaming makes a SendStreamingMessage and reads it to the final event.
// Until the first event it retries the send (same messageId) on the other
// edge; after it, a stream that breaks is resumed on the other edge with
// SubscribeToTask and Last-Event-ID.
func (l *load) streaming(ctx context.Context, s *sendRec) {
	edge := l.firstEdge(s)
	sawBusy, sawOther := false, false
	var a answer
	for s.Attempts = 0; ; {
		if s.Attempts > 0 {
			if !l.budgetLeft(s) {
				l.giveUp(s, sawBusy, sawOther)
				return
			}
			sleepCtx(ctx, retryWait(s.Attempts))
			edge = (edge + 1) % len(l.f.edges)
		}
		if ctx.Err() != nil {
			return
		}
		s.Attempts++
		a = l.rpc.call(ctx, l.edgeURL(edge), s.Agent, "SendStreamingMessage", l.params(s), true, 0)
		if ctx.Err() != nil {
			closeAnswer(a)
			return
		}
		if a.sse == nil {
			if a.transport == nil && a.bad == "" && a.rpcErr == nil {
				a.bad = "a JSON result where an event stream was asked for: " + trunc(string(a.result), 200)
			}
			if l.failed(s, edge, "SendStreamingMessage", a) {
				sawBusy = true
			} else if a.transport == nil {
				sawOther = true
			}
			continue
		}
		// The first event acknowledges the send.
		fr, err := a.sse.next()
		if err != nil || fr.Err != nil {
			closeAnswer(a)
			if ctx.Err() != nil {
				return
			}
			fa := answer{rpcErr: fr.Err}
			if err != nil {
				fa = answer{transport: fmt.Errorf("stream broke before its first event: %w", err)}
			}
			if l.failed(s, edge, "SendStreamingMessage", fa) {
				sawBusy = true
			} else if fa.transport == nil {
				sawOther = true
			}
			continue
		}
		if fr.Resp.Task == nil || fr.Resp.Task.ID == "" || !fr.HasID {
			closeAnswer(a)
			l.viol.add(VStream, "SendStreamingMessage %s: first event is not a task with an id: id %d (has id %v) %s",
				s.MsgID, fr.ID, fr.HasID, describe(&fr.Resp))
			sawOther = true
			continue
		}
		s.Outcome, s.TaskID, s.AckAt, s.AckEdge = OutcomeAcked, fr.Resp.Task.ID, time.Now(), edge
		s.FirstID, s.last = fr.ID, fr.ID
		s.State = fr.Resp.Task.Status.State
		s.Arts = foldArtifacts(nil, &fr.Resp)
		s.Events = append(s.Events, streamEvent{ID: fr.ID, At: s.AckAt, Edge: edge, What: describe(&fr.Resp)})
		if s.State.Final() {
			s.FinalSeen = true
			closeAnswer(a)
			return
		}
		break
	}
	// Read to the final event, resuming on the other edge when the stream
	// breaks.
	for round := 0; round < 10_000; round++ {
		if round > 0 {
			s.Resumes++
			sleepCtx(ctx, retryWait(min(round, 4)))
			if ctx.Err() != nil {
				return
			}
			edge = (edge + 1) % len(l.f.edges)
			a = l.rpc.call(ctx, l.edgeURL(edge), s.Agent, "SubscribeToTask", map[string]any{"id": s.TaskID}, true, s.last)
			if ctx.Err() != nil {
				closeAnswer(a)
				return
			}
			if a.sse == nil {
				if a.transport == nil && a.bad == "" && a.rpcErr == nil {
					a.bad = "a JSON result where an event stream was asked for: " + trunc(string(a.result), 200)
				}
				l.failed(s, edge, "SubscribeToTask", a)
				continue
			}
		}
		done := l.readStream(ctx, s, edge, a)
		closeAnswer(a)
		if done || ctx.Err() != nil {
			return
		}
	}
}

// readStream reads events until the final one (true), or until the
// stream breaks or carries an error (false: resume).
func (l *load) readStream(ctx context.Context, s *sendRec, edge int, a answer) bool {
	for i := 0; i < 100_000; i++ {
		fr, err := a.sse.next()
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			if errors.Is(err, errCleanEOF) {
				l.viol.add(VStream, "stream of task %s (send %s) on edge-%d ended at %s after id %d without its final event and without an error",
					s.TaskID, s.MsgID, edge, l.stamp(time.Now()), s.last)
				s.Errs = append(s.Errs, fmt.Sprintf("%s edge-%d stream: ended cleanly before the final event", l.stamp(time.Now()), edge))
			} else {
				l.countErr("stream broke")
				s.Errs = append(s.Errs, fmt.Sprintf("%s edge-%d stream: %v", l.stamp(time.Now()), edge, err))
			}
			return false
		}
		if fr.Err != nil {
			l.failed(s, edge, "stream", answer{rpcErr: fr.Err})
			return false
		}
		now := time.Now()
		what := describe(&fr.Resp)
		if !fr.HasID {
			l.viol.add(VStream, "task %s (send %s): event without an id on edge-%d: %s", s.TaskID, s.MsgID, edge, what)
		} else if fr.ID <= s.last {
			kind := VStreamDup
			if fr.ID < s.last {
				kind = VStreamOrder
			}
			l.viol.add(kind, "task %s (send %s): event id %d after id %d on edge-%d at %s (%s)", s.TaskID, s.MsgID, fr.ID, s.last, edge, l.stamp(now), what)
		}
		if fr.HasID && fr.ID > s.last {
			s.last = fr.ID
		}
		s.Events = append(s.Events, streamEvent{ID: fr.ID, At: now, Edge: edge, What: what})
		s.Arts = foldArtifacts(s.Arts, &fr.Resp)
		if fr.Resp.Task != nil {
			l.viol.add(VStream, "task %s (send %s): a task snapshot in the middle of the stream (id %d, edge-%d)", s.TaskID, s.MsgID, fr.ID, edge)
		}
		if su := fr.Resp.StatusUpdate; su != nil {
			s.State = su.Status.State
			if su.Status.State.Final() {
				s.FinalSeen = true
				return true
			}
		}
	}
	return false
}

// tail returns the last n of ss.
func tail(ss []string, n int) []string {
	if len(ss) > n {
		return append([]string{fmt.Sprintf("(%d before)", len(ss)-n)}, ss[len(ss)-n:]...)
	}
	return ss
}

func closeAnswer(a answer) {
	if a.body != nil {
		a.body.Close()
	}
}

// describe names a stream item for messages: its kind, state or chunk.
func describe(r *a2a.StreamResponse) string {
	switch {
	case r.Task != nil:
		return "task(" + string(r.Task.Status.State) + ")"
	case r.StatusUpdate != nil:
		return "status(" + strings.TrimPrefix(string(r.StatusUpdate.Status.State), "TASK_STATE_") + ")"
	case r.ArtifactUpdate != nil:
		var text string
		for _, p := range r.ArtifactUpdate.Artifact.Parts {
			text += p.Text
		}
		return fmt.Sprintf("artifact(%q append=%v)", trunc(strings.TrimSpace(text), 40), r.ArtifactUpdate.Append)
	case r.Message != nil:
		return "message(" + string(r.Message.Role) + ")"
	}
	return "?"
}

// snapshot returns the sends so far.
func (l *load) snapshot() []*sendRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*sendRec(nil), l.sends...)
}
