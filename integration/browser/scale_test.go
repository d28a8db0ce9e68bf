package browser

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// The page at scale: 100 agents more and many tasks. By default a short
// run (300 tasks), which checks that the fleet and the first page of
// tasks show and that a poll of each updates its rows in place; with
// A2AMESH_CONSOLE_SCALE=1, 10,000 tasks, whose figures docs/console.md
// reports. The test logs what the page weighs and when the fleet and the
// task list first showed.
func TestConsoleBrowserScale(t *testing.T) {
	tasks := 300
	if os.Getenv("A2AMESH_CONSOLE_SCALE") == "1" {
		tasks = 10_000
	}
	m := meshtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 100 {
		name := fmt.Sprintf("s%03d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			card := a2a.AgentCard{Name: name, Description: "agent " + name, Version: "1.0.0",
				Skills: []a2a.AgentSkill{{ID: "s", Name: "skill of " + name, Description: "d", Tags: []string{"t"}}}}
			_ = registry.Publish(ctx, m.Bus(), registry.Entry{Agent: name, Instance: "i", Card: card}, nil, slog.New(slog.DiscardHandler))
		}()
	}
	// Every one of them with dead letters: a fleet poll reads the newest
	// three of each (300 gets).
	for i := range 100 {
		for j := range 3 {
			require.NoError(t, m.Bus().DeadLetter(ctx, fmt.Sprintf("s%03d", i), fmt.Appendf(nil, `{"taskId":"x%d"}`, j), "max deliveries"))
		}
	}
	start := time.Now()
	createTasks(t, m.URL, tasks)
	t.Logf("%d tasks created through SendMessage in %v", tasks, time.Since(start).Round(time.Millisecond))

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.waitFor("107 agents", `document.querySelectorAll('#fleet-body tr').length === 107`)
	var load struct {
		Bytes, Decoded, Files int
		FirstPaint, Fleet     float64
		FleetBytes, FleetJSON int
		FleetMS               float64
	}
	b.eval(`(() => {
		const nav = performance.getEntriesByType('navigation')[0];
		const res = performance.getEntriesByType('resource');
		const assets = res.filter((r) => r.name.includes('/console/'));
		const fleet = res.filter((r) => r.name.endsWith('/ops/v1/fleet'))[0];
		const fcp = performance.getEntriesByName('first-contentful-paint')[0];
		return {bytes: nav.encodedBodySize + assets.reduce((n, r) => n + r.encodedBodySize, 0),
			decoded: nav.decodedBodySize + assets.reduce((n, r) => n + r.decodedBodySize, 0), files: 1 + assets.length,
			firstPaint: fcp ? fcp.startTime : -1, fleet: performance.getEntriesByName('a2amesh-fleet')[0].startTime,
			fleetBytes: fleet.encodedBodySize, fleetJSON: fleet.decodedBodySize, fleetMS: fleet.duration};
	})()`, &load)
	t.Logf("page: %d files, %d bytes sent (%d uncompressed); first contentful paint %.0f ms, fleet of 107 agents shown %.0f ms after navigation start",
		load.Files, load.Bytes, load.Decoded, load.FirstPaint, load.Fleet)
	t.Logf("fleet poll: %d bytes sent (%d of JSON), read in %.0f ms", load.FleetBytes, load.FleetJSON, load.FleetMS)

	// The task list: time from the click to its first page shown.
	b.eval(`(() => { window.__tasksShown = 0; const body = document.querySelector('#tasks-body');
		new MutationObserver((_, o) => { if (body.children.length) { window.__tasksShown = performance.now(); o.disconnect(); } })
			.observe(body, {childList: true});
		window.__tasksClick = performance.now(); document.querySelector('#tab-tasks').click(); return true; })()`, new(bool))
	b.waitFor("the first page of tasks", `document.querySelectorAll('#tasks-body tr').length === 20`)
	var list struct {
		MS          float64
		Bytes, JSON int
		CallMS      float64
		Page        string
	}
	b.eval(`(() => { const r = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/a2a')).pop();
		return {ms: window.__tasksShown - window.__tasksClick, bytes: r.encodedBodySize, json: r.decodedBodySize,
			callMS: r.duration, page: document.querySelector('#tasks-page').textContent}; })()`, &list)
	require.Contains(t, list.Page, fmt.Sprintf("of %d tasks", tasks))
	t.Logf("tasks: first page of 20 (%s) shown %.0f ms after the click; ListTasks answer %d bytes sent (%d of JSON), %.0f ms",
		list.Page, list.MS, list.Bytes, list.JSON, list.CallMS)

	// A poll of each view keeps its rows: nothing is rebuilt.
	b.eval(`(() => { document.querySelector('#tasks-body tr').__mark = 1; window.__polls = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/a2a')).length; return true; })()`, new(bool))
	b.waitFor("another poll of the tasks", `performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/a2a')).length > window.__polls`)
	var kept bool
	b.eval(`document.querySelector('#tasks-body tr').__mark === 1`, &kept)
	require.True(t, kept, "the task rows were updated in place")
	b.do(chromedp.Click(chromedp.CSS("#tab-fleet")))
	b.eval(`(() => { document.querySelector('#fleet-body tr[data-agent="s050"]').__mark = 1; window.__fleetPolls = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/ops/v1/fleet')).length; return true; })()`, new(bool))
	b.waitFor("another poll of the fleet", `performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/ops/v1/fleet')).length > window.__fleetPolls`)
	b.eval(`document.querySelector('#fleet-body tr[data-agent="s050"]').__mark === 1`, &kept)
	require.True(t, kept, "the fleet rows were updated in place")
	var later float64
	b.eval(`performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/ops/v1/fleet')).pop().duration`, &later)
	t.Logf("a later fleet poll read in %.0f ms", later)
	var failures string
	b.eval(`document.querySelector('#fleet-body tr[data-agent="s003"] .failures').textContent`, &failures)
	require.Contains(t, failures, "max deliveries")
	b.noCSPViolations()
}

// createTasks sends n messages to echo over JSON-RPC, 8 at a time, each
// answered when its task completed.
func createTasks(t *testing.T, base string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer cl.CloseIdleConnections()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"scale-%d","parts":[{"text":"task %d"}]}}}`, i, i, i)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/agents/echo", bytes.NewReader([]byte(body)))
				if err != nil {
					failed.Add(1)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("A2A-Version", "1.0")
				resp, err := cl.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "creating %d tasks took too long", n)
	require.Zero(t, failed.Load(), "sends that failed")
}
