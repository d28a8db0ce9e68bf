package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
)

func TestSendReturnsTask(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{"task": map[string]any{
			"id": "t-1", "contextId": "ctx-1",
			"status":    map[string]any{"state": "TASK_STATE_COMPLETED"},
			"artifacts": []any{map[string]any{"artifactId": "a-1", "parts": []any{map[string]any{"text": "hi"}}}},
		}}))
	})
	res, err := New(f.URL).Send(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("hello")})
	require.NoError(t, err)
	require.NotNil(t, res.Task)
	assert.Nil(t, res.Message)
	assert.Equal(t, "t-1", res.Task.ID)
	assert.Equal(t, a2a.StateCompleted, res.Task.Status.State)
	require.Len(t, res.Task.Artifacts, 1)
	assert.Equal(t, "hi", res.Task.Artifacts[0].Parts[0].Text)

	c := f.last(t)
	assert.Equal(t, "SendMessage", c.Method)
	assert.Equal(t, "2.0", c.JSONRPC)
	assert.NotEmpty(t, c.ID)
	assert.Equal(t, "1.0", c.Header.Get("A2A-Version"))
	assert.Equal(t, "application/json", c.Header.Get("Content-Type"))
	assert.Equal(t, "application/json", c.Header.Get("Accept"))
	msg := c.Params["message"].(map[string]any)
	assert.Equal(t, "ROLE_USER", msg["role"])
	assert.Equal(t, []any{map[string]any{"text": "hello"}}, msg["parts"])
	assert.NotContains(t, c.Params, "tenant")
}

func TestSendReturnsMessage(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{"message": map[string]any{
			"messageId": "m-2", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "pong"}},
		}}))
	})
	res, err := New(f.URL).Send(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("ping")})
	require.NoError(t, err)
	require.NotNil(t, res.Message)
	assert.Nil(t, res.Task)
	assert.Equal(t, "pong", res.Message.Text())
}

func TestSendRejectsBadResults(t *testing.T) {
	for name, res := range map[string]any{
		"empty":        map[string]any{},
		"both":         map[string]any{"task": taskJSON("t", "TASK_STATE_WORKING"), "message": map[string]any{"messageId": "m", "role": "ROLE_AGENT", "parts": []any{}}},
		"statusUpdate": statusEvent("t", "TASK_STATE_WORKING"),
		"not object":   "nope",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) { writeJSON(w, 200, result(c.ID, res)) })
			_, err := New(f.URL).Send(context.Background(), &a2a.SendMessageRequest{Message: TextMessage("x")})
			require.ErrorIs(t, err, ErrInvalidResponse)
		})
	}
}

func TestSendNeedsMessage(t *testing.T) {
	c := New("http://127.0.0.1:1")
	_, err := c.Send(context.Background(), nil)
	require.Error(t, err)
	_, err = c.Stream(context.Background(), &a2a.SendMessageRequest{})
	require.Error(t, err)
}

func TestTenantParam(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		switch c.Method {
		case "SendMessage":
			writeJSON(w, 200, result(c.ID, map[string]any{"task": taskJSON("t-1", "TASK_STATE_WORKING")}))
		case "ListTasks":
			writeJSON(w, 200, result(c.ID, map[string]any{"tasks": []any{}, "nextPageToken": ""}))
		case "SendStreamingMessage", "SubscribeToTask":
			writeSSE(w, sseFrame("", statusEvent("t-1", "TASK_STATE_WORKING")))
		default:
			writeJSON(w, 200, result(c.ID, taskJSON("t-1", "TASK_STATE_WORKING")))
		}
	})
	ctx := context.Background()
	cl := New(f.URL, WithTenant("acme"))

	calls := map[string]func() error{
		"SendMessage": func() error {
			_, err := cl.Send(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")})
			return err
		},
		"SendStreamingMessage": func() error {
			s, err := cl.Stream(ctx, &a2a.SendMessageRequest{Message: TextMessage("x")})
			if err == nil {
				s.Close()
			}
			return err
		},
		"SubscribeToTask": func() error {
			s, err := cl.Subscribe(ctx, "t-1", "")
			if err == nil {
				s.Close()
			}
			return err
		},
		"GetTask":    func() error { _, err := cl.GetTask(ctx, "t-1", nil); return err },
		"CancelTask": func() error { _, err := cl.Cancel(ctx, "t-1"); return err },
		"ListTasks":  func() error { _, err := cl.ListTasks(ctx, nil); return err },
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			require.NoError(t, call())
			c := f.last(t)
			assert.Equal(t, method, c.Method)
			assert.Equal(t, "acme", c.Params["tenant"])
		})
	}

	t.Run("explicit tenant wins", func(t *testing.T) {
		_, err := cl.Send(ctx, &a2a.SendMessageRequest{Tenant: "other", Message: TextMessage("x")})
		require.NoError(t, err)
		assert.Equal(t, "other", f.last(t).Params["tenant"])
	})
	t.Run("caller's request is not modified", func(t *testing.T) {
		req := &a2a.ListTasksRequest{ContextID: "ctx-1"}
		_, err := cl.ListTasks(ctx, req)
		require.NoError(t, err)
		assert.Empty(t, req.Tenant)
		assert.Equal(t, "ctx-1", f.last(t).Params["contextId"])
	})
}

