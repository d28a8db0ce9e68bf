// Package browser tests the web console (package console) in a real
// browser: headless Chromium, driven over the DevTools protocol by
// chromedp, against a whole mesh (meshtest) on loopback. The tests do
// what a person does: open the page, read the fleet, chat with an agent,
// enter an API key.
//
// Chromium is Debian's chromium package (.ci/run installs it), or the
// binary named by A2AMESH_CHROMIUM. A test skips only when
// A2AMESH_SKIP_BROWSER=1; without that, a missing browser fails it.
package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

const (
	// testTimeout bounds everything a test does in its browser.
	testTimeout = 40 * time.Second
	// startTimeout bounds the browser's start.
	startTimeout = 20 * time.Second
	// waitTimeout bounds one wait for the page to show something.
	waitTimeout = 10 * time.Second
)

// chromium finds the browser, failing the test when it is missing unless
// A2AMESH_SKIP_BROWSER=1 says to skip.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("A2AMESH_SKIP_BROWSER") == "1" {
		t.Skip("A2AMESH_SKIP_BROWSER=1: the browser tests skip")
	}
	if p := os.Getenv("A2AMESH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: install it (Debian: apt-get install chromium; .ci/run does), " +
		"name it in A2AMESH_CHROMIUM, or set A2AMESH_SKIP_BROWSER=1 to skip the browser tests")
	return ""
}

// browser is one tab of a headless Chromium of its own, and what the page
// wrote to its console.
type browser struct {
	t   *testing.T
	ctx context.Context // bounded by testTimeout

	mu      sync.Mutex
	console []string
}

// newBrowser starts Chromium for the test; it stops with the test.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	b := &browser{t: t}
	// The first call starts the browser and must not carry a deadline
	// (the browser would die with it): a timer bounds it instead.
	watchdog := time.AfterFunc(startTimeout, cancelBrowser)
	msgs := chromedp.Console(bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	watchdog.Stop()
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m.String())
			b.mu.Unlock()
		}
	}()
	ctx, cancel := context.WithTimeout(bctx, testTimeout)
	t.Cleanup(cancel)
	b.ctx = ctx
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("browser console:\n%s", strings.Join(b.consoleLines(), "\n"))
		}
	})
	return b
}

func (b *browser) consoleLines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// do runs actions, failing the test on an error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

// eval evaluates a JavaScript expression in the page and decodes its
// value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr))
	require.NoError(b.t, err, "evaluate %s", expr)
	require.NoError(b.t, json.Unmarshal(v, out), "evaluate %s: %s", expr, v)
}

// waitFor evaluates expr every 50ms until it is true, for at most
// waitTimeout. (chromedp.Poll compiles its predicate with new Function,
// which the console's CSP refuses, as it should.)
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err == nil && string(v) == "true" {
			return
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			var state string
			b.eval(`document.body ? document.body.innerText : ""`, &state)
			b.t.Fatalf("waited %v for %s (%s): last %s, %v\npage text:\n%s", waitTimeout, what, expr, v, err, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text is the textContent of the first element matching sel ("" when
// none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel), &s)
	return s
}

// screenshot saves the page as docs/img/console-<name>.png when
// A2AMESH_SCREENSHOTS names a directory (the README's pictures come from
// there); otherwise it does nothing.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("A2AMESH_SCREENSHOTS")
	if dir == "" {
		return
	}
	b.do(chromedp.EmulateViewport(1100, 640))
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644))
}

// noCSPViolations checks that the page itself broke no rule of its CSP.
func (b *browser) noCSPViolations() {
	b.t.Helper()
	for _, l := range b.consoleLines() {
		require.NotContains(b.t, l, "Content Security Policy", "the page broke its own CSP")
	}
}

// fleetCell is a JavaScript expression: the figure cls of agent's row in
// the fleet table.
func fleetCell(agent, cls string) string {
	return fmt.Sprintf(`(document.querySelector('#fleet-body tr[data-agent=%q] td.%s') || {}).textContent`, agent, cls)
}

// chat sends text to agent from the chat view and waits for the n-th
// answer (from 1) to end.
func (b *browser) chat(agent, text string, n int) {
	b.t.Helper()
	b.send(agent, text)
	b.waitEnd(n)
}

// send sends text to agent from the chat view, in A2A 1.0.
func (b *browser) send(agent, text string) {
	b.t.Helper()
	b.sendIn("1.0", agent, text)
}

// sendIn sends text to agent from the chat view in A2A version v.
func (b *browser) sendIn(v, agent, text string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS("#tab-chat")))
	b.waitFor("the agent in the chat's list", fmt.Sprintf(`!!document.querySelector('#chat-agent option[value=%q]')`, agent))
	b.do(
		chromedp.SetValue(chromedp.CSS("#chat-agent"), agent),
		chromedp.SetValue(chromedp.CSS("#chat-version"), v),
		chromedp.SendKeys(chromedp.CSS("#chat-input"), text),
		chromedp.Click(chromedp.CSS("#chat-send")),
	)
}

// waitEnd waits for the n-th answer (from 1) of the chat to end its turn:
// a terminal state, a request for input, or an error.
func (b *browser) waitEnd(n int) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("answer %d to end", n), fmt.Sprintf(
		`(() => { const a = document.querySelectorAll('#chat-log li.agent'); const s = a.length >= %d && a[%d].dataset.state; return ['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required', 'error'].includes(s); })()`, n, n-1))
}
