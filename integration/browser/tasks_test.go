package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// sendTask sends text to agent over JSON-RPC (A2A 1.0) and returns the
// task's id; immediate returns at once instead of waiting for the end.
func sendTask(t *testing.T, base, agent, text string, immediate bool) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message":       map[string]any{"role": "ROLE_USER", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()), "parts": []any{map[string]any{"text": text}}},
		"configuration": map[string]any{"returnImmediately": immediate},
	}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/agents/"+agent, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	cl := &http.Client{Timeout: 15 * time.Second}
	resp, err := cl.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Task struct{ ID string } `json:"task"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotEmpty(t, out.Result.Task.ID)
	return out.Result.Task.ID
}

// taskRows is a JavaScript expression: the ids of the task list's rows,
// top down, joined by spaces.
const taskRows = `Array.from(document.querySelectorAll('#tasks-body tr'), (tr) => tr.dataset.task).join(' ')`

// The task list: every task, filtered by agent and by state, a page at a
// time; the first page shows a new task without a reload; a task opens
// with its messages, artifact and timeline (its log, event by event); a
// running one's timeline follows it live, and it is canceled from there.
func TestConsoleBrowserTasks(t *testing.T) {
	m := meshtest.Start(t)
	var echo []string
	for i := range 12 {
		echo = append(echo, sendTask(t, m.URL, "echo", fmt.Sprintf("task %d", i), false))
	}
	slow := sendTask(t, m.URL, "slow", "chunks=300 delay=100ms", true)

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL+"/console/"), chromedp.Click(chromedp.CSS("#tab-tasks")))
	b.waitFor("13 tasks, newest first", taskRows+` === `+jsString(strings.Join(append([]string{slow}, reversed(echo)...), " ")))

	b.waitFor("slow in the agent filter", `!!document.querySelector('#tasks-agent option[value="slow"]')`)
	b.do(chromedp.SetValue(chromedp.CSS("#tasks-agent"), "slow"))
	b.waitFor("slow's task only", taskRows+` === `+jsString(slow))
	require.Equal(t, "working", b.text(`#tasks-body tr td.state`))

	b.do(chromedp.SetValue(chromedp.CSS("#tasks-agent"), ""), chromedp.SetValue(chromedp.CSS("#tasks-state"), "TASK_STATE_COMPLETED"))
	b.waitFor("the completed tasks", taskRows+` === `+jsString(strings.Join(reversed(echo), " ")))

	// Pages of 10: the second has the last 2 completed tasks.
	b.do(chromedp.SetValue(chromedp.CSS("#tasks-size"), "10"))
	b.waitFor("a first page of 10", taskRows+` === `+jsString(strings.Join(reversed(echo)[:10], " ")))
	b.waitFor("an older page", `!document.querySelector('#tasks-older').disabled`)
	b.do(chromedp.Click(chromedp.CSS("#tasks-older")))
	b.waitFor("the second page", taskRows+` === `+jsString(strings.Join(reversed(echo)[10:], " ")))
	require.Contains(t, b.text("#tasks-page"), "page 2 of 12 tasks")
	b.do(chromedp.Click(chromedp.CSS("#tasks-newer")))
	b.waitFor("the first page again", taskRows+` === `+jsString(strings.Join(reversed(echo)[:10], " ")))

	// The first page follows the mesh.
	fresh := sendTask(t, m.URL, "echo", "a new one", false)
	b.waitFor("the new task on top", fmt.Sprintf(`(%s).startsWith(%s)`, taskRows, jsString(fresh)))
	require.Equal(t, "completed", b.text(`#tasks-body tr td.state`))
	require.Equal(t, "a new one", b.text(`#tasks-body tr td.message`), "the last message, the status having none")

	// One task: its messages and artifact.
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tasks-body tr[data-task=%q] button`, echo[3]))))
	b.waitFor("the task opened", `document.querySelector('#task-detail').dataset.state === 'completed'`)
	require.Equal(t, "Task "+echo[3], b.text("#task-title"))
	require.Equal(t, "usertask 3", b.text("#task-body .messages li.user"))
	require.Equal(t, "echotask 3", b.text("#task-body .artifact"))
	// Its timeline: every event of its log, with its position, in order.
	b.waitFor("the whole timeline", `document.querySelector('#task-body .timeline').dataset.complete === 'true'`)
	var tl []struct {
		Seq  uint64
		Kind string
		Text string
	}
	b.eval(`Array.from(document.querySelectorAll('#task-body .timeline li'), (li) =>
		({seq: Number(li.dataset.seq), kind: li.dataset.kind, text: li.textContent}))`, &tl)
	var kinds []string
	for i, ev := range tl {
		kinds = append(kinds, ev.Kind)
		if i > 0 {
			require.Greater(t, ev.Seq, tl[i-1].Seq)
		}
		require.True(t, strings.HasPrefix(ev.Text, fmt.Sprintf("#%d · ", ev.Seq)), ev.Text)
	}
	require.Equal(t, []string{"task", "status", "artifact", "status"}, kinds)
	require.Contains(t, tl[2].Text, "task 3")
	require.Contains(t, tl[3].Text, "status · completed")
	b.screenshot("tasks")

	// The running task, canceled from its view.
	b.do(chromedp.SetValue(chromedp.CSS("#tasks-state"), ""), chromedp.SetValue(chromedp.CSS("#tasks-size"), "20"))
	b.waitFor("slow's row", fmt.Sprintf(`!!document.querySelector('#tasks-body tr[data-task=%q]')`, slow))
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tasks-body tr[data-task=%q] button`, slow))))
	b.waitFor("slow's task opened", `document.querySelector('#task-detail').dataset.state === 'working'`)
	// Its timeline follows it: chunks keep coming while it runs.
	count := `document.querySelectorAll('#task-body .timeline li[data-kind="artifact"]').length`
	b.waitFor("some chunks", count+` > 0`)
	var n int
	b.eval(count, &n)
	b.waitFor("more chunks, followed live", fmt.Sprintf(`%s > %d`, count, n+3))
	increasing := func() {
		t.Helper()
		var seqs []uint64
		b.eval(`Array.from(document.querySelectorAll('#task-body .timeline li'), (li) => Number(li.dataset.seq))`, &seqs)
		for i := 1; i < len(seqs); i++ {
			require.Greater(t, seqs[i], seqs[i-1], "each event once, in order: %v", seqs)
		}
	}
	increasing()
	b.do(chromedp.Click(chromedp.CSS("#task-body button.cancel")))
	b.waitFor("slow's task canceled", `document.querySelector('#task-detail').dataset.state === 'canceled'`)
	b.waitFor("its timeline ending canceled", `document.querySelector('#task-body .timeline').dataset.complete === 'true' &&
		document.querySelector('#task-body .timeline li:last-child').textContent.includes('status · canceled')`)
	increasing()
	b.waitFor("the list says so", fmt.Sprintf(`document.querySelector('#tasks-body tr[data-task=%q]').dataset.state === 'canceled'`, slow))
	b.noCSPViolations()
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
