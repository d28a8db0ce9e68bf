package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// drain reads a stream to its end (at most 100 events), returning the
// events and the error that ended it.
func drain(s *Stream) ([]Event, error) {
	var evs []Event
	for i := 0; i < 100; i++ {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, errors.New("stream did not end")
}

const (
	working   = `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`
	completed = `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`
)

func states(evs []Event) []a2a.TaskState {
	var out []a2a.TaskState
	for _, ev := range evs {
		if su := ev.Response.StatusUpdate; su != nil {
			out = append(out, su.Status.State)
		}
	}
	return out
}

func TestSSEParsing(t *testing.T) {
	both := []a2a.TaskState{a2a.StateWorking, a2a.StateCompleted}
	cases := []struct {
		name   string
		body   string
		states []a2a.TaskState
		ids    []string
		end    error // the error ending the stream; io.EOF if nil
	}{
		{name: "LF", body: "data: " + working + "\n\ndata: " + completed + "\n\n", states: both, ids: []string{"", ""}},
		{name: "CRLF", body: "data: " + working + "\r\n\r\ndata: " + completed + "\r\n\r\n", states: both, ids: []string{"", ""}},
		{name: "CR", body: "data: " + working + "\r\rdata: " + completed + "\r\r", states: both, ids: []string{"", ""}},
		{name: "mixed endings", body: "id: 1\r\ndata: " + working + "\r\n\ndata: " + completed + "\r\r\n", states: both, ids: []string{"1", "1"}},
		{name: "no space after colon", body: "data:" + working + "\n\n", states: both[:1], ids: []string{""}},
		{
			name:   "multi-line data",
			body:   "data: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{\"statusUpdate\":\ndata:{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n",
			states: both[:1], ids: []string{""},
		},
		{
			name:   "comments and keep-alives",
			body:   ": hello\n\n:keep-alive\n\ndata: " + working + "\n: inside an event\n\n:\n\n\n\ndata: " + completed + "\n\n: bye\n",
			states: both, ids: []string{"", ""},
		},
		{
			name:   "ids persist and update",
			body:   "id: 5\ndata: " + working + "\n\ndata: " + working + "\n\nid: 7\ndata: " + completed + "\n\n",
			states: []a2a.TaskState{a2a.StateWorking, a2a.StateWorking, a2a.StateCompleted}, ids: []string{"5", "5", "7"},
		},
		{name: "id after data in one event", body: "data: " + working + "\nid:9\n\n", states: both[:1], ids: []string{"9"}},
		{name: "empty id resets", body: "id: 3\ndata: " + working + "\n\nid\ndata: " + completed + "\n\n", states: both, ids: []string{"3", ""}},
		{name: "id with NUL ignored", body: "id: 3\ndata: " + working + "\n\nid: a\x00b\ndata: " + completed + "\n\n", states: both, ids: []string{"3", "3"}},
		{name: "event without data not dispatched", body: "id: 4\n\nevent: ping\nretry: 10\n\ndata: " + working + "\n\n", states: both[:1], ids: []string{"4"}},
		{name: "event and unknown fields ignored", body: "event: message\nfoo: bar\ndata: " + working + "\n\n", states: both[:1], ids: []string{""}},
		{name: "missing trailing blank line", body: "data: " + working + "\n\ndata: " + completed + "\n", states: both, ids: []string{"", ""}},
		{name: "missing trailing newline", body: "data: " + working + "\n\ndata: " + completed, states: both, ids: []string{"", ""}},
		{name: "BOM", body: "\xef\xbb\xbfdata: " + working + "\n\n", states: both[:1], ids: []string{""}},
		{
			name:   "bare stream response",
			body:   `data: {"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}` + "\n\n",
			states: both[:1], ids: []string{""},
		},
		{name: "empty", body: ""},
		{name: "only comments", body: ": a\n: b\n\n"},
		{
			name: "cut inside an event", body: "data: " + working + "\n\ndata: " + completed[:30],
			states: both[:1], ids: []string{""}, end: io.ErrUnexpectedEOF,
		},
		{
			name: "bad json", body: "data: {nope\n\n", end: ErrInvalidResponse,
		},
		{
			name: "two members", body: `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}},"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}}` + "\n\n",
			end: ErrInvalidResponse,
		},
		{
			name: "error frame", body: "data: " + working + "\n\n" + `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}` + "\n\n",
			states: both[:1], ids: []string{""}, end: a2a.ErrTaskNotFound,
		},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tc := range cases {
		for rname, mk := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				s := newStream(io.NopCloser(mk(tc.body)), 1<<20)
				evs, err := drain(s)
				if tc.end == nil {
					require.ErrorIs(t, err, io.EOF)
				} else {
					require.ErrorIs(t, err, tc.end)
				}
				assert.Equal(t, tc.states, states(evs))
				var ids []string
				for _, ev := range evs {
					ids = append(ids, ev.ID)
				}
				assert.Equal(t, tc.ids, ids)
			})
		}
	}
}

