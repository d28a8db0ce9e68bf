package integration

// Agents that answer a send with a Message, not a task (A2A: SendMessage
// returns a Task or a Message; TCK DM-MSG-001), through every binding and
// both versions: the built-in hello agent and an agent of the test's own.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/ssetest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/taskstore"
)

// replyMesh is a mesh with gRPC and a second edge on the same bus.
type replyMesh struct {
	*rawMesh
	second *rawMesh // the second edge, same NATS
}

func startReplyMesh(t *testing.T) *replyMesh {
	t.Helper()
	m := startRawMesh(t, meshtest.WithGRPC(), meshtest.WithConfig(func(c *mesh.Config) { c.NATSListen = "127.0.0.1:0" }))
	e2 := startPushEdge(t, m.NATSURL(), edge.PushConfig{})
	second := &rawMesh{Mesh: &meshtest.Mesh{Mesh: m.Mesh.Mesh, URL: e2.URL}, hc: m.hc}
	waitAgent(t, e2.URL, "hello")
	return &replyMesh{rawMesh: m, second: second}
}

// replyID is the id of the hidden task a send to agent with messageID
// created (no credentials: no owner).
func replyID(agent, messageID string) string {
	return taskstore.DeriveTaskID(agent, "", "", messageID)
}

// requireHiddenReplyTask checks the task a message reply was recorded in
// exists on the bus as a reply, and that no task method finds it.
func (m *replyMesh) requireHiddenReplyTask(t *testing.T, p proto, path, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := m.Store().LoadTask(ctx, id)
	require.NoError(t, err, "the reply's task is on the bus")
	require.True(t, rec.Task.IsReply(), "the task ended as a message reply: %+v", rec.Task.Status)
	for _, via := range []*rawMesh{m.rawMesh, m.second} {
		e := via.fails(t, path, p.get, map[string]any{"id": id}, -32001)
		assert.Contains(t, e.Message, "Task not found")
		via.fails(t, path, p.cancel, map[string]any{"id": id}, -32001)
		s, r := via.openStream(t, path, rpcBody(t, via.newReqID(), p.resub, map[string]any{"id": id}), nil)
		if s != nil {
			f := s.readFrame(t, p, nil)
			require.NotNil(t, f, "%s of the hidden task: an empty stream", p.resub)
			require.NotNil(t, f.Reply.Error, "%s of the hidden task: %s", p.resub, f.Reply.Body)
			assert.Equal(t, -32001, f.Reply.Error.Code)
		} else {
			require.NotNil(t, r.Error, "%s answered %s", p.resub, r.Body)
			assert.Equal(t, -32001, r.Error.Code)
		}
	}
}

// decodeReplyMessage decodes a send's result as a message: 1.0
// {"message":{...}}, 0.3 {"kind":"message",...}.
func decodeReplyMessage(t *testing.T, p proto, result json.RawMessage) wMessage {
	t.Helper()
	raw := result
	if p.name == v10.name {
		var r map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(result, &r))
		require.Lenf(t, r, 1, "a 1.0 send result has one member: %s", result)
		require.Containsf(t, r, "message", "the result is a message: %s", result)
		raw = r["message"]
		requireNoKind(t, result)
	}
	var m wMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	if p.name == v03.name {
		require.Equalf(t, "message", m.Kind, "0.3 result kind: %s", result)
	}
	require.Equal(t, p.agentRole, m.Role)
	require.NotEmpty(t, m.MessageID)
	require.Emptyf(t, m.TaskID, "a message reply names no task: %s", result)
	require.NotEmptyf(t, m.ContextID, "a message reply names its context: %s", result)
	assert.NotContains(t, string(raw), a2a.ReplyKey, "the mesh's marker stays inside")
	return m
}

