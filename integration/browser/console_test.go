package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// Opening /console shows the fleet: echo with its one worker, an empty
// queue and its skill, and the page keeps to its CSP.
func TestConsoleBrowserFleet(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console"))
	b.waitFor("echo with 1 worker", fleetCell("echo", "workers")+` === "1"`)
	require.Equal(t, "0", b.text(`#fleet-body tr[data-agent="echo"] td.pending`))
	require.Equal(t, "0", b.text(`#fleet-body tr[data-agent="echo"] td.dead-letters`))
	require.Contains(t, b.text(`#fleet-body tr[data-agent="echo"] .skills`), "Echo")
	require.Contains(t, b.text(`#fleet-body tr[data-agent="slow"] .skills`), "Slow stream")
	b.do(chromedp.Click(chromedp.CSS(`#fleet-body tr[data-agent="echo"] summary`)))
	b.screenshot("fleet")
	card := b.text(`#fleet-body tr[data-agent="echo"] details dl`)
	require.Contains(t, card, "JSONRPC 1.0 "+m.URL+"/agents/echo")
	require.Contains(t, card, "text/plain")
	require.Contains(t, card, "streaming")
	var url string
	b.eval(`location.pathname`, &url)
	require.Equal(t, "/console/", url)
	b.noCSPViolations()

	// What the first load cost: bytes of the page and its assets (as
	// sent, uncompressed), and when the fleet first showed.
	var load struct {
		Bytes      int
		Files      int
		FirstPaint float64
		Fleet      float64
	}
	b.eval(`(() => {
		const nav = performance.getEntriesByType('navigation')[0];
		const res = performance.getEntriesByType('resource').filter((r) => r.name.includes('/console/'));
		const fcp = performance.getEntriesByName('first-contentful-paint')[0];
		return {bytes: nav.encodedBodySize + res.reduce((n, r) => n + r.encodedBodySize, 0), files: 1 + res.length,
			firstPaint: fcp ? fcp.startTime : -1, fleet: performance.getEntriesByName('a2amesh-fleet')[0].startTime};
	})()`, &load)
	require.Positive(t, load.Bytes)
	t.Logf("first load: %d files, %d bytes; first contentful paint %.0f ms, fleet shown %.0f ms after navigation start",
		load.Files, load.Bytes, load.FirstPaint, load.Fleet)
}

// Chat with echo: the reply's text is shown as the stream brings it; a
// second message continues the conversation (same contextId).
func TestConsoleBrowserChat(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("echo", "hello from the console", 1)
	require.True(t, strings.HasPrefix(b.text(`#chat-log li.agent .who`), "echo · completed · task "), b.text(`#chat-log li.agent .who`))
	require.Equal(t, "hello from the console", b.text(`#chat-log li.agent .artifact`))

	// slow streams its chunks into one artifact: the first is shown while
	// the task still works, the others are appended as they come.
	b.send("slow", "chunks=4 delay=300ms")
	b.waitFor("the first chunk while slow works", `(() => {
		const li = document.querySelector('#chat-log li.agent');
		const a = li && li.querySelector('.artifact');
		return !!a && a.textContent === 'chunk 1/4\n' && li.dataset.state === 'working'; })()`)
	b.waitEnd(1)
	require.Equal(t, "chunk 1/4\nchunk 2/4\nchunk 3/4\nchunk 4/4\n", b.text(`#chat-log li.agent .artifact`))
	b.screenshot("chat")
	b.noCSPViolations()
}

