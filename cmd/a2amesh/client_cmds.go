package main

// The client subcommands: card, send, stream, get, cancel. They talk A2A
// 1.0 to one agent through package client, over JSON-RPC or, with
// --binding, over the HTTP+JSON or gRPC interface the agent's card lists;
// output formatting lives in client_print.go.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/edge"
)

const (
	defaultURL   = "http://127.0.0.1:8080"
	defaultAgent = "echo"
	urlEnv       = "A2AMESH_URL"
	apiKeyEnv    = "A2AMESH_API_KEY"
	bindingEnv   = "A2AMESH_BINDING"
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
	apiKey   string
	binding  string
	agentSet bool
	urlSet   bool // --url given on the command line (not from the environment)
	keySet   bool // --api-key given on the command line
	// got401 is set when the mesh answered HTTP 401 (see explain).
	got401 atomic.Bool
}

// newFlags returns the common flags of a client command whose -h prints
// desc (see newFlagSet), then "usage: a2amesh NAME [flags] ARGS", then the
// flags. agentDefault is the agent --agent defaults to, agentHelp its help.
func newFlags(name, args, desc, agentDefault, agentHelp string) *commonFlags {
	f := &commonFlags{fs: newFlagSet(name, args, desc)}
	f.fs.StringVar(&f.url, "url", envOr(urlEnv, defaultURL),
		"the mesh's base URL, or one agent's endpoint (<mesh>/agents/NAME); a card URL works too\n(env "+urlEnv+")")
	f.fs.StringVar(&f.agent, "agent", agentDefault, agentHelp)
	f.fs.BoolVar(&f.json, "json", false, "print the JSON the mesh answered instead of text")
	f.fs.StringVar(&f.apiKey, "api-key", "",
		"API key sent in the "+edge.APIKeyHeader+" header of every request, for a mesh with auth on\n(env "+apiKeyEnv+"; default: none)")
	f.fs.StringVar(&f.binding, "binding", envOr(bindingEnv, "jsonrpc"),
		"jsonrpc, rest (HTTP+JSON) or grpc: rest and grpc call the interface of that binding the\nagent's card lists (env "+bindingEnv+")")
	return f
}

// newClient returns the client of a call on endpoint (a JSON-RPC endpoint:
// an agent's, or the mesh's /a2a): over JSON-RPC, or over the interface of
// --binding that the card of endpoint's agent (the mesh card for /a2a)
// lists, with that interface's URL and tenant.
func (f *commonFlags) newClient(ctx context.Context, endpoint string) (*client.Client, error) {
	var want string
	switch strings.ToLower(strings.TrimSpace(f.binding)) {
	case "", "jsonrpc", "json-rpc":
		return client.New(endpoint, f.clientOptions()...), nil
	case "rest", "http+json", "http":
		want = a2a.BindingHTTPJSON
	case "grpc":
		want = a2a.BindingGRPC
	default: // parse refused it already
		return nil, fmt.Errorf("--binding %q: want jsonrpc, rest or grpc", f.binding)
	}
	cardAt := client.CardURL(strings.TrimSuffix(strings.TrimSuffix(endpoint, "/"), "/a2a"))
	card, err := client.Card(ctx, cardAt, f.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("reading the card that lists the %s interface: %w", want, err)
	}
	cl, err := client.FromCard(card, []string{want}, f.clientOptions()...)
	if err == nil && cl.Binding() != want {
		_ = cl.Close()
		err = client.ErrNoInterface
	}
	if errors.Is(err, client.ErrNoInterface) {
		err = fmt.Errorf("the card at %s lists no %s interface (an edge serves gRPC only with --grpc-listen)", cardAt, want)
	}
	return cl, err
}

// parse parses args, allowing flags after positional arguments ("--" ends
// flags). It returns the positional arguments, and done=true when -h was
// asked for (usage already printed on c.out). A bad flag prints the usage
// on c.errOut and returns a usageError (exit 2).
func (c *cli) parse(f *commonFlags, args []string) (pos []string, done bool, err error) {
	rounds := len(args) + 1 // each round but the last consumes at least one arg
	for i := 0; i < rounds; i++ {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.fs.SetOutput(c.out)
				f.fs.Usage()
				return nil, true, nil
			}
			return nil, false, c.usageErr(f, "%v", err)
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
		switch fl.Name {
		case "agent":
			f.agentSet = true
		case "url":
			f.urlSet = true
		case "api-key":
			f.keySet = true
		}
	})
	if !f.keySet {
		f.apiKey = os.Getenv(apiKeyEnv)
	}
	switch strings.ToLower(strings.TrimSpace(f.binding)) {
	case "", "jsonrpc", "json-rpc", "rest", "http+json", "http", "grpc":
	default:
		return nil, false, c.usageErr(f, "--binding %q: want jsonrpc, rest or grpc", f.binding)
	}
	f.apiKey = strings.TrimSpace(f.apiKey)
	return pos, false, nil
}

