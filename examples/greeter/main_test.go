package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testbin"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// The example's run, against a whole mesh in this process whose NATS also
// listens on a loopback port (as `a2amesh dev --nats-listen` does): the
// greeter joins over that port, and a client reaches it through the edge
// with plain JSON-RPC over HTTP.
func TestGreeterJoinsTheMesh(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.NATSListen = "127.0.0.1:0" }))
	if !strings.HasPrefix(m.NATSURL(), "nats://127.0.0.1:") {
		t.Fatalf("mesh NATS URL %q, want one on 127.0.0.1", m.NATSURL())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, Config{NATSURL: m.NATSURL(), Concurrency: 4, WordDelay: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	stopped := false
	stopWorker := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run ended with %v after its context was canceled", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("run did not return within 15 s of its context being canceled")
		}
	}
	t.Cleanup(stopWorker)

	agentURL := m.URL + "/agents/greeter"
	hc := &http.Client{Timeout: 20 * time.Second}

	// The worker has registered once the edge serves its card.
	card := waitCard(t, hc, agentURL, done)
	t.Run("Card", func(t *testing.T) {
		if card.Name != "greeter" || card.Description == "" || !card.Capabilities.Streaming {
			t.Errorf("card name %q description %q streaming %v", card.Name, card.Description, card.Capabilities.Streaming)
		}
		if len(card.Skills) != 1 || card.Skills[0].ID != "greet" {
			t.Errorf("card skills %+v, want the one skill greet", card.Skills)
		}
	})

	t.Run("SendMessage", func(t *testing.T) {
		var res struct {
			Task wireTask `json:"task"`
		}
		call(t, hc, agentURL, "SendMessage", "Ada Lovelace", &res)
		if res.Task.Status.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("task state %q, want TASK_STATE_COMPLETED", res.Task.Status.State)
		}
		if len(res.Task.Artifacts) != 1 {
			t.Fatalf("%d artifacts, want the one greeting: %+v", len(res.Task.Artifacts), res.Task.Artifacts)
		}
		if got := res.Task.Artifacts[0].text(); got != "Hello, Ada Lovelace!" {
			t.Fatalf("greeting %q, want %q", got, "Hello, Ada Lovelace!")
		}
	})

	t.Run("SendStreamingMessage", func(t *testing.T) {
		events := stream(t, hc, agentURL, "Ada Lovelace")
		var words []string
		final := ""
		for i, ev := range events {
			if a := ev.ArtifactUpdate; a != nil {
				n := len(words)
				if a.Append != (n > 0) {
					t.Errorf("chunk %d: append=%v; the first chunk creates the artifact, the others append", n, a.Append)
				}
				if a.LastChunk != (n == 2) {
					t.Errorf("chunk %d: lastChunk=%v, want it on the third word only", n, a.LastChunk)
				}
				words = append(words, a.Artifact.text())
			}
			if s := ev.StatusUpdate; s != nil && i == len(events)-1 {
				final = s.Status.State
			}
		}
		if want := []string{"Hello,", " Ada", " Lovelace!"}; strings.Join(words, "|") != strings.Join(want, "|") {
			t.Errorf("streamed chunks %q, want %q", words, want)
		}
		if final != "TASK_STATE_COMPLETED" {
			t.Errorf("stream ended with state %q, want TASK_STATE_COMPLETED", final)
		}
	})

	t.Run("EmptyTextIsRejected", func(t *testing.T) {
		var res struct {
			Task wireTask `json:"task"`
		}
		call(t, hc, agentURL, "SendMessage", "   ", &res)
		if res.Task.Status.State != "TASK_STATE_REJECTED" {
			t.Fatalf("task state %q, want TASK_STATE_REJECTED", res.Task.Status.State)
		}
	})

	// Ctrl-C: run returns. The agent stays known with no live worker: GET
	// /agents shows it queuing, and its card is still served.
	t.Run("Stop", func(t *testing.T) {
		stopWorker()
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, err := hc.Get(m.URL + "/agents")
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Status map[string]struct {
					Workers int  `json:"workers"`
					Queuing bool `json:"queuing"`
				} `json:"status"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			st, ok := doc.Status["greeter"]
			if !ok {
				t.Fatal("GET /agents no longer lists the greeter after its worker stopped")
			}
			if st.Workers == 0 && st.Queuing {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the greeter still shows %d live workers 15 s after its worker stopped", st.Workers)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resp, err := hc.Get(agentURL + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the greeter's card answers %s with no worker; an agent outlives its workers", resp.Status)
		}
	})
}

// wireTask is the part of a 1.0 task the test reads.
type wireTask struct {
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []wireArtifact `json:"artifacts"`
}

type wireArtifact struct {
	Parts []struct {
		Text string `json:"text"`
	} `json:"parts"`
}

func (a wireArtifact) text() string {
	var b strings.Builder
	for _, p := range a.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

type wireCard struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Capabilities struct {
		Streaming bool `json:"streaming"`
	} `json:"capabilities"`
	Skills []struct {
		ID string `json:"id"`
	} `json:"skills"`
}

// waitCard polls the agent's card until the edge serves it (the worker has
// registered), failing after 15 s or if run ends first.
func waitCard(t *testing.T, hc *http.Client, agentURL string, done <-chan error) wireCard {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("run ended before the agent appeared: %v", err)
		default:
		}
		resp, err := hc.Get(agentURL + "/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			var c wireCard
			if err := json.Unmarshal(body, &c); err != nil {
				t.Fatalf("card is not JSON: %v: %s", err, body)
			}
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no greeter card after 15 s: last answer %s %s", resp.Status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// request is a JSON-RPC 1.0 call sending text as a user message.
func request(t *testing.T, method, text string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": map[string]any{
		"message": map[string]any{"role": "ROLE_USER", "messageId": "greeter-test-" + time.Now().Format("150405.000000000"),
			"parts": []any{map[string]any{"text": text}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// call makes a unary JSON-RPC call and decodes its result into out.
func call(t *testing.T, hc *http.Client, url, method, text string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(request(t, method, text)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&env); err != nil {
		t.Fatalf("%s: %s, body not JSON-RPC: %v", method, resp.Status, err)
	}
	if env.Error != nil {
		t.Fatalf("%s: error %d %s", method, env.Error.Code, env.Error.Message)
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		t.Fatalf("%s: result %s: %v", method, env.Result, err)
	}
}

// streamEvent is one SSE event's result.
type streamEvent struct {
	StatusUpdate *struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	} `json:"statusUpdate"`
	ArtifactUpdate *struct {
		Artifact  wireArtifact `json:"artifact"`
		Append    bool         `json:"append"`
		LastChunk bool         `json:"lastChunk"`
	} `json:"artifactUpdate"`
}

// stream sends text with SendStreamingMessage and reads the SSE answer to
// its end (at most 100 events, 20 s).
func stream(t *testing.T, hc *http.Client, url, text string) []streamEvent {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(request(t, "SendStreamingMessage", text)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("stream answered %s %q: %s", resp.Status, ct, body)
	}
	var events []streamEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env struct {
			Result streamEvent `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &env); err != nil {
			t.Fatalf("SSE data is not JSON-RPC: %v: %s", err, data)
		}
		if env.Error != nil {
			t.Fatalf("stream error %d %s", env.Error.Code, env.Error.Message)
		}
		events = append(events, env.Result)
		if len(events) >= 100 {
			t.Fatal("stream still going after 100 events")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return events
}

// The example as a newcomer runs it: built with go build, its NATS URL
// from the environment (NATS_URL), stopped with Ctrl-C (SIGINT), after
// which it exits 0 and hands its place in the mesh back.
func TestGreeterBinary(t *testing.T) {
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.NATSListen = "127.0.0.1:0" }))
	bin := buildGreeter(t)

	cmd := exec.Command(bin, "-word-delay", "1ms")
	cmd.Env = append(os.Environ(), "NATS_URL="+m.NATSURL())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it exited
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("greeter output:\n%s", out.String())
		}
	})

	agentURL := m.URL + "/agents/greeter"
	hc := &http.Client{Timeout: 20 * time.Second}
	waitCard(t, hc, agentURL, exited)
	var res struct {
		Task wireTask `json:"task"`
	}
	call(t, hc, agentURL, "SendMessage", "world", &res)
	if res.Task.Status.State != "TASK_STATE_COMPLETED" || len(res.Task.Artifacts) != 1 || res.Task.Artifacts[0].text() != "Hello, world!" {
		t.Fatalf("task %+v, want completed with the artifact \"Hello, world!\"", res.Task)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("greeter exited with %v after Ctrl-C, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("greeter still running 15 s after Ctrl-C")
	}
}

// buildGreeter builds this example, with the race detector when this test
// binary has it.
func buildGreeter(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./examples/greeter")
}