// Blocking, non-blocking and streaming sends to hello, over JSON-RPC 1.0
// and 0.3: the answer is the agent's message; a retry with the same
// messageId through the other edge gets the same message; the task the
// reply was recorded in is found by no task method, and not listed.
func TestMessageReplyJSONRPC(t *testing.T) {
	m := startReplyMesh(t)
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			for _, mode := range []string{"blocking", "non-blocking"} {
				t.Run(mode, func(t *testing.T) {
					msg := p.msg("world")
					var cfg map[string]any
					if mode == "non-blocking" {
						cfg = p.nonBlocking
					}
					first := decodeReplyMessage(t, p, m.ok(t, "/agents/hello", p.send, sendParams(msg, cfg)))
					assert.Equal(t, "hello, world", first.text())
					again := decodeReplyMessage(t, p, m.second.ok(t, "/agents/hello", p.send, sendParams(msg, cfg)))
					assert.Equal(t, first.MessageID, again.MessageID, "a retry gets the same message")
					assert.Equal(t, first.ContextID, again.ContextID)
					assert.Equal(t, "hello, world", again.text())
					m.requireHiddenReplyTask(t, p, "/agents/hello", replyID("hello", msg["messageId"].(string)))
				})
			}
			t.Run("stream", func(t *testing.T) {
				msg := p.msg("stream")
				s, id := m.stream(t, "/agents/hello", p.stream, sendParams(msg, nil), nil)
				frames := s.readAll(t, p, id, 10)
				require.Len(t, frames, 1, "a message is the only event of its stream")
				f := frames[0]
				require.Nil(t, f.Reply.Error)
				require.Equal(t, "message", f.Item.Kind, "%s", f.Reply.Result)
				assert.Equal(t, "hello, stream", f.Item.Text)
				first := decodeReplyMessage(t, p, replyAsSendResult(t, p, f.Reply.Result))

				// The retry, streaming through the other edge, and a
				// blocking one: the same message.
				s2, id2 := m.second.stream(t, "/agents/hello", p.stream, sendParams(msg, nil), nil)
				frames = s2.readAll(t, p, id2, 10)
				require.Len(t, frames, 1)
				again := decodeReplyMessage(t, p, replyAsSendResult(t, p, frames[0].Reply.Result))
				assert.Equal(t, first.MessageID, again.MessageID)
				blocking := decodeReplyMessage(t, p, m.second.ok(t, "/agents/hello", p.send, sendParams(msg, nil)))
				assert.Equal(t, first.MessageID, blocking.MessageID)
				m.requireHiddenReplyTask(t, p, "/agents/hello", replyID("hello", msg["messageId"].(string)))
			})
		})
	}
	t.Run("not listed", func(t *testing.T) {
		msg := v10.msg("listed?")
		res := decodeReplyMessage(t, v10, m.ok(t, "/agents/hello", v10.send, sendParams(msg, nil)))
		list := m.listTasks(t, map[string]any{"tenant": "hello", "contextId": res.ContextID})
		assert.Empty(t, list.Tasks, "a message reply's task is not listed")
		assert.Equal(t, 0, *list.TotalSize)
	})
}

// replyAsSendResult is a stream event's result as a send's result (the
// same shape in both versions).
func replyAsSendResult(t *testing.T, _ proto, result json.RawMessage) json.RawMessage {
	t.Helper()
	return result
}

// HTTP+JSON, raw: message:send answers {"message":…}, message:stream one
// SSE event of it, and the task is 404 by id.
func TestMessageReplyREST(t *testing.T) {
	m := startReplyMesh(t)
	post := func(base, path, body string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/a2a+json")
		resp, err := m.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		require.NoError(t, err)
		return resp, b
	}
	for _, path := range []string{"/agents/hello", "/hello"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			mid := uuid.NewString()
			body := `{"message":{"role":"ROLE_USER","messageId":"` + mid + `","parts":[{"text":"rest"}]}}`
			resp, b := post(m.URL, path+"/message:send", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
			first := decodeReplyMessage(t, v10, b)
			assert.Equal(t, "hello, rest", first.text())
			resp, b = post(m.second.URL, path+"/message:send", body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
			again := decodeReplyMessage(t, v10, b)
			assert.Equal(t, first.MessageID, again.MessageID)

			// the stream: one event, the message
			mid2 := uuid.NewString()
			req, err := http.NewRequest(http.MethodPost, m.URL+path+"/message:stream",
				strings.NewReader(`{"message":{"role":"ROLE_USER","messageId":"`+mid2+`","parts":[{"text":"sse"}]}}`))
			require.NoError(t, err)
			req.Header.Set("Accept", "text/event-stream")
			ctx, cancel := context.WithTimeout(context.Background(), rawStreamTimeout)
			defer cancel()
			resp2, err := m.hc.Do(req.WithContext(ctx))
			require.NoError(t, err)
			defer resp2.Body.Close()
			evs, err := ssetest.ReadAll(resp2.Body)
			require.NoError(t, err)
			require.Len(t, evs, 1, "one event, then the stream ends")
			sm := decodeReplyMessage(t, v10, json.RawMessage(evs[0].Data))
			assert.Equal(t, "hello, sse", sm.text())

			for _, id := range []string{replyID("hello", mid), replyID("hello", mid2)} {
				req, err := http.NewRequest(http.MethodGet, m.URL+path+"/tasks/"+id, nil)
				require.NoError(t, err)
				resp, err := m.hc.Do(req)
				require.NoError(t, err)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", b)
				assert.Contains(t, string(b), "TASK_NOT_FOUND")
			}
		})
	}
}

