package integration

// Extensions (spec §3.2.6, §4.6) through every binding and both versions:
// the requested set (A2A-Extensions; X-A2A-Extensions from 0.3 clients;
// gRPC metadata a2a-extensions) reaches the agent's Request, the answer
// echoes what applies (a blocking send: what the agent activated; a
// stream: what the agent's card declares, then the events and the gRPC
// trailer carry what it activated), a required extension not requested
// is -32008 (HTTP 400 / FAILED_PRECONDITION, EXTENSION_SUPPORT_REQUIRED),
// and every card lists the mesh's trace extension.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

const (
	extActive = "https://example.test/ext/active/v1" // declared; activated when requested
	extIdle   = "https://example.test/ext/idle/v1"   // declared; never activated
	extMust   = "https://example.test/ext/must/v1"   // required by the strict agent
	extOther  = "https://example.test/ext/other/v1"  // declared by no one
)

// extSeen records the extensions each turn's Request carried, by the
// turn's message id.
type extSeen struct {
	mu    sync.Mutex
	byMsg map[string][]string
}

func (s *extSeen) get(msgID string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.byMsg[msgID]
	return v, ok
}

// extAgent declares extActive and extIdle (and, when strict, extMust as
// required), records what it was asked for and activates extActive
// (unless the message says "quiet"); a message "ask" asks for input.
type extAgent struct {
	strict bool
	seen   *extSeen
}

func (a extAgent) Card() a2a.AgentCard {
	exts := []a2a.AgentExtension{
		{URI: extActive, Description: "activated whenever requested"},
		{URI: extIdle, Description: "supported, never activated"},
	}
	if a.strict {
		exts = append(exts, a2a.AgentExtension{URI: extMust, Description: "required", Required: true})
	}
	return a2a.AgentCard{Name: "ext", Description: "records extensions", Version: "1.0.0",
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true), Extensions: exts}}
}

func (a extAgent) Run(_ context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	a.seen.mu.Lock()
	a.seen.byMsg[req.Message.MessageID] = slices.Clone(req.Extensions)
	a.seen.mu.Unlock()
	if err := w.Working("looking"); err != nil {
		return err
	}
	if req.Text() != "quiet" && req.Activate(extActive) {
		// the activation is recorded with the next event, this artifact
		if err := w.Artifact(a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("active")}}, false, true); err != nil {
			return err
		}
	}
	if req.Text() == "ask" {
		return w.InputRequired("requested: " + strings.Join(req.Extensions, ","))
	}
	return w.Complete("requested: " + strings.Join(req.Extensions, ","))
}

// extMesh is a mesh with agents "ext" and "ext-strict" (gRPC on).
type extMesh struct {
	*rawMesh
	seen *extSeen
	grpc a2apb.A2AServiceClient
}

func startExtMesh(t *testing.T) *extMesh {
	t.Helper()
	m := startRawMesh(t, bindingsGRPCOption())
	seen := &extSeen{byMsg: map[string][]string{}}
	for name, strict := range map[string]bool{"ext": false, "ext-strict": true} {
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = (&agentrt.Worker{Store: m.Store(), Agent: extAgent{strict: strict, seen: seen}, Name: name,
				Concurrency: 4, Timeout: 20 * time.Second}).Run(ctx)
		}()
		t.Cleanup(func() { stop(); <-done })
		waitAgent(t, m.URL, name)
	}
	conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &extMesh{rawMesh: m, seen: seen, grpc: a2apb.NewA2AServiceClient(conn)}
}

// extBinding is one way to make a blocking send and a stream with a set
// of requested extensions. send returns the echoed set (nil when no
// echo) or the A2A error code with, for REST and gRPC, the status and
// reason; stream returns the header's set, the sets the events recorded
// and, for gRPC, the trailer's.
type extBinding struct {
	name   string
	send   func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extAnswer
	stream func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extStreamed
}

type extAnswer struct {
	echo   []string
	code   int    // A2A error code (0: success)
	status string // HTTP status or gRPC code of an error
	reason string
}

type extStreamed struct {
	header, trailer []string
	recorded        [][]string // each event's taskstore.MetaExtensions
}

