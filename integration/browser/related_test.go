package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// openTask opens task id from the tasks view's list.
func (b *browser) openTask(id string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS("#tab-tasks")))
	row := fmt.Sprintf(`#tasks-body tr[data-task=%q] button`, id)
	b.waitFor("the task's row", fmt.Sprintf(`!!document.querySelector(%s)`, jsString(row)))
	b.do(chromedp.Click(chromedp.CSS(row)))
	b.waitFor("the task opened", fmt.Sprintf(`document.querySelector('#task-title').textContent === %s`, jsString("Task "+id)))
}

// The push deliveries of a task whose webhook failed once, then took
// every notification: the first attempt is shown failed with HTTP 500
// and its next retry, then delivered; every other one delivered.
func TestConsoleBrowserTaskPushes(t *testing.T) {
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.Push = edge.PushConfig{Enabled: true, Trusted: []string{strings.TrimPrefix(rcv.URL, "http://")},
			Backoff: 100 * time.Millisecond, MaxAttempts: 3, Timeout: 3 * time.Second}
	}))
	id := sendWithPush(t, m.URL, "echo", "notify me", rcv.URL+"/hook")

	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.openTask(id)
	rows := `#task-body .pushes .push-config[data-config="hook"] tbody tr`
	b.waitFor("a failed attempt, retried and delivered", fmt.Sprintf(`(() => {
		const r = Array.from(document.querySelectorAll(%s));
		return r.length >= 2 && r.some((tr) => tr.dataset.outcome === 'failed') &&
			r.every((tr) => tr.dataset.outcome !== 'failed' || r.some((o) => o.dataset.seq === tr.dataset.seq && o.dataset.outcome === 'delivered'));
	})()`, jsString(rows)))
	var got []struct{ Outcome, Seq, Attempt, Text, Next string }
	b.eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%s), (tr) => ({outcome: tr.dataset.outcome, seq: tr.dataset.seq,
		attempt: tr.querySelector('.attempt').textContent, text: tr.querySelector('.outcome').textContent, next: tr.querySelector('.next').textContent}))`, jsString(rows)), &got)
	require.Equal(t, "failed", got[0].Outcome, "%+v", got)
	require.Equal(t, "failed · HTTP 500", got[0].Text)
	require.NotEmpty(t, got[0].Next, "a failed attempt shows its next retry")
	require.Equal(t, "1", got[0].Attempt)
	delivered := 0
	for _, r := range got[1:] {
		require.Equal(t, "delivered", r.Outcome, "%+v", got)
		require.Equal(t, "delivered · HTTP 200", r.Text)
		require.Empty(t, r.Next)
		if r.Seq == got[0].Seq {
			require.Equal(t, "2", r.Attempt, "the retry of the failed one")
		}
		delivered++
	}
	require.EqualValues(t, hits.Load(), len(got), "a row per POST the receiver got")
	require.Contains(t, b.text("#task-body .pushes .push-config .role"), rcv.URL+"/hook")
	b.screenshot("task-pushes")
	b.noCSPViolations()
}

// A planner task lists the two tasks it delegated; a link opens echo's,
// which names the planner's task as its parent, and a link there opens
// the planner's task again.
func TestConsoleBrowserTaskDelegations(t *testing.T) {
	m := meshtest.Start(t)
	id := sendTask(t, m.URL, "planner", "say this; shout that", false)
	b := newBrowser(t)
	b.do(chromedp.Navigate(m.URL + "/console/"))
	b.openTask(id)
	kids := `#task-body .delegations .children li`
	b.waitFor("two delegated tasks", fmt.Sprintf(`document.querySelectorAll(%s).length === 2`, jsString(kids)))
	var children []struct{ ID, Text string }
	b.eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%s), (li) => ({id: li.dataset.task, text: li.textContent}))`, jsString(kids)), &children)
	var echo string
	for _, c := range children {
		require.Contains(t, c.Text, "completed")
		if strings.Contains(c.Text, " · echo · ") {
			echo = c.ID
		}
	}
	require.NotEmpty(t, echo, "%+v", children)
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s[data-task=%q] button`, kids, echo))))
	b.waitFor("echo's task opened", fmt.Sprintf(`document.querySelector('#task-title').textContent === %s`, jsString("Task "+echo)))
	b.waitFor("its parent", `!!document.querySelector('#task-body .delegations .parent button')`)
	require.Equal(t, "delegated by planner · "+id, b.text("#task-body .delegations .parent"))
	require.Contains(t, b.text("#task-body .artifact"), "say this")
	var none bool
	b.eval(`!document.querySelector('#task-body .delegations .children')`, &none)
	require.True(t, none, "echo's task delegated nothing")
	b.do(chromedp.Click(chromedp.CSS("#task-body .delegations .parent button")))
	b.waitFor("the planner's task again", fmt.Sprintf(`document.querySelector('#task-title').textContent === %s`, jsString("Task "+id)))
	b.waitFor("its children again", fmt.Sprintf(`document.querySelectorAll(%s).length === 2`, jsString(kids)))
	b.noCSPViolations()
}

// sendWithPush sends text to agent with a push config (id "hook") for
// url, waits for the task's end and returns its id.
func sendWithPush(t *testing.T, base, agent, text, url string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message":       map[string]any{"role": "ROLE_USER", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()), "parts": []any{map[string]any{"text": text}}},
		"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{"id": "hook", "url": url}},
	}})
	require.NoError(t, err)
	cl := &http.Client{Timeout: 15 * time.Second}
	// -32000: push still starting on this edge; retry, bounded.
	for i := 0; i < 50; i++ {
		req, err := http.NewRequest(http.MethodPost, base+"/agents/"+agent, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := cl.Do(req)
		require.NoError(t, err)
		var out struct {
			Result struct {
				Task struct{ ID string } `json:"task"`
			} `json:"result"`
			Error *struct{ Code int } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		require.NoError(t, err)
		if out.Error != nil && out.Error.Code == -32000 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		require.Nil(t, out.Error)
		require.NotEmpty(t, out.Result.Task.ID)
		return out.Result.Task.ID
	}
	t.Fatal("push did not start within 5s")
	return ""
}