func TestHeaders(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, taskJSON("t-1", "TASK_STATE_WORKING")))
	})
	cl := New(f.URL, WithHeader("Authorization", "Bearer s3cret"), WithHeader("A2A-Version", "0.3"))
	_, err := cl.GetTask(context.Background(), "t-1", nil)
	require.NoError(t, err)
	h := f.last(t).Header
	assert.Equal(t, "Bearer s3cret", h.Get("Authorization"))
	assert.Equal(t, "1.0", h.Get("A2A-Version"), "the protocol header is not overridable")
	assert.Empty(t, h.Get("Last-Event-ID"))
}

func TestGetTaskHistoryLength(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{
			"id": "t-9", "contextId": "c", "status": map[string]any{"state": "TASK_STATE_INPUT_REQUIRED"},
			"history": []any{map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "q"}}}},
		}))
	})
	cl := New(f.URL)
	n := 3
	task, err := cl.GetTask(context.Background(), "t-9", &n)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateInputRequired, task.Status.State)
	require.Len(t, task.History, 1)
	c := f.last(t)
	assert.Equal(t, "GetTask", c.Method)
	assert.Equal(t, "t-9", c.Params["id"])
	assert.EqualValues(t, 3, c.Params["historyLength"])

	_, err = cl.GetTask(context.Background(), "t-9", nil)
	require.NoError(t, err)
	assert.NotContains(t, f.last(t).Params, "historyLength")
}

