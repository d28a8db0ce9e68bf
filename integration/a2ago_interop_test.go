// Interop tests: the official Go SDK (github.com/a2aproject/a2a-go/v2),
// both its A2A 1.0 client and its A2A 0.3 compat client, against the mesh's
// built-in agents. The SDK resolves each agent's card and picks the
// interface itself, so these also check the cards.

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

const (
	// gosdkStepTimeout bounds each subtest's calls.
	gosdkStepTimeout = 20 * time.Second
	// gosdkMaxEvents bounds how many events a test reads from one stream.
	gosdkMaxEvents = 200
)

// gosdkWireCall is one JSON-RPC call as it went over the wire.
type gosdkWireCall struct {
	Path       string
	Method     string // JSON-RPC method
	A2AVersion string // A2A-Version header
	Accept     string
}

// gosdkWireLog records the SDK's requests so tests can check which protocol
// version it actually spoke.
type gosdkWireLog struct {
	mu    sync.Mutex
	calls []gosdkWireCall
	base  http.RoundTripper
}

func (w *gosdkWireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var env struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &env)
		w.mu.Lock()
		if len(w.calls) < 10000 {
			w.calls = append(w.calls, gosdkWireCall{
				Path: req.URL.Path, Method: env.Method,
				A2AVersion: req.Header.Get("A2A-Version"), Accept: req.Header.Get("Accept"),
			})
		}
		w.mu.Unlock()
	}
	return w.base.RoundTrip(req)
}

// last returns the most recent call with the given JSON-RPC method.
func (w *gosdkWireLog) last(method string) (gosdkWireCall, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.calls) - 1; i >= 0; i-- {
		if w.calls[i].Method == method {
			return w.calls[i], true
		}
	}
	return gosdkWireCall{}, false
}

// expectWire fails t unless the last call of method carried version.
func (w *gosdkWireLog) expectWire(t *testing.T, method, version string) {
	t.Helper()
	c, ok := w.last(method)
	if !ok {
		t.Fatalf("the SDK sent no %s request", method)
	}
	if c.A2AVersion != version {
		t.Errorf("%s went with A2A-Version %q, want %q", method, c.A2AVersion, version)
	}
}

func gosdkHTTPClient() (*http.Client, *gosdkWireLog) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	log := &gosdkWireLog{base: tr}
	// No overall Timeout: it would cut streams; every call has a context
	// deadline instead.
	return &http.Client{Transport: log}, log
}

func gosdkStepContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), gosdkStepTimeout)
	t.Cleanup(cancel)
	return ctx
}

// gosdkTexts joins the text parts of parts.
func gosdkTexts(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if p == nil {
			continue
		}
		b.WriteString(p.Text())
	}
	return b.String()
}

// gosdkTaskText joins the text of a task's artifacts, status message and
// agent messages in its history.
func gosdkTaskText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		b.WriteString(gosdkTexts(a.Parts))
		b.WriteString("\n")
	}
	if task.Status.Message != nil {
		b.WriteString(gosdkTexts(task.Status.Message.Parts))
		b.WriteString("\n")
	}
	for _, m := range task.History {
		if m != nil && m.Role == a2a.MessageRoleAgent {
			b.WriteString(gosdkTexts(m.Parts))
			b.WriteString("\n")
		}
	}
	return b.String()
}

func gosdkArtifactText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		b.WriteString(gosdkTexts(a.Parts))
	}
	return b.String()
}

func gosdkAsTask(t *testing.T, res a2a.SendMessageResult) *a2a.Task {
	t.Helper()
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want *a2a.Task", res)
	}
	if task.ID == "" || task.ContextID == "" {
		t.Fatalf("task without id or contextId: %+v", task)
	}
	return task
}

// gosdkCollect reads a stream to its end (or gosdkMaxEvents, or the context's end).
func gosdkCollect(seq iter.Seq2[a2a.Event, error]) ([]a2a.Event, error) {
	var events []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
		if len(events) >= gosdkMaxEvents {
			return events, fmt.Errorf("stream still going after %d events", gosdkMaxEvents)
		}
	}
	return events, nil
}

