package integration

// Black-box protocol tests of the mesh over real HTTP with raw JSON bodies,
// in A2A 1.0 and 0.3: discovery, routing, version handling, sends,
// get/list/cancel and CORS. Streams are in stream_test.go, malformed input
// in badinput_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

var builtinAgents = []string{"echo", "slow", "ask"}

type wInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant"`
	ProtocolVersion string `json:"protocolVersion"`
}

type wCard struct {
	Name                string       `json:"name"`
	Description         string       `json:"description"`
	Version             string       `json:"version"`
	SupportedInterfaces []wInterface `json:"supportedInterfaces"`
	URL                 string       `json:"url"`
	ProtocolVersion     string       `json:"protocolVersion"`
	PreferredTransport  string       `json:"preferredTransport"`
	Capabilities        struct {
		Streaming *bool `json:"streaming"`
	} `json:"capabilities"`
	DefaultInputModes  []string `json:"defaultInputModes"`
	DefaultOutputModes []string `json:"defaultOutputModes"`
	Skills             []struct {
		ID string `json:"id"`
	} `json:"skills"`
}

func (c wCard) hasInterface(want wInterface) bool {
	for _, i := range c.SupportedInterfaces {
		if i == want {
			return true
		}
	}
	return false
}

func TestProtocolDiscovery(t *testing.T) {
	m := startRawMesh(t)

	t.Run("mesh card", func(t *testing.T) {
		var bodies [][]byte
		for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
			status, hdr, body := m.getJSON(t, path, nil)
			require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
			require.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "application/json"), path)
			var c wCard
			require.NoError(t, json.Unmarshal(body, &c), path)
			assert.NotEmpty(t, c.Name, path)
			assert.NotEmpty(t, c.Description, path)
			assert.True(t, c.hasInterface(wInterface{URL: m.URL + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}),
				"%s: 1.0 interface at /a2a missing: %+v", path, c.SupportedInterfaces)
			assert.Equal(t, m.URL+"/a2a", c.URL, "%s: 0.3 url", path)
			assert.True(t, strings.HasPrefix(c.ProtocolVersion, "0.3"), "%s: 0.3 protocolVersion %q", path, c.ProtocolVersion)
			require.NotNil(t, c.Capabilities.Streaming, path)
			assert.True(t, *c.Capabilities.Streaming, path)
			var skills []string
			for _, s := range c.Skills {
				skills = append(skills, s.ID)
			}
			assert.Subset(t, skills, builtinAgents, "%s: the mesh card lists the live agents as skills", path)
			bodies = append(bodies, body)
		}
		assert.JSONEq(t, string(bodies[0]), string(bodies[1]), "agent.json is an alias of agent-card.json")
	})

	t.Run("agents list", func(t *testing.T) {
		status, _, body := m.getJSON(t, "/agents", nil)
		require.Equal(t, http.StatusOK, status, string(body))
		var l struct {
			Agents []wCard `json:"agents"`
		}
		require.NoError(t, json.Unmarshal(body, &l))
		var names []string
		for _, c := range l.Agents {
			names = append(names, c.Name)
			assert.Equal(t, m.URL+"/agents/"+c.Name, c.URL, "listed card of %s points at this edge", c.Name)
		}
		assert.Subset(t, names, builtinAgents)
	})

	for _, name := range builtinAgents {
		t.Run("agent card "+name, func(t *testing.T) {
			for _, path := range []string{"/agents/" + name + "/.well-known/agent-card.json", "/agents/" + name + "/.well-known/agent.json"} {
				status, _, body := m.getJSON(t, path, nil)
				require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
				var c wCard
				require.NoError(t, json.Unmarshal(body, &c))
				assert.Equal(t, name, c.Name)
				assert.True(t, c.hasInterface(wInterface{URL: m.URL + "/agents/" + name, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}),
					"1.0 path interface: %+v", c.SupportedInterfaces)
				assert.True(t, c.hasInterface(wInterface{URL: m.URL + "/a2a", ProtocolBinding: "JSONRPC", Tenant: name, ProtocolVersion: "1.0"}),
					"1.0 tenant interface on /a2a: %+v", c.SupportedInterfaces)
				assert.Equal(t, m.URL+"/agents/"+name, c.URL, "0.3 url")
				assert.True(t, strings.HasPrefix(c.ProtocolVersion, "0.3"), "0.3 protocolVersion %q", c.ProtocolVersion)
				assert.Equal(t, "JSONRPC", c.PreferredTransport, "0.3 preferredTransport")
				assert.NotEmpty(t, c.DefaultOutputModes)
				assert.NotEmpty(t, c.Skills)
			}
		})
	}

	t.Run("unknown agent card is 404", func(t *testing.T) {
		for _, path := range []string{"/agents/nobody/.well-known/agent-card.json", "/agents/nobody/.well-known/agent.json"} {
			status, _, body := m.getJSON(t, path, nil)
			assert.Equal(t, http.StatusNotFound, status, "%s: %s", path, body)
		}
	})
}

