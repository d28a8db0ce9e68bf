package main

// The client subcommands: card, send, stream, get, cancel. They talk A2A
// 1.0 JSON-RPC to one agent through package client; output formatting lives
// in client_print.go.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
)

const (
	defaultURL   = "http://127.0.0.1:8080"
	defaultAgent = "echo"
	urlEnv       = "A2AMESH_URL"
	maxStdinText = 1 << 20
)

func init() {
	register("card", "show an agent card (the mesh's, or one agent's with --agent)", stdCLI(cliCard))
	register("send", "send a message to an agent and print the reply", stdCLI(cliSend))
	register("stream", "send a message and print events as they arrive, or follow a task", stdCLI(cliStream))
	register("get", "show a task", stdCLI(cliGet))
	register("cancel", "cancel a task", stdCLI(cliCancel))
}

// cli carries a command's streams, so tests can capture them.
type cli struct {
	out, errOut io.Writer
	in          io.Reader
}

func stdCLI(run func(*cli, context.Context, []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		return run(&cli{out: os.Stdout, errOut: os.Stderr, in: os.Stdin}, ctx, args)
	}
}

// errTaskFailed is returned (for a non-zero exit) when a task ends failed
// or rejected.
var errTaskFailed = errors.New("task did not succeed")

// commonFlags are the flags every client command takes.
type commonFlags struct {
	fs       *flag.FlagSet
	url      string
	agent    string
	json     bool
	agentSet bool
}

func newFlags(name, args, desc string, agentDefault string) *commonFlags {
	f := &commonFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.StringVar(&f.url, "url", envOr(urlEnv, defaultURL), "mesh or agent URL (env "+urlEnv+")")
	agentHelp := "agent name: the endpoint is <url>/agents/<name>"
	if agentDefault == "" {
		agentHelp = "show this agent's card instead of the mesh's"
	}
	f.fs.StringVar(&f.agent, "agent", agentDefault, agentHelp)
	f.fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
	f.fs.Usage = func() {
		w := f.fs.Output()
		fmt.Fprintf(w, "usage: a2amesh %s %s\n\n%s\n\nflags:\n", name, args, desc)
		f.fs.PrintDefaults()
	}
	return f
}

// parse parses args, allowing flags after positional arguments ("--" ends
// flags). It returns the positional arguments, and done=true when -h was
// asked for (usage already printed).
func (c *cli) parse(f *commonFlags, args []string) (pos []string, done bool, err error) {
	rounds := len(args) + 1 // each round but the last consumes at least one arg
	for i := 0; i < rounds; i++ {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.fs.SetOutput(c.out)
				f.fs.Usage()
				return nil, true, nil
			}
			f.fs.SetOutput(c.errOut)
			f.fs.Usage()
			fmt.Fprintln(c.errOut)
			return nil, false, err
		}
		rest := f.fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "agent" {
			f.agentSet = true
		}
	})
	return pos, false, nil
}

// usageErr prints the usage and returns err.
func (c *cli) usageErr(f *commonFlags, format string, args ...any) error {
	f.fs.SetOutput(c.errOut)
	f.fs.Usage()
	fmt.Fprintln(c.errOut)
	return fmt.Errorf(format, args...)
}

// parseBase checks a --url value.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid --url %q: want e.g. %s", raw, defaultURL)
	}
	if i := strings.Index(u.Path+"/", "/.well-known/"); i >= 0 {
		u.Path = u.Path[:i] // a card URL: the agent (or mesh) is its directory
		u.RawPath = ""
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Fragment = ""
	return u, nil
}

// agentInPath returns the agent name when path ends in /agents/<name>.
func agentInPath(path string) (string, bool) {
	i := strings.LastIndex(path, "/agents/")
	if i < 0 {
		return "", false
	}
	name := path[i+len("/agents/"):]
	return name, name != "" && !strings.Contains(name, "/")
}

// agentURL resolves the JSON-RPC endpoint from --url and --agent:
//   - a URL ending in /agents/<name> is the endpoint as is;
//   - with --agent, or a URL without a path (the mesh), it is
//     <url>/agents/<agent>;
//   - any other path is taken as some agent's endpoint, used as is.
func agentURL(rawURL, agent string, agentSet bool) (string, error) {
	u, err := parseBase(rawURL)
	if err != nil {
		return "", err
	}
	if name, ok := agentInPath(u.Path); ok {
		if agentSet && agent != name {
			return "", fmt.Errorf("--url already names agent %q; drop --agent %q or point --url at the mesh", name, agent)
		}
		return u.String(), nil
	}
	if agentSet || u.Path == "" {
		if agent == "" || strings.Contains(agent, "/") {
			return "", fmt.Errorf("invalid --agent %q", agent)
		}
		u.Path += "/agents/" + agent
	}
	return u.String(), nil
}