// usageErr prints the error and the usage on c.errOut and returns the
// error as a usageError: main exits 2 without printing it again.
func (c *cli) usageErr(f *commonFlags, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	fmt.Fprintf(c.errOut, "a2amesh %s: %v\n\n", f.fs.Name(), err)
	f.fs.SetOutput(c.errOut)
	f.fs.Usage()
	return usageError{err}
}

// clientOptions are the options of every request a command makes: the API
// key, and a transport that notes an HTTP 401 for explain.
func (f *commonFlags) clientOptions() []client.Option {
	opts := []client.Option{client.WithHTTPClient(&http.Client{Transport: &statusNoter{f: f}})}
	if f.apiKey != "" {
		opts = append(opts, client.WithHeader(edge.APIKeyHeader, f.apiKey))
	}
	return opts
}

// statusNoter passes requests on, noting an HTTP 401 answer.
type statusNoter struct{ f *commonFlags }

func (s *statusNoter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		s.f.got401.Store(true)
	}
	return resp, err
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

// taskURL resolves the JSON-RPC endpoint of a call on an existing task
// (get, cancel, follow, reply): as agentURL, except that a bare mesh URL
// without --agent means the mesh endpoint <url>/a2a, where the edge finds a
// task whatever its agent (a task id names one task in the whole mesh).
func taskURL(rawURL, agent string, agentSet bool) (string, error) {
	u, err := parseBase(rawURL)
	if err != nil {
		return "", err
	}
	if u.Path == "" && !agentSet {
		u.Path = "/a2a"
		return u.String(), nil
	}
	return agentURL(rawURL, agent, agentSet)
}

// errInterrupted is returned when the user stops a command (Ctrl-C).
var errInterrupted = errors.New("interrupted")

// explain makes a client error friendlier, keeping it matchable.
func explain(ctx context.Context, err error, endpoint string, f *commonFlags) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if f != nil && f.got401.Load() {
		if f.apiKey == "" {
			return &hintErr{msg: "the mesh at " + endpoint + " requires an API key (HTTP 401)\n  pass --api-key KEY or set " + apiKeyEnv, err: err}
		}
		return &hintErr{msg: "the mesh at " + endpoint + " refused the API key (HTTP 401)\n  check --api-key or " + apiKeyEnv, err: err}
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
	extensions  string
}

func newSendFlags(name, args, desc string) *sendFlags {
	f := &sendFlags{commonFlags: newFlags(name, args, desc, defaultAgent,
		"agent to talk to, at <url>/agents/NAME; with --task and no --agent, the mesh endpoint\n"+
			"<url>/a2a, which finds a task of any agent")}
	f.fs.StringVar(&f.contextID, "context", "", "continue the conversation with this context id (default: a new context)")
	taskHelp := "reply to this task, which must be waiting for input (default: a new task)"
	if name == "stream" {
		taskHelp = "with TEXT, reply to this task, which must be waiting for input; without TEXT,\nfollow it (default: a new task)"
	}
	f.fs.StringVar(&f.taskID, "task", "", taskHelp)
	f.fs.StringVar(&f.extensions, "extensions", "",
		"request these extensions (comma-separated URIs, sent as A2A-Extensions); stderr says\nwhich the answer names as activated (default: none)")
	return f
}

// withExtensions returns ctx requesting --extensions, and the Extensions
// that collect what the answer echoes (nil without the flag).
func (f *sendFlags) withExtensions(ctx context.Context) (context.Context, *client.Extensions) {
	var uris []string
	for _, u := range strings.Split(f.extensions, ",") {
		if u = strings.TrimSpace(u); u != "" {
			uris = append(uris, u)
		}
	}
	if len(uris) == 0 {
		return ctx, nil
	}
	e := &client.Extensions{Requested: uris}
	return client.WithExtensions(ctx, e), e
}

// activated says on stderr which requested extensions the answer named.
func (c *cli) activated(e *client.Extensions) {
	if e == nil {
		return
	}
	act := e.Activated()
	if len(act) == 0 {
		fmt.Fprintln(c.errOut, "extensions activated: none")
		return
	}
	fmt.Fprintln(c.errOut, "extensions activated: "+strings.Join(act, ", "))
}

// taskAgentHelp is --agent's help for the commands on an existing task.
const taskAgentHelp = "the task's agent: call <url>/agents/NAME (default: the mesh endpoint <url>/a2a,\nwhich finds a task of any agent)"