func TestSSEAfterEOF(t *testing.T) {
	s := newStream(io.NopCloser(strings.NewReader("data: "+working+"\n\n")), 1<<20)
	_, err := s.Next()
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = s.Next()
		require.ErrorIs(t, err, io.EOF)
	}
}

func TestSSEErrorFrameThenMore(t *testing.T) {
	body := `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}` + "\n\ndata: " + completed + "\n\n"
	s := newStream(io.NopCloser(strings.NewReader(body)), 1<<20)
	_, err := s.Next()
	var e *a2a.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, a2a.CodeInternalError, e.Code)
	ev, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, ev.Response.StatusUpdate.Status.State)
}

func TestSSEEventSizeBound(t *testing.T) {
	t.Run("one long line", func(t *testing.T) {
		body := "data: " + strings.Repeat("x", 5000) + "\n\n"
		_, err := drain(newStream(io.NopCloser(strings.NewReader(body)), 1024))
		require.ErrorIs(t, err, ErrResponseTooLarge)
	})
	t.Run("many short lines", func(t *testing.T) {
		body := strings.Repeat("data: "+strings.Repeat("x", 100)+"\n", 20) + "\n"
		_, err := drain(newStream(io.NopCloser(strings.NewReader(body)), 1024))
		require.ErrorIs(t, err, ErrResponseTooLarge)
	})
	t.Run("under the bound across many events", func(t *testing.T) {
		body := strings.Repeat("data: "+working+"\n\n", 50)
		evs, err := drain(newStream(io.NopCloser(strings.NewReader(body)), 1024))
		require.ErrorIs(t, err, io.EOF)
		assert.Len(t, evs, 50)
	})
}

func TestStreamOverHTTP(t *testing.T) {
	task := map[string]any{"task": taskJSON("t-1", "TASK_STATE_SUBMITTED")}
	chunk := func(text string, appendIt, last bool) map[string]any {
		return map[string]any{"artifactUpdate": map[string]any{
			"taskId": "t-1", "contextId": "ctx-1", "append": appendIt, "lastChunk": last,
			"artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"text": text}}},
		}}
	}
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeSSE(w,
			sseFrame("1", task),
			": keep-alive\n\n",
			sseFrame("2", statusEvent("t-1", "TASK_STATE_WORKING")),
			// an event split over writes, the CRLF split between them
			"id: 3\r", "\ndata: ", mustJSON(result(c.ID, chunk("hel", false, false))), "\r\n\r\n",
			sseFrame("4", chunk("lo", true, true)),
			sseFrame("5", statusEvent("t-1", "TASK_STATE_COMPLETED")),
		)
	})
	s, err := New(f.URL).Stream(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("hi")})
	require.NoError(t, err)
	defer s.Close()
	evs, err := drain(s)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 5)
	assert.Equal(t, "t-1", evs[0].Response.Task.ID)
	assert.Equal(t, "hel", evs[2].Response.ArtifactUpdate.Artifact.Parts[0].Text)
	assert.True(t, evs[3].Response.ArtifactUpdate.Append)
	assert.True(t, evs[3].Response.ArtifactUpdate.LastChunk)
	for i, ev := range evs {
		assert.Equal(t, string(rune('1'+i)), ev.ID)
	}
	assert.Equal(t, "5", s.LastEventID())

	var folded a2a.Task
	for _, ev := range evs {
		folded.Apply(ev.Response)
	}
	assert.Equal(t, a2a.StateCompleted, folded.Status.State)
	require.Len(t, folded.Artifacts, 1)
	assert.Len(t, folded.Artifacts[0].Parts, 2)

	c := f.last(t)
	assert.Equal(t, "SendStreamingMessage", c.Method)
	assert.Equal(t, "text/event-stream", c.Header.Get("Accept"))
	assert.Equal(t, "1.0", c.Header.Get("A2A-Version"))
	assert.Empty(t, c.Header.Get("Last-Event-ID"))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSubscribeLastEventID(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeSSE(w, sseFrame("8", statusEvent("t-1", "TASK_STATE_COMPLETED")))
	})
	cl := New(f.URL)

	s, err := cl.Subscribe(context.Background(), "t-1", "7")
	require.NoError(t, err)
	ev, err := s.Next()
	require.NoError(t, err)
	assert.Equal(t, "8", ev.ID)
	require.NoError(t, s.Close())
	c := f.last(t)
	assert.Equal(t, "SubscribeToTask", c.Method)
	assert.Equal(t, "t-1", c.Params["id"])
	assert.Equal(t, "7", c.Header.Get("Last-Event-ID"))

	s, err = cl.Subscribe(context.Background(), "t-1", "")
	require.NoError(t, err)
	s.Close()
	_, present := f.last(t).Header["Last-Event-Id"]
	assert.False(t, present)
}

func TestStreamErrorAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, c rpcCall)
		check  func(t *testing.T, err error)
	}{
		{"json-rpc error as application/json", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, rpcError(c.ID, a2a.CodeUnsupportedOperation, "task is terminal"))
		}, func(t *testing.T, err error) {
			_, ok := err.(*a2a.Error)
			assert.True(t, ok, "got %T", err)
			assert.ErrorIs(t, err, a2a.ErrUnsupportedOperation)
		}},
		{"json-rpc error with 400", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 400, rpcError(c.ID, a2a.CodeInvalidParams, "bad"))
		}, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, a2a.ErrInvalidParams)
		}},
		{"500 text", func(w http.ResponseWriter, c rpcCall) {
			http.Error(w, "down", 503)
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 503, he.StatusCode)
			assert.Contains(t, err.Error(), "503")
		}},
		{"event-stream with 500", func(w http.ResponseWriter, c rpcCall) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(500)
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 500, he.StatusCode)
		}},
		{"html", func(w http.ResponseWriter, c rpcCall) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<p>hi</p>")
		}, func(t *testing.T, err error) {
			assert.EqualError(t, err, "HTTP 200 OK: not a JSON-RPC response (text/html): <p>hi</p>")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) { tc.answer(w, c) })
			s, err := New(f.URL).Stream(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("x")})
			require.Error(t, err)
			assert.Nil(t, s)
			tc.check(t, err)
		})
	}
}

func TestStreamJSONResultIsOneEvent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{"task": taskJSON("t-1", "TASK_STATE_COMPLETED")}))
	})
	s, err := New(f.URL).Stream(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("x")})
	require.NoError(t, err)
	defer s.Close()
	evs, err := drain(s)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 1)
	assert.Equal(t, "t-1", evs[0].Response.Task.ID)
}

// openStreamServer starts a server that sends one event and then holds the
// stream open until the client goes away (or 10s pass).
func openStreamServer(t *testing.T) *fakeServer {
	return newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeSSE(w, sseFrame("1", statusEvent("t-1", "TASK_STATE_WORKING")))
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
}

func TestStreamClose(t *testing.T) {
	f := openStreamServer(t)
	s, err := New(f.URL).Stream(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("x")})
	require.NoError(t, err)
	_, err = s.Next()
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrStreamClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after Close")
	}
	_, err = s.Next()
	assert.ErrorIs(t, err, ErrStreamClosed)
	assert.NoError(t, s.Close(), "second Close")
}

func TestStreamContextCancel(t *testing.T) {
	f := openStreamServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := New(f.URL).Subscribe(ctx, "t-1", "")
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Next()
	require.NoError(t, err)
	time.AfterFunc(20*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := s.Next()
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return after cancel")
	}
}
