package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

// restCall is one request a fake HTTP+JSON server received.
type restCall struct {
	Method, Path, RawPath, Query string
	Header                       http.Header
	Body                         map[string]any
}

// restFake is a loopback HTTP+JSON server answering with a handler and
// recording what it received.
type restFake struct {
	*httptest.Server
	mu    sync.Mutex
	calls []restCall
}

func newRESTFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *restFake {
	t.Helper()
	f := &restFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := restCall{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone()}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(body, &c.Body)
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *restFake) all() []restCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]restCall(nil), f.calls...)
}

func (f *restFake) last(t *testing.T) restCall {
	t.Helper()
	all := f.all()
	require.NotEmpty(t, all, "server received no call")
	return all[len(all)-1]
}

// statusBody is a google.rpc.Status error body with an A2A ErrorInfo.
func statusBody(code int, status, reason, msg string) map[string]any {
	e := map[string]any{"code": code, "status": status, "message": msg}
	if reason != "" {
		e["details"] = []any{map[string]any{"@type": a2a.ErrorInfoType, "reason": reason, "domain": a2a.ErrorDomain,
			"metadata": map[string]any{"taskId": "t-9"}}}
	}
	return map[string]any{"error": e}
}

// The routes, methods, headers and bodies of each call (spec §11.3),
// under a base URL with a path, with and without a tenant.
func TestRESTRoutes(t *testing.T) {
	f := newRESTFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/base/message:send" || r.URL.Path == "/base/acme/message:send":
			writeJSON(w, 200, map[string]any{"task": taskJSON("t-1", "TASK_STATE_COMPLETED")})
		case r.URL.Path == "/base/tasks" || r.URL.Path == "/base/acme/tasks":
			writeJSON(w, 200, map[string]any{"tasks": []any{taskJSON("t-1", "TASK_STATE_COMPLETED")}, "nextPageToken": "", "pageSize": 1, "totalSize": 1})
		default:
			writeJSON(w, 200, taskJSON("t-1", "TASK_STATE_CANCELED"))
		}
	})
	ctx := context.Background()
	for _, tenant := range []string{"", "acme"} {
		prefix := "/base"
		if tenant != "" {
			prefix += "/" + tenant
		}
		c := New(f.URL+"/base/", WithBinding("http+json"), WithTenant(tenant), WithHeader("Authorization", "Bearer k"))
		require.Equal(t, a2a.BindingHTTPJSON, c.Binding())

		res, err := c.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("hi")})
		require.NoError(t, err)
		assert.Equal(t, "t-1", res.Task.ID)
		call := f.last(t)
		assert.Equal(t, "POST", call.Method)
		assert.Equal(t, prefix+"/message:send", call.Path)
		assert.Equal(t, "application/a2a+json", call.Header.Get("Content-Type"))
		assert.Equal(t, "application/a2a+json, application/json", call.Header.Get("Accept"))
		assert.Equal(t, "1.0", call.Header.Get("A2A-Version"))
		assert.Equal(t, "Bearer k", call.Header.Get("Authorization"))
		assert.NotContains(t, call.Body, "tenant", "the tenant is in the path")
		assert.NotContains(t, call.Body, "jsonrpc")
		assert.Equal(t, "ROLE_USER", call.Body["message"].(map[string]any)["role"])

		two := 2
		_, err = c.GetTask(ctx, "t/1 x", &two)
		require.NoError(t, err)
		call = f.last(t)
		assert.Equal(t, "GET", call.Method)
		assert.Equal(t, prefix+"/tasks/t%2F1%20x", call.RawPath, "the id is one escaped segment")
		assert.Equal(t, "historyLength=2", call.Query)
		assert.Empty(t, call.Header.Get("Content-Type"))

		size, yes := 5, true
		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: "c 1", Status: a2a.StateWorking, PageSize: &size,
			PageToken: "p", HistoryLength: &two, StatusTimestampAfter: "2026-01-01T00:00:00Z", IncludeArtifacts: &yes})
		require.NoError(t, err)
		require.Len(t, list.Tasks, 1)
		call = f.last(t)
		assert.Equal(t, "GET", call.Method)
		assert.Equal(t, prefix+"/tasks", call.Path)
		assert.Equal(t, "contextId=c+1&historyLength=2&includeArtifacts=true&pageSize=5&pageToken=p&status=TASK_STATE_WORKING&statusTimestampAfter=2026-01-01T00%3A00%3A00Z", call.Query)

		task, err := c.Cancel(ctx, "t-1")
		require.NoError(t, err)
		assert.Equal(t, a2a.StateCanceled, task.Status.State)
		call = f.last(t)
		assert.Equal(t, "POST", call.Method)
		assert.Equal(t, prefix+"/tasks/t-1:cancel", call.Path)
		assert.NotContains(t, call.Body, "id")
	}
}