func gosdkDescribe(events []a2a.Event) string {
	var b strings.Builder
	for i, ev := range events {
		switch e := ev.(type) {
		case *a2a.Task:
			fmt.Fprintf(&b, "[%d] task %s %s\n", i, e.ID, e.Status.State)
		case *a2a.Message:
			fmt.Fprintf(&b, "[%d] message %q\n", i, gosdkTexts(e.Parts))
		case *a2a.TaskStatusUpdateEvent:
			fmt.Fprintf(&b, "[%d] status %s\n", i, e.Status.State)
		case *a2a.TaskArtifactUpdateEvent:
			fmt.Fprintf(&b, "[%d] artifact %s append=%v last=%v %q\n", i, e.Artifact.ID, e.Append, e.LastChunk, gosdkTexts(e.Artifact.Parts))
		default:
			fmt.Fprintf(&b, "[%d] %T\n", i, ev)
		}
	}
	return b.String()
}

// gosdkEventState is the task state an event carries, if any.
func gosdkEventState(ev a2a.Event) (a2a.TaskState, bool) {
	switch e := ev.(type) {
	case *a2a.Task:
		return e.Status.State, true
	case *a2a.TaskStatusUpdateEvent:
		return e.Status.State, true
	}
	return "", false
}

// gosdkStreamCheck describes what a task's event stream must look like.
type gosdkStreamCheck struct {
	taskFirst    bool       // the first event is the Task
	taskID       a2a.TaskID // if set, every event is about this task
	minArtifacts int        // at least this many artifact updates
	maxArtifacts int        // at most this many (0: no limit)
	final        a2a.TaskState
}

// gosdkCheckStream verifies a finished stream: one task throughout, states only
// terminal at the very end, the last event carrying c.final, artifact
// chunks of one artifact appended in order. It returns the task id.
func gosdkCheckStream(t *testing.T, events []a2a.Event, c gosdkStreamCheck) a2a.TaskID {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("stream carried no events")
	}
	if c.taskFirst {
		if _, ok := events[0].(*a2a.Task); !ok {
			t.Fatalf("first event is %T, want *a2a.Task:\n%s", events[0], gosdkDescribe(events))
		}
	}
	id := c.taskID
	if id == "" {
		id = events[0].TaskInfo().TaskID
	}
	artifacts := 0
	var artifactID a2a.ArtifactID
	for i, ev := range events {
		if got := ev.TaskInfo().TaskID; got != id {
			t.Errorf("event %d is about task %q, want %q", i, got, id)
		}
		if st, ok := gosdkEventState(ev); ok && st.Terminal() && i != len(events)-1 {
			t.Errorf("terminal state %s at event %d of %d:\n%s", st, i, len(events), gosdkDescribe(events))
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			artifacts++
			if a.Artifact == nil {
				t.Fatalf("artifact update %d without artifact", i)
			}
			if artifactID == "" {
				artifactID = a.Artifact.ID
			} else {
				if a.Artifact.ID != artifactID {
					t.Errorf("artifact update %d is for artifact %q, want %q (one streamed artifact)", i, a.Artifact.ID, artifactID)
				}
				if !a.Append {
					t.Errorf("artifact update %d (not the first chunk) has append=false", i)
				}
			}
		}
	}
	if artifacts < c.minArtifacts || (c.maxArtifacts > 0 && artifacts > c.maxArtifacts) {
		t.Errorf("%d artifact updates, want %d..%d:\n%s", artifacts, c.minArtifacts, c.maxArtifacts, gosdkDescribe(events))
	}
	st, ok := gosdkEventState(events[len(events)-1])
	if !ok || st != c.final {
		t.Fatalf("stream ended with %s (state %q), want state %s:\n%s", gosdkDescribe(events[len(events)-1:]), st, c.final, gosdkDescribe(events))
	}
	return id
}

