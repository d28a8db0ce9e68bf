package a2agoexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

const (
	// DefaultCancelTimeout bounds how long a run waits for the executor's
	// Cancel (and each AgentExecutionCleaner.Cleanup) after the task was
	// canceled.
	DefaultCancelTimeout = 5 * time.Second

	// maxEvents bounds the events taken from one Execute, and
	// maxCancelEvents those drained from one Cancel.
	maxEvents       = 1 << 20
	maxCancelEvents = 1024
)

// Option adjusts an adapter built by New or NewFromCard.
type Option func(*agent)

// WithCancelTimeout sets how long a run waits for the executor's Cancel
// to finish, and bounds the context given to Cleanup (d <= 0 keeps
// DefaultCancelTimeout).
func WithCancelTimeout(d time.Duration) Option {
	return func(a *agent) {
		if d > 0 {
			a.cancelTimeout = d
		}
	}
}

// WithLogger sets where the adapter logs what it cannot report on the task:
// a Cancel that failed or overran, a Cleanup that panicked (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(a *agent) {
		if l != nil {
			a.log = l
		}
	}
}

// New wraps exec as an agentrt.Agent described by card. Run it with an
// agentrt.Worker like any other agent.
func New(exec a2asrv.AgentExecutor, card a2a.AgentCard, opts ...Option) agentrt.Agent {
	a := &agent{exec: exec, card: card, cancelTimeout: DefaultCancelTimeout, log: slog.Default()}
	for _, o := range opts {
		o(a)
	}
	return a
}

// NewFromCard is New with the card in a2a-go's model, converted through
// its JSON. Its supportedInterfaces are replaced by the mesh's edges as for
// any agent; fields the mesh's card model lacks (signatures, per-skill
// security requirements) are dropped.
func NewFromCard(exec a2asrv.AgentExecutor, card *a2ago.AgentCard, opts ...Option) (agentrt.Agent, error) {
	if card == nil {
		return nil, errors.New("a2agoexec: nil agent card")
	}
	b, err := json.Marshal(card)
	if err != nil {
		return nil, fmt.Errorf("a2agoexec: encode agent card: %w", err)
	}
	var c a2a.AgentCard
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("a2agoexec: decode agent card: %w", err)
	}
	return New(exec, c, opts...), nil
}

// agent adapts an a2asrv.AgentExecutor to agentrt.Agent.
type agent struct {
	exec          a2asrv.AgentExecutor
	card          a2a.AgentCard
	cancelTimeout time.Duration
	log           *slog.Logger
}

func (a *agent) Card() a2a.AgentCard { return a.card }

// RepliesWithMessage declares that the executor may answer with a Message,
// as an SDK server lets it: an executor's Message as the first output of
// the turn that created the task is the send's answer (agentrt.Reply).
func (a *agent) RepliesWithMessage() bool { return true }

// Run runs one turn: Execute with an ExecutorContext built from req, each
// event recorded through w until a final or interrupted state, an error or
// the end of the events. If the task was canceled, timed out or was closed
// under the run, the executor's Cancel runs and its events are drained
// unrecorded: the mesh has recorded the task's end already.
func (a *agent) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	if a.exec == nil {
		return errors.New("a2agoexec: nil executor")
	}
	if req == nil || w == nil {
		return errors.New("a2agoexec: nil request or event writer")
	}
	ec := execContext(req)
	// The SDK's transports put a call context on every request; executors
	// may read it with a2asrv.CallContextFrom. Its service parameters hold
	// the requested extensions (a2asrv.Extensions.RequestedURIs); what the
	// executor activates there is activated on the turn before each event
	// is recorded, so the edge echoes it.
	ctx, callCtx := a2asrv.NewCallContext(ctx, ec.ServiceParams)
	activate := func() {
		for _, u := range callCtx.Extensions().ActivatedURIs() {
			req.Activate(u)
		}
	}
	tr := newTracker(ec)
	err := a.execute(ctx, ec, w, tr, newArtifactIDs(req), activate)
	activate() // before the worker completes a turn that ended without a final event
	if !tr.settled {
		if cutShort(ctx, err) {
			a.cancel(ctx, ec, tr)
		}
		if err == nil && ctx.Err() != nil {
			err = context.Cause(ctx)
		}
	}
	a.cleanup(ctx, ec, tr.result(), err)
	return err
}

