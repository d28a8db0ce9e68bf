package a2agoexec_test

// End-to-end tests: a2a-go executors run by an agentrt.Worker through
// a2agoexec, on a real in-process mesh (embedded NATS + JetStream, HTTP
// edge on loopback), driven by the repo's A2A client and raw JSON-RPC.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	a2ago "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/a2agoexec"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

const (
	// callTimeout bounds each test's calls to the mesh.
	callTimeout = 10 * time.Second
	// maxStreamEvents bounds the events a test reads from one stream.
	maxStreamEvents = 100
)

// testMesh is one mesh shared by the subtests of TestThroughMesh.
type testMesh struct {
	*meshtest.Mesh
	hc *http.Client
}

// serve runs exec as the agent name on m until the test ends, and returns
// once the edge routes to it.
func (m *testMesh) serve(t *testing.T, name string, exec a2asrv.AgentExecutor) *client.Client {
	t.Helper()
	card := a2a.AgentCard{
		Name: name, Description: "a2a-go executor " + name, Version: "1.0.0",
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: name, Name: name, Description: "test", Tags: []string{"test"}}},
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := &agentrt.Worker{
		Store: m.Store(), Name: name, Concurrency: 4, Timeout: 8 * time.Second, Logger: logger,
		Agent: a2agoexec.New(exec, card, a2agoexec.WithLogger(logger), a2agoexec.WithCancelTimeout(2*time.Second)),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker %s: %v", name, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("worker %s did not stop within 10s", name)
		}
	})
	m.waitRouted(t, name)
	return client.New(m.URL+"/agents/"+name, client.WithHTTPClient(m.hc))
}

// waitRouted polls the agent's card until the edge serves it.
func (m *testMesh) waitRouted(t *testing.T, name string) {
	t.Helper()
	url := m.URL + "/agents/" + name + "/.well-known/agent-card.json"
	deadline := time.Now().Add(callTimeout)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		resp, err := m.hc.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent %s not routed by the edge within %s", name, callTimeout)
}

// rawCall posts one JSON-RPC call to the agent and returns the whole
// response body as received.
func (m *testMesh) rawCall(t *testing.T, name, method string, params any) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/agents/"+name, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := m.hc.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("%s: read: %v", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, data)
	}
	return data
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

func send(t *testing.T, c *client.Client, msg *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.Send(callCtx(t), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if res.Task == nil {
		t.Fatalf("SendMessage answered with a message, want a task: %+v", res.Message)
	}
	return res.Task
}

func requireState(t *testing.T, task *a2a.Task, want a2a.TaskState) {
	t.Helper()
	if task.Status.State != want {
		t.Fatalf("task %s is %s, want %s (status message %q)", task.ID, task.Status.State, want, task.Status.Message.Text())
	}
}

func partsText(ps []a2a.Part) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ---- executors ----

// goTexts joins the text parts of an a2a-go message.
func goTexts(m *a2ago.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p != nil {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// cancelAsSDK is the simplest Cancel, as the SDK documents it.
func cancelAsSDK(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCanceled, nil), nil)
	}
}

// echoExec creates the task, returns the message's text as an artifact and
// completes.
type echoExec struct{}

func (echoExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2ago.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		ev := a2ago.NewArtifactEvent(ec, a2ago.NewTextPart("echo: "+goTexts(ec.Message)))
		ev.Artifact.Name = "echo"
		if !yield(ev, nil) {
			return
		}
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
	}
}

func (echoExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

// streamExec streams one artifact in three chunks.
type streamExec struct{}

var chunks = []string{"alpha ", "beta ", "gamma"}

func (streamExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		if !yield(a2ago.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, a2ago.NewMessageForTask(a2ago.MessageRoleAgent, ec, a2ago.NewTextPart("thinking"))), nil) {
			return
		}
		var id a2ago.ArtifactID
		for i, c := range chunks {
			var ev *a2ago.TaskArtifactUpdateEvent
			if i == 0 {
				ev = a2ago.NewArtifactEvent(ec, a2ago.NewTextPart(c))
				id = ev.Artifact.ID
			} else {
				ev = a2ago.NewArtifactUpdateEvent(ec, id, a2ago.NewTextPart(c))
			}
			ev.LastChunk = i == len(chunks)-1
			if !yield(ev, nil) {
				return
			}
			time.Sleep(10 * time.Millisecond) // let a streaming client see them arrive
		}
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
	}
}

