package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Planner is a multi-agent example: it splits its text in two (see
// SplitPlan), sends the first part to one agent and the rest to another,
// both at once, through the mesh (Request.Mesh), and answers with one
// artifact that holds both answers, each labelled with its agent. The
// delegated tasks are ordinary tasks of the planner's context, with an
// agentrt.MetaParent entry naming the planner's task; canceling the
// planner's task cancels them.
type Planner struct {
	// First gets the first part (default "echo"); Second, the rest
	// (default "upper", which streams its answer).
	First, Second string
}

// PlannerSeparator splits a planner's text into its two parts.
const PlannerSeparator = ";"

// plannerNS is the UUID namespace of the message ids planner sends.
var plannerNS = uuid.MustParse("3d4b8f0e-7a1c-4e52-b9d6-0f2a6c8e1b74")

func (p Planner) agents() (first, second string) {
	first, second = p.First, p.Second
	if first == "" {
		first = "echo"
	}
	if second == "" {
		second = "upper"
	}
	return first, second
}

// Card describes planner.
func (p Planner) Card() a2a.AgentCard {
	first, second := p.agents()
	return card("planner", fmt.Sprintf("A multi-agent example: splits your text, delegates the parts to %s and %s through the mesh, and combines their answers.", first, second),
		a2a.AgentSkill{ID: "plan", Name: "Split and delegate",
			Description: fmt.Sprintf("Splits the text on the first %q (\"a; b\"), or without one into the first half of the words and the rest "+
				"(a single word goes to both); sends the first part to %s and the rest to %s at once, each as a task of the same context; "+
				"answers with one artifact, a line per agent (\"%s: …\" then \"%s: …\") and a data part with the delegated task ids. "+
				"Fails, naming the agent, if a delegate fails, is not running, or does not answer in time (its task is then canceled).", PlannerSeparator, first, second, first, second),
			Tags: []string{"example", "multi-agent"}, Examples: []string{"hello brave new world", "say this; shout that"}})
}

// SplitPlan splits text into the planner's two parts: around the first
// PlannerSeparator if there is one, else into the first half of the words
// (the larger half for an odd count) and the rest. A text of one word is
// both parts.
func SplitPlan(text string) (first, rest string) {
	if a, b, ok := strings.Cut(text, PlannerSeparator); ok {
		return strings.TrimSpace(a), strings.TrimSpace(b)
	}
	words := strings.Fields(text)
	if len(words) < 2 {
		text = strings.TrimSpace(text)
		return text, text
	}
	half := (len(words) + 1) / 2
	return strings.Join(words[:half], " "), strings.Join(words[half:], " ")
}

// delegation is one call planner makes.
type delegation struct {
	agent, text string
	task        *a2a.Task
	err         error
}

// errOtherDelegateFailed is the cause with which a delegation is canceled
// when the other one failed.
var errOtherDelegateFailed = fmt.Errorf("%w: the planner's other delegate failed", agentrt.ErrCanceled)

// Run delegates the two parts and combines the answers.
func (p Planner) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	text := strings.TrimSpace(req.Text())
	if text == "" {
		return w.Reject(`planner needs some text, e.g. "say this; shout that"`)
	}
	mesh := req.Mesh()
	if mesh == nil {
		return errors.New("planner: the request has no mesh (planner runs in an agentrt.Worker)")
	}
	firstAgent, secondAgent := p.agents()
	first, rest := SplitPlan(text)
	ds := []*delegation{{agent: firstAgent, text: first}, {agent: secondAgent, text: rest}}
	if err := w.Working(fmt.Sprintf("delegating to %s and %s", firstAgent, secondAgent)); err != nil {
		return err
	}

	// When one delegate fails, the other is canceled: the cause wraps
	// agentrt.ErrCanceled, so Mesh.Send cancels the task it waits on.
	dctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed *delegation // the first delegate that failed
	)
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := a2a.Message{
				// Stable across runs of this turn whatever order the two
				// calls start in: a turn run again after a worker stopped
				// finds the tasks it delegated instead of delegating twice.
				MessageID: uuid.NewSHA1(plannerNS, []byte(req.TaskID+"\x00"+req.Message.MessageID+"\x00"+d.agent)).String(),
				Parts:     []a2a.Part{a2a.TextPart(d.text)},
			}
			d.task, d.err = mesh.Send(dctx, d.agent, msg)
			if d.err != nil || d.task.Status.State != a2a.StateCompleted {
				mu.Lock()
				if failed == nil {
					failed = d
					stop(errOtherDelegateFailed)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	if err := ctx.Err(); err != nil {
		return err // canceled, timed out or the worker stops: the worker settles it
	}
	if d := failed; d != nil {
		switch {
		case errors.Is(d.err, agentrt.ErrUnknownAgent):
			return w.Fail(fmt.Sprintf("planner: no agent %q is registered with the mesh", d.agent))
		case errors.Is(d.err, agentrt.ErrWaitExpired):
			// The delegate's task is still queued or working: its answer
			// would come too late for this task, which fails now saying
			// why; cancel the delegate's task so it does not run for no one.
			var we *agentrt.WaitError
			if errors.As(d.err, &we) {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_ = mesh.Cancel(cctx, we.TaskID, "canceled: the planner stopped waiting for it")
				cancel()
			}
			return w.Fail("planner: " + d.err.Error())
		case d.err != nil:
			return &delegateError{agent: d.agent, err: d.err}
		}
		msg := fmt.Sprintf("planner: agent %q ended its task %s as %s", d.agent, d.task.ID, a2a.StateV03(d.task.Status.State))
		if s := d.task.Status.Message.Text(); s != "" {
			msg += ": " + s
		}
		return w.Fail(msg)
	}

	var answer strings.Builder
	tasks := map[string]string{}
	for _, d := range ds {
		fmt.Fprintf(&answer, "%s: %s\n", d.agent, taskText(d.task))
		tasks[d.agent] = d.task.ID
	}
	art := a2a.Artifact{ArtifactID: req.ArtifactID("plan"), Name: "plan",
		Parts: []a2a.Part{a2a.TextPart(answer.String()), a2a.DataPart(map[string]any{"tasks": tasks})}}
	if err := w.Artifact(art, false, true); err != nil {
		return err
	}
	return w.Complete(fmt.Sprintf("combined the answers of %s and %s", firstAgent, secondAgent))
}

// taskText joins the text parts of a task's artifacts.
func taskText(t *a2a.Task) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			if p.Kind == a2a.PartText {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// delegateError is a call to a delegate that broke (not the delegate's
// answer): the client sees which agent, the log sees why.
type delegateError struct {
	agent string
	err   error
}

func (e *delegateError) Error() string {
	return "planner: delegate to " + e.agent + ": " + e.err.Error()
}
func (e *delegateError) Unwrap() error { return e.err }

// PublicMessage is what the client sees.
func (e *delegateError) PublicMessage() string {
	return fmt.Sprintf("planner: could not delegate to agent %q", e.agent)
}