func TestProtocolRouting(t *testing.T) {
	m := startRawMesh(t)

	cases := []struct {
		name     string
		path     string
		p        proto
		params   func(p proto) map[string]any
		state    func(p proto) string
		artifact string // expected artifact text (empty: not checked)
	}{
		{"path echo 1.0", "/agents/echo", v10,
			func(p proto) map[string]any { return sendParams(p.msg("via path"), nil) },
			func(p proto) string { return p.completed }, "via path"},
		{"path slow 0.3", "/agents/slow", v03,
			func(p proto) map[string]any { return sendParams(p.msg("chunks=2 delay=0ms"), nil) },
			func(p proto) string { return p.completed }, "chunk 1/2\nchunk 2/2\n"},
		{"path ask 1.0", "/agents/ask", v10,
			func(p proto) map[string]any { return sendParams(p.msg("hi"), nil) },
			func(p proto) string { return p.inputRequired }, ""},
		{"tenant slow", "/a2a", v10,
			func(p proto) map[string]any {
				pr := sendParams(p.msg("chunks=1 delay=0ms"), nil)
				pr["tenant"] = "slow"
				return pr
			},
			func(p proto) string { return p.completed }, "chunk 1/1\n"},
		{"tenant ask", "/a2a", v10,
			func(p proto) map[string]any {
				pr := sendParams(p.msg("hi"), nil)
				pr["tenant"] = "ask"
				return pr
			},
			func(p proto) string { return p.inputRequired }, ""},
		{"no tenant is echo 1.0", "/a2a", v10,
			func(p proto) map[string]any { return sendParams(p.msg("to the default"), nil) },
			func(p proto) string { return p.completed }, "to the default"},
		{"no tenant is echo 0.3", "/a2a", v03,
			func(p proto) map[string]any { return sendParams(p.msg("chunks=3 default 0.3"), nil) },
			func(p proto) string { return p.completed }, "chunks=3 default 0.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tk := tc.p.sendTask(t, m.ok(t, tc.path, tc.p.send, tc.params(tc.p)))
			assert.Equal(t, tc.state(tc.p), tk.Status.State)
			if tc.artifact != "" {
				assert.Equal(t, tc.artifact, tk.artifactText())
			}
		})
	}

	t.Run("tasks are reachable through their agent", func(t *testing.T) {
		tk := v10.sendTask(t, m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("x"), nil)))
		m.getTask(t, v10, "/agents/echo", tk.ID, nil)
		m.ok(t, "/a2a", "GetTask", map[string]any{"tenant": "echo", "id": tk.ID})
		m.ok(t, "/a2a", "GetTask", map[string]any{"id": tk.ID})
		m.fails(t, "/agents/slow", "GetTask", map[string]any{"id": tk.ID}, -32001)
		m.fails(t, "/a2a", "GetTask", map[string]any{"tenant": "ask", "id": tk.ID}, -32001)
	})

	withTenant := func(p proto, tenant string) map[string]any {
		pr := sendParams(p.msg("x"), nil)
		pr["tenant"] = tenant
		return pr
	}
	unknown := []struct {
		name   string
		path   string
		p      proto
		stream bool
		params map[string]any
	}{
		{"path 1.0", "/agents/nobody", v10, false, sendParams(v10.msg("x"), nil)},
		{"path 0.3", "/agents/nobody", v03, false, sendParams(v03.msg("x"), nil)},
		{"path stream 1.0", "/agents/nobody", v10, true, sendParams(v10.msg("x"), nil)},
		{"path stream 0.3", "/agents/nobody", v03, true, sendParams(v03.msg("x"), nil)},
		{"tenant", "/a2a", v10, false, withTenant(v10, "nobody")},
		{"tenant stream", "/a2a", v10, true, withTenant(v10, "nobody")},
		{"invalid agent name", "/a2a", v10, false, withTenant(v10, "no body/../x")},
	}
	for _, tc := range unknown {
		t.Run("unknown agent "+tc.name, func(t *testing.T) {
			start := time.Now()
			if tc.stream {
				assert.Equal(t, -32602, m.streamErr(t, tc.p, tc.path, tc.p.stream, tc.params, nil).Code)
			} else {
				m.fails(t, tc.path, tc.p.send, tc.params, -32602)
			}
			assert.Less(t, time.Since(start), 2*time.Second, "an unknown agent is an error at once, not a wait")
		})
	}
}