// gosdkStartInBackground sends text to the client's agent with
// returnImmediately (0.3: blocking=false) and returns the task as first
// reported, still running.
func gosdkStartInBackground(t *testing.T, ctx context.Context, client *a2aclient.Client, text string) *a2a.Task {
	t.Helper()
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatalf("SendMessage(returnImmediately) %q: %v", text, err)
	}
	task := gosdkAsTask(t, res)
	if task.Status.State.Terminal() {
		t.Fatalf("task %s already %s right after a non-blocking send", task.ID, task.Status.State)
	}
	return task
}

// gosdkAgentURL is the base an agent's card hangs under.
func gosdkAgentURL(base, name string) string {
	return strings.TrimSuffix(base, "/") + "/agents/" + name
}

// gosdkV10Client resolves name's card with the SDK's default resolver settings
// and builds a client with the SDK's default factory (JSON-RPC and REST
// for 1.0).
func gosdkV10Client(t *testing.T, ctx context.Context, base, name string) (*a2aclient.Client, *a2a.AgentCard, *gosdkWireLog) {
	t.Helper()
	hc, log := gosdkHTTPClient()
	resolver := &agentcard.Resolver{Client: hc}
	card, err := resolver.Resolve(ctx, gosdkAgentURL(base, name))
	if err != nil {
		t.Fatalf("resolving %s card: %v", name, err)
	}
	client, err := a2aclient.NewFactory(a2aclient.WithJSONRPCTransport(hc)).CreateFromCard(ctx, card)
	if err != nil {
		t.Fatalf("creating 1.0 client for %s: %v", name, err)
	}
	t.Cleanup(func() { client.Destroy() })
	return client, card, log
}

