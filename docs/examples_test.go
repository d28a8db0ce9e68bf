// Package docs holds the project's reference pages. Its test runs every
// shell example of the README and of these pages against a real mesh, so
// an example that stops working fails the suite.
package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testbin"
)

// How the examples run.
//
// Each ```sh block of README.md and docs/*.md is a session: its commands
// run in order, as a reader pastes them, with bash. A block that starts
// a mesh (a2amesh dev, nats, edge, worker; the greeter example) runs
// those in the background on free loopback ports and stops them at the
// block's end; a block that starts nothing talks to a shared dev mesh.
// What a reader would replace is replaced: TASK_ID and CONTEXT_ID by the
// ids the previous call returned, LAST_EVENT_ID by the id of the second
// event of the previous stream (a connection dropped after two events),
// ports and data directories by the test's own.
//
// Every command is checked: its exit status and, for a JSON-RPC call,
// that the answer has a result and no error, or the events of a stream
// parse and carry no error. Where the text says what a command does, a
// check in the checks table below says the same. A command that cannot
// run here (Docker, the conformance kit, this very suite) is listed in
// notRun with the reason, and the test fails when a check or a notRun
// entry no longer matches any example, so the table cannot go stale.

var (
	repoRoot string // the repository, absolute
	bin      string // the a2amesh binary built for the test
	greeter  string // the examples/greeter binary
)

func TestMain(m *testing.M) {
	// dev's default gRPC listener is off for the processes the examples
	// start: which of them got the port would vary from run to run.
	os.Setenv("A2AMESH_GRPC_LISTEN", "off")
	code := func() int {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		repoRoot = filepath.Dir(wd)
		dir, err := os.MkdirTemp("", "a2amesh-docs")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "a2amesh")
		greeter = filepath.Join(dir, "greeter")
		for out, pkg := range map[string]string{bin: "./cmd/a2amesh", greeter: "./examples/greeter"} {
			if err := testbin.BuildTo(out, pkg, false); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// block is one ```sh block; cmds are its commands in order.
type block struct {
	file string
	line int
	cmds []command
}

// command is one shell command of a block (continuation lines and quoted
// newlines joined), without its trailing comment.
type command struct {
	text    string
	comment string
	line    int
}

func (c command) String() string { return fmt.Sprintf("line %d: %s", c.line, oneLine(c.text)) }

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 140 {
		s = s[:140] + "…"
	}
	return s
}

var fence = regexp.MustCompile("(?s)```(sh|bash|shell)\n(.*?)```")

// extract returns the shell blocks of a markdown file.
func extract(t *testing.T, file string) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	for _, m := range fence.FindAllSubmatchIndex(b, -1) {
		line := 1 + bytes.Count(b[:m[4]], []byte("\n"))
		blocks = append(blocks, block{file: file, line: line, cmds: splitCommands(string(b[m[4]:m[5]]), line)})
	}
	return blocks
}

// splitCommands splits shell text into commands: a newline outside
// quotes ends one, unless escaped; # at the start of a word outside
// quotes starts a comment.
func splitCommands(s string, firstLine int) []command {
	var (
		out            []command
		cur, comment   strings.Builder
		quote          byte
		line, curLine  = firstLine, firstLine
		inComment, any bool
	)
	flush := func() {
		if text := strings.TrimSpace(cur.String()); text != "" {
			out = append(out, command{text: text, comment: strings.TrimSpace(comment.String()), line: curLine})
		}
		cur.Reset()
		comment.Reset()
		any = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			line++
		}
		switch {
		case inComment:
			if c == '\n' {
				inComment = false
				flush()
				curLine = line
			} else {
				comment.WriteByte(c)
			}
		case quote != 0:
			cur.WriteByte(c)
			if c == quote {
				quote = 0
			}
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			cur.WriteByte(' ')
			i++
			line++
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
			any = true
		case c == '#' && (cur.Len() == 0 || strings.ContainsRune(" \t", rune(cur.String()[cur.Len()-1]))):
			inComment = true
		case c == '\n':
			flush()
			curLine = line
		default:
			if !any && (c == ' ' || c == '\t') {
				continue
			}
			if !any {
				curLine = line
			}
			cur.WriteByte(c)
			any = true
		}
	}
	flush()
	return out
}

