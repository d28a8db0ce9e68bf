package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/jaegertest"
)

// The planner's multi-agent run, with the mesh's roles as separate
// processes exporting OTLP to a real Jaeger v2: Jaeger's query API returns
// one trace holding the edge, the planner's worker and both delegates'
// workers, with the delegations under the planner's run.
func TestJaegerPlannerTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	query, otlpURL := jaegertest.Start(t)

	bin := durBuild(t)
	natsAddr, edgeAddr := durFreeAddr(t), durFreeAddr(t)
	natsURL := "nats://" + natsAddr
	env := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlpURL,
		"OTEL_BSP_SCHEDULE_DELAY=100",
	}
	startRole(t, bin, "nats", "nats", "--listen", natsAddr, "--data", t.TempDir())
	startRoleEnv(t, bin, "edge", env, "edge", "--nats", natsURL, "--listen", edgeAddr)
	for _, agent := range []string{"planner", "echo", "upper"} {
		startRoleEnv(t, bin, agent, env, "worker", "--nats", natsURL, "--agent", agent)
	}
	base := "http://" + edgeAddr
	for _, agent := range []string{"planner", "echo", "upper"} {
		waitAgent(t, base, agent)
	}

	// A W3C traceparent from the client: the trace id is ours.
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message": map[string]any{"role": "ROLE_USER", "messageId": "jaeger-1", "parts": []any{map[string]any{"text": "hello brave new world"}}}}})
	req, err := http.NewRequest(http.MethodPost, base+"/agents/planner", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	var r struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	resp.Body.Close()
	require.Equal(t, "TASK_STATE_COMPLETED", r.Result.Task.Status.State)

	want := []string{"a2amesh-edge", "a2amesh-worker-echo", "a2amesh-worker-planner", "a2amesh-worker-upper"}
	spans := [][2]string{
		{"a2amesh-edge", "SendMessage"},
		{"a2amesh-worker-planner", "run planner"},
		{"a2amesh-worker-planner", "delegate echo"},
		{"a2amesh-worker-planner", "delegate upper"},
		{"a2amesh-worker-echo", "run echo"},
		{"a2amesh-worker-upper", "run upper"},
	}
	complete := func(v jaegerTraceView) bool {
		for _, sp := range spans {
			if !v.has(sp[0], sp[1]) {
				return false
			}
		}
		return v.hasServices(want)
	}
	// Each process exports on its own schedule (the edge's server span
	// ends after its answer is written): wait for every expected span.
	var got jaegerTraceView
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		if got = fetchJaegerTrace(t, query, traceID); complete(got) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Truef(t, got.hasServices(want), "services in Jaeger: %v, want %v", got.services(), want)
	for _, sp := range spans {
		require.Truef(t, got.has(sp[0], sp[1]), "no span %q of %s in the trace: %v", sp[1], sp[0], got.spans())
	}
	// The delegates run beneath the planner's run: each "run echo" has the
	// "delegate echo" span among its ancestors, and that one "run planner".
	for _, agent := range []string{"echo", "upper"} {
		require.Truef(t, got.descends("run "+agent, "delegate "+agent), "run %s is not beneath delegate %s", agent, agent)
		require.Truef(t, got.descends("delegate "+agent, "run planner"), "delegate %s is not beneath run planner", agent)
	}
	require.True(t, got.descends("run planner", "SendMessage"), "the planner's run is not beneath the edge's span")
}

// jaegerTraceView is a trace from Jaeger's query API.
type jaegerTraceView struct {
	Spans []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		ProcessID     string `json:"processID"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

func fetchJaegerTrace(t *testing.T, query, id string) jaegerTraceView {
	t.Helper()
	resp, err := http.Get(query + "/api/traces/" + id)
	if err != nil {
		return jaegerTraceView{}
	}
	defer resp.Body.Close()
	var r struct {
		Data []jaegerTraceView `json:"data"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data) == 0 {
		return jaegerTraceView{}
	}
	return r.Data[0]
}

func (v jaegerTraceView) services() []string {
	set := map[string]bool{}
	for _, s := range v.Spans {
		set[v.Processes[s.ProcessID].ServiceName] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (v jaegerTraceView) hasServices(want []string) bool {
	have := strings.Join(v.services(), ",")
	for _, w := range want {
		if !strings.Contains(","+have+",", ","+w+",") {
			return false
		}
	}
	return true
}

func (v jaegerTraceView) has(service, op string) bool {
	for _, s := range v.Spans {
		if s.OperationName == op && v.Processes[s.ProcessID].ServiceName == service {
			return true
		}
	}
	return false
}

func (v jaegerTraceView) spans() []string {
	var out []string
	for _, s := range v.Spans {
		out = append(out, v.Processes[s.ProcessID].ServiceName+":"+s.OperationName)
	}
	sort.Strings(out)
	return out
}

// descends reports whether a span named op has a span named ancestor above
// it (following CHILD_OF references).
func (v jaegerTraceView) descends(op, ancestor string) bool {
	byID := map[string]int{}
	for i, s := range v.Spans {
		byID[s.SpanID] = i
	}
	for _, s := range v.Spans {
		if s.OperationName != op {
			continue
		}
		cur := s
		for depth := 0; depth < 64; depth++ {
			parent := ""
			for _, r := range cur.References {
				if r.RefType == "CHILD_OF" {
					parent = r.SpanID
				}
			}
			i, ok := byID[parent]
			if !ok {
				break
			}
			cur = v.Spans[i]
			if cur.OperationName == ancestor {
				return true
			}
		}
	}
	return false
}
