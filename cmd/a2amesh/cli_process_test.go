package main

// Tests that run the a2amesh binary: exit codes, what goes to stdout and
// stderr, every command's -h, and the hints the client commands print,
// followed literally against a dev mesh.

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/testbin"
	"github.com/a2amesh/a2amesh/mesh"
)

// buildCLI builds this command without the race detector (the CLI tests
// run it many times).
func buildCLI(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./cmd/a2amesh", false)
}

// ran is what one run of the binary did.
type ran struct {
	stdout, stderr string
	code           int
}

// cliEnv is the test's environment without the client commands' own
// variables, plus extra ("KEY=value").
func cliEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, k := range []string{urlEnv, apiKeyEnv, jaegerEnv} {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	})
	return append(env, extra...)
}

// runBin runs bin with args in env and waits (at most 30 s) for its end.
func runBin(t *testing.T, bin string, env []string, args ...string) ran {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := ran{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	require.NoError(t, ctx.Err(), "a2amesh %v did not finish in 30 s; stderr: %s", args, r.stderr)
	return r
}

// hintAfter returns the command line stderr gives after label (e.g.
// "reply with: "), split into arguments with "a2amesh" dropped; TEXT...
// stands for text.
func hintAfter(t *testing.T, stderr, label, text string) []string {
	t.Helper()
	i := strings.Index(stderr, label)
	require.GreaterOrEqual(t, i, 0, "no %q in stderr: %s", label, stderr)
	line, _, _ := strings.Cut(stderr[i+len(label):], "\n")
	line, _, _ = strings.Cut(line, "  (or: ")
	args := strings.Fields(line)
	require.NotEmpty(t, args)
	require.Equal(t, "a2amesh", args[0], line)
	for j, a := range args {
		if a == "TEXT..." {
			args[j] = text
		}
	}
	return args[1:]
}

var taskLine = regexp.MustCompile(`(?m)^task +(\S+)$`)

func taskIDIn(t *testing.T, stdout string) string {
	t.Helper()
	m := taskLine.FindStringSubmatch(stdout)
	require.NotNil(t, m, "no task line in: %s", stdout)
	return m[1]
}

func startDevMesh(t *testing.T, auth *edge.Auth) *mesh.Mesh {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := mesh.Start(ctx, mesh.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Edge: edge.Config{Auth: auth}})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m
}