// gosdkV03Client resolves name's card with the SDK's 0.3 card parser and builds
// a client that has only the 0.3 JSON-RPC transport, so the SDK must find
// the 0.3 interface in the card.
func gosdkV03Client(t *testing.T, ctx context.Context, base, name string) (*a2aclient.Client, *a2a.AgentCard, *gosdkWireLog) {
	t.Helper()
	hc, log := gosdkHTTPClient()
	resolver := &agentcard.Resolver{Client: hc, CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(ctx, gosdkAgentURL(base, name))
	if err != nil {
		t.Fatalf("resolving %s card (0.3 parser): %v", name, err)
	}
	client, err := gosdkV03Factory(hc).CreateFromCard(ctx, card)
	if err != nil {
		t.Fatalf("creating 0.3 client for %s: %v", name, err)
	}
	t.Cleanup(func() { client.Destroy() })
	return client, card, log
}

func gosdkV03Factory(hc *http.Client) *a2aclient.Factory {
	return a2aclient.NewFactory(
		a2aclient.WithDefaultsDisabled(),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
	)
}

func TestA2AGoInterop(t *testing.T) {
	m := meshtest.Start(t)
	base := m.URL

	t.Run("v1.0", func(t *testing.T) { gosdkV10(t, base) })
	t.Run("v0.3", func(t *testing.T) { gosdkV03(t, base) })
}

func gosdkV10(t *testing.T, base string) {
	// The echo task from SendMessage, reused by GetTask and ListTasks.
	var echoTask *a2a.Task

	t.Run("Card", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		for _, name := range []string{"echo", "slow", "ask"} {
			_, card, _ := gosdkV10Client(t, ctx, base, name)
			if card.Name == "" {
				t.Errorf("%s card has no name", name)
			}
			if !card.Capabilities.Streaming {
				t.Errorf("%s card: capabilities.streaming is not true (the SDK then silently turns SendStreamingMessage into SendMessage)", name)
			}
			var has10, has03 bool
			for _, iface := range card.SupportedInterfaces {
				if iface.ProtocolBinding != a2a.TransportProtocolJSONRPC {
					continue
				}
				if iface.URL != gosdkAgentURL(base, name) || iface.Tenant != "" {
					continue
				}
				switch iface.ProtocolVersion {
				case "1.0":
					has10 = true
				case "0.3":
					has03 = true
				}
			}
			if !has10 || !has03 {
				ifaces, _ := json.Marshal(card.SupportedInterfaces)
				t.Errorf("%s card: supportedInterfaces %s lack JSONRPC 1.0 and 0.3 at %s", name, ifaces, gosdkAgentURL(base, name))
			}
		}
	})

	t.Run("SendMessage/echo", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV10Client(t, ctx, base, "echo")
		text := "hello from a2a-go 1.0 " + uuid.NewString()
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		})
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		task := gosdkAsTask(t, res)
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("echo task state %s, want %s", task.Status.State, a2a.TaskStateCompleted)
		}
		if got := gosdkArtifactText(task); got != text {
			t.Fatalf("echo artifacts say %q, want %q", got, text)
		}
		log.expectWire(t, "SendMessage", "1.0")
		echoTask = task
	})

	t.Run("SendStreamingMessage/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV10Client(t, ctx, base, "slow")
		events, err := gosdkCollect(client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=3 delay=50ms")),
		}))
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v\nevents so far:\n%s", err, gosdkDescribe(events))
		}
		gosdkCheckStream(t, events, gosdkStreamCheck{taskFirst: true, minArtifacts: 3, maxArtifacts: 3, final: a2a.TaskStateCompleted})
		c, _ := log.last("SendStreamingMessage")
		if c.Accept != "text/event-stream" || c.A2AVersion != "1.0" {
			t.Errorf("streaming call went out as %+v", c)
		}
	})

	t.Run("GetTask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		echoTask := gosdkEchoTask(t, ctx, base, echoTask, gosdkV10Client)
		client, _, log := gosdkV10Client(t, ctx, base, "echo")
		got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: echoTask.ID})
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		if got.ID != echoTask.ID || got.ContextID != echoTask.ContextID {
			t.Fatalf("GetTask returned task %s/%s, want %s/%s", got.ID, got.ContextID, echoTask.ID, echoTask.ContextID)
		}
		if got.Status.State != a2a.TaskStateCompleted || gosdkArtifactText(got) != gosdkArtifactText(echoTask) {
			t.Fatalf("GetTask: state %s artifacts %q; want completed %q", got.Status.State, gosdkArtifactText(got), gosdkArtifactText(echoTask))
		}
		log.expectWire(t, "GetTask", "1.0")
	})

	t.Run("ListTasks", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		echoTask := gosdkEchoTask(t, ctx, base, echoTask, gosdkV10Client)
		client, _, log := gosdkV10Client(t, ctx, base, "echo")
		resp, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: echoTask.ContextID, PageSize: 10})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		found := false
		for _, task := range resp.Tasks {
			if task.ContextID != echoTask.ContextID {
				t.Errorf("ListTasks(contextId %s) returned task %s of context %s", echoTask.ContextID, task.ID, task.ContextID)
			}
			if task.ID == echoTask.ID {
				found = true
				if task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("listed echo task is %s", task.Status.State)
				}
			}
		}
		if !found {
			t.Fatalf("ListTasks(contextId %s) = %+v, missing task %s", echoTask.ContextID, resp, echoTask.ID)
		}
		if resp.TotalSize < 1 || resp.PageSize < 1 {
			t.Errorf("ListTasks totalSize %d pageSize %d", resp.TotalSize, resp.PageSize)
		}
		log.expectWire(t, "ListTasks", "1.0")
	})

	t.Run("CancelTask/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV10Client(t, ctx, base, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=100 delay=200ms")
		canceled, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if canceled.ID != task.ID || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask returned %s in state %s, want %s canceled", canceled.ID, canceled.Status.State, task.ID)
		}
		got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask after cancel: %v", err)
		}
		if got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("task is %s after cancel", got.Status.State)
		}
		gosdkRecancel(t, ctx, client, task.ID)
		log.expectWire(t, "CancelTask", "1.0")
		gosdkCancelCompleted(t, ctx, base, gosdkEchoTask(t, ctx, base, echoTask, gosdkV10Client).ID, gosdkV10Client)
	})

	t.Run("SubscribeToTask/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV10Client(t, ctx, base, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=5 delay=200ms")
		events, err := gosdkCollect(client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
		if err != nil {
			t.Fatalf("SubscribeToTask: %v\nevents so far:\n%s", err, gosdkDescribe(events))
		}
		gosdkCheckStream(t, events, gosdkStreamCheck{taskFirst: true, taskID: task.ID, minArtifacts: 1, maxArtifacts: 5, final: a2a.TaskStateCompleted})
		got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("GetTask after stream: %v", err)
		}
		if got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task %s after its stream ended completed", got.Status.State)
		}
		c, _ := log.last("SubscribeToTask")
		if c.Accept != "text/event-stream" || c.A2AVersion != "1.0" {
			t.Errorf("subscribe call went out as %+v", c)
		}
	})

	t.Run("MultiTurn/ask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, _ := gosdkV10Client(t, ctx, base, "ask")
		gosdkMultiTurn(t, ctx, client)
	})

	t.Run("UnknownTask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, _ := gosdkV10Client(t, ctx, base, "echo")
		gosdkUnknownTask(t, ctx, client, "1.0")
	})
}