// check is what the text beside an example says it does.
type check struct {
	file  string         // the page
	match *regexp.Regexp // matched against the command as written
	fn    func(t *testing.T, s *session, r result)
	used  bool
}

// result is what a command did.
type result struct {
	out    string         // stdout
	errOut string         // stderr
	rpc    map[string]any // a JSON-RPC answer, when there was one
	events []sseEvent     // a stream's events, when there were some
}

type sseEvent struct {
	id   string
	data map[string]any
}

// notRun lists the examples that cannot run inside the test suite, and why.
var notRun = []struct {
	match  *regexp.Regexp
	reason string
	used   bool
}{
	{match: regexp.MustCompile(`^bash \.ci/run`), reason: "this is the suite itself"},
	{match: regexp.MustCompile(`^docker `), reason: "needs Docker; cmd/a2amesh/deploy_test.go checks deploy/ and integration/jaeger_test.go runs the traced path against a real Jaeger"},
	{match: regexp.MustCompile(`a2amesh trace `), reason: "needs the Jaeger started with Docker above; integration/jaeger_test.go runs a2amesh's trace path against a real Jaeger"},
	{match: regexp.MustCompile(`^\./run_tck\.py`), reason: "the A2A TCK is a separate Python project; integration/tck_test.go runs its checks"},
	{match: regexp.MustCompile(`--proxy https://currency\.internal\.example\.com`), reason: "needs a remote agent; integration/proxy_roles_test.go runs a proxy worker process against a local a2a-go server"},
}

func TestExamples(t *testing.T) {
	files := []string{"README.md"}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", filepath.Base(p)))
	}
	sort.Strings(files[1:])

	shared := &mesh{}
	defer shared.stop()
	checks := examplesChecks()
	total := 0
	for _, f := range files {
		for _, b := range extract(t, f) {
			total += len(b.cmds)
			t.Run(fmt.Sprintf("%s:%d", f, b.line), func(t *testing.T) {
				runBlock(t, b, shared, checks)
			})
		}
	}
	if total < 40 {
		t.Errorf("found only %d shell examples: is the extraction broken?", total)
	}
	for _, c := range checks {
		if !c.used {
			t.Errorf("check %s %q matches no example: update the check or the docs", c.file, c.match)
		}
	}
	for _, n := range notRun {
		if !n.used {
			t.Errorf("notRun %q matches no example", n.match)
		}
	}
}

// mesh is the set of processes a session started.
type mesh struct {
	mu      sync.Mutex
	procs   []*proc
	edge    string // http://127.0.0.1:port
	dir     string
	started bool
}

type proc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
	mu   *sync.Mutex
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// lockedWriter serializes writes of a process's stdout and stderr.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (m *mesh) stop() {
	m.mu.Lock()
	procs := m.procs
	m.procs = nil
	m.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if m.dir != "" {
		os.RemoveAll(m.dir)
	}
}

// ensureShared starts the shared dev mesh once.
func (m *mesh) ensureShared(t *testing.T) {
	t.Helper()
	if m.started {
		return
	}
	m.started = true
	dir, err := os.MkdirTemp("", "a2amesh-docs-dev")
	if err != nil {
		t.Fatal(err)
	}
	m.dir = dir
	port := freePort(t)
	m.edge = "http://127.0.0.1:" + port
	// It serves every binding: gRPC too, on a port of its own (examples
	// reach it through the card, as `a2amesh send --binding grpc` does).
	p := m.start(t, dir, fmt.Sprintf("exec %s dev --listen 127.0.0.1:%s --grpc-listen 127.0.0.1:%s --data %s",
		bin, port, freePort(t), filepath.Join(dir, "data")), nil)
	waitHealthy(t, m.edge, p)
}