// cardURL resolves the card to fetch: the agent's with --agent, else the
// one at --url (the mesh card for a bare mesh URL).
func cardURL(rawURL, agent string, agentSet bool) (string, error) {
	if agentSet {
		a, err := agentURL(rawURL, agent, true)
		if err != nil {
			return "", err
		}
		return client.CardURL(a), nil
	}
	if _, err := parseBase(rawURL); err != nil {
		return "", err
	}
	return client.CardURL(strings.TrimSpace(rawURL)), nil
}

// errInterrupted is returned when the user stops a command (Ctrl-C).
var errInterrupted = errors.New("interrupted")

// explain makes a client error friendlier, keeping it matchable.
func explain(ctx context.Context, err error, endpoint string) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	var rpc *a2a.Error
	if errors.As(err, &rpc) {
		return &hintErr{msg: fmt.Sprintf("%s (code %d)", rpc.Message, rpc.Code), err: err}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &hintErr{msg: err.Error() + "\n  is the mesh running? set --url or " + urlEnv, err: err}
	}
	var he *client.HTTPError
	if errors.As(err, &he) && he.StatusCode == 404 {
		return &hintErr{msg: err.Error() + "\n  no agent at " + endpoint + "? (see 'a2amesh card')", err: err}
	}
	return err
}

type hintErr struct {
	msg string
	err error
}

func (e *hintErr) Error() string { return e.msg }
func (e *hintErr) Unwrap() error { return e.err }

// messageText joins the positional arguments; "-" alone reads stdin.
func (c *cli) messageText(pos []string) (string, error) {
	if len(pos) == 1 && pos[0] == "-" {
		b, err := io.ReadAll(io.LimitReader(c.in, maxStdinText+1))
		if err != nil {
			return "", fmt.Errorf("reading stdin: %w", err)
		}
		if len(b) > maxStdinText {
			return "", fmt.Errorf("stdin text longer than %d bytes", maxStdinText)
		}
		return strings.TrimRight(string(b), "\n"), nil
	}
	return strings.Join(pos, " "), nil
}

// sendFlags are send's and stream's flags.
type sendFlags struct {
	*commonFlags
	contextID   string
	taskID      string
	noWait      bool
	lastEventID string
}

func newSendFlags(name, args, desc string) *sendFlags {
	f := &sendFlags{commonFlags: newFlags(name, args, desc, defaultAgent)}
	f.fs.StringVar(&f.contextID, "context", "", "continue the conversation with this context id")
	f.fs.StringVar(&f.taskID, "task", "", "continue (reply to) this task")
	return f
}

func (f *sendFlags) request(text string) *a2a.SendMessageRequest {
	m := client.TextMessage(text)
	m.ContextID, m.TaskID = f.contextID, f.taskID
	req := &a2a.SendMessageRequest{Message: m}
	if f.noWait {
		req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
	}
	return req
}

func cliCard(c *cli, ctx context.Context, args []string) error {
	f := newFlags("card", "[--url URL] [--agent NAME] [--json]",
		"Fetch an agent card and print it. Without --agent, the card at --url:\n"+
			"the mesh's own card for a bare mesh URL (<url>/.well-known/agent-card.json).", "")
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) > 0 {
		return c.usageErr(f, "unexpected argument %q", pos[0])
	}
	u, err := cardURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	if f.json {
		raw, err := client.CardJSON(ctx, u)
		if err != nil {
			return explain(ctx, err, u)
		}
		return writeIndented(c.out, raw)
	}
	card, err := client.Card(ctx, u)
	if err != nil {
		return explain(ctx, err, u)
	}
	printCard(c.out, card)
	return nil
}

func cliSend(c *cli, ctx context.Context, args []string) error {
	f := newSendFlags("send", "[--url URL] [--agent NAME] [--context ID] [--task ID] [--no-wait] [--json] TEXT...",
		"Send TEXT to an agent and print its answer: the task's state, the agent's\n"+
			"status message and its artifacts. \"-\" as TEXT reads the text from stdin.\n"+
			"Exits non-zero if the task failed or was rejected.")
	f.fs.BoolVar(&f.noWait, "no-wait", false, "return as soon as the task exists, without waiting for its end")
	pos, done, err := c.parse(f.commonFlags, args)
	if done || err != nil {
		return err
	}
	if len(pos) == 0 {
		return c.usageErr(f.commonFlags, "nothing to send: give the message TEXT")
	}
	text, err := c.messageText(pos)
	if err != nil {
		return err
	}
	endpoint, err := agentURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	res, err := client.New(endpoint).Send(ctx, f.request(text))
	if err != nil {
		return explain(ctx, err, endpoint)
	}
	if f.json {
		if err := writeJSON(c.out, res, true); err != nil {
			return err
		}
	} else {
		printSendResult(c.out, res)
	}
	if t := res.Task; t != nil {
		c.hint(t, f.noWait)
		return stateErr(t.Status.State)
	}
	return nil
}