// The official Go SDK (a2a-go v2) over JSON-RPC, HTTP+JSON and gRPC: its
// SendMessage returns a *a2a.Message, its stream yields the message as
// its one event, and GetTask of the hidden task is ErrTaskNotFound.
func TestMessageReplyA2AGo(t *testing.T) {
	m := startReplyMesh(t)
	for _, proto := range []goa2a.TransportProtocol{goa2a.TransportProtocolJSONRPC, goa2a.TransportProtocolHTTPJSON, goa2a.TransportProtocolGRPC} {
		t.Run(string(proto), func(t *testing.T) {
			ctx := gosdkStepContext(t)
			resolver := &agentcard.Resolver{Client: m.hc, CardParser: gosdkSecuredParser}
			card, err := resolver.Resolve(ctx, gosdkAgentURL(m.URL, "hello"))
			require.NoError(t, err)
			factory := a2aclient.NewFactory(
				a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []goa2a.TransportProtocol{proto}}),
				a2aclient.WithJSONRPCTransport(m.hc),
				a2aclient.WithRESTTransport(m.hc),
				a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
			)
			c, err := factory.CreateFromCard(ctx, card)
			require.NoError(t, err)
			t.Cleanup(func() { c.Destroy() })

			msg := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("sdk"))
			res, err := c.SendMessage(ctx, &goa2a.SendMessageRequest{Message: msg})
			require.NoError(t, err)
			reply, ok := res.(*goa2a.Message)
			require.Truef(t, ok, "SendMessage answered %T, want *a2a.Message", res)
			assert.Equal(t, "hello, sdk", gosdkTexts(reply.Parts))
			assert.Equal(t, goa2a.MessageRoleAgent, reply.Role)
			assert.Empty(t, reply.TaskID)
			assert.NotEmpty(t, reply.ContextID)

			// the retry (same message id) gets the same message
			res, err = c.SendMessage(ctx, &goa2a.SendMessageRequest{Message: msg})
			require.NoError(t, err)
			again, ok := res.(*goa2a.Message)
			require.True(t, ok)
			assert.Equal(t, reply.ID, again.ID)

			_, err = c.GetTask(ctx, &goa2a.GetTaskRequest{ID: goa2a.TaskID(replyID("hello", string(msg.ID)))})
			require.ErrorIs(t, err, goa2a.ErrTaskNotFound)

			var events []goa2a.Event
			smsg := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("sdk stream"))
			for ev, err := range c.SendStreamingMessage(ctx, &goa2a.SendMessageRequest{Message: smsg}) {
				require.NoError(t, err)
				events = append(events, ev)
				require.Less(t, len(events), 10)
			}
			require.Len(t, events, 1, "a message is the stream's only event")
			sm, ok := events[0].(*goa2a.Message)
			require.Truef(t, ok, "stream event %T, want *a2a.Message", events[0])
			assert.Equal(t, "hello, sdk stream", gosdkTexts(sm.Parts))
		})
	}
}

// stamper answers with a message that is new on every run (its text is a
// fresh UUID), and counts its runs.
type stamper struct{ runs atomic.Int64 }

func (s *stamper) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "stamper", Description: "answers with a fresh id", Version: "1.0.0",
		Capabilities:      a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "s", Description: "d", Tags: []string{"t"}}}}
}

func (s *stamper) RepliesWithMessage() bool { return true }

func (s *stamper) Run(_ context.Context, _ *agentrt.Request, w agentrt.EventWriter) error {
	s.runs.Add(1)
	return agentrt.ReplyText(w, uuid.NewString())
}

// A message reply is durable: once answered, a retry with the same
// messageId through another edge gets the same message after the worker
// that answered is gone, from the log, without running the agent again
// on the worker that replaced it.
func TestMessageReplySurvivesItsWorker(t *testing.T) {
	m := startReplyMesh(t)
	ag := &stamper{}
	startWorker := func() (stop func()) {
		w := &agentrt.Worker{Store: m.Store(), Name: "stamper", Agent: ag, Concurrency: 2, Timeout: 10 * time.Second,
			Logger: quietPushLogger()}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		stop = sync.OnceFunc(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Error("worker did not stop")
			}
		})
		t.Cleanup(stop)
		waitAgent(t, m.URL, "stamper")
		waitAgent(t, m.second.URL, "stamper")
		return stop
	}
	stopFirst := startWorker()

	type sent struct {
		p     proto
		msg   map[string]any
		first wMessage
	}
	var all []sent
	for _, p := range bothProtos {
		msg := p.msg("x")
		first := decodeReplyMessage(t, p, m.ok(t, "/agents/stamper", p.send, sendParams(msg, nil)))
		_, err := uuid.Parse(first.text())
		require.NoError(t, err, "the reply is the agent's: %q", first.text())
		all = append(all, sent{p, msg, first})
	}
	require.EqualValues(t, 2, ag.runs.Load())
	stopFirst()
	startWorker() // a new instance: the agent is routable again

	for _, s := range all {
		again := decodeReplyMessage(t, s.p, m.second.ok(t, "/agents/stamper", s.p.send, sendParams(s.msg, nil)))
		assert.Equal(t, s.first.MessageID, again.MessageID)
		assert.Equal(t, s.first.text(), again.text(), "the recorded reply, not a new run's")
		st, id := m.second.stream(t, "/agents/stamper", s.p.stream, sendParams(s.msg, nil), nil)
		frames := st.readAll(t, s.p, id, 10)
		require.Len(t, frames, 1)
		assert.Equal(t, s.first.text(), frames[0].Item.Text)
	}
	assert.EqualValues(t, 2, ag.runs.Load(), "a retry ran the agent again")
}