func TestProtocolVersions(t *testing.T) {
	m := startRawMesh(t)

	t.Run("1.0 is ProtoJSON", func(t *testing.T) {
		for _, agent := range []string{"echo", "ask"} {
			res := m.ok(t, "/agents/"+agent, "SendMessage", sendParams(v10.msg("hi"), nil))
			var top map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(res, &top))
			require.Len(t, top, 1, "SendMessage result is {\"task\":{...}}: %s", res)
			require.Contains(t, top, "task")
			requireNoKind(t, res)
			tk := v10.sendTask(t, res)
			assert.True(t, strings.HasPrefix(tk.Status.State, "TASK_STATE_"), tk.Status.State)
			require.NotEmpty(t, tk.History)
			for _, h := range tk.History {
				assert.Contains(t, []string{"ROLE_USER", "ROLE_AGENT"}, h.Role)
			}
			assert.Equal(t, "ROLE_USER", tk.History[0].Role)
			if agent == "ask" {
				assert.Equal(t, "TASK_STATE_INPUT_REQUIRED", tk.Status.State)
				require.NotNil(t, tk.Status.Message)
				assert.Equal(t, "ROLE_AGENT", tk.Status.Message.Role)
			} else {
				assert.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State)
			}
			got := m.ok(t, "/agents/"+agent, "GetTask", map[string]any{"id": tk.ID})
			requireNoKind(t, got)
			assert.Equal(t, tk.ID, decodeTask(t, got).ID)
		}
	})

	t.Run("0.3 has kinds and kebab-case", func(t *testing.T) {
		for _, agent := range []string{"echo", "ask"} {
			res := m.ok(t, "/agents/"+agent, "message/send", sendParams(v03.msg("hi"), nil))
			requireKinds03(t, res)
			tk := v03.sendTask(t, res)
			require.NotEmpty(t, tk.History)
			for _, h := range tk.History {
				assert.Equal(t, "message", h.Kind)
				assert.Contains(t, []string{"user", "agent"}, h.Role)
				for _, p := range h.Parts {
					assert.Equal(t, "text", p.Kind)
				}
			}
			if agent == "ask" {
				assert.Equal(t, "input-required", tk.Status.State)
				require.NotNil(t, tk.Status.Message)
				assert.Equal(t, "agent", tk.Status.Message.Role)
				assert.Equal(t, "message", tk.Status.Message.Kind)
			} else {
				assert.Equal(t, "completed", tk.Status.State)
				require.NotEmpty(t, tk.Artifacts)
				for _, a := range tk.Artifacts {
					for _, p := range a.Parts {
						assert.Equal(t, "text", p.Kind)
					}
				}
			}
			got := m.ok(t, "/agents/"+agent, "tasks/get", map[string]any{"id": tk.ID})
			requireKinds03(t, got)
			assert.Equal(t, "task", decodeTask(t, got).Kind)
		}
	})

	t.Run("unsupported A2A-Version", func(t *testing.T) {
		for _, hv := range []string{"2.0", "0.1", "9"} {
			m.fails(t, "/agents/echo", "SendMessage", sendParams(v10.msg("x"), nil), -32009, map[string]string{"A2A-Version": hv})
			m.fails(t, "/agents/echo", "message/send", sendParams(v03.msg("x"), nil), -32009, map[string]string{"A2A-Version": hv})
		}
	})

	for _, hv := range []string{"", "1.0", "1.0.1"} {
		t.Run("1.0 method with header "+hv, func(t *testing.T) {
			var hdr map[string]string
			if hv != "" {
				hdr = map[string]string{"A2A-Version": hv}
			}
			res := m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("x"), nil), hdr)
			requireNoKind(t, res)
			assert.Equal(t, "TASK_STATE_COMPLETED", v10.sendTask(t, res).Status.State)
		})
	}

	for _, hv := range []string{"", "0.3", "0.3.0"} {
		t.Run("0.3 method with header "+hv, func(t *testing.T) {
			var hdr map[string]string
			if hv != "" {
				hdr = map[string]string{"A2A-Version": hv}
			}
			res := m.ok(t, "/agents/echo", "message/send", sendParams(v03.msg("x"), nil), hdr)
			requireKinds03(t, res)
			assert.Equal(t, "completed", v03.sendTask(t, res).Status.State)
		})
	}
}