func TestCancelAndList(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		if c.Method == "ListTasks" {
			writeJSON(w, 200, result(c.ID, map[string]any{
				"tasks":         []any{taskJSON("t-1", "TASK_STATE_COMPLETED"), taskJSON("t-2", "TASK_STATE_WORKING")},
				"nextPageToken": "p2", "pageSize": 2, "totalSize": 5,
			}))
			return
		}
		writeJSON(w, 200, result(c.ID, taskJSON(c.Params["id"].(string), "TASK_STATE_CANCELED")))
	})
	cl := New(f.URL)
	task, err := cl.Cancel(context.Background(), "t-2")
	require.NoError(t, err)
	assert.Equal(t, "CancelTask", f.last(t).Method)
	assert.Equal(t, a2a.StateCanceled, task.Status.State)

	size := 2
	list, err := cl.ListTasks(context.Background(), &a2a.ListTasksRequest{PageSize: &size, Status: a2a.StateWorking})
	require.NoError(t, err)
	assert.Len(t, list.Tasks, 2)
	assert.Equal(t, "p2", list.NextPageToken)
	assert.Equal(t, 5, list.TotalSize)
	c := f.last(t)
	assert.EqualValues(t, 2, c.Params["pageSize"])
	assert.Equal(t, "TASK_STATE_WORKING", c.Params["status"])
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, c rpcCall)
		check  func(t *testing.T, err error)
	}{
		{"jsonrpc error on 200", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, rpcError(c.ID, a2a.CodeTaskNotFound, "no task t-1"))
		}, func(t *testing.T, err error) {
			var e *a2a.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, a2a.CodeTaskNotFound, e.Code)
			assert.Equal(t, "no task t-1", e.Message)
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			assert.NotErrorIs(t, err, a2a.ErrTaskNotCancelable)
		}},
		{"jsonrpc error on 404", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 404, rpcError(c.ID, a2a.CodeTaskNotFound, "gone"))
		}, func(t *testing.T, err error) {
			_, ok := err.(*a2a.Error)
			assert.True(t, ok, "got %T", err)
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
		}},
		{"jsonrpc error with data", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": c.ID, "error": map[string]any{
				"code": -32602, "message": "Invalid parameters", "data": []any{map[string]any{"@type": "x"}}}})
		}, func(t *testing.T, err error) {
			var e *a2a.Error
			require.ErrorAs(t, err, &e)
			assert.ErrorIs(t, err, a2a.ErrInvalidParams)
			assert.NotNil(t, e.Data)
		}},
		{"500 text", func(w http.ResponseWriter, c rpcCall) {
			http.Error(w, "boom\nbang", 500)
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 500, he.StatusCode)
			assert.Equal(t, "HTTP 500 Internal Server Error: boom bang", err.Error())
		}},
		{"404 empty", func(w http.ResponseWriter, c rpcCall) {
			w.WriteHeader(404)
		}, func(t *testing.T, err error) {
			assert.Equal(t, "HTTP 404 Not Found", err.Error())
		}},
		{"200 html", func(w http.ResponseWriter, c rpcCall) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>hello</html>"))
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, "HTTP 200 OK: not a JSON-RPC response (text/html): <html>hello</html>", err.Error())
		}},
		{"200 json without result", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": c.ID})
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Contains(t, err.Error(), "HTTP 200 OK: not a JSON-RPC response")
		}},
		{"200 null result", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": c.ID, "result": nil})
		}, func(t *testing.T, err error) {
			var he *HTTPError
			require.ErrorAs(t, err, &he)
		}},
		{"long body is cut", func(w http.ResponseWriter, c rpcCall) {
			http.Error(w, strings.Repeat("x", 10000), 502)
		}, func(t *testing.T, err error) {
			assert.Less(t, len(err.Error()), 300)
			assert.Contains(t, err.Error(), "HTTP 502 Bad Gateway: xxx")
		}},
		{"task without id", func(w http.ResponseWriter, c rpcCall) {
			writeJSON(w, 200, result(c.ID, map[string]any{"status": map[string]any{"state": "TASK_STATE_WORKING"}}))
		}, func(t *testing.T, err error) {
			assert.ErrorIs(t, err, ErrInvalidResponse)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) { tc.answer(w, c) })
			_, err := New(f.URL).GetTask(context.Background(), "t-1", nil)
			require.Error(t, err)
			tc.check(t, err)
		})
	}
}

func TestTransportError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {})
	url := f.URL
	f.Close()
	_, err := New(url).GetTask(context.Background(), "t-1", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), url)
}

func TestResponseSizeBound(t *testing.T) {
	big := strings.Repeat("x", 4096)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, map[string]any{"id": "t-1", "contextId": "c",
			"status": map[string]any{"state": "TASK_STATE_WORKING"}, "metadata": map[string]any{"pad": big}}))
	})
	_, err := New(f.URL, WithMaxResponseBytes(1024)).GetTask(context.Background(), "t-1", nil)
	require.ErrorIs(t, err, ErrResponseTooLarge)
	assert.Contains(t, err.Error(), "200")

	_, err = New(f.URL, WithMaxResponseBytes(8192)).GetTask(context.Background(), "t-1", nil)
	require.NoError(t, err)
}

func TestRequestIDsDiffer(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, taskJSON("t-1", "TASK_STATE_WORKING")))
	})
	cl := New(f.URL)
	for i := 0; i < 3; i++ {
		_, err := cl.GetTask(context.Background(), "t-1", nil)
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		seen[string(c.ID)] = true
	}
	assert.Len(t, seen, 3)
}

func TestWithHTTPClient(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, c rpcCall) {
		writeJSON(w, 200, result(c.ID, taskJSON("t-1", "TASK_STATE_WORKING")))
	})
	used := false
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used = true
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, err := New(f.URL, WithHTTPClient(hc)).GetTask(context.Background(), "t-1", nil)
	require.NoError(t, err)
	assert.True(t, used)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewIDAndTextMessage(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewID(), NewID()
	assert.Regexp(t, re, a)
	assert.NotEqual(t, a, b)

	m := TextMessage("hi")
	assert.Equal(t, a2a.RoleUser, m.Role)
	assert.Regexp(t, re, m.MessageID)
	b2, err := json.Marshal(m)
	require.NoError(t, err)
	assert.Contains(t, string(b2), `"parts":[{"text":"hi"}]`)
}

func TestHTTPErrorUnwrapsNothing(t *testing.T) {
	err := error(&HTTPError{StatusCode: 500, Status: "500 Internal Server Error"})
	assert.False(t, errors.Is(err, a2a.ErrInternal))
}
