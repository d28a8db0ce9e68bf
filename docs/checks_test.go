package docs_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// examplesChecks says, for each example, what the text beside it says it
// does. A check applies to every command of its page that its pattern
// matches (the command as written, before ids and ports are replaced).
func examplesChecks() []*check {
	re := regexp.MustCompile
	return []*check{
		// README: the two commands and installing the binary.
		{file: "README.md", match: re(`^go run \./cmd/a2amesh dev`), fn: func(t *testing.T, s *session, _ result) {
			wantAgents(t, s.edge, "echo", "slow", "ask", "upper", "planner", "tck", "hello")
		}},
		{file: "README.md", match: re(`^go install \./cmd/a2amesh`), fn: func(t *testing.T, s *session, _ result) {
			if _, err := os.Stat(filepath.Join(s.dir, "gobin", "a2amesh")); err != nil {
				t.Errorf("go install made no binary: %v", err)
			}
		}},
		{file: "README.md", match: re(`^a2amesh --help`), fn: func(t *testing.T, _ *session, r result) {
			for _, want := range []string{"commands:", "dev", "send", "worker", "version"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("--help on stdout lacks %q:\n%s", want, r.out)
				}
			}
		}},

		// Discovery.
		{file: "README.md", match: re(`^curl -s localhost:8080/\.well-known/agent-card\.json`), fn: func(t *testing.T, _ *session, r result) {
			card := jsonOf(t, r.out)
			if card["name"] == nil || card["supportedInterfaces"] == nil {
				t.Errorf("the mesh card lacks name or supportedInterfaces: %s", r.out)
			}
		}},
		{file: "README.md", match: re(`^curl -s localhost:8080/agents$`), fn: func(t *testing.T, s *session, r result) {
			want := []string{"echo", "slow", "ask", "upper", "planner"}
			if s.natsPort != "" { // the fleet in five commands
				want = []string{"echo", "slow"}
			}
			names := map[string]bool{}
			for _, a := range jsonOf(t, r.out)["agents"].([]any) {
				names[a.(map[string]any)["name"].(string)] = true
			}
			for _, w := range want {
				if !names[w] {
					t.Errorf("/agents lacks %s: %s", w, r.out)
				}
			}
		}},
		{file: "README.md", match: re(`/agents/echo/\.well-known/agent-card\.json`), fn: func(t *testing.T, _ *session, r result) {
			if n := jsonOf(t, r.out)["name"]; n != "echo" {
				t.Errorf("echo's card is named %v", n)
			}
		}},

		// A2A 1.0.
		{file: "README.md", match: re(`"messageId":"m-[12]"`), fn: func(t *testing.T, _ *session, r result) {
			task := taskOf(r.rpc["result"])
			wantState(t, task, "TASK_STATE_COMPLETED")
			if !strings.Contains(artifactText(task), "hello") {
				t.Errorf("echo did not answer hello: %v", task["artifacts"])
			}
		}},
		{file: "README.md", match: re(`"messageId":"m-3"`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
		}},
		{file: "README.md", match: re(`"method":"GetTask"`), fn: func(t *testing.T, s *session, r result) {
			if id := taskOf(r.rpc["result"])["id"]; id != s.vars["TASK_ID"] {
				t.Errorf("GetTask answered task %v, want %s", id, s.vars["TASK_ID"])
			}
		}},
		{file: "README.md", match: re(`"method":"ListTasks"`), fn: func(t *testing.T, s *session, r result) {
			found := false
			for _, x := range r.rpc["result"].(map[string]any)["tasks"].([]any) {
				task := x.(map[string]any)
				wantState(t, task, "TASK_STATE_WORKING")
				found = found || task["id"] == s.vars["TASK_ID"]
			}
			if !found {
				t.Errorf("ListTasks of working tasks lacks the running slow task %s", s.vars["TASK_ID"])
			}
		}},
		{file: "README.md", match: re(`"method":"CancelTask"`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "TASK_STATE_CANCELED")
		}},
		{file: "README.md", match: re(`"messageId":"m-4"`), fn: func(t *testing.T, _ *session, r result) {
			if len(r.events) < 7 { // the task, working, 5 chunks, completed
				t.Errorf("the stream had %d events, want the task, 5 chunks and the end", len(r.events))
			}
			wantIncreasingIDs(t, r.events, 0)
			wantStreamEnd(t, r.events, "TASK_STATE_COMPLETED")
		}},
		{file: "README.md", match: re(`"method":"SubscribeToTask"`), fn: func(t *testing.T, s *session, r result) {
			after, _ := strconv.ParseUint(s.vars["LAST_EVENT_ID"], 10, 64)
			wantIncreasingIDs(t, r.events, after)
			if len(r.events) < 4 { // the chunks after the second event, and the end
				t.Errorf("resumed after event %d with %d events, want the rest of the stream", after, len(r.events))
			}
			wantStreamEnd(t, r.events, "TASK_STATE_COMPLETED")
		}},
		{file: "README.md", match: re(`"messageId":"m-5"`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "TASK_STATE_INPUT_REQUIRED")
		}},
		{file: "README.md", match: re(`"messageId":"m-6"`), fn: func(t *testing.T, _ *session, r result) {
			task := taskOf(r.rpc["result"])
			wantState(t, task, "TASK_STATE_COMPLETED")
			if b, _ := json.Marshal(task); !bytes.Contains(b, []byte("Ada")) {
				t.Errorf("ask's answer does not use the name: %s", b)
			}
		}},

		// A2A 0.3.
		{file: "README.md", match: re(`"messageId":"m-7"`), fn: func(t *testing.T, _ *session, r result) {
			task := taskOf(r.rpc["result"])
			if task["kind"] != "task" {
				t.Errorf("0.3 result without kind task: %v", task)
			}
			wantState(t, task, "completed")
		}},
		{file: "README.md", match: re(`"messageId":"m-8"`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "submitted", "working")
		}},
		{file: "README.md", match: re(`"method":"tasks/get"`), fn: func(t *testing.T, s *session, r result) {
			if id := taskOf(r.rpc["result"])["id"]; id != s.vars["TASK_ID"] {
				t.Errorf("tasks/get answered task %v, want %s", id, s.vars["TASK_ID"])
			}
		}},
		{file: "README.md", match: re(`"method":"tasks/cancel"`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "canceled")
		}},
		{file: "README.md", match: re(`"messageId":"m-9"`), fn: func(t *testing.T, _ *session, r result) {
			last := r.events[len(r.events)-1].data["result"].(map[string]any)
			if last["final"] != true || last["kind"] != "status-update" {
				t.Errorf("a 0.3 stream's last event is a final status update, got %v", last)
			}
			wantState(t, last, "completed")
		}},

		// Answering with a message.
		{file: "docs/agents.md", match: re(`"messageId":"m-hello-1"`), fn: func(t *testing.T, _ *session, r result) {
			res, _ := r.rpc["result"].(map[string]any)
			msg, _ := res["message"].(map[string]any)
			if len(res) != 1 || msg == nil {
				t.Fatalf("hello did not answer with a message: %s", r.out)
			}
			parts, _ := msg["parts"].([]any)
			if msg["role"] != "ROLE_AGENT" || msg["taskId"] != nil || msg["contextId"] == nil || len(parts) != 1 ||
				parts[0].(map[string]any)["text"] != "hello, world" {
				t.Errorf("hello's message: %s", r.out)
			}
		}},

		// Many agents, one call.
		{file: "README.md", match: re(`"messageId":"m-10"`), fn: func(t *testing.T, _ *session, r result) {
			task := taskOf(r.rpc["result"])
			wantState(t, task, "completed")
			if got := artifactText(task); got != "echo: hello brave\nupper: NEW WORLD\n" {
				t.Errorf("planner answered %q", got)
			}
		}},

		// The CLI client.
		{file: "README.md", match: re(`^a2amesh card`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "a2amesh") {
				t.Errorf("card printed no mesh card:\n%s", r.out)
			}
		}},
		{file: "README.md", match: re(`^a2amesh send hello`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "hello") {
				t.Errorf("send printed no echo of hello:\n%s", r.out)
			}
		}},
		{file: "README.md", match: re(`^a2amesh send --agent ask`), fn: func(t *testing.T, s *session, r result) {
			// The hint works when pasted.
			hint := regexp.MustCompile(`reply with: (a2amesh send .*)`).FindStringSubmatch(r.out + r.errOut)
			if hint == nil {
				t.Fatalf("no reply hint:\n%s%s", r.out, r.errOut)
			}
			line := strings.Replace(strings.TrimSpace(hint[1]), "TEXT...", "Ada", 1)
			out := runCLI(t, s, line)
			if !strings.Contains(out, "Ada") {
				t.Errorf("the reply hint %q answered:\n%s", line, out)
			}
		}},
		{file: "README.md", match: re(`^a2amesh send --agent slow --no-wait`), fn: func(t *testing.T, s *session, r result) {
			if s.vars["TASK_ID"] == "" {
				t.Errorf("--no-wait printed no task id:\n%s%s", r.out, r.errOut)
			}
		}},
		{file: "README.md", match: re(`^a2amesh get TASK_ID`), fn: func(t *testing.T, s *session, r result) {
			if !strings.Contains(r.out, s.vars["TASK_ID"]) {
				t.Errorf("get printed another task:\n%s", r.out)
			}
		}},
		{file: "README.md", match: re(`^a2amesh cancel TASK_ID`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "canceled") {
				t.Errorf("cancel did not say canceled:\n%s", r.out)
			}
		}},
		{file: "README.md", match: re(`^a2amesh stream --agent slow`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "completed") {
				t.Errorf("stream did not end completed:\n%s", r.out)
			}
		}},

		// Writing an agent.
		{file: "README.md", match: re(`"messageId":"g-1"`), fn: func(t *testing.T, _ *session, r result) {
			task := taskOf(r.rpc["result"])
			wantState(t, task, "completed")
			if got := artifactText(task); got != "Hello, Ada!" {
				t.Errorf("greeter answered %q, want Hello, Ada!", got)
			}
		}},

		// docs/configuration.md: auth.
		{file: "docs/configuration.md", match: re(`^printf .* > keys`), fn: func(t *testing.T, s *session, _ result) {
			st, err := os.Stat(filepath.Join(s.dir, "keys"))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("keys file: %v %v", st, err)
			}
		}},
		{file: "docs/deployment.md", match: re(`^a2amesh migrate --nats`), fn: func(t *testing.T, _ *session, r result) {
			// A fresh NATS holds no earlier layout: migrate says so.
			if !strings.Contains(r.out, "nothing to migrate") {
				t.Errorf("migrate on a fresh NATS does not say there is nothing to migrate:\n%s%s", r.out, r.errOut)
			}
		}},
		{file: "docs/console.md", match: re(`^curl -s localhost:8080/ops/v1/fleet`), fn: func(t *testing.T, _ *session, r result) {
			workers := map[string]any{}
			for _, a := range jsonOf(t, r.out)["agents"].([]any) {
				a := a.(map[string]any)
				workers[a["name"].(string)] = a["workers"]
				if q, ok := a["queue"].(map[string]any); !ok || q["pending"] == nil || q["inFlight"] == nil || q["deadLetters"] == nil {
					t.Errorf("%s has no queue figures: %s", a["name"], r.out)
				}
			}
			if workers["echo"] != float64(1) {
				t.Errorf("echo should have 1 worker: %s", r.out)
			}
		}},
		// docs/configuration.md: the audit log lists the send before it.
		{file: "docs/configuration.md", match: re(`^a2amesh audit --nats`), fn: func(t *testing.T, s *session, r result) {
			if !regexp.MustCompile(`(?m)jsonrpc\s+SendMessage\s+echo\s+\S+\s+ok$`).MatchString(r.out) {
				t.Errorf("the audit log does not list the send:\n%s%s", r.out, r.errOut)
			}
		}},
		// docs/configuration.md: access policy. Alice's send to echo
		// completes (her send to upper is the example's -31403); olga, an
		// operator by her key's roles=, reads the fleet, and alice may not.
		{file: "docs/configuration.md", match: re(`^curl .*x-api-key: alice.*"method":"SendMessage".*"p1"`), fn: func(t *testing.T, s *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "TASK_STATE_COMPLETED")
		}},
		{file: "docs/configuration.md", match: re(`^curl -sf localhost:8080/ops/v1/fleet -H 'x-api-key: olga`), fn: func(t *testing.T, s *session, r result) {
			names := map[string]bool{}
			for _, a := range jsonOf(t, r.out)["agents"].([]any) {
				names[a.(map[string]any)["name"].(string)] = true
			}
			if !names["echo"] || !names["upper"] {
				t.Errorf("the operator's fleet lacks echo or upper: %s", r.out)
			}
			req, _ := http.NewRequest(http.MethodGet, s.edge+"/ops/v1/fleet", nil)
			req.Header.Set("X-Api-Key", "alice-secret-0123456789")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("alice's fleet read got HTTP %d, want 403 (no ops action)", resp.StatusCode)
			}
		}},
		{file: "docs/configuration.md", match: re(`^curl .*(x-api-key|Bearer).*"method":"message/send"`), fn: func(t *testing.T, s *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "completed")
			// And without the credential, the same call is refused.
			resp, err := http.Post(s.edge+"/agents/echo", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a call without credentials got HTTP %d, want 401", resp.StatusCode)
			}
		}},

		// docs/extended-card.md.
		{file: "docs/extended-card.md", match: re(`^curl -s localhost:8080/agents/echo/\.well-known/agent-card\.json`), fn: func(t *testing.T, _ *session, r result) {
			var card map[string]any
			if err := json.Unmarshal([]byte(r.out), &card); err != nil {
				t.Fatalf("public card: %v\n%s", err, r.out)
			}
			caps, _ := card["capabilities"].(map[string]any)
			if caps["extendedAgentCard"] != true || card["supportsAuthenticatedExtendedCard"] != true {
				t.Errorf("the public card does not declare the extended card: %s", r.out)
			}
			if slices.Contains(skillIDs(card), "echo-data") {
				t.Errorf("the public card lists the extended card's skill: %v", skillIDs(card))
			}
		}},
		{file: "docs/extended-card.md", match: re(`alice.*"GetExtendedAgentCard"`), fn: func(t *testing.T, s *session, r result) {
			card, _ := r.rpc["result"].(map[string]any)
			if got := skillIDs(card); !slices.Equal(got, []string{"echo", "echo-data"}) {
				t.Errorf("alice's extended card skills %v, want echo and echo-data", got)
			}
			// Without a credential: the 401 every call gets.
			resp, err := http.Post(s.edge+"/agents/echo", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GetExtendedAgentCard without credentials got HTTP %d, want 401", resp.StatusCode)
			}
		}},
		{file: "docs/extended-card.md", match: re(`bob.*"GetExtendedAgentCard"`), fn: func(t *testing.T, _ *session, r result) {
			card, _ := r.rpc["result"].(map[string]any)
			if got := skillIDs(card); !slices.Equal(got, []string{"echo"}) {
				t.Errorf("bob's extended card skills %v, want echo only", got)
			}
		}},
		{file: "docs/extended-card.md", match: re(`/agents/echo/extendedAgentCard`), fn: func(t *testing.T, _ *session, r result) {
			var card map[string]any
			if err := json.Unmarshal([]byte(r.out), &card); err != nil {
				t.Fatalf("extended card: %v\n%s", err, r.out)
			}
			if !slices.Contains(skillIDs(card), "echo-data") {
				t.Errorf("HTTP+JSON extended card skills %v lack echo-data", skillIDs(card))
			}
		}},
		{file: "docs/extended-card.md", match: re(`^a2amesh card --agent echo --extended`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "echo-data") {
				t.Errorf("the CLI's extended card lacks echo-data:\n%s", r.out)
			}
		}},
		{file: "docs/extended-card.md", match: re(`agent/getAuthenticatedExtendedCard`), fn: func(t *testing.T, _ *session, r result) {
			card, _ := r.rpc["result"].(map[string]any)
			if !slices.Contains(skillIDs(card), "echo-data") || card["url"] == nil {
				t.Errorf("0.3 extended card lacks echo-data or url: %v", r.rpc["result"])
			}
		}},

		// docs/deployment.md.
		{file: "docs/deployment.md", match: re(`--public-url https://agents\.example\.com`), fn: func(t *testing.T, s *session, _ result) {
			resp, err := http.Get(s.edge + "/.well-known/agent-card.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			if !strings.Contains(buf.String(), "https://agents.example.com") {
				t.Errorf("cards do not point at --public-url: %s", buf.String())
			}
		}},
		{file: "docs/deployment.md", match: re(`--agent slow$`), fn: func(t *testing.T, s *session, _ result) {
			wantAgents(t, s.edge, "echo", "slow")
		}},

		// docs/interop.md: the TCK's system under test.
		{file: "docs/interop.md", match: re(`dev --default-agent tck`), fn: func(t *testing.T, s *session, _ result) {
			body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"tck-complete-task-docs","parts":[{"text":"x"}]}}}`
			out := post(t, s.edge+"/a2a", body)
			if !strings.Contains(out, "Hello from TCK") {
				t.Errorf("/a2a did not reach the tck agent: %s", out)
			}
		}},

		// docs/observability.md.
		{file: "docs/observability.md", match: re(`traceparent: 00-`), fn: func(t *testing.T, _ *session, r result) {
			wantState(t, taskOf(r.rpc["result"]), "completed")
		}},
		{file: "docs/observability.md", match: re(`/metrics \| grep`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.out, "a2amesh_edge_requests_total") {
				t.Errorf("metrics lack a2amesh_edge_requests_total:\n%s", r.out)
			}
		}},

		// docs/cards.md: the card's caching headers.
		{file: "docs/cards.md", match: re(`grep -i -E 'etag\|cache-control'`), fn: func(t *testing.T, _ *session, r result) {
			out := strings.ToLower(r.out)
			if !strings.Contains(out, "etag: \"") || !strings.Contains(out, "cache-control: public, max-age=60") {
				t.Errorf("the card's headers lack its ETag or Cache-Control: %s", r.out)
			}
		}},

		// docs/push.md: the receiver the example names gets the events.
		{file: "docs/push.md", match: re(`"token":"t-1"`), fn: func(t *testing.T, s *session, _ result) {
			s.push.wait(t, "t-1", "")
		}},
		{file: "docs/push.md", match: re(`"method":"CreateTaskPushNotificationConfig"`), fn: func(t *testing.T, s *session, r result) {
			if got := r.rpc["result"].(map[string]any)["taskId"]; got != s.vars["TASK_ID"] {
				t.Errorf("the config is for task %v, want %s", got, s.vars["TASK_ID"])
			}
			s.push.wait(t, "t-2", "Bearer receiver-secret")
		}},
		{file: "docs/push.md", match: re(`"method":"ListTaskPushNotificationConfigs"`), fn: func(t *testing.T, _ *session, r result) {
			configs, _ := r.rpc["result"].(map[string]any)["configs"].([]any)
			if len(configs) != 1 {
				t.Fatalf("want the one config, got %v", r.rpc["result"])
			}
			if b, _ := json.Marshal(configs[0]); bytes.Contains(b, []byte("receiver-secret")) {
				t.Errorf("List returned the credentials: %s", b)
			}
		}},

		// Extensions: the trace extension requested is echoed.
		{file: "docs/extensions.md", match: re(`^curl -s -D /dev/stderr .*A2A-Extensions: https://a2amesh\.dev/ext/trace/v1`), fn: func(t *testing.T, _ *session, r result) {
			if !regexp.MustCompile(`(?mi)^A2A-Extensions: https://a2amesh\.dev/ext/trace/v1\r?$`).MatchString(r.errOut) {
				t.Errorf("the answer's headers do not echo the trace extension:\n%s", r.errOut)
			}
		}},
		{file: "docs/extensions.md", match: re(`^a2amesh send --extensions https://a2amesh\.dev/ext/trace/v1`), fn: func(t *testing.T, _ *session, r result) {
			if !strings.Contains(r.errOut, "extensions activated: https://a2amesh.dev/ext/trace/v1\n") {
				t.Errorf("send does not say the trace extension was activated:\n%s", r.errOut)
			}
		}},
	}
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}