// TestCLIProcess runs the binary: help, version, unknown commands, every
// command's -h, the hints followed literally, and --api-key.
func TestCLIProcess(t *testing.T) {
	bin := buildCLI(t)
	env := cliEnv()

	t.Run("help", func(t *testing.T) {
		for _, arg := range []string{"--help", "-h", "help", "-help"} {
			r := runBin(t, bin, env, arg)
			assert.Equal(t, 0, r.code, arg)
			assert.Empty(t, r.stderr, arg)
			assert.Contains(t, r.stdout, "usage: a2amesh <command> [flags] [arguments]", arg)
			for name := range commands {
				assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(name)+` +\S`, r.stdout, "%s lists %s", arg, name)
			}
		}
		// help COMMAND is COMMAND -h.
		r := runBin(t, bin, env, "help", "get")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, runBin(t, bin, env, "get", "-h").stdout, r.stdout)
		r = runBin(t, bin, env, "help", "bench", "scale")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "usage: a2amesh bench scale [flags]")
	})

	t.Run("version", func(t *testing.T) {
		bi, err := buildinfo.ReadFile(bin)
		require.NoError(t, err)
		for _, arg := range []string{"version", "--version", "-version"} {
			r := runBin(t, bin, env, arg)
			assert.Equal(t, 0, r.code, arg)
			assert.Empty(t, r.stderr, arg)
			assert.Equal(t, versionOf(bi)+"\n", r.stdout, arg)
			assert.True(t, strings.HasPrefix(r.stdout, "a2amesh "), r.stdout)
			assert.Contains(t, r.stdout, bi.GoVersion)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		for _, args := range [][]string{{"no-such-command"}, {"help", "no-such-command"}} {
			r := runBin(t, bin, env, args...)
			assert.Equal(t, 2, r.code, args)
			assert.Empty(t, r.stdout, args)
			assert.Contains(t, r.stderr, `unknown command "no-such-command"`, args)
			assert.Contains(t, r.stderr, "usage: a2amesh <command>", args)
		}
	})

	t.Run("every command -h", func(t *testing.T) {
		names := []string{"bench scale", "bench registry", "bench chaos"}
		for name := range commands {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			r := runBin(t, bin, env, append(strings.Fields(name), "-h")...)
			// The roles' flags (roles.go, dev.go, edgeflags.go) are
			// another file's business: their layout is checked, not
			// the wording of each flag.
			role := slices.Contains([]string{"nats", "edge", "worker", "dev"}, name)
			checkHelp(t, name, r, !role)
		}
	})

	t.Run("usage errors exit 2", func(t *testing.T) {
		for _, tc := range []struct {
			cmd  string
			args []string
		}{
			{"send", nil}, {"get", nil}, {"get", []string{"a", "b"}}, {"cancel", nil}, {"stream", nil},
			{"card", []string{"x"}}, {"send", []string{"--no-such-flag", "x"}}, {"get", []string{"--history", "-2", "x"}},
			{"trace", nil}, {"trace", []string{"a", "b"}}, {"bench", []string{"--no-such-flag"}},
			{"bench scale", []string{"extra"}}, {"bench registry", []string{"--rounds", "x"}}, {"bench chaos", []string{"--seed", "x"}},
		} {
			r := runBin(t, bin, env, append(strings.Fields(tc.cmd), tc.args...)...)
			assert.Equal(t, 2, r.code, "%s %v: %s", tc.cmd, tc.args, r.stderr)
			assert.Empty(t, r.stdout, "%s %v", tc.cmd, tc.args)
			assert.True(t, strings.HasPrefix(r.stderr, "a2amesh "+tc.cmd+": "), "%s %v: the error first: %s", tc.cmd, tc.args, r.stderr)
			assert.Contains(t, r.stderr, "\nusage: a2amesh "+tc.cmd+" [flags]", "%s %v", tc.cmd, tc.args)
		}
	})

	t.Run("hints work when followed", func(t *testing.T) {
		m := startDevMesh(t, nil)
		menv := cliEnv(urlEnv + "=" + m.URL())

		// ask asks for a name: the reply hint must reach ask's task.
		r := runBin(t, bin, menv, "send", "--agent", "ask", "hi")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "input-required")
		askTask := taskIDIn(t, r.stdout)
		reply := hintAfter(t, r.stderr, "reply with: ", "Alice")
		r = runBin(t, bin, menv, reply...)
		require.Equal(t, 0, r.code, "%v: %s", reply, r.stderr)
		assert.Contains(t, r.stdout, "Hello, Alice!")
		assert.Contains(t, r.stdout, "completed")

		// get TASK_ID as the README shows it: no --agent, a task of ask.
		r = runBin(t, bin, menv, "get", askTask)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "task     "+askTask)
		assert.Contains(t, r.stdout, "completed: Hello, Alice!")
		r = runBin(t, bin, menv, "get", "--history", "4", askTask)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "history  agent: What is your name?")

		// With --url on the command line (no environment), the hint
		// carries it.
		r = runBin(t, bin, env, "stream", "--url", m.URL(), "--agent", "ask", "hi")
		require.Equal(t, 0, r.code, r.stderr)
		reply = hintAfter(t, r.stderr, "reply with: ", "Bob")
		assert.Contains(t, reply, m.URL())
		r = runBin(t, bin, env, reply...)
		require.Equal(t, 0, r.code, "%v: %s", reply, r.stderr)
		assert.Contains(t, r.stdout, "Hello, Bob!")

		// slow, left running: both follow hints reach its task. It runs
		// 3 s, longer than starting the follow command takes on a loaded
		// machine (at 300 ms the task sometimes ended first in CI, and a
		// stream of an ended task is -32004).
		r = runBin(t, bin, menv, "send", "--agent", "slow", "--no-wait", "chunks=3 delay=1s")
		require.Equal(t, 0, r.code, r.stderr)
		slowTask := taskIDIn(t, r.stdout)
		follow := hintAfter(t, r.stderr, "follow with: ", "")
		_, orGet, ok := strings.Cut(r.stderr, "(or: ")
		require.True(t, ok, r.stderr)
		get := hintAfter(t, "x"+orGet, "x", "")
		get[len(get)-1] = strings.TrimSuffix(get[len(get)-1], ")")
		r = runBin(t, bin, menv, follow...)
		require.Equal(t, 0, r.code, "%v: %s", follow, r.stderr)
		assert.Contains(t, r.stdout, "status   completed")
		r = runBin(t, bin, menv, get...)
		require.Equal(t, 0, r.code, "%v: %s", get, r.stderr)
		assert.Contains(t, r.stdout, "task     "+slowTask)
		r = runBin(t, bin, menv, "get", slowTask)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "status   completed")

		// cancel and stream --task without --agent reach slow's task too.
		r = runBin(t, bin, menv, "send", "--agent", "slow", "--no-wait", "chunks=100 delay=100ms")
		require.Equal(t, 0, r.code, r.stderr)
		long := taskIDIn(t, r.stdout)
		r = runBin(t, bin, menv, "cancel", long)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "canceled")

		// Interrupted while following: the resume hint, run, finishes.
		r = runBin(t, bin, menv, "send", "--agent", "slow", "--no-wait", "chunks=12 delay=200ms")
		require.Equal(t, 0, r.code, r.stderr)
		resumed := taskIDIn(t, r.stdout)
		stderr := interruptAfterChunk(t, bin, menv, "stream", "--task", resumed)
		resume := hintAfter(t, stderr, "resume with: ", "")
		assert.Contains(t, resume, "--last-event-id")
		r = runBin(t, bin, menv, resume...)
		require.Equal(t, 0, r.code, "%v: %s", resume, r.stderr)
		assert.Contains(t, r.stdout, "status   completed")
	})

	t.Run("api key", func(t *testing.T) {
		const key = "alice-secret-0123456789"
		auth, err := edge.NewAuth(map[string][]string{"alice": {key}})
		require.NoError(t, err)
		m := startDevMesh(t, auth)
		menv := cliEnv(urlEnv + "=" + m.URL())
		keyEnv := cliEnv(urlEnv+"="+m.URL(), apiKeyEnv+"="+key)

		// Without a key: a sentence, not a JSON document.
		for _, args := range [][]string{{"send", "hi"}, {"stream", "hi"}, {"get", "some-task"}, {"cancel", "some-task"}, {"card", "--agent", "echo", "--extended"}} {
			r := runBin(t, bin, menv, args...)
			assert.Equal(t, 1, r.code, args)
			assert.Contains(t, r.stderr, "requires an API key (HTTP 401)", args)
			assert.Contains(t, r.stderr, "pass --api-key KEY or set "+apiKeyEnv, args)
			assert.NotContains(t, r.stderr, "{", args)
		}
		r := runBin(t, bin, menv, "send", "--api-key", "wrong-secret-0123456789", "hi")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "refused the API key (HTTP 401)")

		// With it, from the environment or the flag, every command works.
		r = runBin(t, bin, keyEnv, "card", "--agent", "ask")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "Name:         ask")
		r = runBin(t, bin, keyEnv, "card", "--agent", "echo")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "echo-data", "the public card")
		for _, binding := range []string{"jsonrpc", "rest"} { // this edge serves no gRPC
			r = runBin(t, bin, keyEnv, "card", "--agent", "echo", "--extended", "--binding", binding)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "echo-data", "the extended card over %s", binding)
		}
		r = runBin(t, bin, keyEnv, "send", "hi")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "completed")
		r = runBin(t, bin, menv, "stream", "--api-key", key, "--agent", "ask", "hi")
		require.Equal(t, 0, r.code, r.stderr)
		askTask := taskIDIn(t, r.stdout)
		reply := hintAfter(t, r.stderr, "reply with: ", "Carol")
		assert.Equal(t, []string{"send", "--agent", "ask", "--api-key", "KEY", "--task", askTask, "Carol"}, reply,
			"a key from the command line is not repeated")
		reply[slices.Index(reply, "KEY")] = key
		r = runBin(t, bin, menv, reply...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "Hello, Carol!")
		r = runBin(t, bin, keyEnv, "get", askTask)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "Hello, Carol!")
		r = runBin(t, bin, keyEnv, "send", "--agent", "slow", "--no-wait", "chunks=100 delay=100ms")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "follow with: a2amesh stream --agent slow --task ", "a key from the environment is not named")
		slowTask := taskIDIn(t, r.stdout)
		r = runBin(t, bin, keyEnv, "cancel", slowTask)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "canceled")
		r = runBin(t, bin, keyEnv, "stream", "--task", slowTask)
		assert.Equal(t, 1, r.code, "a canceled task cannot be followed")
		assert.Contains(t, r.stderr, "terminal state canceled")
	})
}