func (streamExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

// askExec asks for a name, then greets it; it records what it saw.
type askExec struct {
	mu   sync.Mutex
	seen []*a2ago.Task // StoredTask of each Execute
}

func (e *askExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	e.mu.Lock()
	e.seen = append(e.seen, ec.StoredTask)
	e.mu.Unlock()
	return func(yield func(a2ago.Event, error) bool) {
		if ec.StoredTask == nil {
			if !yield(a2ago.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			q := a2ago.NewMessageForTask(a2ago.MessageRoleAgent, ec, a2ago.NewTextPart("What is your name?"))
			yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateInputRequired, q), nil)
			return
		}
		greeting := "Hello, " + goTexts(ec.Message) + "!"
		if !yield(a2ago.NewArtifactEvent(ec, a2ago.NewTextPart(greeting)), nil) {
			return
		}
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
	}
}

func (e *askExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

func (e *askExec) storedTasks() []*a2ago.Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*a2ago.Task(nil), e.seen...)
}

// secret is the text of failExec's error, which must not reach clients.
const secret = "db password hunter2 at 10.1.2.3"

// failExec starts working, then yields an error.
type failExec struct{}

func (failExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		if !yield(a2ago.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
			return
		}
		yield(nil, errors.New(secret))
	}
}

func (failExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

// blockExec works until its context ends; it reports when it started and
// what Cancel got.
type blockExec struct {
	started  chan a2ago.TaskID
	canceled chan *a2asrv.ExecutorContext
	ended    chan error
}

func newBlockExec() *blockExec {
	return &blockExec{started: make(chan a2ago.TaskID, 1), canceled: make(chan *a2asrv.ExecutorContext, 1), ended: make(chan error, 1)}
}

func (e *blockExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		if !yield(a2ago.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateWorking, nil), nil) {
			return
		}
		e.started <- ec.TaskID
		<-ctx.Done() // the run is bounded by the worker's Timeout
		e.ended <- ctx.Err()
		yield(nil, ctx.Err())
	}
}

func (e *blockExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	select {
	case e.canceled <- ec:
	default: // a second Cancel: the test looks at the first
	}
	return cancelAsSDK(ctx, ec)
}

// replyExec answers with a bare Message.
type replyExec struct{}

func (replyExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		yield(a2ago.NewMessage(a2ago.MessageRoleAgent, a2ago.NewTextPart("reply to "+goTexts(ec.Message))), nil)
	}
}

