package browser

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// The fleet shows each card's checks against the specification (a skill
// without tags or a mode that is no media type is an error, a
// documentation URL that is not absolute a warning; the mesh's own cards
// pass) and an agent's newest dead letters with their reasons, live: a
// letter recorded while the page is open appears at the next poll; and,
// when asked, its newest failed tasks. What the card and the agent say is
// shown as text.
func TestConsoleBrowserFleetChecksAndFailures(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		card := a2a.AgentCard{Name: "bare", Description: "a card with faults", Version: "1",
			DefaultInputModes: []string{"text/plain", xss}, DefaultOutputModes: []string{"text/plain"},
			Skills:           []a2a.AgentSkill{{ID: "s", Name: "S", Description: "d"}},
			DocumentationURL: "docs/bare.html"}
		_ = registry.Publish(ctx, m.Bus(), registry.Entry{Agent: "bare", Instance: "b1", Card: card}, nil, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, m.Bus().DeadLetter(ctx, "echo", []byte(`{"taskId":"task-one"}`), "max deliveries"))

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("bare's checks", `(document.querySelector('#fleet-body tr[data-agent="bare"] .checks summary') || {}).textContent === 'checks: 2 errors, 1 warning'`)
	var bare struct {
		Bad    bool
		Issues []string
	}
	b.eval(`(() => { const r = document.querySelector('#fleet-body tr[data-agent="bare"]');
		return {bad: r.querySelector('.checks summary').classList.contains('bad'),
			issues: Array.from(r.querySelectorAll('.card-issues li'), (li) => li.className + ': ' + li.textContent)}; })()`, &bare)
	require.True(t, bare.Bad)
	require.Equal(t, []string{
		"error: error defaultInputModes[1]: not a media type (type/subtype): " + strconv.Quote(xss),
		"error: error skills[0].tags: required: keywords of the skill, and empty",
		`warning: warning documentationUrl: not an absolute http(s) URL: "docs/bare.html"`,
	}, bare.Issues)
	var n int
	b.eval(`document.querySelectorAll('#fleet-body img, #fleet-body script').length`, &n)
	require.Zero(t, n, "what the card says is text")
	require.Equal(t, "checks: the card passes", b.text(`#fleet-body tr[data-agent="slow"] .checks summary`))

	// echo's dead letter, then one more while the page is open.
	b.waitFor("echo's failure", fleetCell("echo", "dead-letters")+` === "1"`)
	require.Contains(t, b.text(`#fleet-body tr[data-agent="echo"] .failures`), "max deliveries · task task-one")
	b.eval(`document.querySelector('#fleet-body tr[data-agent="echo"]').__mark = 1; true`, new(bool))
	require.NoError(t, m.Bus().DeadLetter(ctx, "echo", []byte(`{"taskId":"task-two"}`), "task not found"))
	b.waitFor("the new failure first", `(() => { const li = document.querySelectorAll('#fleet-body tr[data-agent="echo"] .failures li');
		return li.length === 2 && li[0].textContent.endsWith('task not found · task task-two') &&
			li[1].textContent.endsWith('max deliveries · task task-one'); })()`)
	require.Equal(t, "2", b.text(`#fleet-body tr[data-agent="echo"] td.dead-letters`))
	var same bool
	b.eval(`document.querySelector('#fleet-body tr[data-agent="echo"]').__mark === 1`, &same)
	require.True(t, same, "the row updated in place")
	var title string
	b.eval(`document.querySelector('#fleet-body tr[data-agent="echo"] .failures li').title`, &title)
	when, err := time.Parse(time.RFC3339Nano, title)
	require.NoError(t, err, title)
	require.WithinDuration(t, time.Now(), when, time.Minute)
	require.True(t, strings.HasPrefix(b.text(`#fleet-body tr[data-agent="echo"] .checks summary`), "checks: "), "echo has checks")
	b.do(chromedp.Click(chromedp.CSS(`#fleet-body tr[data-agent="bare"] .checks summary`)))
	b.screenshot("fleet-checks")

	// An agent's failed tasks, read when asked: the newest first, with
	// their status messages, as text.
	wctx, stop := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		_ = (&agentrt.Worker{Store: m.Store(), Agent: failer{}, Name: "failer", Logger: slog.New(slog.DiscardHandler)}).Run(wctx)
	}()
	t.Cleanup(func() { stop(); <-wdone })
	b.waitFor("failer listed", `!!document.querySelector('#fleet-body tr[data-agent="failer"]')`)
	first := sendTask(t, m.URL, "failer", "one", false)
	sendTask(t, m.URL, "echo", "fine", false)
	second := sendTask(t, m.URL, "failer", "two", false)
	b.do(chromedp.Click(chromedp.CSS(`#fleet-body tr[data-agent="failer"] .failed-tasks summary`)))
	b.waitFor("failer's failed tasks", `(document.querySelector('#fleet-body tr[data-agent="failer"] .failed-tasks summary') || {}).textContent === 'failed tasks: the newest 2'`)
	var items []string
	b.eval(`Array.from(document.querySelectorAll('#fleet-body tr[data-agent="failer"] .failed-list li'), (li) => li.textContent)`, &items)
	require.Len(t, items, 2)
	require.Contains(t, items[0], "task "+second+" · failed on two: "+xss)
	require.Contains(t, items[1], "task "+first+" · failed on one: "+xss)
	b.eval(`document.querySelectorAll('#fleet-body img, #fleet-body script').length`, &n)
	require.Zero(t, n, "a status message is text")
	b.do(chromedp.Click(chromedp.CSS(`#fleet-body tr[data-agent="echo"] .failed-tasks summary`)))
	b.waitFor("echo has none", `(document.querySelector('#fleet-body tr[data-agent="echo"] .failed-tasks summary') || {}).textContent === 'failed tasks: none'`)
	b.noCSPViolations()
}

// failer fails every task, with a message that would be markup.
type failer struct{}

func (failer) Card() a2a.AgentCard {
	return a2a.AgentCard{Name: "failer", Description: "fails", Version: "1.0.0"}
}

func (failer) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	text := ""
	for _, p := range req.Message.Parts {
		text += p.Text
	}
	return w.Fail("failed on " + text + ": " + xss)
}