func splitExts(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for _, u := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(u))
	}
	return out
}

func extMessage(msgID string) map[string]any {
	return map[string]any{"role": "ROLE_USER", "messageId": msgID, "parts": []any{map[string]any{"text": "hi"}}}
}

// rpcExtBinding is JSON-RPC in version v ("1.0" or "0.3"), requesting with
// header.
func rpcExtBinding(v, header string) extBinding {
	method, stream, echoHeader := "SendMessage", "SendStreamingMessage", "A2A-Extensions"
	msg := extMessage
	if v == "0.3" {
		method, stream, echoHeader = "message/send", "message/stream", "X-A2A-Extensions"
		msg = func(id string) map[string]any {
			return map[string]any{"kind": "message", "role": "user", "messageId": id, "parts": []any{map[string]any{"kind": "text", "text": "hi"}}}
		}
	}
	hdr := func(exts []string) map[string]string {
		h := map[string]string{"A2A-Version": v}
		if len(exts) > 0 {
			h[header] = strings.Join(exts, ", ")
		}
		return h
	}
	return extBinding{
		name: "JSON-RPC " + v + " " + header,
		send: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extAnswer {
			r := m.call(t, "/agents/"+agent, method, map[string]any{"message": msg(msgID)}, hdr(exts))
			if r.Error != nil {
				return extAnswer{code: r.Error.Code}
			}
			return extAnswer{echo: splitExts(r.Header.Get(echoHeader))}
		},
		stream: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extStreamed {
			s, id := m.stream(t, "/agents/"+agent, stream, map[string]any{"message": msg(msgID)}, hdr(exts))
			out := extStreamed{header: splitExts(s.resp.Header.Get(echoHeader))}
			for i := 0; i < 50; i++ {
				f := s.readFrame(t, protoFor(v), id)
				if f == nil {
					break
				}
				out.recorded = append(out.recorded, recordedExts(t, f.Reply.Result)...)
			}
			return out
		},
	}
}

func protoFor(v string) proto {
	if v == "0.3" {
		return v03
	}
	return v10
}

// recordedExts finds taskstore.MetaExtensions entries in an event's metadata.
func recordedExts(t *testing.T, raw json.RawMessage) [][]string {
	var out [][]string
	walkJSON(decodeAny(t, raw), "", func(_ string, obj map[string]any) {
		md, ok := obj["metadata"].(map[string]any)
		if !ok {
			return
		}
		if v, ok := md[taskstore.MetaExtensions]; ok {
			out = append(out, taskstore.ExtensionList(v))
		}
	})
	return out
}

