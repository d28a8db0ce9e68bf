package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// The operator API's views of one task beside its log (ops.go): its push
// deliveries, its delegations and its trace. Each answers only for the
// caller's own task, decided as GetTask decides it (404 otherwise).

func (e *Edge) opsTaskRoutes(guard func(http.HandlerFunc) http.Handler) {
	e.mux.Handle("GET /ops/v1/tasks/{id}/pushes", guard(e.serveTaskPushes))
	e.mux.Handle("GET /ops/v1/tasks/{id}/delegations", guard(e.serveTaskDelegations))
	e.mux.Handle("GET /ops/v1/tasks/{id}/trace", guard(e.serveTaskTrace))
}

// ownTask reads the caller's task id as GetTask does, answering the error
// itself (404 for a task that is not the caller's); nil when it did.
func (e *Edge) ownTask(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) *a2a.Task {
	zero := 0
	t, err := e.svc.GetTask(opsCall(ctx, r), &a2a.GetTaskRequest{ID: id, HistoryLength: &zero})
	if err != nil {
		ae := a2a.AsError(err)
		writeOps(w, ae.Status().HTTP, map[string]string{"error": ae.Message})
		return nil
	}
	return t
}

// opsUnavailable answers 503 with Retry-After for a read that failed.
func (e *Edge) opsUnavailable(w http.ResponseWriter, what, id string, err error) {
	e.log.Warn("ops: reading "+what, "task_id", id, "err", err)
	w.Header().Set("Retry-After", "1")
	writeOps(w, http.StatusServiceUnavailable, map[string]string{"error": "the task's " + what + " cannot be read now; retry"})
}

// ---- push deliveries ----

// taskPushesDoc is the answer of GET /ops/v1/tasks/{id}/pushes.
type taskPushesDoc struct {
	TaskID string `json:"taskId"`
	// Enabled is false when this edge does not deliver push
	// notifications (configs is then empty).
	Enabled bool `json:"enabled"`
	// Configs are the task's push configs, oldest first.
	Configs []taskPushConfig `json:"configs"`
}

// taskPushConfig is one push config of a task and its deliveries.
type taskPushConfig struct {
	ConfigID string `json:"configId"`
	URL      string `json:"url"`
	// Attempts are the config's last POSTs (at most push.LogDepth),
	// oldest first: each with the event it carried, its outcome, the
	// receiver's status, and when a failed one is tried again.
	Attempts []push.Attempt `json:"attempts"`
}

// serveTaskPushes answers GET /ops/v1/tasks/{id}/pushes: the caller's
// task's push configs (their URLs; never their tokens) with the last
// delivery attempts of each.
func (e *Edge) serveTaskPushes(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	if e.ownTask(ctx, w, r, id) == nil {
		return
	}
	doc := taskPushesDoc{TaskID: id, Configs: []taskPushConfig{}}
	store, err := e.pushStore()
	if errors.Is(err, errPushStarting) {
		e.opsUnavailable(w, "push deliveries", id, err)
		return
	}
	if err != nil {
		writeOpsDoc(w, r, doc) // push is off here
		return
	}
	doc.Enabled = true
	recs, err := store.List(ctx, id)
	if err != nil {
		e.opsUnavailable(w, "push configs", id, err)
		return
	}
	for _, rec := range recs {
		attempts, err := store.Attempts(ctx, id, rec.Config.ID)
		if err != nil {
			e.opsUnavailable(w, "push deliveries", id, err)
			return
		}
		if attempts == nil {
			attempts = []push.Attempt{}
		}
		doc.Configs = append(doc.Configs, taskPushConfig{ConfigID: rec.Config.ID, URL: rec.Config.URL, Attempts: attempts})
	}
	writeOpsDoc(w, r, doc)
}

// ---- delegations ----

// maxChildren bounds the delegated tasks one answer lists.
const maxChildren = 200

// taskDelegationsDoc is the answer of GET /ops/v1/tasks/{id}/delegations.
type taskDelegationsDoc struct {
	TaskID string `json:"taskId"`
	// Parent is the task that delegated this one (from its metadata,
	// taskstore.MetaParent); absent for a task a client sent.
	Parent *taskLink `json:"parent,omitempty"`
	// Children are the tasks this one delegated, in the order it did.
	Children []taskLink `json:"children"`
	// More says it delegated more than the children listed.
	More bool `json:"more"`
}

// taskLink names a related task.
type taskLink struct {
	TaskID string `json:"taskId"`
	// Agent is the agent that runs the task (for the parent: the agent
	// that delegated).
	Agent string `json:"agent,omitempty"`
	// State is the child's state when read (absent when it is gone).
	State a2a.TaskState `json:"state,omitempty"`
	// Time is when the parent delegated the child.
	Time *time.Time `json:"time,omitempty"`
}

// serveTaskDelegations answers GET /ops/v1/tasks/{id}/delegations: the
// task that delegated the caller's task, and the tasks it delegated.
func (e *Edge) serveTaskDelegations(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	t := e.ownTask(ctx, w, r, id)
	if t == nil {
		return
	}
	doc := taskDelegationsDoc{TaskID: id, Parent: parentOf(t), Children: []taskLink{}}
	kids, more, err := e.store.Delegations(ctx, id, maxChildren)
	if err != nil {
		e.opsUnavailable(w, "delegations", id, err)
		return
	}
	doc.More = more
	for _, d := range kids {
		l := taskLink{TaskID: d.TaskID, Agent: d.Agent, Time: &d.Time}
		if rec, err := e.store.LoadTask(ctx, d.TaskID); err == nil {
			l.State = rec.Task.Status.State
		}
		doc.Children = append(doc.Children, l)
	}
	writeOpsDoc(w, r, doc)
}