// hint tells, on stderr, how to go on with a task that is not finished.
func (c *cli) hint(t *a2a.Task, noWait bool) {
	switch st := t.Status.State; {
	case st.Interrupted():
		fmt.Fprintf(c.errOut, "reply with: a2amesh send --task %s TEXT...\n", t.ID)
	case !st.Terminal() && noWait:
		fmt.Fprintf(c.errOut, "follow with: a2amesh stream --task %s  (or: a2amesh get %s)\n", t.ID, t.ID)
	}
}

// stateErr returns errTaskFailed for a failed or rejected task.
func stateErr(s a2a.TaskState) error {
	if s == a2a.StateFailed || s == a2a.StateRejected {
		return fmt.Errorf("%w: %s", errTaskFailed, stateName(s))
	}
	return nil
}

func cliStream(c *cli, ctx context.Context, args []string) error {
	f := newSendFlags("stream", "[--url URL] [--agent NAME] [--context ID] [--task ID [--last-event-id ID]] [--json] [TEXT...]",
		"Send TEXT with SendStreamingMessage and print each event as it arrives.\n"+
			"With --task and no TEXT, follow an existing task (SubscribeToTask).\n"+
			"--json prints one JSON line per event. Exits non-zero if the task failed\n"+
			"or was rejected.")
	f.fs.StringVar(&f.lastEventID, "last-event-id", "", "when following a task, resume after this event id")
	pos, done, err := c.parse(f.commonFlags, args)
	if done || err != nil {
		return err
	}
	if len(pos) == 0 && f.taskID == "" {
		return c.usageErr(f.commonFlags, "nothing to send: give the message TEXT, or --task ID to follow a task")
	}
	if len(pos) > 0 && f.lastEventID != "" {
		return c.usageErr(f.commonFlags, "--last-event-id only applies when following a task (--task ID without TEXT)")
	}
	endpoint, err := agentURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	cl := client.New(endpoint)
	var s *client.Stream
	if len(pos) == 0 {
		s, err = cl.Subscribe(ctx, f.taskID, f.lastEventID)
	} else {
		text, terr := c.messageText(pos)
		if terr != nil {
			return terr
		}
		s, err = cl.Stream(ctx, f.request(text))
	}
	if err != nil {
		return explain(ctx, err, endpoint)
	}
	defer s.Close()

	p := &streamPrinter{w: c.out, json: f.json, taskID: f.taskID}
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			p.end()
			if t := p.task(); t != nil && !p.finished {
				last := ""
				if t.Status.State != "" {
					last = " (last state: " + stateName(t.Status.State) + ")"
				}
				fmt.Fprintf(c.errOut, "stream ended before the task finished%s; follow with: a2amesh stream --task %s\n", last, t.ID)
			}
			return stateErr(p.state)
		}
		if err != nil {
			p.end()
			if ctx.Err() != nil {
				if p.taskID != "" && s.LastEventID() != "" {
					fmt.Fprintf(c.errOut, "resume with: a2amesh stream --task %s --last-event-id %s\n", p.taskID, s.LastEventID())
				}
				return errInterrupted
			}
			return explain(ctx, err, endpoint)
		}
		if err := p.event(ev.Response); err != nil {
			return err
		}
		if p.finished {
			p.end()
			if t := p.task(); t != nil && p.state.Interrupted() {
				c.hint(t, false)
			}
			return stateErr(p.state)
		}
	}
}

func cliGet(c *cli, ctx context.Context, args []string) error {
	f := newFlags("get", "[--url URL] [--agent NAME] [--history N] [--json] TASK_ID",
		"Fetch a task and print its state, status message and artifacts\n"+
			"(and its last N history messages with --history N).", defaultAgent)
	history := f.fs.Int("history", -1, "include at most N history messages (0: none)")
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usageErr(f, "want exactly one TASK_ID")
	}
	endpoint, err := agentURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	var hl *int
	if *history >= 0 {
		hl = history
	}
	t, err := client.New(endpoint).GetTask(ctx, pos[0], hl)
	if err != nil {
		return explain(ctx, err, endpoint)
	}
	if f.json {
		return writeJSON(c.out, t, true)
	}
	printTask(c.out, t, hl != nil)
	return nil
}

func cliCancel(c *cli, ctx context.Context, args []string) error {
	f := newFlags("cancel", "[--url URL] [--agent NAME] [--json] TASK_ID",
		"Cancel a task and print the state it was left in.", defaultAgent)
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usageErr(f, "want exactly one TASK_ID")
	}
	endpoint, err := agentURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	t, err := client.New(endpoint).Cancel(ctx, pos[0])
	if err != nil {
		return explain(ctx, err, endpoint)
	}
	if f.json {
		return writeJSON(c.out, t, true)
	}
	printTask(c.out, t, false)
	return nil
}