func (m *mesh) start(t *testing.T, dir, script string, env []string) *proc {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{cmd: cmd, out: &bytes.Buffer{}, done: make(chan struct{}), mu: &sync.Mutex{}}
	w := lockedWriter{mu: p.mu, w: p.out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	m.mu.Lock()
	m.procs = append(m.procs, p)
	m.mu.Unlock()
	return p
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitHealthy waits up to 30 s for an edge's /healthz to answer 200.
func waitHealthy(t *testing.T, edge string, p *proc) {
	t.Helper()
	waitFor(t, 30*time.Second, p, "edge "+edge+" ready", func() bool {
		resp, err := http.Get(edge + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitAgent waits up to 30 s for an agent to be listed at an edge.
func waitAgent(t *testing.T, edge, agent string, p *proc) {
	t.Helper()
	waitFor(t, 30*time.Second, p, "agent "+agent+" listed", func() bool {
		return contains(listAgents(edge), agent)
	})
}

func listAgents(edge string) []string {
	resp, err := http.Get(edge + "/agents")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Agents []struct {
			Name string `json:"name"`
		} `json:"agents"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	var names []string
	for _, a := range v.Agents {
		names = append(names, a.Name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, d time.Duration, p *proc, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		select {
		case <-p.done:
			t.Fatalf("process exited before %s:\n%s", what, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v:\n%s", what, d, p.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// session is the state of one block as it runs.
type session struct {
	file                         string
	dir                          string // working directory of the block's commands
	own                          *mesh  // processes the block started
	edge                         string // the edge the block's calls go to
	edgePort, natsPort, pushPort string
	vars                         map[string]string
	push                         *pushReceiver
}

var (
	subcommand = regexp.MustCompile(`^(?:[A-Z_]+=\S+ )*(?:go run \./cmd/a2amesh|a2amesh) (dev|nats|edge|worker)\b`)
	greeterCmd = regexp.MustCompile(`^go run \./examples/greeter\b`)
	startsMesh = func(c command) bool { return subcommand.MatchString(c.text) || greeterCmd.MatchString(c.text) }
)

func runBlock(t *testing.T, b block, shared *mesh, checks []*check) {
	s := &session{file: b.file, own: &mesh{}, vars: map[string]string{}}
	defer s.own.stop()
	s.dir = t.TempDir()
	own := false
	for _, c := range b.cmds {
		if startsMesh(c) {
			own = true
		}
	}
	if own {
		s.edgePort, s.natsPort, s.pushPort = freePort(t), freePort(t), freePort(t)
		s.edge = "http://127.0.0.1:" + s.edgePort
		if strings.Contains(strings.Join(cmdTexts(b.cmds), "\n"), "127.0.0.1:9000") {
			s.push = startPushReceiver(t, s.pushPort)
		}
	} else {
		shared.ensureShared(t)
		s.edge = shared.edge
		s.edgePort = strings.TrimPrefix(shared.edge, "http://127.0.0.1:")
	}
	for _, c := range b.cmds {
		if n := skipped(c); n != "" {
			t.Logf("not run (%s): %s", n, c)
			continue
		}
		if !runCommand(t, s, c, checks) {
			return
		}
	}
}

func cmdTexts(cs []command) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.text)
	}
	return out
}

func skipped(c command) string {
	for i := range notRun {
		if notRun[i].match.MatchString(c.text) {
			notRun[i].used = true
			return notRun[i].reason
		}
	}
	return ""
}

var (
	uuidRe   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	placeRe  = regexp.MustCompile(`\b(TASK_ID|CONTEXT_ID|LAST_EVENT_ID)\b`)
	localURL = regexp.MustCompile(`\b(?:localhost|127\.0\.0\.1):8080\b`)
)

// rewrite turns a command as written into one that runs here.
func (s *session) rewrite(t *testing.T, c command) string {
	text := c.text
	text = placeRe.ReplaceAllStringFunc(text, func(name string) string {
		v, ok := s.vars[name]
		if !ok {
			t.Fatalf("%s uses %s, but no earlier command of the block gave one", c, name)
		}
		return v
	})
	text = localURL.ReplaceAllString(text, "127.0.0.1:"+s.edgePort)
	if s.natsPort != "" {
		text = strings.ReplaceAll(text, "127.0.0.1:4222", "127.0.0.1:"+s.natsPort)
	}
	if s.pushPort != "" {
		text = strings.ReplaceAll(text, "127.0.0.1:9000", "127.0.0.1:"+s.pushPort)
	}
	for _, d := range []string{"/var/lib/a2amesh", "/tmp/a2amesh-nats"} {
		text = strings.ReplaceAll(text, d, filepath.Join(s.dir, "nats-data"))
	}
	text = strings.Replace(text, "go run ./cmd/a2amesh", bin, 1)
	text = strings.Replace(text, "go run ./examples/greeter", greeter, 1)
	if strings.HasPrefix(text, "a2amesh ") {
		text = bin + text[len("a2amesh"):]
	}
	if m := subcommand.FindStringSubmatch(c.text); m != nil && m[1] == "dev" {
		if !strings.Contains(text, "--listen ") {
			text += " --listen 127.0.0.1:" + s.edgePort
		}
		text += " --data " + filepath.Join(s.dir, "dev-data")
	}
	return text
}

// runCommand runs one command and checks it; false stops the block.
func runCommand(t *testing.T, s *session, c command, checks []*check) bool {
	t.Helper()
	text := s.rewrite(t, c)
	env := []string{"A2AMESH_URL=" + s.edge, "NO_COLOR=1"}
	if m := subcommand.FindStringSubmatch(c.text); m != nil || greeterCmd.MatchString(c.text) {
		script := "exec " + text
		if regexp.MustCompile(`^[A-Z_]+=`).MatchString(text) {
			script = text // an environment prefix: bash runs it as a child, stopped with its group
		}
		p := s.own.start(t, s.dir, script, env)
		role := "greeter"
		if m != nil {
			role = m[1]
		}
		switch role {
		case "dev", "edge":
			waitHealthy(t, s.edge, p)
		case "nats":
			waitFor(t, 30*time.Second, p, "NATS on port "+s.natsPort, func() bool {
				conn, err := net.DialTimeout("tcp", "127.0.0.1:"+s.natsPort, time.Second)
				if err == nil {
					conn.Close()
				}
				return err == nil
			})
		case "worker":
			agent := regexp.MustCompile(`--agent (\S+)`).FindStringSubmatch(c.text)
			if agent == nil {
				t.Fatalf("%s: a worker example without --agent", c)
			}
			waitAgent(t, s.edge, agent[1], p)
		case "greeter":
			waitAgent(t, s.edge, "greeter", p)
		}
		applyChecks(t, s, c, checks, result{})
		return !t.Failed()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = s.dir
	if strings.HasPrefix(c.text, "go ") {
		cmd.Dir = repoRoot
		env = append(env, "GOBIN="+filepath.Join(s.dir, "gobin"))
	}
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{out: stdout.String(), errOut: stderr.String()}
	if err != nil && !expectsFailure(c) {
		t.Errorf("%s\nran: %s\nfailed: %v\nstdout: %s\nstderr: %s", c, oneLine(text), err, r.out, r.errOut)
		return false
	}
	switch {
	case strings.HasPrefix(c.text, "curl ") && restCall.MatchString(c.text):
		parseREST(t, c, &r)
		s.rememberREST(c, r)
	case strings.HasPrefix(c.text, "curl ") && strings.Contains(c.text, " -d "):
		parseRPC(t, c, &r)
		s.remember(c, r)
	}
	if strings.HasPrefix(c.text, "a2amesh send") || strings.HasPrefix(c.text, "a2amesh stream") {
		if id := uuidRe.FindString(r.out + r.errOut); id != "" {
			s.vars["TASK_ID"] = id
		}
	}
	applyChecks(t, s, c, checks, r)
	return !t.Failed()
}

func expectsFailure(command) bool { return false }

// wantError is how an example says it shows an error: a comment
// "→ error -32001".
var wantError = regexp.MustCompile(`→ error (-\d+)`)

// parseRPC reads a JSON-RPC answer or an SSE stream. It fails the test on
// a JSON-RPC error, unless the example's comment says it shows that error.
func parseRPC(t *testing.T, c command, r *result) {
	t.Helper()
	body := strings.TrimSpace(r.out)
	if strings.HasPrefix(body, "{") {
		if err := json.Unmarshal([]byte(body), &r.rpc); err != nil {
			t.Fatalf("%s: answer is not JSON: %v\n%s", c, err, body)
		}
		if want := wantError.FindStringSubmatch(c.comment); want != nil {
			e, _ := r.rpc["error"].(map[string]any)
			if code, _ := e["code"].(float64); fmt.Sprint(int(code)) != want[1] {
				t.Fatalf("%s: the text says error %s, the answer is %s", c, want[1], body)
			}
			if msg, _ := e["message"].(string); msg == "" {
				t.Fatalf("%s: an error without a message: %s", c, body)
			}
			return
		}
		if e, ok := r.rpc["error"]; ok {
			t.Fatalf("%s: JSON-RPC error %v", c, e)
		}
		if _, ok := r.rpc["result"]; !ok {
			t.Fatalf("%s: no result in %s", c, body)
		}
		return
	}
	readEvents(t, c, r, "JSON-RPC error event")
	if len(r.events) == 0 {
		t.Fatalf("%s: neither a JSON-RPC answer nor SSE events:\n%s", c, r.out)
	}
}

// restCall matches a curl of the HTTP+JSON binding: a URL with one of its
// routes (message:send, message:stream, tasks, extendedAgentCard).
var restCall = regexp.MustCompile(`[0-9a-z]/(?:[a-z0-9_-]+/)*(?:message:(?:send|stream)|tasks\b|extendedAgentCard)`)

// wantStatus is how an HTTP+JSON example says it shows an error: a
// comment "→ HTTP 404 TASK_NOT_FOUND" (status and ErrorInfo reason).
var wantStatus = regexp.MustCompile(`→ HTTP (\d+) ([A-Z_]+)`)

// parseREST reads an HTTP+JSON answer (a JSON object; an error is a
// google.rpc.Status) or its SSE stream (events are StreamResponse JSON).
// It fails the test on an error, unless the example's comment says it
// shows that error.
func parseREST(t *testing.T, c command, r *result) {
	t.Helper()
	body := strings.TrimSpace(r.out)
	if strings.HasPrefix(body, "{") {
		if err := json.Unmarshal([]byte(body), &r.rpc); err != nil {
			t.Fatalf("%s: answer is not JSON: %v\n%s", c, err, body)
		}
		e, isErr := r.rpc["error"].(map[string]any)
		want := wantStatus.FindStringSubmatch(c.comment)
		switch {
		case want != nil && !isErr:
			t.Fatalf("%s: the text says HTTP %s, the answer is %s", c, want[1], body)
		case want != nil:
			code, _ := e["code"].(float64)
			reason := ""
			if ds, _ := e["details"].([]any); len(ds) > 0 {
				d, _ := ds[0].(map[string]any)
				reason, _ = d["reason"].(string)
			}
			if fmt.Sprint(int(code)) != want[1] || reason != want[2] {
				t.Fatalf("%s: the text says HTTP %s %s, the answer is %s", c, want[1], want[2], body)
			}
		case isErr:
			t.Fatalf("%s: HTTP+JSON error %v", c, e)
		}
		return
	}
	readEvents(t, c, r, "error event")
	if len(r.events) == 0 {
		t.Fatalf("%s: neither a JSON answer nor SSE events:\n%s", c, r.out)
	}
}

// readEvents reads r.out as SSE into r.events (id and JSON data of each
// event); an event whose data has an "error" fails the test, named what.
func readEvents(t *testing.T, c command, r *result, what string) {
	t.Helper()
	var ev sseEvent
	flush := func() {
		if ev.data != nil {
			if e, ok := ev.data["error"]; ok {
				t.Fatalf("%s: %s %v", c, what, e)
			}
			r.events = append(r.events, ev)
		}
		ev = sseEvent{}
	}
	sc := bufio.NewScanner(strings.NewReader(r.out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			if err := json.Unmarshal([]byte(strings.TrimSpace(line[5:])), &ev.data); err != nil {
				t.Fatalf("%s: event data is not JSON: %v\n%s", c, err, line)
			}
		case line == "":
			flush()
		}
	}
	flush()
}

// rememberREST keeps the ids an HTTP+JSON send or stream returned: its
// answer and events are the results themselves, without an envelope.
func (s *session) rememberREST(c command, r result) {
	if !strings.Contains(c.text, "/message:") {
		return
	}
	var first map[string]any
	if len(r.events) > 0 {
		first = r.events[0].data
	}
	s.keepIDs(r.rpc, first, r.events)
}

// remember keeps the ids a later command of the block stands for.
func (s *session) remember(c command, r result) {
	if !regexp.MustCompile(`"method":"(SendMessage|SendStreamingMessage|message/send|message/stream)"`).MatchString(c.text) {
		return
	}
	var answer, first map[string]any
	if r.rpc != nil {
		answer, _ = r.rpc["result"].(map[string]any)
	}
	if len(r.events) > 0 {
		first, _ = r.events[0].data["result"].(map[string]any)
	}
	s.keepIDs(answer, first, r.events)
}

// keepIDs keeps the task and context ids of a send's result (answer, else
// the stream's first event) and the id of the stream's second event.
func (s *session) keepIDs(answer, first map[string]any, events []sseEvent) {
	var task map[string]any
	if answer != nil {
		task = taskOf(answer)
	} else if first != nil {
		task = taskOf(first)
	}
	if task != nil {
		if id, ok := task["id"].(string); ok {
			s.vars["TASK_ID"] = id
		}
		if id, ok := task["contextId"].(string); ok {
			s.vars["CONTEXT_ID"] = id
		}
	}
	if len(events) >= 2 {
		s.vars["LAST_EVENT_ID"] = events[1].id
	}
}

// taskOf finds the task in a result: 1.0 {"task":{…}}, 0.3 {"kind":"task",…}.
func taskOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return nil
	}
	if t, ok := m["task"].(map[string]any); ok {
		return t
	}
	if _, ok := m["status"]; ok {
		return m
	}
	return nil
}

func applyChecks(t *testing.T, s *session, c command, checks []*check, r result) {
	t.Helper()
	for _, ck := range checks {
		if ck.file == s.file && ck.match.MatchString(c.text) {
			ck.used = true
			ck.fn(t, s, r)
			if t.Failed() {
				t.Logf("while checking %s", c)
				return
			}
		}
	}
}

// pushReceiver is the webhook the push example points at.
type pushReceiver struct {
	mu         sync.Mutex
	deliveries []delivery
}

type delivery struct {
	token, authorization string
	body                 []byte
}

func startPushReceiver(t *testing.T, port string) *pushReceiver {
	t.Helper()
	p := &pushReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		p.mu.Lock()
		p.deliveries = append(p.deliveries, delivery{r.Header.Get("X-A2A-Notification-Token"), r.Header.Get("Authorization"), body})
		p.mu.Unlock()
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

// wait waits up to 20 s for a delivery with token whose body carries the
// completed state; authorization, when set, is the header every delivery
// with that token must carry.
func (p *pushReceiver) wait(t *testing.T, token, authorization string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p.mu.Lock()
		ds := append([]delivery(nil), p.deliveries...)
		p.mu.Unlock()
		n := 0
		for _, d := range ds {
			if d.token != token {
				continue
			}
			n++
			if authorization != "" && d.authorization != authorization {
				t.Fatalf("a delivery with token %s carried Authorization %q, want %q", token, d.authorization, authorization)
			}
			if bytes.Contains(d.body, []byte("COMPLETED")) || bytes.Contains(d.body, []byte(`"completed"`)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d deliveries with token %s and no completed status in 20s", n, token)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEveryFlagDocumented: every flag of dev is in the configuration
// table, and every flag of the other roles is named somewhere in the docs.
func TestEveryFlagDocumented(t *testing.T) {
	var all strings.Builder
	for _, f := range append([]string{"README.md"}, mustGlob(t, filepath.Join(repoRoot, "docs", "*.md"))...) {
		if !filepath.IsAbs(f) {
			f = filepath.Join(repoRoot, f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	conf, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	for _, role := range []string{"dev", "edge", "worker", "nats"} {
		out, err := exec.Command(bin, role, "-h").Output()
		if err != nil {
			t.Fatalf("%s -h: %v", role, err)
		}
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			named := regexp.MustCompile(`--` + m[1] + `([^a-z0-9-]|$)`)
			where, text := "the docs", all.String()
			if role == "dev" { // a row of the table
				where, text = "docs/configuration.md", string(conf)
				named = regexp.MustCompile("(?m)^\\| `--" + m[1] + "`")
			}
			if !named.MatchString(text) {
				t.Errorf("%s --%s is not in %s", role, m[1], where)
			}
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