// checkHelp checks one command's -h: exit 0, nothing on stderr, a one-line
// description, a usage line naming the command, its flags; and that a
// flag whose default is empty, zero or negative says what that means.
func checkHelp(t *testing.T, name string, r ran, eachFlag bool) {
	t.Helper()
	if !assert.Equal(t, 0, r.code, "%s -h: %s", name, r.stderr) {
		return
	}
	assert.Empty(t, r.stderr, name)
	lines := strings.Split(r.stdout, "\n")
	if !assert.GreaterOrEqual(t, len(lines), 3, "%s -h: %s", name, r.stdout) {
		return
	}
	assert.NotEmpty(t, strings.TrimSpace(lines[0]), "%s: first line is the description", name)
	assert.False(t, strings.HasPrefix(lines[0], "usage"), "%s: first line is the description", name)
	assert.Empty(t, lines[1], name)
	assert.True(t, strings.HasPrefix(lines[2], "usage: a2amesh "+name+" [flags]"), "%s: third line is the usage: %q", name, lines[2])
	flags := flagHelps(r.stdout)
	if !eachFlag {
		return
	}
	for flagName, help := range flags {
		def := ""
		if i := strings.LastIndex(help, " (default "); i >= 0 && strings.HasSuffix(help, ")") {
			help, def = help[:i], strings.TrimSuffix(help[i+len(" (default "):], ")")
		}
		switch {
		case strings.HasPrefix(def, "-"):
			assert.Contains(t, help, def+":", "%s --%s: what does %s mean?", name, flagName, def)
		case def == "" && !strings.HasSuffix(flagName, " (bool)"):
			assert.Regexp(t, `(?i)default|\b0:|none`, help, "%s --%s: what does no value mean?", name, flagName)
		}
	}
}