// The JavaScript SDK (@a2a-js/sdk 1.x over JSON-RPC, HTTP+JSON and gRPC;
// 0.3.x over JSON-RPC) gets hello's message as the answer of a send and
// as the one event of a stream (integration/node/reply.mjs).
func TestNodeSDKMessageReply(t *testing.T) {
	node, dir := requireNode(t)
	m := meshtest.Start(t, meshtest.WithGRPC())
	runNodeChecks(t, node, dir, "reply.mjs", m.URL)
}

// crasher hangs on its first run (the test stops its worker), after
// deciding to answer with a task when decideFirst is set; a later run
// replies with a message, or completes the task when that is refused.
type crasher struct {
	name        string
	decideFirst bool
	started     chan struct{}
}

func (c *crasher) Card() a2a.AgentCard {
	card := (&stamper{}).Card()
	card.Name = c.name
	return card
}

func (c *crasher) RepliesWithMessage() bool { return true }

func (c *crasher) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	if req.Attempt == 1 {
		if c.decideFirst {
			if err := w.Working(""); err != nil {
				return err
			}
		}
		c.started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	err := agentrt.ReplyText(w, "replied on attempt "+strconv.Itoa(req.Attempt))
	if errors.Is(err, agentrt.ErrCannotReply) {
		return w.Complete("completed: the reply was refused")
	}
	return err
}

// A turn whose worker stops mid-run runs again on another worker: a run
// that decided nothing leaves the new run free to reply, and a streaming
// send waiting for the decision gets the message; once the first run
// decided on a task (the stream showed the task), the new run's reply is
// refused and the task completes as a task, visible.
func TestMessageReplyAfterWorkerLoss(t *testing.T) {
	m := startReplyMesh(t)
	for _, decideFirst := range []bool{false, true} {
		name := "crasher-" + strconv.FormatBool(decideFirst)
		t.Run(name, func(t *testing.T) {
			ag := &crasher{name: name, decideFirst: decideFirst, started: make(chan struct{}, 1)}
			startAgentWorker := func() func() {
				w := &agentrt.Worker{Store: m.Store(), Name: name, Agent: ag, Concurrency: 1, Timeout: 20 * time.Second,
					Logger: quietPushLogger()}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx) }()
				stop := sync.OnceFunc(func() {
					cancel()
					select {
					case <-done:
					case <-time.After(10 * time.Second):
						t.Error("worker did not stop")
					}
				})
				t.Cleanup(stop)
				waitAgent(t, m.URL, name)
				return stop
			}
			stop := startAgentWorker()
			s, id := m.stream(t, "/agents/"+name, v10.stream, sendParams(v10.msg("x"), nil), nil)
			select {
			case <-ag.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the agent never ran")
			}
			stop()
			startAgentWorker()
			frames := s.readAll(t, v10, id, 20)
			require.NotEmpty(t, frames)
			if !decideFirst {
				require.Len(t, frames, 1, "one message")
				assert.Equal(t, "message", frames[0].Item.Kind)
				assert.Equal(t, "replied on attempt 2", frames[0].Item.Text)
				return
			}
			require.Equal(t, "task", frames[0].Item.Kind, "the first run decided on a task")
			last := frames[len(frames)-1].Item
			assert.Equal(t, "status", last.Kind)
			assert.Equal(t, v10.completed, last.State)
			assert.Equal(t, "completed: the reply was refused", last.Text)
			tk := m.getTask(t, v10, "/agents/"+name, frames[0].Item.TaskID, nil)
			assert.Equal(t, v10.completed, tk.Status.State, "the task is visible")
		})
	}
}
