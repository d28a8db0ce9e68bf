//go:build unix

// Durability tests: the real `a2amesh dev` binary runs as a child process,
// is killed with SIGKILL (or stopped with SIGTERM) while tasks run, and is
// restarted on the same data directory. The promise under test: every task
// acknowledged to a client is still readable afterwards; a task accepted but
// unfinished is finished (or failed with a message saying why) after the
// restart, never silently lost; no task completes twice; and a re-run agent
// replaces its partial artifact instead of appending to it.
//
// Everything talks raw A2A 0.3 JSON-RPC over loopback HTTP, as an outside
// client would.

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/internal/testbin"
)

const (
	// durSlowText makes the slow agent run ~1.8 s: long enough to be cut
	// by a kill 600 ms after submission.
	durSlowText   = "chunks=10 delay=200ms"
	durSlowChunks = 10
	// durAckWait is the child's --ack-wait: how soon a task held by the
	// killed process is redelivered after the restart.
	durAckWait = 2 * time.Second
	// durPollBudget bounds waiting for every task to end after a restart.
	durPollBudget = 40 * time.Second
	// durHealthBudget bounds waiting for /healthz after a start.
	durHealthBudget = 30 * time.Second
	// durExitBudget bounds waiting for the child to exit after a signal.
	durExitBudget = 10 * time.Second
	// durMaxEvents bounds how many SSE events one stream read takes.
	durMaxEvents = 200
	// durOutputCap bounds the child's captured output.
	durOutputCap = 4 << 20
)