// endpoint is where send and stream post: the agent's endpoint for a new
// task, taskURL's for --task.
func (f *sendFlags) endpoint() (string, error) {
	if f.taskID != "" {
		return taskURL(f.url, f.agent, f.agentSet)
	}
	return agentURL(f.url, f.agent, f.agentSet)
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
	f := newFlags("card", "",
		"Show an agent card: the mesh's, or one agent's with --agent.\n\n"+
			"Without --agent, the card at --url: the mesh's own card for a bare mesh URL\n"+
			"(<url>/.well-known/agent-card.json), which lists every agent as a skill.", "",
		"show this agent's card, <url>/agents/NAME/.well-known/agent-card.json\n(default: the card at --url)")
	extended := f.fs.Bool("extended", false,
		"show the agent's extended card (GetExtendedAgentCard, over --binding), as the\nmesh shows it to --api-key's principal")
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) > 0 {
		return c.usageErr(f, "unexpected argument %q", pos[0])
	}
	if *extended {
		return cliExtendedCard(c, ctx, f)
	}
	u, err := cardURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	if f.json {
		raw, err := client.CardJSON(ctx, u, f.clientOptions()...)
		if err != nil {
			return explain(ctx, err, u, f)
		}
		return writeIndented(c.out, raw)
	}
	card, err := client.Card(ctx, u, f.clientOptions()...)
	if err != nil {
		return explain(ctx, err, u, f)
	}
	printCard(c.out, card)
	return nil
}

// cliExtendedCard prints the extended card of the agent f names.
func cliExtendedCard(c *cli, ctx context.Context, f *commonFlags) error {
	endpoint, err := taskURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	cl, err := f.newClient(ctx, endpoint)
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	defer cl.Close()
	card, err := cl.ExtendedCard(ctx)
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	if f.json {
		raw, err := json.Marshal(card)
		if err != nil {
			return err
		}
		return writeIndented(c.out, raw)
	}
	printCard(c.out, card)
	return nil
}

func cliSend(c *cli, ctx context.Context, args []string) error {
	f := newSendFlags("send", "TEXT...",
		"Send a message to an agent and print the reply.\n\n"+
			"Prints the answer: the task's state, the agent's status message and its\n"+
			"artifacts. \"-\" as TEXT reads the text from stdin. Exits non-zero if the task\n"+
			"failed or was rejected. When the task waits for input, or is left running\n"+
			"(--no-wait), stderr says how to go on.")
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
	endpoint, err := f.endpoint()
	if err != nil {
		return err
	}
	cl, err := f.newClient(ctx, endpoint)
	if err != nil {
		return explain(ctx, err, endpoint, f.commonFlags)
	}
	defer cl.Close()
	sctx, exts := f.withExtensions(ctx)
	res, err := cl.Send(sctx, f.request(text))
	if err != nil {
		return explain(ctx, err, endpoint, f.commonFlags)
	}
	c.activated(exts)
	if f.json {
		if err := writeJSON(c.out, res, true); err != nil {
			return err
		}
	} else {
		printSendResult(c.out, res)
	}
	if t := res.Task; t != nil {
		c.hint(f.commonFlags, t)
		return stateErr(t.Status.State)
	}
	return nil
}

// hint tells, on stderr, how to go on with a task that is not finished.
func (c *cli) hint(f *commonFlags, t *a2a.Task) {
	switch st := t.Status.State; {
	case st.Interrupted():
		fmt.Fprintf(c.errOut, "reply with: %s\n", f.again("send", "--task", t.ID, "TEXT..."))
	case !st.Terminal(): // --no-wait, or the edge's --blocking-timeout passed first
		fmt.Fprintf(c.errOut, "follow with: %s  (or: %s)\n", f.again("stream", "--task", t.ID), f.again("get", t.ID))
	}
}