// Chat in A2A 0.3: message/stream with 0.3 shapes, the same answers;
// each answer's raw pane has the exact request sent and the events
// received.
func TestConsoleBrowserChat03AndRaw(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.sendIn("0.3", "ask", "hi")
	b.waitEnd(1)
	b.sendIn("0.3", "ask", "Grace")
	b.waitEnd(2)
	var got struct {
		State, Text string
		Sent        []string
		Received    int
	}
	b.eval(`(() => { const li = document.querySelectorAll('#chat-log li.agent')[1];
		return {state: li.dataset.state, text: li.querySelector('.artifact').textContent,
			sent: Array.from(li.querySelectorAll('details.raw pre.sent'), (p) => p.textContent),
			received: li.querySelectorAll('details.raw pre.received').length}; })()`, &got)
	require.Equal(t, "completed", got.State)
	require.Equal(t, "Hello, Grace!", got.Text)
	require.Len(t, got.Sent, 1)
	sent := strings.TrimPrefix(got.Sent[0], "→ ")
	var req struct {
		Method string
		Params struct {
			Message struct {
				Kind, Role, TaskID string
				Parts              []struct{ Kind, Text string }
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(sent), &req), sent)
	require.Equal(t, "message/stream", req.Method)
	require.Equal(t, "message", req.Params.Message.Kind)
	require.Equal(t, "user", req.Params.Message.Role)
	require.NotEmpty(t, req.Params.Message.TaskID, "the second turn continues the task")
	require.Equal(t, []struct{ Kind, Text string }{{"text", "Grace"}}, req.Params.Message.Parts)
	require.GreaterOrEqual(t, got.Received, 3, "the task, its status updates and artifact")
}

// A conversation with ask: it asks for a name (input-required), the
// answer continues the same task, and the greeting completes it.
func TestConsoleBrowserChatInputRequired(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("ask", "hi", 1)
	var first struct{ State, Text string }
	b.eval(`(() => { const li = document.querySelectorAll('#chat-log li.agent')[0];
		return {state: li.dataset.state, text: li.querySelector('.body').textContent}; })()`, &first)
	require.Equal(t, "input-required", first.State)
	require.Equal(t, agents.Question, first.Text)

	b.chat("ask", "Ada", 2)
	var second struct{ State, Text, Head1, Head2 string }
	b.eval(`(() => { const li = document.querySelectorAll('#chat-log li.agent');
		return {state: li[1].dataset.state, text: li[1].querySelector('.artifact').textContent,
			head1: li[0].querySelector('.who').textContent, head2: li[1].querySelector('.who').textContent}; })()`, &second)
	require.Equal(t, "completed", second.State)
	require.Equal(t, "Hello, Ada!", second.Text)
	task := second.Head1[strings.LastIndex(second.Head1, " ")+1:]
	require.NotEmpty(t, task)
	require.True(t, strings.HasSuffix(second.Head2, "task "+task), "the answer continued task %s: %s", task, second.Head2)
}

// The fleet follows workers as they join and leave: a second echo worker
// makes 2, a new agent gets a row, and when they stop echo is back to 1
// and the new agent stays, known, with no live worker and its sends
// queuing; a proxy's agent shows what it verified of its upstream card.
func TestConsoleBrowserFleetFollowsWorkers(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("echo with 1 worker", fleetCell("echo", "workers")+` === "1"`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range []*agentrt.Worker{
		{Store: m.Store(), Agent: agents.Echo{}, Name: "echo", Instance: "second"},
		{Store: m.Store(), Agent: agents.Echo{}, Name: "joiner"},
	} {
		w.Logger = slog.New(slog.DiscardHandler)
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	// A proxy's entry, with what it verified of its upstream card.
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = registry.Publish(ctx, m.Bus(), registry.Entry{Agent: "proxied", Instance: "p1", Card: a2a.AgentCard{Name: "proxied"},
			CardCheck: &registry.CardCheck{Status: registry.CardInvalid, Error: "no key verifies"}}, nil, slog.New(slog.DiscardHandler))
	}()
	b.waitFor("echo with 2 workers", fleetCell("echo", "workers")+` === "2"`)
	b.waitFor("joiner with 1 worker", fleetCell("joiner", "workers")+` === "1"`)
	b.waitFor("the proxy's card check", `(document.querySelector('#fleet-body tr[data-agent="proxied"] details dl')?.textContent || '')
		.includes('upstream cardinvalid · no key verifies')`)
	cancel()
	wg.Wait()
	b.waitFor("echo back to 1 worker", fleetCell("echo", "workers")+` === "1"`)
	b.waitFor("joiner with no worker, queuing", fleetCell("joiner", "workers")+` === "0" && `+
		`document.querySelector('#fleet-body tr[data-agent="joiner"]')?.dataset.queuing === "true" && `+
		`(document.querySelector('#fleet-body tr[data-agent="joiner"] .liveness')?.textContent || '').includes('no live worker: sends queue · last seen')`)
	b.waitFor("the state line counts it", `document.querySelector('#fleet-state').textContent.includes('with no live worker')`)
}

// A running task's answer has a Cancel button: it cancels the task, the
// stream ends canceled and the chunks stop.
func TestConsoleBrowserChatCancel(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.send("slow", "chunks=100 delay=200ms")
	b.waitFor("the first chunk", `(document.querySelector('#chat-log li.agent .artifact') || {}).textContent === 'chunk 1/100\n'`)
	b.do(chromedp.Click(chromedp.CSS("#chat-log li.agent button.cancel")))
	b.waitEnd(1)
	var end struct {
		State  string
		Chunks int
		Hidden bool
	}
	b.eval(`(() => { const li = document.querySelector('#chat-log li.agent');
		return {state: li.dataset.state, chunks: (li.querySelector('.artifact').textContent.match(/chunk/g) || []).length,
			hidden: li.querySelector('button.cancel').hidden}; })()`, &end)
	require.Equal(t, "canceled", end.State)
	require.Less(t, end.Chunks, 20, "canceled long before its 100 chunks")
	require.True(t, end.Hidden, "no Cancel once the task ended")
}

// xss is agent output that would run script if it were parsed as HTML.
const xss = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`

// An agent's reply made of markup is shown as text: no element is
// created from it and no script of it runs. Markup injected past the
// console's own code would still not run: the CSP refuses inline
// handlers.
func TestConsoleBrowserAgentOutputIsText(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("echo", xss, 1)
	require.Equal(t, xss, b.text(`#chat-log li.agent .artifact`))
	require.Equal(t, xss, b.text(`#chat-log li.user .body`))
	time.Sleep(300 * time.Millisecond) // an <img onerror> would have fired by now
	var n int
	b.eval(`document.querySelectorAll('#chat-log script, #chat-log img').length`, &n)
	require.Zero(t, n, "no element made of the agent's text")
	var pwned string
	b.eval(`typeof window.__pwned`, &pwned)
	require.Equal(t, "undefined", pwned)

	// Defence in depth: markup put in the page by other means (here the
	// test itself) gets its inline handler refused by the CSP.
	b.eval(`document.addEventListener('securitypolicyviolation', (e) => { window.__violations = (window.__violations || 0) + 1; }); true`, new(bool))
	b.eval(`document.body.insertAdjacentHTML('beforeend', '<img src="x" onerror="window.__csp=1">'); true`, new(bool))
	b.waitFor("a CSP violation", `(window.__violations || 0) > 0`)
	var csp string
	b.eval(`typeof window.__csp`, &csp)
	require.Equal(t, "undefined", csp)
	// The browser reports it on the console, where noCSPViolations looks.
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(strings.Join(b.consoleLines(), "\n"), "Content Security Policy") {
		require.True(t, time.Now().Before(deadline), "no CSP violation on the console: %q", b.consoleLines())
		time.Sleep(50 * time.Millisecond)
	}
}

// With an auth file the fleet API answers 401 without a key; the page
// says it needs one, and once the key is entered shows the fleet and
// chats, the key kept in sessionStorage only, never in the URL or a
// cookie.
func TestConsoleBrowserAPIKey(t *testing.T) {
	const key = "console-secret-0123456789"
	auth, err := edge.NewAuth(map[string][]string{"alice": {key}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	resp, err := http.Get(m.URL + "/ops/v1/fleet")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("the page to ask for a key", `document.querySelector('#fleet-state').textContent.includes('API key')`)
	var rows int
	b.eval(`document.querySelectorAll('#fleet-body tr').length`, &rows)
	require.Zero(t, rows)

	b.do(chromedp.SendKeys(chromedp.CSS("#key-input"), key), chromedp.Click(chromedp.CSS("#key-save")))
	b.waitFor("echo with 1 worker", fleetCell("echo", "workers")+` === "1"`)
	var where struct{ Session, Cookie, URL, Field string }
	b.eval(`({session: sessionStorage.getItem('a2amesh.apiKey'), cookie: document.cookie, url: location.href,
		field: document.querySelector('#key-input').value})`, &where)
	require.Equal(t, key, where.Session)
	require.Empty(t, where.Cookie)
	require.NotContains(t, where.URL, key)
	require.Empty(t, where.Field, "the field is cleared once the key is kept")

	b.chat("echo", "with a key", 1)
	require.Equal(t, "with a key", b.text(`#chat-log li.agent .artifact`))

	b.do(chromedp.Click(chromedp.CSS("#tab-tasks")))
	b.waitFor("the key's task listed", `document.querySelectorAll('#tasks-body tr').length === 1`)

	// Forgetting the key: the next reads are refused again, and what was
	// shown goes.
	b.do(chromedp.Click(chromedp.CSS("#key-forget")))
	b.waitFor("the tasks asking for a key", `document.querySelector('#tasks-status').textContent.includes('API key') &&
		document.querySelectorAll('#tasks-body tr').length === 0`)
	b.do(chromedp.Click(chromedp.CSS("#tab-fleet")))
	b.waitFor("the page to ask for a key again", `document.querySelector('#fleet-state').textContent.includes('API key')`)
	b.eval(`document.querySelectorAll('#fleet-body tr').length`, &rows)
	require.Zero(t, rows, "no fleet shown without a key")
	b.noCSPViolations()
}

// The raw view sends a request as written and shows the answer; a chat
// answer's request is brought there to edit and send again; a stream's
// events come one by one; JSON that does not parse is sent and the edge's
// error shown.
func TestConsoleBrowserRaw(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("echo", "first words", 1)
	b.do(chromedp.Click(chromedp.CSS(`#chat-log li.agent details.raw summary`)),
		chromedp.Click(chromedp.CSS(`#chat-log li.agent details.raw button.edit`)))
	b.waitFor("the raw view with chat's request", `!document.querySelector('#view-raw').hidden &&
		document.querySelector('#raw-body').value.includes('"SendStreamingMessage"')`)
	var where struct{ Agent, Version string }
	b.eval(`({agent: document.querySelector('#raw-agent').value, version: document.querySelector('#raw-version').value})`, &where)
	require.Equal(t, struct{ Agent, Version string }{"echo", "1.0"}, where)

	// Edited: a new messageId and other words, sent as a stream.
	b.eval(`(() => { const b = document.querySelector('#raw-body'); const req = JSON.parse(b.value);
		req.params.message.messageId = 'raw-edit-1'; req.params.message.parts = [{text: 'edited words'}];
		b.value = JSON.stringify(req); return true; })()`, new(bool))
	b.do(chromedp.Click(chromedp.CSS("#raw-send")))
	b.waitFor("the stream's events", `document.querySelector('#raw-status').textContent.startsWith('HTTP 200')`)
	var events []string
	b.eval(`Array.from(document.querySelectorAll('#raw-out pre'), (p) => p.textContent)`, &events)
	require.GreaterOrEqual(t, len(events), 3, "task, status and artifact events, each in its own block")
	require.Contains(t, strings.Join(events, "\n"), `"edited words"`)
	require.Contains(t, events[len(events)-1], "TASK_STATE_COMPLETED")

	// Not JSON: sent as written, the edge's parse error shown.
	b.do(chromedp.SetValue(chromedp.CSS("#raw-body"), `{"jsonrpc": "2.0", oops`), chromedp.Click(chromedp.CSS("#raw-send")))
	b.waitFor("the parse error", `document.querySelector('#raw-out').textContent.includes('-32700')`)
	require.Contains(t, b.text("#raw-status"), "HTTP ")
	b.noCSPViolations()
}

// filer answers with a file whose name, type and bytes are hostile.
type filer struct{}

func (filer) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "filer", Description: "answers with a file", Version: "1.0.0",
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)}}
}