func wantAgents(t *testing.T, edge string, want ...string) {
	t.Helper()
	got := listAgents(edge)
	for _, w := range want {
		if !contains(got, w) {
			t.Errorf("agent %s not listed at %s (have %v)", w, edge, got)
		}
	}
}

// stateOf reads a task's (or a status update's) state in either version.
func stateOf(v map[string]any) string {
	if v == nil {
		return ""
	}
	if st, ok := v["status"].(map[string]any); ok {
		s, _ := st["state"].(string)
		return s
	}
	return ""
}

func wantState(t *testing.T, v map[string]any, states ...string) {
	t.Helper()
	got := stateOf(v)
	for _, s := range states {
		if got == s {
			return
		}
	}
	t.Errorf("state %q, want one of %v (%v)", got, states, v)
}

// artifactText joins the text parts of a task's artifacts.
func artifactText(task map[string]any) string {
	var b strings.Builder
	arts, _ := task["artifacts"].([]any)
	for _, a := range arts {
		parts, _ := a.(map[string]any)["parts"].([]any)
		for _, p := range parts {
			if s, ok := p.(map[string]any)["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func wantIncreasingIDs(t *testing.T, evs []sseEvent, after uint64) {
	t.Helper()
	prev := after
	for _, e := range evs {
		id, err := strconv.ParseUint(e.id, 10, 64)
		if err != nil {
			t.Errorf("event id %q is not a number", e.id)
			return
		}
		if id <= prev {
			t.Errorf("event id %d after %d: ids must grow, with nothing at or before the resume point", id, prev)
		}
		prev = id
	}
}

// wantStreamEnd checks a 1.0 stream's last event carries the final state.
func wantStreamEnd(t *testing.T, evs []sseEvent, state string) {
	t.Helper()
	if len(evs) == 0 {
		t.Error("no events")
		return
	}
	res, _ := evs[len(evs)-1].data["result"].(map[string]any)
	for _, k := range []string{"statusUpdate", "task"} {
		if v, ok := res[k].(map[string]any); ok {
			wantState(t, v, state)
			return
		}
	}
	t.Errorf("the last event is neither a status update nor a task: %v", res)
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return buf.String()
}

// runCLI runs an a2amesh command line printed by the CLI itself.
func runCLI(t *testing.T, s *session, line string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", bin+strings.TrimPrefix(line, "a2amesh"))
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "A2AMESH_URL="+s.edge)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// skillIDs lists the ids of a card's skills, in order.
func skillIDs(card map[string]any) []string {
	list, _ := card["skills"].([]any)
	var out []string
	for _, sk := range list {
		if m, ok := sk.(map[string]any); ok {
			id, _ := m["id"].(string)
			out = append(out, id)
		}
	}
	return out
}