// TestKill9Dev kills `a2amesh dev` with SIGKILL while ~30 tasks run (and
// while more are being submitted), restarts it on the same data, and checks
// that every acknowledged task ends completed (none failed: one kill costs a
// task one redelivery, far from MaxDeliver), exactly once, with an intact
// artifact, and that the server holds exactly one task per messageId sent.
// Then it kills the process again in the middle of an SSE stream and
// resumes the stream with Last-Event-ID.
func TestKill9Dev(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills the a2amesh binary; skipped with -short")
	}
	p := durStart(t)

	// 1. Submit a mix of slow and echo tasks (non-blocking sends).
	acked := &durAcked{}
	for i := 0; i < 30; i++ {
		agent, text := "slow", durSlowText
		if i%3 == 2 {
			agent, text = "echo", fmt.Sprintf("echo %d before the kill", i)
		}
		id, msgID, err := p.sendNonBlocking(agent, text)
		if err != nil {
			t.Fatalf("send %d to %s before the kill: %v", i, agent, err)
		}
		acked.add(id, msgID, agent, text)
	}
	// Keep submitting until the kill from a few clients at once, so sends
	// are in flight when the process dies: whatever the server
	// acknowledged must survive.
	stopLate := make(chan struct{})
	var lateWG sync.WaitGroup
	var lateMu sync.Mutex
	lateErrs := 0
	for g := 0; g < 3; g++ {
		lateWG.Add(1)
		go func() {
			defer lateWG.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stopLate:
					return
				default:
				}
				agent, text := "slow", durSlowText
				if (i+g)%2 == 1 {
					agent, text = "echo", fmt.Sprintf("late echo %d/%d", g, i)
				}
				id, msgID, err := p.sendNonBlocking(agent, text)
				if err != nil {
					lateMu.Lock()
					lateErrs++ // expected once the process is gone
					lateMu.Unlock()
				} else {
					acked.add(id, msgID, agent, text)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	// 2. Kill -9 mid-run.
	time.Sleep(600 * time.Millisecond)
	p.kill9(t)
	time.Sleep(100 * time.Millisecond) // let the clients see the dead process
	close(stopLate)
	lateWG.Wait()
	tasks := acked.snapshot()
	t.Logf("acknowledged %d tasks (%d sent while the kill approached; %d sends failed at or after the kill)",
		len(tasks), len(tasks)-30, lateErrs)

	// 3. Restart on the same data and port.
	startedAt := time.Now()
	ready := p.start(t)
	t.Logf("restart: /healthz answered %v after the process started", ready.Round(time.Millisecond))

	// 4. Every acknowledged task ends, once, with an intact artifact.
	res := p.awaitTerminal(t, tasks, durPollBudget)
	t.Logf("all %d acknowledged tasks terminal %v after the restart (%v after /healthz)",
		len(tasks), res.allDoneAt.Sub(startedAt).Round(time.Millisecond), res.allDoneAt.Sub(startedAt.Add(ready)).Round(time.Millisecond))
	durCheckTasks(t, tasks, res)
	p.checkServerTasks(t, tasks)

	// 5. Kill -9 in the middle of a stream, then resume it by Last-Event-ID.
	t.Run("stream", func(t *testing.T) { durKillMidStream(t, p) })
}

// durKillMidStream opens message/stream to slow, reads until two chunks have
// arrived, kills the process, restarts it and resumes with tasks/resubscribe
// and Last-Event-ID: the rest arrives with later ids and ends at completed,
// and folding every event seen gives one intact artifact.
func durKillMidStream(t *testing.T, p *durProc) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	body := durBody("message/stream", map[string]any{"message": durUserMessage(durSlowText)})
	resp, err := p.postSSE(ctx, "slow", body, "")
	if err != nil {
		cancel()
		t.Fatalf("message/stream: %v", err)
	}
	var seen []durFrame
	r := durNewSSE(resp.Body)
	chunks := 0
	for i := 0; i < 20 && chunks < 2; i++ {
		f, err := r.frame()
		if err != nil {
			cancel()
			t.Fatalf("reading the stream before the kill (after %d events): %v", len(seen), err)
		}
		seen = append(seen, f)
		if f.Event.Kind == "artifact-update" {
			chunks++
		}
	}
	if chunks < 2 || len(seen) < 3 {
		cancel()
		t.Fatalf("before the kill: got %d events with %d chunks, want at least 3 events and 2 chunks: %s", len(seen), chunks, durDescribe(seen))
	}
	if seen[0].Event.Kind != "task" || seen[0].Event.ID == "" {
		t.Fatalf("the stream's first event is not the task: %s", durDescribe(seen[:1]))
	}
	taskID := seen[0].Event.ID
	p.kill9(t)
	// Events already received are read; then the cut stream must end with
	// an error, not look like a clean end of the response.
	var cutErr error
	for i := 0; i < 20 && cutErr == nil; i++ {
		f, err := r.frame()
		if err != nil {
			cutErr = err
			break
		}
		seen = append(seen, f)
	}
	if cutErr == nil || errors.Is(cutErr, io.EOF) {
		t.Errorf("the stream of the killed process did not break off (err %v): %s", cutErr, durDescribe(seen))
	}
	resp.Body.Close()
	cancel()
	lastID := seen[len(seen)-1].ID
	for i, f := range seen {
		if !f.HasID || (i > 0 && f.ID <= seen[i-1].ID) {
			t.Errorf("before the kill: event ids are not strictly increasing: %s", durDescribe(seen))
			break
		}
	}

	startedAt := time.Now()
	p.start(t)

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body = durBody("tasks/resubscribe", map[string]any{"id": taskID})
	resp, err = p.postSSE(ctx, "slow", body, strconv.FormatUint(lastID, 10))
	if err != nil {
		t.Fatalf("tasks/resubscribe with Last-Event-ID %d: %v", lastID, err)
	}
	defer resp.Body.Close()
	r = durNewSSE(resp.Body)
	var rest []durFrame
	final := false
	for i := 0; i < durMaxEvents && !final; i++ {
		f, err := r.frame()
		if err != nil {
			t.Fatalf("reading the resumed stream (after %d events): %v; events: %s", len(rest), err, durDescribe(rest))
		}
		if f.Error != nil {
			t.Fatalf("resumed stream sent an error: %+v", f.Error)
		}
		rest = append(rest, f)
		final = f.Event.Final || durTerminal(f.Event.state())
	}
	t.Logf("stream: resumed after id %d, %d more events, completed %v after the restart; before the kill: %s; after: %s",
		lastID, len(rest), time.Since(startedAt).Round(time.Millisecond), durDescribe(seen), durDescribe(rest))
	if !final {
		t.Fatalf("resumed stream did not reach a final state within %d events", durMaxEvents)
	}
	prev := lastID
	for _, f := range rest {
		if !f.HasID || f.ID <= prev {
			t.Fatalf("resumed stream: event id %d (has id %v) is not after %d: %s", f.ID, f.HasID, prev, durDescribe(rest))
		}
		prev = f.ID
	}
	last := rest[len(rest)-1].Event
	if last.state() != "completed" || !last.Final {
		t.Fatalf("resumed stream ended with %s (final %v), want completed", last.state(), last.Final)
	}
	// A client folding every event it saw has the whole artifact once.
	arts := durFold(append(append([]durFrame(nil), seen...), rest...))
	if err := durCheckChunks(arts); err != nil {
		t.Errorf("artifact folded from the stream's events: %v", err)
	}
	task, rpcErr, err := p.getTask("slow", taskID)
	if err != nil || rpcErr != nil {
		t.Fatalf("tasks/get %s after the resumed stream: %v %v", taskID, err, rpcErr)
	}
	if err := durCheckSlow(task); err != nil {
		t.Errorf("task %s after the resumed stream: %v", taskID, err)
	}
}