// execute iterates Execute, recording each event.
func (a *agent) execute(ctx context.Context, ec *a2asrv.ExecutorContext, w agentrt.EventWriter, tr *tracker, ids *artifactIDs, activate func()) error {
	seq := a.exec.Execute(ctx, ec)
	if seq == nil {
		return errors.New("a2agoexec: Execute returned no event sequence")
	}
	n := 0
	for ev, err := range seq {
		if err != nil {
			return err
		}
		if n++; n > maxEvents {
			return fmt.Errorf("a2agoexec: executor produced more than %d events", maxEvents)
		}
		sr, err := fromGoEvent(ev)
		if err != nil {
			return err
		}
		if sr == nil {
			continue
		}
		ids.rename(sr)
		activate()
		if err := w.Event(sr); err != nil {
			return err
		}
		tr.apply(ev)
		if endsTurn(ev) {
			tr.settled = true
			return nil
		}
	}
	return nil
}

// artifactIDs gives the artifacts a turn creates ids that are the same on
// every run of the turn. Executors usually name artifacts with random
// UUIDs (a2a.NewArtifactEvent); a turn run again after its worker died
// would then add a second copy of each artifact next to the dead run's
// partial one. The n-th new UUID artifact id of a turn becomes
// Request.ArtifactID of a name derived from n, so the re-run's first chunk
// replaces it instead. Other ids (an executor's own names, such as
// "report") are kept, as are the ids of artifacts from earlier turns.
type artifactIDs struct {
	req   *agentrt.Request
	known map[string]bool   // artifacts the task had before this turn
	ids   map[string]string // executor's id → recorded id
}

func newArtifactIDs(req *agentrt.Request) *artifactIDs {
	m := &artifactIDs{req: req, known: map[string]bool{}, ids: map[string]string{}}
	for _, a := range req.Artifacts {
		m.known[a.ArtifactID] = true
	}
	return m
}

func (m *artifactIDs) id(orig string) string {
	if orig == "" || m.known[orig] || !isUUID(orig) {
		return orig // the writer names unnamed artifacts the same way
	}
	if id, ok := m.ids[orig]; ok {
		return id
	}
	id := m.req.ArtifactID("a2agoexec#" + strconv.Itoa(len(m.ids)+1))
	m.ids[orig] = id
	return id
}

// isUUID reports whether s is a UUID in its usual 36-character form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

func (m *artifactIDs) rename(sr *a2a.StreamResponse) {
	if u := sr.ArtifactUpdate; u != nil {
		u.Artifact.ArtifactID = m.id(u.Artifact.ArtifactID)
	}
	if t := sr.Task; t != nil {
		for i := range t.Artifacts {
			t.Artifacts[i].ArtifactID = m.id(t.Artifacts[i].ArtifactID)
		}
	}
}

// cutShort reports whether a run that did not settle its turn ended
// because the task is over: canceled, timed out, or closed under the run
// (the writer refused an event; the cancel may not have reached ctx yet).
// A run whose ctx ended for another reason was stopped by a worker
// shutting down: the turn goes back to the queue and runs again, so the
// executor is not told to cancel.
func cutShort(ctx context.Context, err error) bool {
	cause := context.Cause(ctx)
	if errors.Is(cause, agentrt.ErrCanceled) || errors.Is(cause, agentrt.ErrTimedOut) {
		return true
	}
	return ctx.Err() == nil && errors.Is(err, agentrt.ErrTaskClosed)
}

// endsTurn reports whether ev ends the turn: a Message, or a final or
// interrupted state (a2a-go stops at input-required but not at
// auth-required; the mesh settles a turn at both).
func endsTurn(ev a2ago.Event) bool {
	state, msg := goEventState(ev)
	if msg {
		return true
	}
	st, err := fromGoState(state)
	return err == nil && st.Final()
}