// flagHelps parses flag.PrintDefaults output into flag → help text (on one
// line); a boolean flag's name gets " (bool)".
func flagHelps(usage string) map[string]string {
	out := map[string]string{}
	_, flags, ok := strings.Cut(usage, "\nflags:\n")
	if !ok {
		return out
	}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(flags))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "  -"):
			f := strings.Fields(l)
			cur = strings.TrimLeft(f[0], "-")
			if len(f) == 1 {
				cur += " (bool)"
			}
			out[cur] = ""
		case cur != "" && strings.HasPrefix(l, "    \t"):
			out[cur] = strings.TrimSpace(out[cur] + " " + strings.TrimSpace(l))
		}
	}
	return out
}

// interruptAfterChunk runs bin with args, sends it SIGINT once its stdout
// shows an artifact line, and returns its stderr.
func interruptAfterChunk(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	seen := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "artifact") {
			seen = true
			break
		}
	}
	if seen {
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait() // stderr is read only after this
	require.True(t, seen, "no artifact before the stream ended; stderr: %s", errOut.String())
	require.NoError(t, ctx.Err())
	require.Error(t, err, "interrupted: a non-zero exit")
	return errOut.String()
}

// TestVersionNamesRevision: version prints the module version, the VCS
// revision with its state and time, and the Go version.
func TestVersionNamesRevision(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	assert.Equal(t, "a2amesh v1.2.3 revision 0123456789abcdef (modified) (2026-01-02T03:04:05Z) go1.99", versionOf(bi))
	bi = &debug.BuildInfo{GoVersion: "go1.99"}
	assert.Equal(t, "a2amesh (devel) go1.99", versionOf(bi))
}