// TestGracefulShutdown stops `a2amesh dev` with SIGTERM while slow tasks
// run: it must exit 0 within a few seconds, handing its tasks back to the
// queue, and after a restart they complete.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and stops the a2amesh binary; skipped with -short")
	}
	p := durStart(t)
	acked := &durAcked{}
	for i := 0; i < 12; i++ {
		agent, text := "slow", durSlowText
		if i%4 == 3 {
			agent, text = "echo", fmt.Sprintf("echo %d before SIGTERM", i)
		}
		id, msgID, err := p.sendNonBlocking(agent, text)
		if err != nil {
			t.Fatalf("send %d to %s: %v", i, agent, err)
		}
		acked.add(id, msgID, agent, text)
	}
	time.Sleep(600 * time.Millisecond)
	took, err := p.terminate(t)
	t.Logf("SIGTERM: exited after %v (%v)", took.Round(time.Millisecond), err)
	if err != nil {
		t.Fatalf("a2amesh dev did not exit cleanly on SIGTERM: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("a2amesh dev took %v to exit on SIGTERM, want a few seconds at most", took)
	}

	tasks := acked.snapshot()
	startedAt := time.Now()
	ready := p.start(t)
	res := p.awaitTerminal(t, tasks, durPollBudget)
	t.Logf("all %d tasks terminal %v after the restart (%v after /healthz)",
		len(tasks), res.allDoneAt.Sub(startedAt).Round(time.Millisecond), res.allDoneAt.Sub(startedAt.Add(ready)).Round(time.Millisecond))
	durCheckTasks(t, tasks, res)
	p.checkServerTasks(t, tasks)
}

// ---- the child process ----

// durProc is an `a2amesh dev` child process, restartable on the same data
// directory and port.
type durProc struct {
	bin  string
	addr string
	data string
	out  *durBuffer
	hc   *http.Client // unary calls
	sc   *http.Client // streams (no overall timeout)
	tr   *http.Transport
	runs int
	cur  *durRun
}

type durRun struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid after done is closed
}

func durStart(t *testing.T) *durProc {
	t.Helper()
	p := &durProc{bin: durBuild(t), addr: durFreeAddr(t), data: t.TempDir(), out: &durBuffer{max: durOutputCap}}
	p.tr = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	p.hc = &http.Client{Transport: p.tr, Timeout: 10 * time.Second}
	p.sc = &http.Client{Transport: p.tr}
	t.Cleanup(func() {
		p.stopQuietly()
		p.tr.CloseIdleConnections()
		if strings.Contains(p.out.String(), "WARNING: DATA RACE") {
			t.Errorf("a2amesh dev reported a data race")
		}
		if t.Failed() {
			t.Logf("a2amesh dev output (%d runs):\n%s", p.runs, p.out.String())
		}
	})
	p.start(t)
	return p
}