func (filer) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	f := a2a.Part{Kind: a2a.PartRaw, Raw: []byte(xss), Filename: `../..\.evil "name"<x>?.html`, MediaType: "text/html"}
	u := a2a.Part{Kind: a2a.PartURL, URL: "javascript:window.__pwned=4", Filename: "link.html"}
	if err := w.Artifact(a2a.Artifact{Name: "files", Parts: []a2a.Part{f, u}}, false, true); err != nil {
		return err
	}
	return w.Complete("")
}

// A file from an agent is offered, never rendered: its name is made safe,
// its bytes are saved as application/octet-stream whatever type it
// claims, and a file by URL is shown as text, not as a link.
func TestConsoleBrowserFilesAreDownloads(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&agentrt.Worker{Store: m.Store(), Agent: filer{}, Name: "filer", Logger: slog.New(slog.DiscardHandler)}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("filer", "a file, please", 1)
	files := b.text(`#chat-log li.agent .artifact`)
	require.Contains(t, files, "file evil _name__x__.html (text/html), 71 bytes")
	require.Contains(t, files, "file link.html at javascript:window.__pwned=4")
	var n int
	b.eval(`document.querySelectorAll('#chat-log a, #chat-log iframe, #chat-log object, #chat-log embed, #chat-log img, #chat-log script').length`, &n)
	require.Zero(t, n, "nothing of the files is an element")

	// Download: record what the page hands the browser instead of saving.
	b.eval(`(() => { window.__saved = [];
		const orig = URL.createObjectURL;
		URL.createObjectURL = (blob) => { window.__blob = blob; return orig(blob); };
		HTMLAnchorElement.prototype.click = function () { window.__saved.push({name: this.download, href: this.href}); };
		return true; })()`, new(bool))
	b.do(chromedp.Click(chromedp.CSS(`#chat-log li.agent button.download`)))
	var saved struct {
		Name, Href, Type, Body string
	}
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](`window.__blob.text().then((body) =>
		({name: window.__saved[0].name, href: window.__saved[0].href, type: window.__blob.type, body}))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(v, &saved))
	require.Equal(t, "evil _name__x__.html", saved.Name)
	require.True(t, strings.HasPrefix(saved.Href, "blob:"), saved.Href)
	require.Equal(t, "application/octet-stream", saved.Type)
	require.Equal(t, xss, saved.Body)
	var pwned string
	b.eval(`typeof window.__pwned`, &pwned)
	require.Equal(t, "undefined", pwned)
}

// fileEcho answers with the files it got, as one artifact.
type fileEcho struct{}

func (fileEcho) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "fileecho", Description: "answers with the files it gets", Version: "1.0.0",
		Capabilities: a2a.AgentCapabilities{Streaming: a2a.Bool(true)}}
}

func (fileEcho) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	var files []a2a.Part
	for _, p := range req.Message.Parts {
		if p.Kind == a2a.PartRaw {
			files = append(files, p)
		}
	}
	if err := w.Artifact(a2a.Artifact{Name: "files", Parts: append(files, a2a.TextPart(fmt.Sprintf("%d files", len(files))))}, false, true); err != nil {
		return err
	}
	return w.Complete("")
}

// Files attached in the chat reach the agent as file parts, with their
// names, types and bytes, in 1.0 and in 0.3.
func TestConsoleBrowserChatAttachesFiles(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = (&agentrt.Worker{Store: m.Store(), Agent: fileEcho{}, Name: "fileecho", Logger: slog.New(slog.DiscardHandler)}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("hello file\n"), 0o600))
	blob := filepath.Join(dir, "blob.bin")
	require.NoError(t, os.WriteFile(blob, []byte{0, 1, 2, 0xff}, 0o600))

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	for i, v := range []string{"1.0", "0.3"} {
		b.do(chromedp.Click(chromedp.CSS("#tab-chat")))
		b.waitFor("fileecho in the list", `!!document.querySelector('#chat-agent option[value="fileecho"]')`)
		b.do(chromedp.SetValue(chromedp.CSS("#chat-agent"), "fileecho"), chromedp.SetValue(chromedp.CSS("#chat-version"), v),
			chromedp.SetUploadFiles(chromedp.CSS("#chat-files"), []string{notes, blob}),
			chromedp.Click(chromedp.CSS("#chat-send")))
		b.waitEnd(i + 1)
		var got struct{ Mine, Reply string }
		b.eval(fmt.Sprintf(`({mine: document.querySelectorAll('#chat-log li.user')[%d].querySelector('.body').textContent,
			reply: document.querySelectorAll('#chat-log li.agent')[%d].querySelector('.artifact').textContent})`, i, i), &got)
		require.Equal(t, "file notes.txt (text/plain), 11 bytesfile blob.bin (application/octet-stream), 4 bytes", got.Mine, v)
		require.Equal(t, "file notes.txt (text/plain), 11 bytes Downloadfile blob.bin (application/octet-stream), 4 bytes Download2 files", got.Reply, v)
	}
}

// With a hundred agents more the fleet shows them all, and a poll
// updates the rows in place: the same elements stay, nothing is rebuilt.
func TestConsoleBrowserFleetHundredAgents(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 100 {
		name := fmt.Sprintf("a%03d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			card := a2a.AgentCard{Name: name, Description: "agent " + name, Version: "1.0.0",
				Skills: []a2a.AgentSkill{{ID: "s", Name: "skill of " + name, Description: "d", Tags: []string{"t"}}}}
			_ = registry.Publish(ctx, m.Bus(), registry.Entry{Agent: name, Instance: "i", Card: card}, nil, slog.New(slog.DiscardHandler))
		}()
	}
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("107 agents", `document.querySelectorAll('#fleet-body tr').length === 107`)
	b.eval(`document.querySelector('#fleet-body tr[data-agent="a050"]').__mark = 1; document.querySelector('#fleet-state').__read = document.querySelector('#fleet-state').textContent; true`, new(bool))
	b.waitFor("another poll", `(() => { const s = document.querySelector('#fleet-state'); return s.textContent !== s.__read; })()`)
	var same bool
	b.eval(`document.querySelector('#fleet-body tr[data-agent="a050"]').__mark === 1`, &same)
	require.True(t, same, "the row was updated in place, not rebuilt")
	var doc struct {
		Bytes int
		MS    float64
	}
	b.eval(`(() => { const r = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/ops/v1/fleet')).pop();
		return {bytes: r.encodedBodySize, ms: r.duration}; })()`, &doc)
	t.Logf("fleet of 107 agents: %d bytes, read in %.0f ms", doc.Bytes, doc.MS)
}
