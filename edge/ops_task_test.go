package edge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/tracing"
)

// pushesDoc is GET /ops/v1/tasks/{id}/pushes as a client reads it.
type pushesDoc struct {
	TaskID  string `json:"taskId"`
	Enabled bool   `json:"enabled"`
	Configs []struct {
		ConfigID string `json:"configId"`
		URL      string `json:"url"`
		Attempts []struct {
			Seq       uint64     `json:"seq"`
			Attempt   uint64     `json:"attempt"`
			Time      time.Time  `json:"time"`
			Outcome   string     `json:"outcome"`
			Status    int        `json:"status"`
			Error     string     `json:"error"`
			NextRetry *time.Time `json:"nextRetry"`
		} `json:"attempts"`
	} `json:"configs"`
}

func readOps(t *testing.T, base, path string, v any) {
	t.Helper()
	code, _, body := opsGet(t, base, path, "")
	require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	require.NoError(t, json.Unmarshal(body, v), "%s", body)
}

// A task's push deliveries, as the deliverer records them: to a receiver
// answering 200, each notification delivered at its first attempt; to
// one answering 500, each tried MaxAttempts times, every failed attempt
// but the last saying when it is tried again, the last giving up. The
// log holds exactly the POSTs the receivers got.
func TestOpsTaskPushes(t *testing.T) {
	good := newPushReceiver(t, http.StatusOK)
	bad := newPushReceiver(t, http.StatusInternalServerError)
	pc := edge.PushConfig{Enabled: true, Trusted: []string{good.hostPort(), bad.hostPort()}, Backoff: 100 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, MaxAttempts: 3, Timeout: 3 * time.Second}
	m := startPushMesh(t, pc)
	ok := m.sendWithPush(t, "echo", "to a good hook", good.URL+"/hook")
	failing := m.sendWithPush(t, "echo", "to a failing hook", bad.URL+"/hook")
	m.settle(t, 3*pc.MaxBackoff, 20*time.Second)

	var doc pushesDoc
	readOps(t, m.URL, "/ops/v1/tasks/"+ok.ID+"/pushes", &doc)
	require.True(t, doc.Enabled)
	require.Len(t, doc.Configs, 1)
	require.Equal(t, "hook", doc.Configs[0].ConfigID)
	require.Equal(t, good.URL+"/hook", doc.Configs[0].URL)
	n := notifiable(t, m.Store(), ok.ID)
	require.Len(t, doc.Configs[0].Attempts, n, "one attempt per notification")
	require.Len(t, good.all(), n)
	seqs := map[uint64]bool{}
	for _, a := range doc.Configs[0].Attempts {
		require.Equal(t, "delivered", a.Outcome)
		require.Equal(t, http.StatusOK, a.Status)
		require.EqualValues(t, 1, a.Attempt)
		require.Nil(t, a.NextRetry)
		require.WithinDuration(t, time.Now(), a.Time, time.Minute)
		seqs[a.Seq] = true
	}
	require.Len(t, seqs, n, "one notification per event")

	readOps(t, m.URL, "/ops/v1/tasks/"+failing.ID+"/pushes", &doc)
	require.Len(t, doc.Configs, 1)
	n = notifiable(t, m.Store(), failing.ID)
	atts := doc.Configs[0].Attempts
	require.Len(t, atts, n*pc.MaxAttempts, "every attempt of every notification")
	require.Len(t, bad.all(), len(atts), "the log holds the POSTs the receiver got")
	bySeq := map[uint64][]int{}
	for i, a := range atts {
		require.Equal(t, http.StatusInternalServerError, a.Status)
		bySeq[a.Seq] = append(bySeq[a.Seq], i)
	}
	require.Len(t, bySeq, n)
	for seq, idx := range bySeq {
		require.Len(t, idx, pc.MaxAttempts, "attempts of event %d", seq)
		for k, i := range idx {
			a := atts[i]
			require.EqualValues(t, k+1, a.Attempt, "event %d", seq)
			if k < pc.MaxAttempts-1 {
				require.Equal(t, "failed", a.Outcome)
				require.NotNil(t, a.NextRetry, "a failed attempt says when it is retried")
				require.True(t, a.NextRetry.After(a.Time))
				require.False(t, atts[idx[k+1]].Time.Before(a.NextRetry.Add(-50*time.Millisecond)),
					"the retry came no sooner than announced")
			} else {
				require.Equal(t, "gave-up", a.Outcome)
				require.Nil(t, a.NextRetry)
			}
		}
	}

	code, _, _ := opsGet(t, m.URL, "/ops/v1/tasks/no-such-task/pushes", "")
	require.Equal(t, http.StatusNotFound, code)
}