// gosdkClientFunc builds a client for one agent (gosdkV10Client or gosdkV03Client).
type gosdkClientFunc func(t *testing.T, ctx context.Context, base, name string) (*a2aclient.Client, *a2a.AgentCard, *gosdkWireLog)

// gosdkEchoTask returns the completed echo task that SendMessage/echo left
// in shared, or, when that subtest did not run (-run picked this one
// alone) or failed, a fresh one sent now, so the subtests using it always
// test something rather than skip.
func gosdkEchoTask(t *testing.T, ctx context.Context, base string, shared *a2a.Task, newClient gosdkClientFunc) *a2a.Task {
	t.Helper()
	if shared != nil {
		return shared
	}
	client, _, _ := newClient(t, ctx, base, "echo")
	text := "echo task for this subtest " + uuid.NewString()
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
	})
	if err != nil {
		t.Fatalf("sending the echo task this subtest needs: %v", err)
	}
	task := gosdkAsTask(t, res)
	if task.Status.State != a2a.TaskStateCompleted || gosdkArtifactText(task) != text {
		t.Fatalf("echo task %s with artifacts %q, want completed %q", task.Status.State, gosdkArtifactText(task), text)
	}
	return task
}

// gosdkCancelCompleted checks that canceling a completed task fails with the
// SDK's task-not-cancelable error (-32002).
func gosdkCancelCompleted(t *testing.T, ctx context.Context, base string, id a2a.TaskID, newClient gosdkClientFunc) {
	t.Helper()
	client, _, _ := newClient(t, ctx, base, "echo")
	if _, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("canceling completed task %s: %v, want %v", id, err, a2a.ErrTaskNotCancelable)
	}
}

// gosdkRecancel cancels an already canceled task. The spec makes that
// TaskNotCancelableError (-32002); the SDK's own server answers with the
// canceled task instead, so either passes, but nothing else does.
func gosdkRecancel(t *testing.T, ctx context.Context, client *a2aclient.Client, id a2a.TaskID) {
	t.Helper()
	again, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
	switch {
	case errors.Is(err, a2a.ErrTaskNotCancelable):
	case err != nil:
		t.Errorf("second cancel: %v, want %v", err, a2a.ErrTaskNotCancelable)
	case again.Status.State != a2a.TaskStateCanceled:
		t.Errorf("second cancel returned the task in state %s", again.Status.State)
	}
}