// again spells the command line that goes on with this command's task:
// a2amesh NAME, the flags that reach the same agent as this run did, then
// rest. --url is repeated when it did not come from the default (the same
// environment is assumed); --agent when it was given; an API key given on
// the command line is shown as the placeholder KEY, not repeated.
func (f *commonFlags) again(name string, rest ...string) string {
	parts := []string{"a2amesh", name}
	if u := strings.TrimSpace(f.url); u != envOr(urlEnv, defaultURL) {
		parts = append(parts, "--url", shellQuote(u))
	}
	if f.agentSet {
		parts = append(parts, "--agent", shellQuote(f.agent))
	}
	if f.keySet {
		parts = append(parts, "--api-key", "KEY")
	}
	if b := strings.TrimSpace(f.binding); b != envOr(bindingEnv, "jsonrpc") {
		parts = append(parts, "--binding", shellQuote(b))
	}
	for _, r := range rest {
		if r != "TEXT..." {
			r = shellQuote(r)
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stateErr returns errTaskFailed for a failed or rejected task.
func stateErr(s a2a.TaskState) error {
	if s == a2a.StateFailed || s == a2a.StateRejected {
		return fmt.Errorf("%w: %s", errTaskFailed, stateName(s))
	}
	return nil
}

func cliStream(c *cli, ctx context.Context, args []string) error {
	f := newSendFlags("stream", "[TEXT...]",
		"Send a message and print events as they arrive, or follow a task.\n\n"+
			"Sends TEXT with SendStreamingMessage and prints each event as it arrives.\n"+
			"With --task and no TEXT, follow an existing task (SubscribeToTask).\n"+
			"--json prints one JSON line per event. Exits non-zero if the task failed\n"+
			"or was rejected. Interrupted (Ctrl-C) while following a task, it prints\n"+
			"how to resume.")
	f.fs.StringVar(&f.lastEventID, "last-event-id", "",
		"when following a task (--task without TEXT), resume after this event id\n(default: from the task's current state)")
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
	endpoint, err := f.endpoint()
	if err != nil {
		return err
	}
	cl, err := f.newClient(ctx, endpoint)
	if err != nil {
		return explain(ctx, err, endpoint, f.commonFlags)
	}
	defer cl.Close()
	var s *client.Stream
	sctx, exts := f.withExtensions(ctx)
	if len(pos) == 0 {
		s, err = cl.Subscribe(sctx, f.taskID, f.lastEventID)
	} else {
		text, terr := c.messageText(pos)
		if terr != nil {
			return terr
		}
		s, err = cl.Stream(sctx, f.request(text))
	}
	if err != nil {
		return explain(ctx, err, endpoint, f.commonFlags)
	}
	c.activated(exts) // a stream's header: what the agent may activate (docs/extensions.md)
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
				fmt.Fprintf(c.errOut, "stream ended before the task finished%s; follow with: %s\n", last, f.again("stream", "--task", t.ID))
			}
			return stateErr(p.state)
		}
		if err != nil {
			p.end()
			if ctx.Err() != nil {
				if p.taskID != "" && s.LastEventID() != "" {
					fmt.Fprintf(c.errOut, "resume with: %s\n", f.again("stream", "--task", p.taskID, "--last-event-id", s.LastEventID()))
				}
				return errInterrupted
			}
			return explain(ctx, err, endpoint, f.commonFlags)
		}
		if err := p.event(ev.Response); err != nil {
			return err
		}
		if p.finished {
			p.end()
			if t := p.task(); t != nil && p.state.Interrupted() {
				c.hint(f.commonFlags, t)
			}
			return stateErr(p.state)
		}
	}
}

func cliGet(c *cli, ctx context.Context, args []string) error {
	f := newFlags("get", "TASK_ID",
		"Show a task: its state, status message and artifacts.\n\n"+
			"With --history N, also its last N history messages. Without --agent the task\n"+
			"is looked up at the mesh endpoint <url>/a2a, whatever agent it belongs to.", "", taskAgentHelp)
	history := f.fs.Int("history", -1,
		"print the task's last N history messages; 0: none; -1: leave history out of\nthe request and the output")
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usageErr(f, "want exactly one TASK_ID")
	}
	if *history < -1 {
		return c.usageErr(f, "--history must be -1 (no history), 0 or more")
	}
	endpoint, err := taskURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	var hl *int
	if *history >= 0 {
		hl = history
	}
	cl, err := f.newClient(ctx, endpoint)
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	defer cl.Close()
	t, err := cl.GetTask(ctx, pos[0], hl)
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	if f.json {
		return writeJSON(c.out, t, true)
	}
	printTask(c.out, t, hl != nil)
	return nil
}

func cliCancel(c *cli, ctx context.Context, args []string) error {
	f := newFlags("cancel", "TASK_ID",
		"Cancel a task and print the state it was left in.\n\n"+
			"Without --agent the task is looked up at the mesh endpoint <url>/a2a, whatever\n"+
			"agent it belongs to.", "", taskAgentHelp)
	pos, done, err := c.parse(f, args)
	if done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return c.usageErr(f, "want exactly one TASK_ID")
	}
	endpoint, err := taskURL(f.url, f.agent, f.agentSet)
	if err != nil {
		return err
	}
	cl, err := f.newClient(ctx, endpoint)
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	defer cl.Close()
	t, err := cl.Cancel(ctx, pos[0])
	if err != nil {
		return explain(ctx, err, endpoint, f)
	}
	if f.json {
		return writeJSON(c.out, t, true)
	}
	printTask(c.out, t, false)
	return nil
}