// cancel runs the executor's Cancel as the SDK does for a cancel request
// (an ExecutorContext without a Message, whose StoredTask is the task as
// this run left it) and drains its events without recording them, waiting
// at most cancelTimeout.
func (a *agent) cancel(ctx context.Context, ec *a2asrv.ExecutorContext, tr *tracker) {
	cec := *ec
	cec.Message = nil
	cec.StoredTask = tr.snapshot()
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), a.cancelTimeout)
	defer stop()

	type outcome struct {
		events []a2ago.Event
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if r := recover(); r != nil {
				o.err = fmt.Errorf("a2agoexec: Cancel panicked: %v", r)
			}
			done <- o
		}()
		seq := a.exec.Cancel(cctx, &cec)
		if seq == nil {
			return
		}
		for ev, err := range seq {
			if err != nil {
				o.err = err
				return
			}
			if ev != nil {
				o.events = append(o.events, ev)
			}
			if len(o.events) >= maxCancelEvents || cctx.Err() != nil || (ev != nil && endsTurn(ev)) {
				return
			}
		}
	}()
	log := a.log.With("task_id", ec.TaskID)
	select {
	case o := <-done:
		ctr := &tracker{task: (&tracker{task: cec.StoredTask}).snapshot()}
		for _, ev := range o.events {
			ctr.apply(ev)
		}
		if o.err != nil {
			log.Warn("a2agoexec: executor Cancel failed", "err", o.err)
		}
		a.cleanup(cctx, &cec, ctr.result(), o.err)
	case <-cctx.Done():
		log.Warn("a2agoexec: executor Cancel did not finish in time", "timeout", a.cancelTimeout)
	}
}

// cleanup calls the executor's Cleanup if it has one, as the SDK does after
// an execution or a cancel.
func (a *agent) cleanup(ctx context.Context, ec *a2asrv.ExecutorContext, result a2ago.SendMessageResult, err error) {
	c, ok := a.exec.(a2asrv.AgentExecutionCleaner)
	if !ok {
		return
	}
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), a.cancelTimeout)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			a.log.Warn("a2agoexec: executor Cleanup panicked", "task_id", ec.TaskID, "panic", fmt.Sprint(r))
		}
	}()
	c.Cleanup(cctx, ec, result, err)
}

// execContext builds the ExecutorContext of a turn as the SDK's request
// handler would: the user message, the task and context ids, the request
// metadata, an unauthenticated user, service parameters holding only the
// requested extensions (A2A-Extensions; the mesh passes no other header
// nor the caller's identity to workers), and on a continued turn the
// stored task.
func execContext(req *agentrt.Request) *a2asrv.ExecutorContext {
	msg := toGoMessage(&req.Message)
	ec := &a2asrv.ExecutorContext{
		Message:       msg,
		TaskID:        a2ago.TaskID(req.TaskID),
		ContextID:     req.ContextID,
		Metadata:      copyMetaLoose(req.Metadata),
		User:          &a2asrv.User{},
		ServiceParams: a2asrv.NewServiceParams(nil),
	}
	if len(req.Extensions) > 0 {
		ec.ServiceParams = a2asrv.NewServiceParams(map[string][]string{a2ago.SvcParamExtensions: req.Extensions})
	}
	if len(req.History) > 0 {
		ec.StoredTask = storedTask(req, msg)
	}
	return ec
}

// storedTask is the task a continued turn resumes, as the SDK would have
// loaded it: interrupted (input-required: the mesh does not tell which
// interrupted state it was), its status message the agent's last message,
// its history the earlier turns followed by this turn's message.
func storedTask(req *agentrt.Request, msg *a2ago.Message) *a2ago.Task {
	t := &a2ago.Task{
		ID: a2ago.TaskID(req.TaskID), ContextID: req.ContextID,
		Status: a2ago.TaskStatus{State: a2ago.TaskStateInputRequired},
	}
	for i := range req.History {
		t.History = append(t.History, toGoMessage(&req.History[i]))
	}
	if n := len(t.History); n > 0 && t.History[n-1].Role == a2ago.MessageRoleAgent {
		t.Status.Message = t.History[n-1]
	}
	t.History = append(t.History, msg)
	for i := range req.Artifacts {
		t.Artifacts = append(t.Artifacts, toGoArtifact(&req.Artifacts[i]))
	}
	return t
}

