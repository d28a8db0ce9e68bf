package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/mesh/meshtest"
)

// cutProxy stands between the browser and the edge: a reverse proxy on
// loopback whose connections from the browser the test can cut, as a
// network that drops them would, and which answers 503 to everything
// while down is set, as an edge that does not come back.
type cutProxy struct {
	*httptest.Server
	down atomic.Bool
	// lose, when set, makes the proxy pass the next streaming send to
	// the edge and lose its answer: the browser's connection is cut
	// before any of it arrives.
	lose atomic.Bool
}

func newCutProxy(t *testing.T, edgeURL string) *cutProxy {
	t.Helper()
	u, err := url.Parse(edgeURL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // server-sent events pass at once
	p := &cutProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost && strings.Contains(r.Header.Get("Accept"), "text/event-stream") && p.lose.CompareAndSwap(true, false) {
			rp.ServeHTTP(httptest.NewRecorder(), r) // the edge answers; nobody hears it
			// The browser gets the stream's head, then the connection
			// breaks. (Cut before any byte, Chromium would send the
			// request again by itself on a fresh connection.)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// A chat's stream cut while slow works resumes: the console subscribes
// again to the task with Last-Event-ID, the id of the last event shown,
// and shows the rest, every chunk once, in 1.0 (SubscribeToTask, cut
// twice, the second time with the edge away for 1.2 s: the first tries
// fail with 503 and a later one resumes) and 0.3 (tasks/resubscribe). On the wire too: the chunks
// received are each chunk once, and no resumed stream starts again with
// the task's snapshot.
func TestConsoleBrowserChatResumes(t *testing.T) {
	m := meshtest.Start(t)
	proxy := newCutProxy(t, m.URL)
	b := newBrowser(t)
	b.do(chromedp.Navigate(proxy.URL + "/console/"))

	const chunks = 8
	type cut struct {
		at      int           // after the chunk at
		downFor time.Duration // the edge unreachable (503) this long
	}
	for i, tc := range []struct {
		version, resubscribe string
		cuts                 []cut
	}{
		{"1.0", "SubscribeToTask", []cut{{2, 0}, {5, 1200 * time.Millisecond}}},
		{"0.3", "tasks/resubscribe", []cut{{3, 0}}},
	} {
		n := i + 1
		b.sendIn(tc.version, "slow", fmt.Sprintf("chunks=%d delay=250ms", chunks))
		tries := 1
		for j, c := range tc.cuts {
			b.waitFor(fmt.Sprintf("chunk %d", c.at), fmt.Sprintf(`(() => {
				const li = document.querySelectorAll('#chat-log li.agent')[%d];
				const a = li && li.querySelector('.artifact');
				return !!a && a.textContent.includes('chunk %d/%d'); })()`, i, c.at, chunks))
			if c.downFor > 0 {
				proxy.down.Store(true)
				tries++ // at least one try answered 503
			}
			proxy.CloseClientConnections()
			b.waitFor(fmt.Sprintf("resume %d", j+1), fmt.Sprintf(
				`(document.querySelectorAll('#chat-log li.agent')[%d].dataset.resumes || '') === '%d'`, i, j+1))
			time.Sleep(c.downFor)
			proxy.down.Store(false)
		}
		b.waitEnd(n)
		var got struct {
			State, Text, Note string
			Sent              []string
			Received          []string
		}
		b.eval(fmt.Sprintf(`(() => { const li = document.querySelectorAll('#chat-log li.agent')[%d];
			return {state: li.dataset.state, text: li.querySelector('.artifact').textContent,
				note: (li.querySelector('.resume') || {}).textContent || '',
				sent: Array.from(li.querySelectorAll('details.raw pre.sent'), (p) => p.textContent),
				received: Array.from(li.querySelectorAll('details.raw pre.received'), (p) => p.textContent)}; })()`, i), &got)
		require.Equal(t, "completed", got.State, tc.version)
		var want strings.Builder
		for c := 1; c <= chunks; c++ {
			fmt.Fprintf(&want, "chunk %d/%d\n", c, chunks)
		}
		require.Equal(t, want.String(), got.Text, "%s: every chunk once, in order", tc.version)
		require.Contains(t, got.Note, "resuming after event ", tc.version)

		// What went: the send, then a resubscribe per cut (more while
		// the edge was away), each after the id of the last event
		// received before it.
		if tries == 1 {
			require.Len(t, got.Sent, 1+len(tc.cuts), "%s: %q", tc.version, got.Sent)
		} else {
			require.Greater(t, len(got.Sent), len(tc.cuts)+1, "%s: tries that failed while the edge was away: %q", tc.version, got.Sent)
		}
		for _, s := range got.Sent[1:] {
			require.True(t, strings.HasPrefix(s, "→ Last-Event-ID: "), s)
			require.Contains(t, s, `"`+tc.resubscribe+`"`)
		}
		// What came: each chunk once, and one snapshot (the first event).
		var texts []string
		snapshots := 0
		for _, r := range got.Received {
			for c := 1; c <= chunks; c++ {
				if strings.Contains(r, fmt.Sprintf(`"chunk %d/%d\n"`, c, chunks)) {
					texts = append(texts, fmt.Sprint(c))
				}
			}
			if strings.Contains(r, `"kind": "task"`) || strings.Contains(r, `"task": {`) {
				snapshots++
			}
		}
		require.Equal(t, strings.Fields("1 2 3 4 5 6 7 8"), texts, "%s: each chunk received once", tc.version)
		require.Equal(t, 1, snapshots, "%s: the resumed streams carry no snapshot", tc.version)
	}
	b.noCSPViolations()
}

// With the edge gone for good, the console stops resuming after its
// bounded tries and says so.
func TestConsoleBrowserChatResumeGivesUp(t *testing.T) {
	m := meshtest.Start(t)
	proxy := newCutProxy(t, m.URL)
	b := newBrowser(t)
	b.do(chromedp.Navigate(proxy.URL + "/console/"))
	b.send("slow", "chunks=100 delay=200ms")
	b.waitFor("the first chunk", `(document.querySelector('#chat-log li.agent .artifact') || {}).textContent === 'chunk 1/100\n'`)
	// Every request from now on fails: the proxy answers 503.
	proxy.down.Store(true)
	proxy.CloseClientConnections()
	b.waitEnd(1)
	var got struct{ State, Text string }
	b.eval(`(() => { const li = document.querySelector('#chat-log li.agent');
		return {state: li.dataset.state, text: li.querySelector('.body').textContent}; })()`, &got)
	require.Equal(t, "error", got.State)
	require.Contains(t, got.Text, "5 tries to resume it failed")
}

// A send whose answer is lost before its first event (the edge got it,
// the connection broke) goes again as it was, with the same messageId:
// the mesh answers it with the task the first send started, so the agent
// ran once and the answer shows once.
func TestConsoleBrowserChatSendRepeated(t *testing.T) {
	m := meshtest.Start(t)
	proxy := newCutProxy(t, m.URL)
	b := newBrowser(t)
	b.do(chromedp.Navigate(proxy.URL + "/console/"))
	proxy.lose.Store(true)
	b.chat("echo", "only once", 1)
	var got struct {
		State, Text, Note string
		Sent              []string
	}
	b.eval(`(() => { const li = document.querySelector('#chat-log li.agent');
		return {state: li.dataset.state, text: li.querySelector('.artifact').textContent,
			note: (li.querySelector('.resume') || {}).textContent || '',
			sent: Array.from(li.querySelectorAll('details.raw pre.sent'), (p) => p.textContent)}; })()`, &got)
	require.False(t, proxy.lose.Load(), "the first send's answer was lost")
	require.Equal(t, "completed", got.State)
	require.Equal(t, "only once", got.Text)
	require.Contains(t, got.Note, "sending again, the same message")
	require.Len(t, got.Sent, 2)
	messageID := func(sent string) string {
		var req struct {
			Method string
			Params struct{ Message struct{ MessageID string } }
		}
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(sent, "→ ")), &req), sent)
		require.Equal(t, "SendStreamingMessage", req.Method)
		return req.Params.Message.MessageID
	}
	require.Equal(t, messageID(got.Sent[0]), messageID(got.Sent[1]), "the same message sent again")

	// One task: the agent ran once.
	body := `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`
	req, err := http.NewRequest(http.MethodPost, m.URL+"/agents/echo", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Result struct{ Tasks []struct{ ID string } } `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Result.Tasks, 1, "one task for the two sends")
}