// Without push, a task's deliveries say so.
func TestOpsTaskPushesOff(t *testing.T) {
	m := meshtest.Start(t)
	id := opsSend(t, m.URL, "echo", "no push", "")
	var doc pushesDoc
	readOps(t, m.URL, "/ops/v1/tasks/"+id+"/pushes", &doc)
	require.False(t, doc.Enabled)
	require.Empty(t, doc.Configs)
}

// delegationsDoc is GET /ops/v1/tasks/{id}/delegations as a client reads it.
type delegationsDoc struct {
	TaskID string `json:"taskId"`
	Parent *struct {
		TaskID string `json:"taskId"`
		Agent  string `json:"agent"`
	} `json:"parent"`
	Children []struct {
		TaskID string `json:"taskId"`
		Agent  string `json:"agent"`
		State  string `json:"state"`
	} `json:"children"`
	More bool `json:"more"`
}

// The planner's task lists the two tasks it delegated, to echo and to
// upper, in order; each of them names the planner's task as its parent;
// a task a client sent has neither.
func TestOpsTaskDelegations(t *testing.T) {
	m := meshtest.Start(t)
	id := opsSend(t, m.URL, "planner", "say this; shout that", "")
	var doc delegationsDoc
	readOps(t, m.URL, "/ops/v1/tasks/"+id+"/delegations", &doc)
	require.Nil(t, doc.Parent)
	require.Len(t, doc.Children, 2, "%+v", doc)
	require.False(t, doc.More)
	agents := map[string]string{}
	for _, c := range doc.Children {
		require.Equal(t, "TASK_STATE_COMPLETED", c.State)
		agents[c.Agent] = c.TaskID
	}
	require.Contains(t, agents, "echo")
	require.Contains(t, agents, "upper")
	for agent, child := range agents {
		var cd delegationsDoc
		readOps(t, m.URL, "/ops/v1/tasks/"+child+"/delegations", &cd)
		require.NotNil(t, cd.Parent, "%s's task names its parent", agent)
		require.Equal(t, id, cd.Parent.TaskID)
		require.Equal(t, "planner", cd.Parent.Agent)
		require.Empty(t, cd.Children)
	}
	plain := opsSend(t, m.URL, "echo", "alone", "")
	readOps(t, m.URL, "/ops/v1/tasks/"+plain+"/delegations", &doc)
	require.Nil(t, doc.Parent)
	require.Empty(t, doc.Children)
}

// traceDoc is GET /ops/v1/tasks/{id}/trace as a client reads it.
type traceDoc struct {
	TraceID string `json:"traceId"`
	UIURL   string `json:"uiUrl"`
	Query   bool   `json:"query"`
	Spans   []struct {
		SpanID   string `json:"spanId"`
		ParentID string `json:"parentId"`
		Name     string `json:"name"`
		Service  string `json:"service"`
		Start    int64  `json:"start"`
		Duration int64  `json:"duration"`
		Error    bool   `json:"error"`
	} `json:"spans"`
	Error string `json:"error"`
}