// tracker follows the task as a run's events change it, in a2a-go's model:
// it is the StoredTask given to Cancel and the result given to Cleanup.
type tracker struct {
	task    *a2ago.Task
	msg     *a2ago.Message // the executor's reply, if it gave a Message
	settled bool           // the run recorded a final or interrupted state
}

func newTracker(ec *a2asrv.ExecutorContext) *tracker {
	t := &a2ago.Task{ID: ec.TaskID, ContextID: ec.ContextID}
	if st := ec.StoredTask; st != nil {
		t.History = slices.Clone(st.History)
		t.Artifacts = cloneGoArtifacts(st.Artifacts)
		t.Metadata = st.Metadata
	} else if ec.Message != nil {
		t.History = []*a2ago.Message{ec.Message}
	}
	// The worker marked the task working before the run.
	t.Status = a2ago.TaskStatus{State: a2ago.TaskStateWorking}
	return &tracker{task: t}
}

// apply folds ev into the tracked task as the mesh records it (see
// agentrt.EventWriter.Event).
func (tr *tracker) apply(ev a2ago.Event) {
	setStatus := func(s a2ago.TaskStatus) {
		if s.State != a2ago.TaskStateSubmitted && s.State != a2ago.TaskStateUnspecified {
			tr.task.Status = s
		}
	}
	switch v := ev.(type) {
	case *a2ago.Message:
		if v != nil {
			tr.msg = v
			tr.task.Status = a2ago.TaskStatus{State: a2ago.TaskStateCompleted, Message: v}
		}
	case *a2ago.Task:
		if v != nil {
			for _, art := range v.Artifacts {
				if art != nil {
					tr.putArtifact(art, false)
				}
			}
			setStatus(v.Status)
		}
	case *a2ago.TaskStatusUpdateEvent:
		if v != nil {
			setStatus(v.Status)
		}
	case *a2ago.TaskArtifactUpdateEvent:
		if v != nil && v.Artifact != nil {
			tr.putArtifact(v.Artifact, v.Append)
		}
	}
}

func (tr *tracker) putArtifact(art *a2ago.Artifact, appendParts bool) {
	for i, cur := range tr.task.Artifacts {
		if cur == nil || cur.ID != art.ID {
			continue
		}
		c := *cur
		if appendParts {
			c.Parts = append(slices.Clone(cur.Parts), art.Parts...)
		} else {
			c = *art
			c.Parts = slices.Clone(art.Parts)
		}
		tr.task.Artifacts[i] = &c
		return
	}
	c := *art
	c.Parts = slices.Clone(art.Parts)
	tr.task.Artifacts = append(tr.task.Artifacts, &c)
}

// snapshot returns a copy of the tracked task.
func (tr *tracker) snapshot() *a2ago.Task {
	t := *tr.task
	t.History = slices.Clone(t.History)
	t.Artifacts = cloneGoArtifacts(t.Artifacts)
	return &t
}

// result is what the SDK would report as the execution's result: the
// executor's Message if it replied with one, else the task.
func (tr *tracker) result() a2ago.SendMessageResult {
	if tr.msg != nil {
		return tr.msg
	}
	return tr.snapshot()
}

func cloneGoArtifacts(as []*a2ago.Artifact) []*a2ago.Artifact {
	if as == nil {
		return nil
	}
	out := make([]*a2ago.Artifact, 0, len(as))
	for _, a := range as {
		if a == nil {
			continue
		}
		c := *a
		c.Parts = slices.Clone(a.Parts)
		out = append(out, &c)
	}
	return out
}