var restExtBinding = extBinding{
	name: "HTTP+JSON",
	send: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extAnswer {
		resp, body := restPost(t, m, "/agents/"+agent+"/message:send", msgID, exts)
		if resp.StatusCode != http.StatusOK {
			var st struct {
				Error struct {
					Status  string `json:"status"`
					Details []struct {
						Reason string `json:"reason"`
					} `json:"details"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &st), "%s", body)
			a := extAnswer{code: -1, status: resp.Status + " " + st.Error.Status}
			for _, d := range st.Error.Details {
				if d.Reason != "" {
					a.reason = d.Reason
				}
			}
			return a
		}
		return extAnswer{echo: splitExts(resp.Header.Get("A2A-Extensions"))}
	},
	stream: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extStreamed {
		b, _ := json.Marshal(map[string]any{"message": extMessage(msgID)})
		h := map[string]string{"Accept": "text/event-stream"}
		if len(exts) > 0 {
			h["A2A-Extensions"] = strings.Join(exts, ",")
		}
		s, r := m.openStream(t, "/agents/"+agent+"/message:stream", b, h)
		require.Nil(t, r)
		out := extStreamed{header: splitExts(s.resp.Header.Get("A2A-Extensions"))}
		for i := 0; i < 50; i++ {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			out.recorded = append(out.recorded, recordedExts(t, ev.Data)...)
		}
		return out
	},
}

func restPost(t *testing.T, m *extMesh, path, msgID string, exts []string) (*http.Response, []byte) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"message": extMessage(msgID)})
	h := map[string]string{"Content-Type": "application/a2a+json"}
	if len(exts) > 0 {
		h["A2A-Extensions"] = strings.Join(exts, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	defer cancel()
	resp := m.postRaw(ctx, t, path, bytes.NewReader(b), h)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func grpcExtCtx(t *testing.T, exts []string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
	if len(exts) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, "a2a-extensions", strings.Join(exts, ","))
	}
	return ctx, cancel
}

func grpcExtRequest(agent, msgID string) *a2apb.SendMessageRequest {
	return &a2apb.SendMessageRequest{Tenant: agent, Message: &a2apb.Message{MessageId: msgID, Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hi"}}}}}
}

var grpcExtBinding = extBinding{
	name: "gRPC",
	send: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extAnswer {
		ctx, cancel := grpcExtCtx(t, exts)
		defer cancel()
		var hdr metadata.MD
		_, err := m.grpc.SendMessage(ctx, grpcExtRequest(agent, msgID), grpc.Header(&hdr))
		if err != nil {
			st := grpcstatus.Convert(err)
			a := extAnswer{code: -1, status: st.Code().String()}
			for _, d := range st.Details() {
				if ei, ok := d.(*errdetails.ErrorInfo); ok {
					a.reason = ei.GetReason()
				}
			}
			return a
		}
		return extAnswer{echo: splitExts(strings.Join(hdr.Get("a2a-extensions"), ","))}
	},
	stream: func(t *testing.T, m *extMesh, agent, msgID string, exts []string) extStreamed {
		ctx, cancel := grpcExtCtx(t, exts)
		defer cancel()
		st, err := m.grpc.SendStreamingMessage(ctx, grpcExtRequest(agent, msgID))
		require.NoError(t, err)
		hdr, err := st.Header()
		require.NoError(t, err)
		out := extStreamed{header: splitExts(strings.Join(hdr.Get("a2a-extensions"), ","))}
		for i := 0; i < 50; i++ {
			ev, err := st.Recv()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			var md map[string]any
			switch {
			case ev.GetStatusUpdate() != nil:
				md = ev.GetStatusUpdate().GetMetadata().AsMap()
			case ev.GetArtifactUpdate() != nil:
				md = ev.GetArtifactUpdate().GetMetadata().AsMap()
			}
			if v, ok := md[taskstore.MetaExtensions]; ok {
				out.recorded = append(out.recorded, taskstore.ExtensionList(v))
			}
		}
		out.trailer = splitExts(strings.Join(st.Trailer().Get("a2a-extensions"), ","))
		return out
	},
}

var extBindings = []extBinding{
	rpcExtBinding("1.0", "A2A-Extensions"),
	rpcExtBinding("0.3", "X-A2A-Extensions"),
	rpcExtBinding("0.3", "A2A-Extensions"),
	restExtBinding,
	grpcExtBinding,
}

func TestExtensionsThroughBindings(t *testing.T) {
	m := startExtMesh(t)
	requested := []string{extActive, extIdle, extOther, tracing.ExtensionURI}
	for _, b := range extBindings {
		t.Run(b.name, func(t *testing.T) {
			t.Run("blocking send echoes what the agent activated", func(t *testing.T) {
				id := "m-" + uuid.NewString()
				a := b.send(t, m, "ext", id, requested)
				require.Zero(t, a.code, "%+v", a)
				seen, ok := m.seen.get(id)
				require.True(t, ok, "the agent never ran the turn")
				assert.Equal(t, requested, seen, "the agent's Request carries the requested extensions in order")
				// the mesh's own trace extension and the one the agent
				// activated; not extIdle (declared, not activated), not
				// extOther (declared by no one)
				assert.ElementsMatch(t, []string{tracing.ExtensionURI, extActive}, a.echo)
			})
			t.Run("nothing requested, nothing echoed", func(t *testing.T) {
				id := "m-" + uuid.NewString()
				a := b.send(t, m, "ext", id, nil)
				require.Zero(t, a.code, "%+v", a)
				seen, ok := m.seen.get(id)
				require.True(t, ok)
				assert.Empty(t, seen)
				assert.Empty(t, a.echo)
			})
			t.Run("stream", func(t *testing.T) {
				s := b.stream(t, m, "ext", "m-"+uuid.NewString(), requested)
				// before the agent runs: the requested ones the card declares
				assert.ElementsMatch(t, []string{tracing.ExtensionURI, extActive, extIdle}, s.header)
				// the events tell what the agent activated
				require.NotEmpty(t, s.recorded, "no event recorded the activated extensions")
				assert.Equal(t, []string{extActive}, s.recorded[len(s.recorded)-1])
				if b.name == "gRPC" {
					assert.ElementsMatch(t, []string{tracing.ExtensionURI, extActive}, s.trailer)
				}
			})
			t.Run("required extension not requested", func(t *testing.T) {
				id := "m-" + uuid.NewString()
				a := b.send(t, m, "ext-strict", id, []string{extActive})
				switch b.name {
				case "HTTP+JSON":
					assert.Equal(t, "400 Bad Request FAILED_PRECONDITION", a.status)
					assert.Equal(t, "EXTENSION_SUPPORT_REQUIRED", a.reason)
				case "gRPC":
					assert.Equal(t, codes.FailedPrecondition.String(), a.status)
					assert.Equal(t, "EXTENSION_SUPPORT_REQUIRED", a.reason)
				default:
					assert.Equal(t, a2a.CodeExtensionSupportRequired, a.code)
				}
				_, ran := m.seen.get(id)
				assert.False(t, ran, "the refused turn reached the agent")

				id = "m-" + uuid.NewString()
				a = b.send(t, m, "ext-strict", id, []string{extMust})
				require.Zero(t, a.code, "with the required extension requested: %+v", a)
				seen, _ := m.seen.get(id)
				assert.Equal(t, []string{extMust}, seen)
			})
		})
	}
}

func TestExtensionsOnCards(t *testing.T) {
	m := startExtMesh(t)
	exts := func(path string) []a2a.AgentExtension {
		status, _, body := m.getJSON(t, path, nil)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
		var c a2a.AgentCard
		require.NoError(t, json.Unmarshal(body, &c))
		return c.Capabilities.Extensions
	}
	trace := a2a.AgentExtension{URI: tracing.ExtensionURI, Description: tracing.Extension().Description}
	for _, path := range []string{"/.well-known/agent-card.json", "/agents/echo/.well-known/agent-card.json"} {
		assert.Equal(t, []a2a.AgentExtension{trace}, exts(path), path)
	}
	got := exts("/agents/ext-strict/.well-known/agent-card.json")
	require.Len(t, got, 4)
	assert.Equal(t, extMust, got[2].URI)
	assert.True(t, got[2].Required)
	assert.Equal(t, trace, got[3], "the agent's own extensions first, then the mesh's, never required")
}

// A proxy worker forwards the requested extensions to its upstream (here
// the mesh's own ext agent, over JSON-RPC) and activates what the
// upstream echoes, so the mesh echoes it to the client.
func TestExtensionsThroughProxy(t *testing.T) {
	m := startExtMesh(t)
	guard, err := ssrf.New([]string{"127.0.0.1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := proxy.New(ctx, proxy.Config{URL: m.URL + "/agents/ext", Name: "px-ext", Guard: guard, Store: m.Store()})
	require.NoError(t, err)
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&agentrt.Worker{Store: m.Store(), Agent: p, Concurrency: 4, Timeout: 20 * time.Second}).Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	waitAgent(t, m.URL, "px-ext")

	id := "m-" + uuid.NewString()
	requested := []string{extActive, tracing.ExtensionURI}
	r := m.call(t, "/agents/px-ext", "SendMessage", map[string]any{"message": extMessage(id)},
		map[string]string{"A2A-Extensions": strings.Join(requested, ",")})
	require.Nil(t, r.Error)
	assert.Equal(t, "TASK_STATE_COMPLETED", decodeAny(t, r.Result).(map[string]any)["task"].(map[string]any)["status"].(map[string]any)["state"])
	// The upstream agent got the request under its own message id: find
	// the one turn it ran.
	m.seen.mu.Lock()
	var upstream [][]string
	for _, v := range m.seen.byMsg {
		upstream = append(upstream, v)
	}
	m.seen.mu.Unlock()
	require.Len(t, upstream, 1)
	assert.Equal(t, requested, upstream[0], "the proxy forwarded the requested extensions")
	assert.ElementsMatch(t, requested, splitExts(r.Header.Get("A2A-Extensions")), "the upstream's activated extension comes back")
}

// Each turn of a task echoes its own activations: a turn whose agent
// activates nothing echoes nothing, though the task's earlier turn
// activated the extension it requests again.
func TestExtensionsPerTurn(t *testing.T) {
	m := startExtMesh(t)
	msg := extMessage("m-" + uuid.NewString())
	msg["parts"] = []any{map[string]any{"text": "ask"}}
	r := m.call(t, "/agents/ext", "SendMessage", map[string]any{"message": msg},
		map[string]string{"A2A-Extensions": extActive})
	require.Nil(t, r.Error)
	task := decodeAny(t, r.Result).(map[string]any)["task"].(map[string]any)
	require.Equal(t, "TASK_STATE_INPUT_REQUIRED", task["status"].(map[string]any)["state"])
	assert.Equal(t, extActive, r.Header.Get("A2A-Extensions"))

	next := extMessage("m-" + uuid.NewString())
	next["taskId"] = task["id"]
	next["parts"] = []any{map[string]any{"text": "quiet"}}
	r = m.call(t, "/agents/ext", "SendMessage", map[string]any{"message": next},
		map[string]string{"A2A-Extensions": extActive})
	require.Nil(t, r.Error)
	task = decodeAny(t, r.Result).(map[string]any)["task"].(map[string]any)
	require.Equal(t, "TASK_STATE_COMPLETED", task["status"].(map[string]any)["state"])
	assert.Empty(t, r.Header.Values("A2A-Extensions"), "the second turn activated nothing")
}

// The mesh's Go client requests extensions and reads the echo on every
// binding it speaks (what proxy workers rely on).
func TestExtensionsGoClient(t *testing.T) {
	m := startExtMesh(t)
	for _, tc := range []struct {
		name string
		opts []client.Option
		url  string
	}{
		{"JSON-RPC 1.0", nil, m.URL + "/agents/ext"},
		{"JSON-RPC 0.3", []client.Option{client.WithProtocolVersion("0.3")}, m.URL + "/agents/ext"},
		{"HTTP+JSON", []client.Option{client.WithBinding(a2a.BindingHTTPJSON)}, m.URL + "/agents/ext"},
		{"gRPC", []client.Option{client.WithBinding(a2a.BindingGRPC), client.WithTenant("ext")}, m.GRPCAddr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client.New(tc.url, tc.opts...)
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
			defer cancel()
			exts := &client.Extensions{Requested: []string{extActive, extIdle}}
			res, err := c.Send(client.WithExtensions(ctx, exts), &a2a.SendMessageRequest{Message: client.TextMessage("hi")})
			require.NoError(t, err)
			require.NotNil(t, res.Task)
			assert.Equal(t, []string{extActive}, exts.Activated(), "a blocking send: what the agent activated")

			exts = &client.Extensions{Requested: []string{extActive, extIdle}}
			s, err := c.Stream(client.WithExtensions(ctx, exts), &a2a.SendMessageRequest{Message: client.TextMessage("hi")})
			require.NoError(t, err)
			assert.Equal(t, []string{extActive, extIdle}, exts.Activated(), "a stream's header: what the card declares")
			for i := 0; i < 50; i++ {
				if _, err := s.Next(); err != nil {
					require.ErrorIs(t, err, io.EOF)
					break
				}
			}
			_ = s.Close()
		})
	}
}

// A send answered before its turn ran (returnImmediately) echoes what the
// agent's card declares of the requested extensions, as a stream's header
// does: the agent has not activated anything yet.
func TestExtensionsReturnImmediately(t *testing.T) {
	m := startExtMesh(t)
	r := m.call(t, "/agents/ext", "SendMessage", map[string]any{"message": extMessage("m-" + uuid.NewString()),
		"configuration": map[string]any{"returnImmediately": true}},
		map[string]string{"A2A-Extensions": extIdle + "," + extOther})
	require.Nil(t, r.Error)
	assert.Equal(t, extIdle, r.Header.Get("A2A-Extensions"))
}