func (replyExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

// ---- tests ----

func TestThroughMesh(t *testing.T) {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	m := &testMesh{Mesh: meshtest.Start(t), hc: &http.Client{Transport: tr}}

	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		c := m.serve(t, "goecho", echoExec{})
		task := send(t, c, client.TextMessage("hello mesh"))
		requireState(t, task, a2a.StateCompleted)
		if len(task.Artifacts) != 1 {
			t.Fatalf("task has %d artifacts, want 1: %+v", len(task.Artifacts), task.Artifacts)
		}
		a := task.Artifacts[0]
		if got := partsText(a.Parts); got != "echo: hello mesh" || a.Name != "echo" {
			t.Errorf("artifact %q named %q, want %q named echo", got, a.Name, "echo: hello mesh")
		}
	})

	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		c := m.serve(t, "gostream", streamExec{})
		s, err := c.Stream(callCtx(t), &a2a.SendMessageRequest{Message: client.TextMessage("go")})
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		defer s.Close()
		var (
			taskID   string
			trace    []string // "working:thinking", "chunk:<text>:<append>:<last>", "completed"
			artifact string
		)
		for i := 0; i < maxStreamEvents; i++ {
			ev, err := s.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			r := ev.Response
			switch {
			case r.Task != nil:
				taskID = r.Task.ID
			case r.StatusUpdate != nil:
				st := r.StatusUpdate.Status
				switch {
				case st.State == a2a.StateWorking && st.Message != nil:
					trace = append(trace, "working:"+st.Message.Text())
				case st.State == a2a.StateWorking, st.State == a2a.StateSubmitted:
				default:
					trace = append(trace, strings.ToLower(strings.TrimPrefix(string(st.State), "TASK_STATE_")))
				}
			case r.ArtifactUpdate != nil:
				u := r.ArtifactUpdate
				if artifact == "" {
					artifact = u.Artifact.ArtifactID
				} else if u.Artifact.ArtifactID != artifact {
					t.Errorf("chunk of artifact %s, want %s", u.Artifact.ArtifactID, artifact)
				}
				trace = append(trace, "chunk:"+partsText(u.Artifact.Parts)+":"+flag(u.Append, "append")+":"+flag(u.LastChunk, "last"))
			}
		}
		want := []string{"working:thinking", "chunk:alpha ::", "chunk:beta :append:", "chunk:gamma:append:last", "completed"}
		if strings.Join(trace, "|") != strings.Join(want, "|") {
			t.Fatalf("stream events\n got %q\nwant %q", trace, want)
		}
		task, err := c.GetTask(callCtx(t), taskID, nil)
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		requireState(t, task, a2a.StateCompleted)
		if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 3 {
			t.Fatalf("final task artifacts %+v, want one with 3 parts", task.Artifacts)
		}
		if got := partsText(task.Artifacts[0].Parts); got != strings.Join(chunks, "") {
			t.Errorf("artifact text %q, want %q", got, strings.Join(chunks, ""))
		}
	})

	t.Run("multi-turn", func(t *testing.T) {
		t.Parallel()
		exec := &askExec{}
		c := m.serve(t, "goask", exec)
		first := send(t, c, client.TextMessage("hi"))
		requireState(t, first, a2a.StateInputRequired)
		if got := first.Status.Message.Text(); got != "What is your name?" {
			t.Errorf("question %q", got)
		}
		msg := client.TextMessage("Ada")
		msg.TaskID, msg.ContextID = first.ID, first.ContextID
		second := send(t, c, msg)
		requireState(t, second, a2a.StateCompleted)
		if second.ID != first.ID {
			t.Errorf("second turn answered task %s, want %s", second.ID, first.ID)
		}
		if len(second.Artifacts) != 1 || partsText(second.Artifacts[0].Parts) != "Hello, Ada!" {
			t.Errorf("artifacts %+v, want one saying Hello, Ada!", second.Artifacts)
		}
		seen := exec.storedTasks()
		if len(seen) != 2 || seen[0] != nil || seen[1] == nil {
			t.Fatalf("executor saw StoredTask %v, want nil then a task", seen)
		}
		st := seen[1]
		if string(st.ID) != first.ID || st.ContextID != first.ContextID || st.Status.State != a2ago.TaskStateInputRequired {
			t.Errorf("StoredTask %s/%s in %s, want %s/%s input-required", st.ID, st.ContextID, st.Status.State, first.ID, first.ContextID)
		}
		if goTexts(st.Status.Message) != "What is your name?" {
			t.Errorf("StoredTask status message %q, want the question", goTexts(st.Status.Message))
		}
		var hist []string
		for _, h := range st.History {
			hist = append(hist, string(h.Role)+":"+goTexts(h))
		}
		if want := "ROLE_USER:hi|ROLE_AGENT:What is your name?|ROLE_USER:Ada"; strings.Join(hist, "|") != want {
			t.Errorf("StoredTask history %q, want %q", hist, want)
		}
	})

	t.Run("error", func(t *testing.T) {
		t.Parallel()
		m.serve(t, "gofail", failExec{})
		sendBody := m.rawCall(t, "gofail", "SendMessage", map[string]any{"message": client.TextMessage("break")})
		var res struct {
			Result a2a.StreamResponse `json:"result"`
		}
		if err := json.Unmarshal(sendBody, &res); err != nil || res.Result.Task == nil {
			t.Fatalf("SendMessage answer %s: %v", sendBody, err)
		}
		task := res.Result.Task
		requireState(t, task, a2a.StateFailed)
		getBody := m.rawCall(t, "gofail", "GetTask", map[string]any{"id": task.ID, "historyLength": 100})
		for _, body := range [][]byte{sendBody, getBody} {
			if bytes.Contains(body, []byte("hunter2")) || bytes.Contains(body, []byte("10.1.2.3")) {
				t.Errorf("the executor's error text reached the wire: %s", body)
			}
		}
		if !bytes.Contains(getBody, []byte("TASK_STATE_FAILED")) {
			t.Errorf("GetTask does not show the task failed: %s", getBody)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		exec := newBlockExec()
		c := m.serve(t, "goblock", exec)
		res, err := c.Send(callCtx(t), &a2a.SendMessageRequest{
			Message:       client.TextMessage("wait"),
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true},
		})
		if err != nil || res.Task == nil {
			t.Fatalf("SendMessage: %v %+v", err, res)
		}
		id := res.Task.ID
		select {
		case got := <-exec.started:
			if string(got) != id {
				t.Fatalf("executor runs task %s, want %s", got, id)
			}
		case <-time.After(callTimeout):
			t.Fatal("executor did not start")
		}
		task, err := c.Cancel(callCtx(t), id)
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		requireState(t, task, a2a.StateCanceled)
		select {
		case err := <-exec.ended:
			if err == nil {
				t.Error("Execute's context ended without an error")
			}
		case <-time.After(callTimeout):
			t.Fatal("Execute's context did not end after the cancel")
		}
		select {
		case ec := <-exec.canceled:
			if string(ec.TaskID) != id || ec.Message != nil || ec.StoredTask == nil || string(ec.StoredTask.ID) != id {
				t.Errorf("Cancel got task %s, message %v, stored task %v; want task %s, no message, the stored task", ec.TaskID, ec.Message, ec.StoredTask, id)
			}
		case <-time.After(callTimeout):
			t.Fatal("exec.Cancel was not called")
		}
		// The executor's own canceled event was drained, not recorded: the
		// task stays canceled as the mesh recorded it.
		task, err = c.GetTask(callCtx(t), id, nil)
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		requireState(t, task, a2a.StateCanceled)
	})

	t.Run("message", func(t *testing.T) {
		t.Parallel()
		c := m.serve(t, "goreply", replyExec{})
		res, err := c.Send(callCtx(t), &a2a.SendMessageRequest{Message: client.TextMessage("ping")})
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		r := res.Message
		if res.Task != nil || r == nil || r.Text() != "reply to ping" || r.Role != a2a.RoleAgent {
			t.Fatalf("answer %+v, want the executor's message", res)
		}
		if r.TaskID != "" || r.ContextID == "" {
			t.Errorf("reply names task %q, context %q: want no task and a context", r.TaskID, r.ContextID)
		}
	})
}