// gosdkMultiTurn runs the ask agent's two turns: input-required, then completed
// with a greeting naming who answered.
func gosdkMultiTurn(t *testing.T, ctx context.Context, client *a2aclient.Client) {
	t.Helper()
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi")),
	})
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	first := gosdkAsTask(t, res)
	if first.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first turn left the task %s, want %s", first.Status.State, a2a.TaskStateInputRequired)
	}
	name := "Ada" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	res, err = client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, first, a2a.NewTextPart(name)),
	})
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	second := gosdkAsTask(t, res)
	if second.ID != first.ID || second.ContextID != first.ContextID {
		t.Fatalf("second turn answered as task %s/%s, want %s/%s", second.ID, second.ContextID, first.ID, first.ContextID)
	}
	if second.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("second turn left the task %s, want completed", second.Status.State)
	}
	if !strings.Contains(gosdkTaskText(second), name) {
		t.Fatalf("greeting does not name %q: %q", name, gosdkTaskText(second))
	}
}

// gosdkUnknownTask checks every task call on a made-up id fails with the SDK's
// task-not-found error; version is the protocol version the client speaks
// ("1.0" or "0.3").
func gosdkUnknownTask(t *testing.T, ctx context.Context, client *a2aclient.Client, version string) {
	t.Helper()
	id := a2a.TaskID("no-such-task-" + uuid.NewString())
	if _, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown): %v, want %v", err, a2a.ErrTaskNotFound)
	}
	if _, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("CancelTask(unknown): %v, want %v", err, a2a.ErrTaskNotFound)
	}
	// A stream must carry the error as an SSE event: the SDK reads only
	// "data:" lines and ignores Content-Type, so a plain JSON error body
	// ends the stream with no events and no error at all.
	t.Run("SubscribeToTask", func(t *testing.T) {
		events, err := gosdkCollect(client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}))
		if !errors.Is(err, a2a.ErrTaskNotFound) || len(events) != 0 {
			t.Errorf("%s(unknown): %d events, error %v; want no events and %v (an empty stream with no error means the error was not sent as an SSE data event)",
				map[string]string{"1.0": "SubscribeToTask", "0.3": "tasks/resubscribe"}[version], len(events), err, a2a.ErrTaskNotFound)
		}
	})
	// The 0.3 client has no ListTasks (it fails locally).
	if version == "1.0" {
		resp, err := client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: "no-such-context-" + uuid.NewString()})
		if err != nil {
			t.Errorf("ListTasks(unknown context): %v", err)
		} else if len(resp.Tasks) != 0 {
			t.Errorf("ListTasks(unknown context) returned %d tasks", len(resp.Tasks))
		}
	}
}