// durBuild builds the a2amesh binary, with the race detector when this
// test binary has it.
func durBuild(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./cmd/a2amesh")
}

// durFreeAddr picks a free 127.0.0.1 port by listening on :0.
func durFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (p *durProc) baseURL() string { return "http://" + p.addr }

// start runs the child and waits for /healthz; it returns how long that took.
func (p *durProc) start(t *testing.T) time.Duration {
	t.Helper()
	if p.cur != nil {
		t.Fatal("durProc.start: already running")
	}
	p.runs++
	fmt.Fprintf(p.out, "\n===== run %d =====\n", p.runs)
	cmd := exec.Command(p.bin, "dev", "--listen", p.addr, "--data", p.data, "--ack-wait", durAckWait.String())
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "A2AMESH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a2amesh dev: %v", err)
	}
	run := &durRun{cmd: cmd, done: make(chan struct{})}
	go func() {
		run.err = cmd.Wait()
		close(run.done)
	}()
	p.cur = run
	deadline := begin.Add(durHealthBudget)
	for i := 0; time.Now().Before(deadline) && i < 10000; i++ {
		select {
		case <-run.done:
			p.cur = nil
			t.Fatalf("a2amesh dev (run %d) exited before it was healthy: %v", p.runs, run.err)
		default:
		}
		if p.healthy() {
			return time.Since(begin)
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("a2amesh dev (run %d) not healthy after %v", p.runs, durHealthBudget)
	return 0
}

func (p *durProc) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL()+"/healthz", nil)
	resp, err := p.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (p *durProc) kill9(t *testing.T) {
	t.Helper()
	run := p.cur
	if run == nil {
		t.Fatal("durProc.kill9: not running")
	}
	if err := run.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	select {
	case <-run.done:
	case <-time.After(durExitBudget):
		t.Fatalf("a2amesh dev still running %v after SIGKILL", durExitBudget)
	}
	p.cur = nil
	fmt.Fprintf(p.out, "\n===== run %d killed (SIGKILL): %v =====\n", p.runs, run.err)
	p.tr.CloseIdleConnections() // they point at the dead process
}

// terminate sends SIGTERM and waits (bounded) for the exit; it returns how
// long the exit took and the process's exit error (nil: exit status 0).
func (p *durProc) terminate(t *testing.T) (time.Duration, error) {
	t.Helper()
	run := p.cur
	if run == nil {
		t.Fatal("durProc.terminate: not running")
	}
	begin := time.Now()
	if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-run.done:
	case <-time.After(durExitBudget):
		_ = run.cmd.Process.Kill()
		<-run.done
		p.cur = nil
		t.Fatalf("a2amesh dev did not exit within %v of SIGTERM (killed)", durExitBudget)
	}
	p.cur = nil
	took := time.Since(begin)
	fmt.Fprintf(p.out, "\n===== run %d stopped (SIGTERM) after %v: %v =====\n", p.runs, took, run.err)
	p.tr.CloseIdleConnections()
	return took, run.err
}

func (p *durProc) stopQuietly() {
	if run := p.cur; run != nil {
		_ = run.cmd.Process.Kill()
		select {
		case <-run.done:
		case <-time.After(durExitBudget):
		}
		p.cur = nil
	}
}

// durBuffer is a goroutine-safe buffer that keeps the first max bytes.
type durBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *durBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *durBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n[output truncated]"
	}
	return b.buf.String()
}

// ---- JSON-RPC over HTTP ----

type durRPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *durRPCError) String() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

type durReply struct {
	Result json.RawMessage `json:"result"`
	Error  *durRPCError    `json:"error"`
}