// Errors: a google.rpc.Status body (of either JSON media type) becomes
// the A2A error its ErrorInfo reason names, or, without one, the error
// its status says; anything else is an *HTTPError.
func TestRESTErrors(t *testing.T) {
	type answer struct {
		status      int
		contentType string
		body        any
	}
	cases := []struct {
		name string
		ans  answer
		code int    // the *a2a.Error's code; 0: an *HTTPError
		msg  string // the *a2a.Error's message
	}{
		{"task not found", answer{404, "application/json", statusBody(404, "NOT_FOUND", "TASK_NOT_FOUND", "no task t-9")}, a2a.CodeTaskNotFound, "no task t-9"},
		{"a2a+json media type", answer{400, "application/a2a+json", statusBody(400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "done already")}, a2a.CodeTaskNotCancelable, "done already"},
		{"unsupported", answer{400, "application/json", statusBody(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "no")}, a2a.CodeUnsupportedOperation, "no"},
		{"push not supported", answer{400, "application/json", statusBody(400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "no push")}, a2a.CodePushNotificationNotSupported, "no push"},
		{"version", answer{400, "application/json", statusBody(400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "0.1?")}, a2a.CodeVersionNotSupported, "0.1?"},
		{"busy", answer{503, "application/json", statusBody(503, "UNAVAILABLE", "SERVER_ERROR", "failover")}, a2a.CodeServerBusy, "failover"},
		{"invalid params", answer{400, "application/json", statusBody(400, "INVALID_ARGUMENT", "INVALID_PARAMS", "bad id")}, a2a.CodeInvalidParams, "bad id"},
		{"no reason, invalid argument", answer{400, "application/json", statusBody(400, "INVALID_ARGUMENT", "", "bad")}, a2a.CodeInvalidParams, "bad"},
		{"no reason, rate limited", answer{429, "application/json", statusBody(429, "RESOURCE_EXHAUSTED", "", "slow down")}, a2a.CodeRateLimited, "slow down"},
		{"no reason, unimplemented", answer{501, "application/json", statusBody(501, "UNIMPLEMENTED", "", "")}, a2a.CodeMethodNotFound, "Method not found"},
		{"unknown reason", answer{500, "application/json", statusBody(500, "INTERNAL", "SOMETHING_ELSE", "oops")}, a2a.CodeInternalError, "oops"},
		{"foreign domain is no reason", answer{404, "application/json", map[string]any{"error": map[string]any{
			"code": 404, "status": "NOT_FOUND", "message": "gone",
			"details": []any{map[string]any{"@type": a2a.ErrorInfoType, "reason": "TASK_NOT_FOUND", "domain": "example.com"}}}}},
			a2a.CodeInternalError, "gone"},
		{"plain text 404", answer{404, "text/plain", "404 page not found"}, 0, ""},
		{"html 502", answer{502, "text/html", "<html>bad gateway</html>"}, 0, ""},
		{"JSON without error", answer{500, "application/json", map[string]any{"oops": true}}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRESTFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ans.contentType)
				w.WriteHeader(tc.ans.status)
				if s, ok := tc.ans.body.(string); ok {
					_, _ = io.WriteString(w, s)
				} else {
					_ = json.NewEncoder(w).Encode(tc.ans.body)
				}
			})
			c := New(f.URL, WithBinding(a2a.BindingHTTPJSON))
			ctx := context.Background()
			for op, call := range map[string]func() error{
				"get":    func() error { _, err := c.GetTask(ctx, "t-9", nil); return err },
				"send":   func() error { _, err := c.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")}); return err },
				"stream": func() error { _, err := c.Stream(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")}); return err },
			} {
				err := call()
				require.Error(t, err, op)
				if tc.code == 0 {
					var he *HTTPError
					require.ErrorAs(t, err, &he, op)
					assert.Equal(t, tc.ans.status, he.StatusCode, op)
					continue
				}
				var ae *a2a.Error
				require.ErrorAs(t, err, &ae, op)
				assert.Equal(t, tc.code, ae.Code, op)
				assert.Equal(t, tc.msg, ae.Message, op)
			}
		})
	}
}