func gosdkV03(t *testing.T, base string) {
	var echoTask *a2a.Task

	t.Run("Card", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		for _, name := range []string{"echo", "slow", "ask"} {
			_, card, _ := gosdkV03Client(t, ctx, base, name)
			if !card.Capabilities.Streaming {
				t.Errorf("%s card: capabilities.streaming is not true", name)
			}
		}
	})

	// A 0.3-only client reads url/preferredTransport/protocolVersion, not
	// supportedInterfaces: strip those and the card must still work.
	t.Run("Card/0.3FieldsOnly", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		hc, log := gosdkHTTPClient()
		url := gosdkAgentURL(base, "echo") + "/.well-known/agent-card.json"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", url, resp.Status, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("card is not JSON: %v", err)
		}
		if pv, _ := doc["protocolVersion"].(string); !strings.HasPrefix(pv, "0.3") || doc["url"] != gosdkAgentURL(base, "echo") || doc["preferredTransport"] != "JSONRPC" {
			t.Errorf("0.3 card fields: protocolVersion %v url %v preferredTransport %v", doc["protocolVersion"], doc["url"], doc["preferredTransport"])
		}
		delete(doc, "supportedInterfaces")
		stripped, _ := json.Marshal(doc)
		card, err := a2av0.NewAgentCardParser()(stripped)
		if err != nil {
			t.Fatalf("0.3 parser on the 0.3 fields: %v", err)
		}
		client, err := gosdkV03Factory(hc).CreateFromCard(ctx, card)
		if err != nil {
			t.Fatalf("0.3 client from the 0.3 fields alone: %v", err)
		}
		defer client.Destroy()
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("legacy card")),
		})
		if err != nil {
			t.Fatalf("message/send: %v", err)
		}
		if task := gosdkAsTask(t, res); task.Status.State != a2a.TaskStateCompleted || gosdkArtifactText(task) != "legacy card" {
			t.Fatalf("echo via legacy card: %s %q", task.Status.State, gosdkArtifactText(task))
		}
		log.expectWire(t, "message/send", "0.3")
	})

	t.Run("SendMessage/echo", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV03Client(t, ctx, base, "echo")
		text := "hello from a2a-go 0.3 " + uuid.NewString()
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		})
		if err != nil {
			t.Fatalf("message/send: %v", err)
		}
		task := gosdkAsTask(t, res)
		if task.Status.State != a2a.TaskStateCompleted || gosdkArtifactText(task) != text {
			t.Fatalf("echo task %s with artifacts %q, want completed %q", task.Status.State, gosdkArtifactText(task), text)
		}
		log.expectWire(t, "message/send", "0.3")
		if _, ok := log.last("SendMessage"); ok {
			t.Error("the 0.3 client spoke 1.0")
		}
		echoTask = task
	})

	t.Run("SendStreamingMessage/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV03Client(t, ctx, base, "slow")
		events, err := gosdkCollect(client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("chunks=3 delay=50ms")),
		}))
		if err != nil {
			t.Fatalf("message/stream: %v\nevents so far:\n%s", err, gosdkDescribe(events))
		}
		gosdkCheckStream(t, events, gosdkStreamCheck{taskFirst: true, minArtifacts: 3, maxArtifacts: 3, final: a2a.TaskStateCompleted})
		log.expectWire(t, "message/stream", "0.3")
	})

	t.Run("GetTask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		echoTask := gosdkEchoTask(t, ctx, base, echoTask, gosdkV03Client)
		client, _, log := gosdkV03Client(t, ctx, base, "echo")
		got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: echoTask.ID})
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		if got.ID != echoTask.ID || got.Status.State != a2a.TaskStateCompleted || gosdkArtifactText(got) != gosdkArtifactText(echoTask) {
			t.Fatalf("tasks/get: %s %s %q", got.ID, got.Status.State, gosdkArtifactText(got))
		}
		log.expectWire(t, "tasks/get", "0.3")
	})

	t.Run("CancelTask/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV03Client(t, ctx, base, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=100 delay=200ms")
		canceled, err := client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("tasks/cancel: %v", err)
		}
		if canceled.ID != task.ID || canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("tasks/cancel returned %s in state %s, want %s canceled", canceled.ID, canceled.Status.State, task.ID)
		}
		gosdkRecancel(t, ctx, client, task.ID)
		log.expectWire(t, "tasks/cancel", "0.3")
		gosdkCancelCompleted(t, ctx, base, gosdkEchoTask(t, ctx, base, echoTask, gosdkV03Client).ID, gosdkV03Client)
	})

	t.Run("SubscribeToTask/slow", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, log := gosdkV03Client(t, ctx, base, "slow")
		task := gosdkStartInBackground(t, ctx, client, "chunks=5 delay=200ms")
		events, err := gosdkCollect(client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
		if err != nil {
			t.Fatalf("tasks/resubscribe: %v\nevents so far:\n%s", err, gosdkDescribe(events))
		}
		// 0.3 does not promise the Task as the first event of a
		// resubscription, so only the rest is checked.
		gosdkCheckStream(t, events, gosdkStreamCheck{taskID: task.ID, minArtifacts: 1, maxArtifacts: 5, final: a2a.TaskStateCompleted})
		log.expectWire(t, "tasks/resubscribe", "0.3")
	})

	t.Run("MultiTurn/ask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, _ := gosdkV03Client(t, ctx, base, "ask")
		gosdkMultiTurn(t, ctx, client)
	})

	t.Run("UnknownTask", func(t *testing.T) {
		ctx := gosdkStepContext(t)
		client, _, _ := gosdkV03Client(t, ctx, base, "echo")
		gosdkUnknownTask(t, ctx, client, "0.3")
	})
}