func durBody(method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

func durUserMessage(text string) map[string]any {
	return map[string]any{
		"kind": "message", "role": "user", "messageId": uuid.NewString(),
		"parts": []map[string]any{{"kind": "text", "text": text}},
	}
}

// call posts one JSON-RPC call to /agents/{agent}.
func (p *durProc) call(agent string, body []byte) (json.RawMessage, *durRPCError, error) {
	req, err := http.NewRequest(http.MethodPost, p.baseURL()+"/agents/"+agent, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, durTrim(data))
	}
	var r durReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, nil, fmt.Errorf("decode reply: %w: %s", err, durTrim(data))
	}
	if r.Error != nil {
		return nil, r.Error, nil
	}
	return r.Result, nil, nil
}

// sendNonBlocking sends a 0.3 message/send with blocking:false and returns
// the id of the task the server acknowledged and the message's messageId.
func (p *durProc) sendNonBlocking(agent, text string) (id, msgID string, err error) {
	msg := durUserMessage(text)
	msgID = msg["messageId"].(string)
	body := durBody("message/send", map[string]any{
		"message":       msg,
		"configuration": map[string]any{"blocking": false},
	})
	res, rpcErr, err := p.call(agent, body)
	if err != nil {
		return "", msgID, err
	}
	if rpcErr != nil {
		return "", msgID, errors.New(rpcErr.String())
	}
	var task durTask
	if err := json.Unmarshal(res, &task); err != nil {
		return "", msgID, fmt.Errorf("decode task: %w", err)
	}
	if task.Kind != "task" || task.ID == "" {
		return "", msgID, fmt.Errorf("reply is not a task: %s", durTrim(res))
	}
	return task.ID, msgID, nil
}

func (p *durProc) getTask(agent, id string) (*durTask, *durRPCError, error) {
	res, rpcErr, err := p.call(agent, durBody("tasks/get", map[string]any{"id": id}))
	if err != nil || rpcErr != nil {
		return nil, rpcErr, err
	}
	var task durTask
	if err := json.Unmarshal(res, &task); err != nil {
		return nil, nil, fmt.Errorf("decode task: %w", err)
	}
	return &task, nil, nil
}

// postSSE starts a streaming call; lastEventID, when set, is sent as the
// Last-Event-ID header.
func (p *durProc) postSSE(ctx context.Context, agent string, body []byte, lastEventID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL()+"/agents/"+agent, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := p.sc.Do(req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d (%s): %s", resp.StatusCode, ct, durTrim(data))
	}
	return resp, nil
}