// parentOf reads the delegating task from t's metadata, nil if none.
func parentOf(t *a2a.Task) *taskLink {
	p, ok := t.Metadata[taskstore.MetaParent].(map[string]any)
	if !ok {
		return nil
	}
	id, _ := p["taskId"].(string)
	agent, _ := p["agent"].(string)
	if !bus.ValidToken(id) {
		return nil
	}
	return &taskLink{TaskID: id, Agent: agent}
}

// ---- trace ----

// taskTraceDoc is the answer of GET /ops/v1/tasks/{id}/trace.
type taskTraceDoc struct {
	TaskID string `json:"taskId"`
	// TraceID is the trace the task was created in (absent when it was
	// not traced).
	TraceID string `json:"traceId,omitempty"`
	// UIURL opens the trace in Jaeger's UI (with --jaeger-ui).
	UIURL string `json:"uiUrl,omitempty"`
	// Query is true when the edge reads spans from Jaeger (--jaeger-query).
	Query bool `json:"query"`
	// Spans are the trace's spans as Jaeger holds them, by start time
	// (with --jaeger-query; empty while Jaeger has none yet).
	Spans []traceSpan `json:"spans"`
	// Error says why the spans could not be read from Jaeger.
	Error string `json:"error,omitempty"`
}

// traceSpan is one span of a trace.
type traceSpan struct {
	SpanID string `json:"spanId"`
	// ParentID is its parent span in the trace ("" for a root, or a
	// parent Jaeger does not have).
	ParentID string `json:"parentId,omitempty"`
	Name     string `json:"name"`
	Service  string `json:"service"`
	// Start is when it started, in µs since the Unix epoch; Duration is
	// in µs.
	Start    int64 `json:"start"`
	Duration int64 `json:"duration"`
	// Error is true when the span ended in error.
	Error bool `json:"error,omitempty"`
}

// jaegerTimeout bounds one read of Jaeger's query API; jaegerMaxBody
// bounds its answer.
const (
	jaegerTimeout = 5 * time.Second
	jaegerMaxBody = 16 << 20
)

// serveTaskTrace answers GET /ops/v1/tasks/{id}/trace: the trace id the
// caller's task was created in, the Jaeger UI link, and the trace's spans
// read from Jaeger's query API, so that the console draws them without
// leaving its origin.
func (e *Edge) serveTaskTrace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), opsTimeout)
	defer cancel()
	if e.ownTask(ctx, w, r, id) == nil {
		return
	}
	doc := taskTraceDoc{TaskID: id, Query: e.cfg.JaegerQuery != "", Spans: []traceSpan{}}
	rec, err := e.store.LoadTask(ctx, id)
	if err != nil && !errors.Is(err, taskstore.ErrTaskNotFound) {
		e.opsUnavailable(w, "trace", id, err)
		return
	}
	if rec != nil {
		if sc, ok := tracing.ParseTraceparent(rec.Trace); ok {
			doc.TraceID = sc.TraceID().String()
		}
	}
	if doc.TraceID == "" {
		writeOpsDoc(w, r, doc)
		return
	}
	if ui := strings.TrimRight(e.cfg.JaegerUI, "/"); ui != "" {
		doc.UIURL = ui + "/trace/" + doc.TraceID
	}
	if doc.Query {
		spans, err := jaegerSpans(r.Context(), e.cfg.JaegerQuery, doc.TraceID)
		if err != nil {
			e.log.Warn("ops: reading a trace from Jaeger", "task_id", id, "trace_id", doc.TraceID, "err", err)
			doc.Error = "Jaeger's query API did not answer: " + err.Error()
		} else {
			doc.Spans = spans
		}
	}
	writeOpsDoc(w, r, doc)
}

// jaegerSpans reads trace traceID from the Jaeger query API at base
// (GET /api/traces/{id}); a trace Jaeger does not have (yet) has no spans.
func jaegerSpans(ctx context.Context, base, traceID string) ([]traceSpan, error) {
	ctx, cancel := context.WithTimeout(ctx, jaegerTimeout)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/api/traces/" + url.PathEscape(traceID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := jaegerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return []traceSpan{}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var doc struct {
		Data []struct {
			Spans []struct {
				SpanID        string `json:"spanID"`
				OperationName string `json:"operationName"`
				References    []struct {
					RefType string `json:"refType"`
					TraceID string `json:"traceID"`
					SpanID  string `json:"spanID"`
				} `json:"references"`
				StartTime int64  `json:"startTime"`
				Duration  int64  `json:"duration"`
				ProcessID string `json:"processID"`
				Tags      []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, jaegerMaxBody)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding its answer: %w", err)
	}
	out := []traceSpan{}
	for _, tr := range doc.Data {
		for _, s := range tr.Spans {
			ts := traceSpan{SpanID: s.SpanID, Name: s.OperationName, Service: tr.Processes[s.ProcessID].ServiceName,
				Start: s.StartTime, Duration: s.Duration}
			for _, ref := range s.References {
				if ref.RefType == "CHILD_OF" && ref.TraceID == traceID {
					ts.ParentID = ref.SpanID
					break
				}
			}
			for _, tag := range s.Tags {
				if tag.Key == "error" && tag.Value == true {
					ts.Error = true
				}
			}
			out = append(out, ts)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

// jaegerClient reads Jaeger's query API: an address the operator
// configured (--jaeger-query), so not through the SSRF guard.
var jaegerClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