// A 200 answer that is not what the operation promises.
func TestRESTBadResults(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":        "<html></html>",
		"JSON array":      "[]",
		"task without id": `{"status":{"state":"TASK_STATE_WORKING"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newRESTFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, body)
			})
			_, err := New(f.URL, WithBinding(a2a.BindingHTTPJSON)).GetTask(context.Background(), "t", nil)
			require.Error(t, err)
			var he *HTTPError
			if !errors.As(err, &he) {
				assert.ErrorIs(t, err, ErrInvalidResponse)
			}
		})
	}
	f := newRESTFake(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{}) })
	_, err := New(f.URL, WithBinding(a2a.BindingHTTPJSON)).Send(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("x")})
	assert.ErrorIs(t, err, ErrInvalidResponse, "a send result without task or message")
}

// restSSE returns one HTTP+JSON stream event: data is the bare object.
func restSSE(id string, v any) string {
	b, _ := json.Marshal(v)
	s := ""
	if id != "" {
		s = "id: " + id + "\n"
	}
	return s + "data: " + string(b) + "\n\n"
}

// Streams: events without JSON-RPC envelope, ids for resuming, an error
// event ending the stream with its A2A error; SubscribeToTask as GET
// with Last-Event-ID, again as POST when GET is not allowed.
func TestRESTStreams(t *testing.T) {
	postOnly := false
	f := newRESTFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/message:stream":
			writeSSE(w,
				": keep-alive\n\n",
				restSSE("1", map[string]any{"task": taskJSON("t-1", "TASK_STATE_SUBMITTED")}),
				restSSE("2", statusEvent("t-1", "TASK_STATE_WORKING")),
				restSSE("", statusBody(404, "NOT_FOUND", "TASK_NOT_FOUND", "vanished")),
				restSSE("4", statusEvent("t-1", "TASK_STATE_COMPLETED")))
		case "/tasks/t-1:subscribe":
			if postOnly && r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			writeSSE(w, restSSE("3", statusEvent("t-1", "TASK_STATE_COMPLETED")))
		case "/tasks/t-2:subscribe":
			// A JSON answer to a streaming call: its one event.
			writeJSON(w, 200, map[string]any{"task": taskJSON("t-2", "TASK_STATE_COMPLETED")})
		default:
			writeJSON(w, 404, statusBody(404, "NOT_FOUND", "TASK_NOT_FOUND", "no such task"))
		}
	})
	c := New(f.URL, WithBinding(a2a.BindingHTTPJSON))
	ctx := context.Background()

	s, err := c.Stream(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")})
	require.NoError(t, err)
	call := f.last(t)
	assert.Equal(t, "text/event-stream, application/a2a+json, application/json", call.Header.Get("Accept"))
	evs, err := drain(s)
	require.Len(t, evs, 2)
	assert.NotNil(t, evs[0].Response.Task)
	assert.Equal(t, []string{"1", "2"}, []string{evs[0].ID, evs[1].ID})
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound, "the error event ends the stream with its error")
	var ae *a2a.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "vanished", ae.Message)
	assert.Equal(t, "2", s.LastEventID())
	require.NoError(t, s.Close())

	for _, post := range []bool{false, true} {
		postOnly = post
		sub, err := c.Subscribe(ctx, "t-1", s.LastEventID())
		require.NoError(t, err)
		evs, err = drain(sub)
		assert.ErrorIs(t, err, io.EOF)
		require.Len(t, evs, 1)
		assert.Equal(t, "3", evs[0].ID)
		_ = sub.Close()
		call = f.last(t)
		assert.Equal(t, "2", call.Header.Get("Last-Event-ID"))
		if post {
			assert.Equal(t, http.MethodPost, call.Method, "asked again with POST after a 405")
		} else {
			assert.Equal(t, http.MethodGet, call.Method)
		}
	}

	sub, err := c.Subscribe(ctx, "t-2", "")
	require.NoError(t, err)
	evs, err = drain(sub)
	assert.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 1)
	assert.Equal(t, "t-2", evs[0].Response.Task.ID)

	_, err = c.Subscribe(ctx, "t-3", "")
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
}

func TestUnknownBindingAndV03(t *testing.T) {
	ctx := context.Background()
	for _, c := range []*Client{
		New("http://127.0.0.1:1", WithBinding("SOAP")),
		New("http://127.0.0.1:1", WithBinding(a2a.BindingHTTPJSON), WithProtocolVersion("0.3")),
		New("127.0.0.1:1", WithBinding(a2a.BindingGRPC), WithProtocolVersion("0.3")),
	} {
		_, err := c.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")})
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.GetTask(ctx, "t", nil)
		assert.ErrorIs(t, err, ErrUnsupported)
		_, err = c.Subscribe(ctx, "t", "")
		assert.ErrorIs(t, err, ErrUnsupported)
		assert.NoError(t, c.Close())
	}
	g := New("127.0.0.1:1", WithBinding(a2a.BindingGRPC))
	_, err := g.Card(ctx)
	assert.ErrorIs(t, err, ErrUnsupported, "a gRPC address has no card URL")
	assert.NoError(t, g.Close())
}