func durTrim(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// ---- the 0.3 wire shapes ----

type durPart struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

type durMessage struct {
	Role      string    `json:"role"`
	MessageID string    `json:"messageId"`
	Parts     []durPart `json:"parts"`
}

func (m *durMessage) text() string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type durStatus struct {
	State   string      `json:"state"`
	Message *durMessage `json:"message"`
}

type durArtifact struct {
	ArtifactID string    `json:"artifactId"`
	Name       string    `json:"name"`
	Parts      []durPart `json:"parts"`
}

// durTask is a 0.3 task, and also any stream item (task, status-update,
// artifact-update), which share these fields.
type durTask struct {
	Kind      string        `json:"kind"`
	ID        string        `json:"id"`
	TaskID    string        `json:"taskId"`
	ContextID string        `json:"contextId"`
	Status    *durStatus    `json:"status"`
	History   []durMessage  `json:"history"`
	Artifacts []durArtifact `json:"artifacts"`
	// stream items
	Final     bool         `json:"final"`
	Artifact  *durArtifact `json:"artifact"`
	Append    bool         `json:"append"`
	LastChunk bool         `json:"lastChunk"`
}

func (w *durTask) state() string {
	if w.Status == nil {
		return ""
	}
	return w.Status.State
}

func (w *durTask) statusText() string {
	if w.Status == nil {
		return ""
	}
	return w.Status.Message.text()
}

func durTerminal(state string) bool {
	switch state {
	case "completed", "failed", "canceled", "rejected":
		return true
	}
	return false
}

// ---- SSE ----

type durFrame struct {
	ID    uint64
	HasID bool
	Event durTask
	Error *durRPCError
}

type durSSE struct{ r *ssetest.Reader }

func durNewSSE(r io.Reader) *durSSE { return &durSSE{r: ssetest.NewReader(r)} }

// frame reads the next SSE event carrying a JSON-RPC response, skipping
// comments (keep-alives). At a clean end of the stream it returns io.EOF.
func (r *durSSE) frame() (durFrame, error) {
	var f durFrame
	ev, err := r.r.Next()
	if err != nil {
		return f, err
	}
	if ev.HasID {
		if f.ID, err = ev.Seq(); err != nil {
			return f, err
		}
		f.HasID = true
	}
	var rep durReply
	if err := json.Unmarshal(ev.Data, &rep); err != nil {
		return f, fmt.Errorf("decode SSE data: %w: %s", err, durTrim(ev.Data))
	}
	if rep.Error != nil {
		f.Error = rep.Error
		return f, nil
	}
	if err := json.Unmarshal(rep.Result, &f.Event); err != nil {
		return f, fmt.Errorf("decode stream item: %w: %s", err, durTrim(rep.Result))
	}
	return f, nil
}

func durDescribe(fs []durFrame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d:", f.ID)
		switch {
		case f.Error != nil:
			b.WriteString("error")
		case f.Event.Kind == "artifact-update":
			text := ""
			if f.Event.Artifact != nil {
				for _, p := range f.Event.Artifact.Parts {
					text += p.Text
				}
			}
			fmt.Fprintf(&b, "chunk(%q append=%v)", strings.TrimSpace(text), f.Event.Append)
		default:
			fmt.Fprintf(&b, "%s(%s)", f.Event.Kind, f.Event.state())
		}
	}
	return b.String()
}

// durFold applies the artifact updates of a stream the way a client
// does: a chunk without append replaces the artifact with its id.
func durFold(fs []durFrame) []durArtifact {
	var arts []durArtifact
	for _, f := range fs {
		ev := f.Event
		switch {
		case ev.Kind == "task":
			arts = append([]durArtifact(nil), ev.Artifacts...)
		case ev.Kind == "artifact-update" && ev.Artifact != nil:
			found := false
			for i := range arts {
				if arts[i].ArtifactID != ev.Artifact.ArtifactID {
					continue
				}
				found = true
				if ev.Append {
					arts[i].Parts = append(arts[i].Parts, ev.Artifact.Parts...)
				} else {
					arts[i] = *ev.Artifact
				}
			}
			if !found {
				arts = append(arts, *ev.Artifact)
			}
		}
	}
	return arts
}

// ---- tasks and checks ----

type durSent struct {
	ID, MsgID, Agent, Text string
}

type durAcked struct {
	mu    sync.Mutex
	tasks []durSent
}

func (a *durAcked) add(id, msgID, agent, text string) {
	a.mu.Lock()
	a.tasks = append(a.tasks, durSent{ID: id, MsgID: msgID, Agent: agent, Text: text})
	a.mu.Unlock()
}

func (a *durAcked) snapshot() []durSent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]durSent(nil), a.tasks...)
}

type durPoll struct {
	tasks     map[string]*durTask     // terminal tasks by id
	notFound  map[string]*durRPCError // ids answered with TaskNotFound
	stuck     map[string]string       // id -> last state seen, for tasks never terminal
	allDoneAt time.Time
	rounds    int
}