func TestProtocolSends(t *testing.T) {
	m := startRawMesh(t)

	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			t.Run("blocking send waits for completed", func(t *testing.T) {
				tk := p.sendTask(t, m.ok(t, "/agents/slow", p.send, sendParams(p.msg("chunks=3 delay=30ms"), nil)))
				assert.Equal(t, p.completed, tk.Status.State)
				assert.Equal(t, "chunk 1/3\nchunk 2/3\nchunk 3/3\n", tk.artifactText())
			})

			t.Run("non-blocking send returns at once", func(t *testing.T) {
				start := time.Now()
				tk := p.sendTask(t, m.ok(t, "/agents/slow", p.send, sendParams(p.msg("chunks=4 delay=150ms"), p.nonBlocking)))
				assert.Less(t, time.Since(start), 450*time.Millisecond, "a non-blocking send must not wait for the task")
				assert.Contains(t, []string{p.submitted, p.working}, tk.Status.State, "non-final state")
				done := m.waitState(t, p, "/agents/slow", tk.ID, p.completed)
				assert.Equal(t, "chunk 1/4\nchunk 2/4\nchunk 3/4\nchunk 4/4\n", done.artifactText())
			})

			t.Run("multi-turn", func(t *testing.T) {
				first := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
				require.Equal(t, p.inputRequired, first.Status.State)
				assert.Contains(t, first.Status.Message.text(), "What is your name?")

				second := p.sendTask(t, m.ok(t, "/agents/ask", p.send,
					sendParams(inTask(p.msg("Alice"), first.ID, first.ContextID), nil)))
				assert.Equal(t, first.ID, second.ID, "the second turn continues the task")
				assert.Equal(t, first.ContextID, second.ContextID)
				assert.Equal(t, p.completed, second.Status.State)
				assert.Contains(t, second.artifactText()+second.Status.Message.text(), "Hello, Alice!")

				// Without contextId the task's own is used.
				third := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
				require.Equal(t, p.inputRequired, third.Status.State)
				fourth := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(inTask(p.msg("Bob"), third.ID, ""), nil)))
				assert.Equal(t, p.completed, fourth.Status.State)
				assert.Equal(t, third.ContextID, fourth.ContextID)
				assert.Contains(t, fourth.artifactText(), "Hello, Bob!")
			})

			t.Run("message to a completed task", func(t *testing.T) {
				tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(p.msg("once"), nil)))
				require.Equal(t, p.completed, tk.Status.State)
				r := m.call(t, "/agents/echo", p.send, sendParams(inTask(p.msg("twice"), tk.ID, tk.ContextID), nil))
				require.NotNil(t, r.Error, "a completed task takes no message: %s", r.Body)
				if p.name == v10.name {
					assert.Equal(t, -32004, r.Error.Code)
				}
				requireCleanMessage(t, r.Error.Message)
				after := m.getTask(t, p, "/agents/echo", tk.ID, nil)
				assert.Equal(t, p.completed, after.Status.State)
				assert.Len(t, after.History, len(tk.History), "the refused message is not recorded")
			})

			t.Run("mismatched contextId", func(t *testing.T) {
				tk := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
				require.Equal(t, p.inputRequired, tk.Status.State)
				m.fails(t, "/agents/ask", p.send, sendParams(inTask(p.msg("Eve"), tk.ID, "another-context"), nil), -32602)
				assert.Equal(t, p.inputRequired, m.getTask(t, p, "/agents/ask", tk.ID, nil).Status.State, "the task is untouched")
			})

			t.Run("unknown taskId", func(t *testing.T) {
				m.fails(t, "/agents/echo", p.send, sendParams(inTask(p.msg("x"), uuid.NewString(), ""), nil), -32001)
			})

			t.Run("acceptedOutputModes", func(t *testing.T) {
				m.fails(t, "/agents/echo", p.send, sendParams(p.msg("x"), map[string]any{"acceptedOutputModes": []string{"image/png"}}), -32005)
				for _, modes := range [][]string{{"text/*"}, {"text/plain"}, {"image/png", "application/json"}, {"*/*"}} {
					tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(p.msg("x"), map[string]any{"acceptedOutputModes": modes})))
					assert.Equal(t, p.completed, tk.Status.State, "modes %v", modes)
				}
			})

			t.Run("snake_case configuration", func(t *testing.T) {
				m.fails(t, "/agents/echo", p.send, sendParams(p.msg("x"), map[string]any{"accepted_output_modes": []string{"image/png"}}), -32005)
				tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send,
					sendParams(p.msg("snake"), map[string]any{"accepted_output_modes": []string{"text/plain"}, "history_length": 1})))
				assert.Equal(t, p.completed, tk.Status.State)
				assert.Len(t, tk.History, 1, "history_length 1")
				full := m.getTask(t, p, "/agents/echo", tk.ID, nil)
				none := m.getTask(t, p, "/agents/echo", tk.ID, map[string]any{"history_length": 0})
				assert.NotEmpty(t, full.History)
				assert.False(t, none.has(t, "history"), "history_length 0 omits history: %s", none.Raw)
			})

			t.Run("retried send is idempotent", func(t *testing.T) {
				ctxID := uuid.NewString()
				msg := inTask(p.msg("retry me"), "", ctxID)
				first := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(msg, nil)))
				second := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(msg, nil)))
				assert.Equal(t, first.ID, second.ID, "the same messageId returns the same task")
				assert.Equal(t, p.completed, second.Status.State)
				l := m.listTasks(t, map[string]any{"contextId": ctxID})
				assert.Equal(t, 1, *l.TotalSize, "a retried send creates no second task")
				assert.Len(t, l.Tasks, 1)
				assert.Len(t, second.History, len(first.History), "the retry records no second user turn")
			})
		})
	}

	t.Run("concurrent retries make one task", func(t *testing.T) {
		for round := 0; round < 15; round++ {
			ctxID := uuid.NewString()
			body := rpcBody(t, json.RawMessage(`1`), "SendMessage", sendParams(inTask(v10.msg("same message"), "", ctxID), nil))
			const n = 6
			replies := make(chan *rpcReply, n)
			for i := 0; i < n; i++ {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), rawCallTimeout)
					defer cancel()
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/agents/echo", bytes.NewReader(body))
					if err != nil {
						replies <- nil
						return
					}
					req.Header.Set("Content-Type", "application/json")
					resp, err := m.hc.Do(req)
					if err != nil {
						replies <- nil
						return
					}
					defer resp.Body.Close()
					var r rpcReply
					data, _ := io.ReadAll(resp.Body)
					if json.Unmarshal(data, &r) != nil {
						replies <- nil
						return
					}
					r.Body = data
					replies <- &r
				}()
			}
			ids := map[string]int{}
			for i := 0; i < n; i++ {
				var r *rpcReply
				select {
				case r = <-replies:
				case <-time.After(rawCallTimeout + time.Second):
					t.Fatal("a concurrent send did not answer")
				}
				require.NotNil(t, r, "transport or decoding failure")
				require.Nilf(t, r.Error, "a concurrent retry of the same message failed: %s", r.Body)
				tk := v10.sendTask(t, r.Result)
				assert.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State)
				ids[tk.ID]++
			}
			assert.Len(t, ids, 1, "every retry answers with the same task: %v", ids)
			l := m.listTasks(t, map[string]any{"contextId": ctxID})
			assert.Equal(t, 1, *l.TotalSize, "concurrent retries create one task")
		}
	})

	t.Run("0.2 tasks/send", func(t *testing.T) {
		for _, withMessageID := range []bool{true, false} {
			taskID, sessionID := uuid.NewString(), uuid.NewString()
			msg := map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello 0.2"}}}
			if withMessageID {
				msg["messageId"] = uuid.NewString()
			}
			res := m.ok(t, "/agents/echo", "tasks/send", map[string]any{
				"id": taskID, "sessionId": sessionID, "message": msg, "acceptedOutputModes": []string{"text/plain"}, "historyLength": 5,
			})
			tk := v03.sendTask(t, res)
			assert.Equal(t, taskID, tk.ID, "0.2 clients name the task (messageId sent: %v)", withMessageID)
			assert.Equal(t, sessionID, tk.ContextID, "sessionId is the context")
			assert.Equal(t, "completed", tk.Status.State)
			assert.Equal(t, "hello 0.2", tk.artifactText())
		}
	})

	t.Run("push config in send is refused", func(t *testing.T) {
		m.fails(t, "/agents/echo", "SendMessage", sendParams(v10.msg("x"),
			map[string]any{"taskPushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}), -32003)
	})
}

func TestProtocolTaskTimeout(t *testing.T) {
	m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.TaskTimeout = 300 * time.Millisecond }))
	for _, p := range bothProtos {
		t.Run(p.name, func(t *testing.T) {
			start := time.Now()
			tk := p.sendTask(t, m.ok(t, "/agents/slow", p.send, sendParams(p.msg("chunks=20 delay=100ms"), nil)))
			assert.Equal(t, p.failed, tk.Status.State)
			require.NotNil(t, tk.Status.Message, "a timed-out task says why")
			assert.Contains(t, tk.Status.Message.text(), "timed out")
			assert.Less(t, time.Since(start), 1500*time.Millisecond, "the task is stopped at its timeout, not run to its end (2s)")
			assert.Less(t, strings.Count(tk.artifactText(), "chunk"), 20)
		})
	}
}

