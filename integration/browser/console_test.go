package browser

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
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
	var url string
	b.eval(`location.pathname`, &url)
	require.Equal(t, "/console/", url)
	b.noCSPViolations()
}

// Chat with echo: the reply's text is shown as the stream brings it; a
// second message continues the conversation (same contextId).
func TestConsoleBrowserChat(t *testing.T) {
	m := meshtest.Start(t)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.chat("echo", "hello from the console", 1)
	require.Equal(t, "completed", b.text(`#chat-log li.agent`)[len("echo · "):len("echo · completed")])
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
	b.noCSPViolations()
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

	// Forgetting the key: the next poll is refused again.
	b.do(chromedp.Click(chromedp.CSS("#tab-fleet")), chromedp.Click(chromedp.CSS("#key-forget")))
	b.waitFor("the page to ask for a key again", `document.querySelector('#fleet-state').textContent.includes('API key')`)
	b.noCSPViolations()
}