// awaitTerminal polls tasks/get until every task is terminal or budget runs
// out. A task answered "not found" is polled again (it should never be), so
// a transient error is not mistaken for a loss.
func (p *durProc) awaitTerminal(t *testing.T, tasks []durSent, budget time.Duration) *durPoll {
	t.Helper()
	res := &durPoll{tasks: map[string]*durTask{}, notFound: map[string]*durRPCError{}, stuck: map[string]string{}}
	pending := map[string]durSent{}
	for _, s := range tasks {
		pending[s.ID] = s
	}
	deadline := time.Now().Add(budget)
	var lastErr error
	for round := 0; len(pending) > 0 && round < 2000 && time.Now().Before(deadline); round++ {
		res.rounds++
		for id, s := range pending {
			task, rpcErr, err := p.getTask(s.Agent, id)
			switch {
			case err != nil:
				lastErr = err
				continue
			case rpcErr != nil:
				if rpcErr.Code == a2a.CodeTaskNotFound {
					res.notFound[id] = rpcErr
				} else {
					lastErr = errors.New(rpcErr.String())
				}
				continue
			}
			delete(res.notFound, id)
			res.stuck[id] = task.state()
			if durTerminal(task.state()) {
				res.tasks[id] = task
				delete(res.stuck, id)
				delete(pending, id)
			}
		}
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	res.allDoneAt = time.Now()
	if len(pending) > 0 && lastErr != nil {
		t.Logf("last tasks/get error while polling: %v", lastErr)
	}
	for id := range pending {
		if _, ok := res.notFound[id]; !ok {
			if _, ok := res.stuck[id]; !ok {
				res.stuck[id] = "(never read)"
			}
		}
	}
	return res
}

// durCheckTasks asserts the promise for every acknowledged task: completed
// (a failed one fails the test, with its reason), once, with its artifact;
// and logs how many slow tasks ran more than once.
func durCheckTasks(t *testing.T, tasks []durSent, res *durPoll) {
	t.Helper()
	for id, e := range res.notFound {
		t.Errorf("LOST: acknowledged task %s answers %v", id, e)
	}
	for id, st := range res.stuck {
		t.Errorf("STUCK: acknowledged task %s still %s after %v", id, st, durPollBudget)
	}
	failed, runs := 0, map[int]int{}
	for _, s := range tasks {
		task, ok := res.tasks[s.ID]
		if !ok {
			continue
		}
		switch task.state() {
		case "completed":
		case "failed":
			failed++
			t.Errorf("task %s (%s) failed (%q): an acknowledged task must complete after a restart", s.ID, s.Agent, task.statusText())
			continue
		default:
			t.Errorf("task %s (%s) ended %s, want completed", s.ID, s.Agent, task.state())
			continue
		}
		switch s.Agent {
		case "slow":
			if err := durCheckSlow(task); err != nil {
				t.Errorf("task %s (slow): %v", s.ID, err)
			}
			runs[durSlowRuns(task)]++
		case "echo":
			if err := durCheckEcho(task, s.Text); err != nil {
				t.Errorf("task %s (echo): %v", s.ID, err)
			}
		}
	}
	var hist []string
	keys := make([]int, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	rerun := 0
	for _, k := range keys {
		hist = append(hist, fmt.Sprintf("%d run(s): %d", k, runs[k]))
		if k > 1 {
			rerun += runs[k]
		}
	}
	t.Logf("%d tasks: %d completed, %d failed; slow tasks by agent runs (history): %s; re-run: %d; polled %d rounds",
		len(tasks), len(res.tasks)-failed, failed, strings.Join(hist, ", "), rerun, res.rounds)
}

// durSlowRuns counts the slow agent's "streaming …" notes in the history: one
// per run that got as far as starting.
func durSlowRuns(task *durTask) int {
	n := 0
	for _, m := range task.History {
		if m.Role == "agent" && strings.HasPrefix(m.text(), "streaming ") {
			n++
		}
	}
	return n
}

// durCheckSlow: completed once, with exactly one artifact of chunks 1..10
// in order.
func durCheckSlow(task *durTask) error {
	if task.state() != "completed" {
		return fmt.Errorf("state %s, want completed", task.state())
	}
	done := fmt.Sprintf("sent %d chunks", durSlowChunks)
	if n := durCountAgentText(task, done); n != 1 {
		return fmt.Errorf("history has %d %q messages, want exactly 1 (completed once)", n, done)
	}
	return durCheckChunks(task.Artifacts)
}

func durCheckChunks(arts []durArtifact) error {
	if len(arts) != 1 {
		var desc []string
		for _, a := range arts {
			desc = append(desc, fmt.Sprintf("%s: %d parts", a.ArtifactID, len(a.Parts)))
		}
		return fmt.Errorf("%d artifacts (%s), want 1 (a re-run must replace, not add)", len(arts), strings.Join(desc, "; "))
	}
	parts := arts[0].Parts
	var got []string
	for _, p := range parts {
		got = append(got, strings.TrimSpace(p.Text))
	}
	bad := len(parts) != durSlowChunks
	for i := 0; !bad && i < len(parts); i++ {
		bad = got[i] != fmt.Sprintf("chunk %d/%d", i+1, durSlowChunks)
	}
	if bad {
		return fmt.Errorf("artifact chunks %q, want chunk 1/%d .. chunk %d/%d once each, in order", got, durSlowChunks, durSlowChunks, durSlowChunks)
	}
	return nil
}

func durCheckEcho(task *durTask, text string) error {
	if len(task.Artifacts) != 1 {
		return fmt.Errorf("%d artifacts, want 1", len(task.Artifacts))
	}
	var got string
	for _, p := range task.Artifacts[0].Parts {
		got += p.Text
	}
	if got != text {
		return fmt.Errorf("artifact %q, want %q", got, text)
	}
	return nil
}

func durCountAgentText(task *durTask, text string) int {
	n := 0
	for _, m := range task.History {
		if m.Role == "agent" && m.text() == text {
			n++
		}
	}
	return n
}

// checkServerTasks lists (ListTasks, 1.0, every page) the tasks the server
// holds and checks them from its side: each acknowledged send's messageId
// made exactly one task, the one the client was told about (a task that
// changed state between pages is counted once). Tasks no client was told
// about (sends cut by the kill after
// the task was created) are reported, not asserted: the protocol leaves
// them to the client's retry with the same messageId.
func (p *durProc) checkServerTasks(t *testing.T, acked []durSent) {
	t.Helper()
	byMsg := map[string]map[string]bool{} // messageId -> task ids
	seen := map[string]string{}           // task id -> state
	for _, agent := range []string{"slow", "echo"} {
		token := ""
		for page := 0; ; page++ {
			if page == 50 {
				t.Fatalf("ListTasks on %s: more than 50 pages", agent)
			}
			params := map[string]any{"pageSize": 100, "historyLength": 1000}
			if token != "" {
				params["pageToken"] = token
			}
			res, rpcErr, err := p.call(agent, durBody("ListTasks", params))
			if err != nil || rpcErr != nil {
				t.Fatalf("ListTasks on %s: %v %v", agent, err, rpcErr)
			}
			var list a2a.ListTasksResponse
			if err := json.Unmarshal(res, &list); err != nil {
				t.Fatalf("ListTasks on %s: decode: %v", agent, err)
			}
			for _, task := range list.Tasks {
				seen[task.ID] = agent + "/" + a2a.StateV03(task.Status.State)
				for _, m := range task.History {
					if m.Role == a2a.RoleUser {
						if byMsg[m.MessageID] == nil {
							byMsg[m.MessageID] = map[string]bool{}
						}
						byMsg[m.MessageID][task.ID] = true
						break // the message that made the task
					}
				}
			}
			if token = list.NextPageToken; token == "" {
				break
			}
		}
	}
	known := map[string]bool{}
	for _, s := range acked {
		known[s.ID] = true
		var ids []string
		for id := range byMsg[s.MsgID] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if len(ids) != 1 || ids[0] != s.ID {
			t.Errorf("DUPLICATE or LOST: messageId %s (%s) was acknowledged as task %s; the server holds tasks %v for it", s.MsgID, s.Agent, s.ID, ids)
		}
	}
	states := map[string]int{}
	for id, st := range seen {
		if !known[id] {
			states[st]++
		}
	}
	t.Logf("the server holds %d tasks, %d acknowledged", len(seen), len(acked))
	if len(states) > 0 {
		t.Logf("unacknowledged tasks on the server (sends cut by the kill; a client retry with the same messageId settles them): %v", states)
	}
}