func TestProtocolGetListCancel(t *testing.T) {
	m := startRawMesh(t)

	for _, p := range bothProtos {
		t.Run("historyLength "+p.name, func(t *testing.T) {
			tk := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
			require.Equal(t, p.inputRequired, tk.Status.State)
			full := m.getTask(t, p, "/agents/ask", tk.ID, nil)
			require.GreaterOrEqual(t, len(full.History), 2, "user turn and agent question")
			none := m.getTask(t, p, "/agents/ask", tk.ID, map[string]any{"historyLength": 0})
			assert.False(t, none.has(t, "history"), "historyLength 0 omits history: %s", none.Raw)
			one := m.getTask(t, p, "/agents/ask", tk.ID, map[string]any{"historyLength": 1})
			require.Len(t, one.History, 1)
			assert.Equal(t, full.History[len(full.History)-1].MessageID, one.History[0].MessageID, "the most recent message is kept")
			big := m.getTask(t, p, "/agents/ask", tk.ID, map[string]any{"historyLength": 100})
			assert.Len(t, big.History, len(full.History))
			m.fails(t, "/agents/ask", p.get, map[string]any{"id": tk.ID, "historyLength": -1}, -32602)

			// the send's own historyLength
			sent := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), map[string]any{"historyLength": 0})))
			assert.False(t, sent.has(t, "history"), "send with historyLength 0: %s", sent.Raw)
		})

		t.Run("get unknown task "+p.name, func(t *testing.T) {
			m.fails(t, "/a2a", p.get, map[string]any{"id": uuid.NewString()}, -32001)
			m.fails(t, "/a2a", p.get, map[string]any{"id": "not a valid id!"}, -32001)
			m.fails(t, "/a2a", p.get, map[string]any{}, -32602)
		})
	}

	t.Run("ListTasks", func(t *testing.T) {
		ctxID := uuid.NewString()
		want := map[string]bool{}
		var completed []string
		for i := 0; i < 5; i++ {
			tk := v10.sendTask(t, m.ok(t, "/agents/echo", "SendMessage", sendParams(inTask(v10.msg("list me"), "", ctxID), nil)))
			require.Equal(t, "TASK_STATE_COMPLETED", tk.Status.State)
			want[tk.ID] = true
			completed = append(completed, tk.ID)
		}
		asked := v10.sendTask(t, m.ok(t, "/agents/ask", "SendMessage", sendParams(inTask(v10.msg("hi"), "", ctxID), nil)))
		require.Equal(t, "TASK_STATE_INPUT_REQUIRED", asked.Status.State)
		want[asked.ID] = true
		// a task of another context, not listed
		v10.sendTask(t, m.ok(t, "/agents/echo", "SendMessage", sendParams(v10.msg("elsewhere"), nil)))

		t.Run("filter by contextId", func(t *testing.T) {
			l := m.listTasks(t, map[string]any{"contextId": ctxID})
			assert.Equal(t, 6, *l.TotalSize)
			require.Len(t, l.Tasks, 6)
			assert.Equal(t, "", *l.NextPageToken, "a single page ends with an empty nextPageToken")
			var stamps []string
			for _, raw := range l.Tasks {
				tk := decodeTask(t, raw)
				assert.Equal(t, ctxID, tk.ContextID)
				assert.True(t, want[tk.ID], "unexpected task %s", tk.ID)
				assert.False(t, tk.has(t, "artifacts"), "artifacts are omitted unless includeArtifacts: %s", raw)
				requireNoKind(t, raw)
				var st struct {
					Status struct {
						Timestamp string `json:"timestamp"`
					} `json:"status"`
				}
				require.NoError(t, json.Unmarshal(raw, &st))
				stamps = append(stamps, st.Status.Timestamp)
			}
			assert.True(t, sort.SliceIsSorted(stamps, func(i, j int) bool { return stamps[i] > stamps[j] }),
				"tasks are listed newest status first: %v", stamps)
		})

		t.Run("filter by status", func(t *testing.T) {
			l := m.listTasks(t, map[string]any{"contextId": ctxID, "status": "TASK_STATE_INPUT_REQUIRED"})
			require.Equal(t, 1, *l.TotalSize)
			require.Len(t, l.Tasks, 1)
			assert.Equal(t, asked.ID, decodeTask(t, l.Tasks[0]).ID)
			l = m.listTasks(t, map[string]any{"contextId": ctxID, "status": "TASK_STATE_COMPLETED"})
			assert.Equal(t, 5, *l.TotalSize)
			l = m.listTasks(t, map[string]any{"contextId": ctxID, "status": "TASK_STATE_WORKING"})
			assert.Equal(t, 0, *l.TotalSize)
			assert.NotNil(t, l.Tasks, "an empty page is [] not null")
			m.fails(t, "/a2a", "ListTasks", map[string]any{"status": "TASK_STATE_NOPE"}, -32602)
		})

		t.Run("filter by agent", func(t *testing.T) {
			l := m.listTasks(t, map[string]any{"contextId": ctxID, "tenant": "ask"})
			require.Equal(t, 1, *l.TotalSize)
			assert.Equal(t, asked.ID, decodeTask(t, l.Tasks[0]).ID)
		})

		t.Run("includeArtifacts", func(t *testing.T) {
			l := m.listTasks(t, map[string]any{"contextId": ctxID, "status": "TASK_STATE_COMPLETED", "includeArtifacts": true})
			require.Len(t, l.Tasks, 5)
			for _, raw := range l.Tasks {
				tk := decodeTask(t, raw)
				assert.True(t, tk.has(t, "artifacts"), "%s", raw)
				assert.Equal(t, "list me", tk.artifactText())
			}
		})

		t.Run("pageSize bounds", func(t *testing.T) {
			for _, size := range []int{0, -1, 101, 1000} {
				m.fails(t, "/a2a", "ListTasks", map[string]any{"pageSize": size}, -32602)
			}
			for _, size := range []int{1, 100} {
				l := m.listTasks(t, map[string]any{"contextId": ctxID, "pageSize": size})
				assert.Len(t, l.Tasks, min(size, 6))
			}
			m.fails(t, "/a2a", "ListTasks", map[string]any{"pageToken": "not-a-token"}, -32602)
		})

		t.Run("paging covers every task once", func(t *testing.T) {
			for _, size := range []int{1, 2, 4, 6} {
				seen := map[string]int{}
				token := ""
				pages := 0
				for ; pages < 20; pages++ {
					params := map[string]any{"contextId": ctxID, "pageSize": size}
					if token != "" {
						params["pageToken"] = token
					}
					l := m.listTasks(t, params)
					assert.Equal(t, 6, *l.TotalSize, "totalSize counts all pages")
					assert.LessOrEqual(t, len(l.Tasks), size)
					for _, raw := range l.Tasks {
						seen[decodeTask(t, raw).ID]++
					}
					token = *l.NextPageToken
					if token == "" {
						break
					}
					assert.Len(t, l.Tasks, size, "only the last page is short")
				}
				assert.Equal(t, (6+size-1)/size, pages+1, "pages of %d", size)
				require.Len(t, seen, 6, "pageSize %d", size)
				for id, n := range seen {
					assert.True(t, want[id])
					assert.Equal(t, 1, n, "task %s listed %d times", id, n)
				}
			}
		})
	})

	for _, p := range bothProtos {
		t.Run("cancel "+p.name, func(t *testing.T) {
			t.Parallel()
			tk := p.sendTask(t, m.ok(t, "/agents/slow", p.send, sendParams(p.msg("chunks=100 delay=40ms"), p.nonBlocking)))
			// wait for the run to be under way
			deadline := time.Now().Add(rawPollTimeout)
			for i := 0; i < 500 && time.Now().Before(deadline); i++ {
				cur := m.getTask(t, p, "/agents/slow", tk.ID, nil)
				if cur.Status.State == p.working && len(cur.Artifacts) > 0 {
					break
				}
				require.False(t, p.final(cur.Status.State), cur.Status.State)
				time.Sleep(20 * time.Millisecond)
			}
			res := m.ok(t, "/agents/slow", p.cancel, map[string]any{"id": tk.ID})
			canceled := decodeTask(t, res)
			assert.Equal(t, p.canceled, canceled.Status.State)
			if p.name == v03.name {
				requireKinds03(t, res)
			} else {
				requireNoKind(t, res)
			}
			time.Sleep(time.Second)
			later := m.getTask(t, p, "/agents/slow", tk.ID, nil)
			assert.Equal(t, p.canceled, later.Status.State, "a canceled task stays canceled")
			assert.Equal(t, canceled.artifactText(), later.artifactText(), "no artifact is appended after the cancel")
			assert.Less(t, strings.Count(later.artifactText(), "chunk"), 100)

			m.fails(t, "/agents/slow", p.cancel, map[string]any{"id": tk.ID}, -32002)
			m.fails(t, "/agents/slow", p.cancel, map[string]any{"id": uuid.NewString()}, -32001)
			// a late message is refused too
			r := m.call(t, "/agents/slow", p.send, sendParams(inTask(p.msg("more"), tk.ID, ""), nil))
			require.NotNil(t, r.Error, "a canceled task takes no message")
		})
		t.Run("cancel completed "+p.name, func(t *testing.T) {
			t.Parallel()
			tk := p.sendTask(t, m.ok(t, "/agents/echo", p.send, sendParams(p.msg("done"), nil)))
			require.Equal(t, p.completed, tk.Status.State)
			m.fails(t, "/agents/echo", p.cancel, map[string]any{"id": tk.ID}, -32002)
			assert.Equal(t, p.completed, m.getTask(t, p, "/agents/echo", tk.ID, nil).Status.State)
		})
		t.Run("cancel interrupted "+p.name, func(t *testing.T) {
			t.Parallel()
			tk := p.sendTask(t, m.ok(t, "/agents/ask", p.send, sendParams(p.msg("hi"), nil)))
			require.Equal(t, p.inputRequired, tk.Status.State)
			assert.Equal(t, p.canceled, decodeTask(t, m.ok(t, "/agents/ask", p.cancel, map[string]any{"id": tk.ID})).Status.State)
		})
	}

	t.Run("unsupported operations", func(t *testing.T) {
		cases := []struct {
			method string
			params map[string]any
			code   int
		}{
			{"CreateTaskPushNotificationConfig", map[string]any{"taskId": "t1", "url": "https://example.com/hook"}, -32003},
			{"GetTaskPushNotificationConfig", map[string]any{"taskId": "t1", "id": "c1"}, -32003},
			{"ListTaskPushNotificationConfigs", map[string]any{"taskId": "t1"}, -32003},
			{"DeleteTaskPushNotificationConfig", map[string]any{"taskId": "t1", "id": "c1"}, -32003},
			{"tasks/pushNotificationConfig/set", map[string]any{"taskId": "t1", "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}, -32003},
			{"tasks/pushNotificationConfig/get", map[string]any{"id": "t1"}, -32003},
			{"tasks/pushNotificationConfig/list", map[string]any{"id": "t1"}, -32003},
			{"tasks/pushNotificationConfig/delete", map[string]any{"id": "t1", "pushNotificationConfigId": "c1"}, -32003},
		}
		for _, tc := range cases {
			t.Run(tc.method, func(t *testing.T) {
				m.fails(t, "/a2a", tc.method, tc.params, tc.code)
				m.fails(t, "/agents/echo", tc.method, tc.params, tc.code)
			})
		}
		// slow declares no extended card (echo has one).
		for _, method := range []string{"GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"} {
			m.fails(t, "/agents/slow", method, nil, -32004)
		}
	})
}

func TestProtocolCORS(t *testing.T) {
	const origin = "https://app.example"
	preflight := func(t *testing.T, m *rawMesh, path, from string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, m.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", from)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, a2a-version")
		resp, err := m.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	post := func(t *testing.T, m *rawMesh, from string) *rpcReply {
		body := rpcBody(t, m.newReqID(), "GetTask", map[string]any{"id": uuid.NewString()})
		return m.postBody(t, "/a2a", body, map[string]string{"Origin": from})
	}

	t.Run("off by default", func(t *testing.T) {
		m := startRawMesh(t)
		r := post(t, m, origin)
		assert.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
		resp := preflight(t, m, "/a2a", origin)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"))
	})

	t.Run("configured origin", func(t *testing.T) {
		m := startRawMesh(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.CORSOrigins = []string{origin} }))
		for _, path := range []string{"/a2a", "/agents/echo"} {
			resp := preflight(t, m, path, origin)
			assert.Equal(t, http.StatusNoContent, resp.StatusCode, path)
			assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), path)
			assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
			allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
			for _, h := range []string{"content-type", "a2a-version", "last-event-id"} {
				assert.Contains(t, allowed, h)
			}
			assert.Contains(t, resp.Header.Values("Vary"), "Origin")
		}

		r := post(t, m, origin)
		assert.Equal(t, origin, r.Header.Get("Access-Control-Allow-Origin"))
		require.NotNil(t, r.Error)
		assert.Equal(t, -32001, r.Error.Code, "the call itself is served")

		status, hdr, _ := m.getJSON(t, "/.well-known/agent-card.json", map[string]string{"Origin": origin})
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, origin, hdr.Get("Access-Control-Allow-Origin"), "cards are readable cross-origin")

		other := "https://evil.example"
		r = post(t, m, other)
		assert.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
		resp := preflight(t, m, "/a2a", other)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		assert.NotEqual(t, http.StatusNoContent, resp.StatusCode)
	})
}