func flag(b bool, name string) string {
	if b {
		return name
	}
	return ""
}

// extExec activates, through the SDK's own call context, the extension
// it declares when the client requested it, and answers with what was
// requested.
type extExec struct{}

const extURI = "https://example.test/ext/goexec/v1"

func (extExec) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return func(yield func(a2ago.Event, error) bool) {
		exts, ok := a2asrv.ExtensionsFrom(ctx)
		if !ok {
			yield(nil, errors.New("no call context"))
			return
		}
		ext := &a2ago.AgentExtension{URI: extURI}
		if exts.Requested(ext) {
			exts.Activate(ext)
		}
		ev := a2ago.NewArtifactEvent(ec, a2ago.NewTextPart("requested: "+strings.Join(exts.RequestedURIs(), ",")))
		if !yield(ev, nil) {
			return
		}
		yield(a2ago.NewStatusUpdateEvent(ec, a2ago.TaskStateCompleted, nil), nil)
	}
}

func (extExec) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2ago.Event, error] {
	return cancelAsSDK(ctx, ec)
}

// An executor reads the requested extensions and activates one with the
// SDK's API (a2asrv.ExtensionsFrom); the mesh echoes it to the client.
func TestExtensionsThroughExecutor(t *testing.T) {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	m := &testMesh{Mesh: meshtest.Start(t), hc: &http.Client{Transport: tr}}
	c := m.serve(t, "goext", extExec{})
	for _, requested := range [][]string{{"urn:other", extURI}, {"urn:other"}} {
		exts := &client.Extensions{Requested: requested}
		res, err := c.Send(client.WithExtensions(callCtx(t), exts), &a2a.SendMessageRequest{Message: client.TextMessage("hi")})
		if err != nil {
			t.Fatal(err)
		}
		requireState(t, res.Task, a2a.StateCompleted)
		if got, want := partsText(res.Task.Artifacts[0].Parts), "requested: "+strings.Join(requested, ","); got != want {
			t.Errorf("the executor saw %q, want %q", got, want)
		}
		var want []string
		if slices.Contains(requested, extURI) {
			want = []string{extURI}
		}
		if got := exts.Activated(); !slices.Equal(got, want) {
			t.Errorf("requested %v: echoed %v, want %v", requested, got, want)
		}
	}
}