// A traced task's trace: its id from the task's recorded traceparent,
// the link into the Jaeger UI, and the spans read from the query API (a
// stand-in on loopback here, answering Jaeger's shape; the browser tests
// read a real Jaeger), each with its parent and service.
func TestOpsTaskTrace(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	tracing.Install(tp)
	t.Cleanup(tracing.Reset)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	asked := make(chan string, 10)
	jaeger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path
		if r.URL.Path != "/api/traces/"+traceID {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"data":[{"traceID":%q,"spans":[
			{"spanID":"b","operationName":"run echo","references":[{"refType":"CHILD_OF","traceID":%[1]q,"spanID":"a"}],"startTime":1000200,"duration":300,"processID":"p2","tags":[{"key":"error","type":"bool","value":true}]},
			{"spanID":"a","operationName":"SendMessage","references":[],"startTime":1000000,"duration":900,"processID":"p1","tags":[]}],
			"processes":{"p1":{"serviceName":"a2amesh-edge"},"p2":{"serviceName":"a2amesh-worker-echo"}}}]}`, traceID)
	}))
	t.Cleanup(jaeger.Close)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) {
		c.Edge.JaegerUI = "http://127.0.0.1:16686"
		c.Edge.JaegerQuery = jaeger.URL
	}))
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"trace-1","parts":[{"text":"traced"}]}}}`
	req, err := http.NewRequest(http.MethodPost, m.URL+"/agents/echo", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	require.NoError(t, err)
	var out struct {
		Result struct {
			Task a2a.Task `json:"task"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()

	var doc traceDoc
	readOps(t, m.URL, "/ops/v1/tasks/"+out.Result.Task.ID+"/trace", &doc)
	require.Equal(t, traceID, doc.TraceID)
	require.Equal(t, "http://127.0.0.1:16686/trace/"+traceID, doc.UIURL)
	require.True(t, doc.Query)
	require.Empty(t, doc.Error)
	require.Equal(t, "/api/traces/"+traceID, <-asked)
	require.Len(t, doc.Spans, 2)
	root, run := doc.Spans[0], doc.Spans[1]
	require.Equal(t, "SendMessage", root.Name, "by start time")
	require.Equal(t, "a2amesh-edge", root.Service)
	require.Empty(t, root.ParentID)
	require.EqualValues(t, 1000000, root.Start)
	require.EqualValues(t, 900, root.Duration)
	require.Equal(t, "run echo", run.Name)
	require.Equal(t, "a", run.ParentID)
	require.Equal(t, "a2amesh-worker-echo", run.Service)
	require.True(t, run.Error)

	// A task sent without trace context still gets a trace of its own
	// (the provider records); one Jaeger does not have has no spans yet.
	other := opsSend(t, m.URL, "echo", "another", "")
	readOps(t, m.URL, "/ops/v1/tasks/"+other+"/trace", &doc)
	require.Len(t, doc.TraceID, 32)
	require.NotEqual(t, traceID, doc.TraceID)
	require.Empty(t, doc.Spans)
	require.Empty(t, doc.Error)
}

// A webhook whose address the SSRF guard refuses at dial time: each
// notification's one attempt is recorded refused, with the guard's
// reason, and no retry.
func TestOpsTaskPushesRefused(t *testing.T) {
	victim := newPushReceiver(t, http.StatusOK)
	_, port, err := net.SplitHostPort(victim.hostPort())
	require.NoError(t, err)
	useResolver(t, startFakeDNS(t, net.IPv4(127, 0, 0, 1)))
	pc := edge.PushConfig{Enabled: true, Backoff: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		MaxAttempts: 3, Timeout: 3 * time.Second}
	m := startPushMesh(t, pc)
	task := m.sendWithPush(t, "echo", "refused hook", "http://hooks.a2amesh-test.example:"+port+"/hook")
	m.settle(t, 3*pc.MaxBackoff, 20*time.Second)
	n := notifiable(t, m.Store(), task.ID)
	var doc pushesDoc
	readOps(t, m.URL, "/ops/v1/tasks/"+task.ID+"/pushes", &doc)
	require.Len(t, doc.Configs, 1)
	require.Len(t, doc.Configs[0].Attempts, n)
	for _, a := range doc.Configs[0].Attempts {
		require.Equal(t, "refused", a.Outcome)
		require.Zero(t, a.Status)
		require.NotEmpty(t, a.Error)
		require.Nil(t, a.NextRetry)
	}
	require.Empty(t, victim.all())
}

// A task's deliveries, delegations and trace are its owner's: another
// principal gets 404, as GetTask answers, and no key 401.
func TestOpsTaskViewsAreTheOwners(t *testing.T) {
	const alice, bob = "alice-secret-0123456789", "bob-secret-0123456789ab"
	auth, err := edge.NewAuth(map[string][]string{"alice": {alice}, "bob": {bob}})
	require.NoError(t, err)
	m := meshtest.Start(t, meshtest.WithConfig(func(c *mesh.Config) { c.Edge.Auth = auth }))
	id := opsSend(t, m.URL, "planner", "alice's; plan", alice)
	for _, view := range []string{"pushes", "delegations", "trace"} {
		path := "/ops/v1/tasks/" + id + "/" + view
		code, _, body := opsGet(t, m.URL, path, alice)
		require.Equal(t, http.StatusOK, code, "%s: %s", view, body)
		code, _, body = opsGet(t, m.URL, path, bob)
		require.Equal(t, http.StatusNotFound, code, view)
		require.NotContains(t, string(body), "echo", view)
		code, _, _ = opsGet(t, m.URL, path, "")
		require.Equal(t, http.StatusUnauthorized, code, view)
	}
}
