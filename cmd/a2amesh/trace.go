package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

func init() {
	register("trace", "print a trace tree from Jaeger's query API: a2amesh trace TRACE_ID|TASK_ID", runTrace)
}

// traceTaskAttr is the span attribute the mesh records a task's id under;
// a task id is looked up by it.
const traceTaskAttr = "a2a.task.id"

var traceIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{16,32}$`)

func runTrace(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	jaeger := fs.String("jaeger", envOr("A2AMESH_JAEGER_URL", "http://127.0.0.1:16686"), "Jaeger query URL (env A2AMESH_JAEGER_URL)")
	lookback := fs.Duration("lookback", 24*time.Hour, "how far back to look for a task's trace")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: a2amesh trace [--jaeger URL] TRACE_ID|TASK_ID")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	jc := &jaegerClient{base: strings.TrimRight(*jaeger, "/"), hc: &http.Client{}}
	tr, err := jc.find(ctx, fs.Arg(0), *lookback)
	if err != nil {
		return err
	}
	printTrace(os.Stdout, tr)
	return nil
}

// jaegerTrace is a trace as Jaeger's query API (/api/traces) returns it.
type jaegerTrace struct {
	TraceID string       `json:"traceID"`
	Spans   []jaegerSpan `json:"spans"`
	// Processes maps a span's processID to its service.
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64  `json:"startTime"` // µs since the epoch
	Duration  int64  `json:"duration"`  // µs
	ProcessID string `json:"processID"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

type jaegerClient struct {
	base string
	hc   *http.Client
}

func (j *jaegerClient) get(ctx context.Context, path string, q url.Values, v any) error {
	u := j.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := j.hc.Do(req)
	if err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return errTraceNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jaeger: %s: HTTP %d: %.200s", path, resp.StatusCode, body)
	}
	return json.Unmarshal(body, v)
}

var errTraceNotFound = errors.New("trace not found")

// find returns the trace with id, or the trace of the task with id.
func (j *jaegerClient) find(ctx context.Context, id string, lookback time.Duration) (*jaegerTrace, error) {
	var res struct {
		Data []jaegerTrace `json:"data"`
	}
	if traceIDPattern.MatchString(id) {
		err := j.get(ctx, "/api/traces/"+strings.ToLower(id), nil, &res)
		if err == nil && len(res.Data) > 0 {
			return &res.Data[0], nil
		}
		if err != nil && !errors.Is(err, errTraceNotFound) {
			return nil, err
		}
	}
	// A task id: search each mesh service for a span naming the task.
	var services struct {
		Data []string `json:"data"`
	}
	if err := j.get(ctx, "/api/services", nil, &services); err != nil {
		return nil, err
	}
	tags, _ := json.Marshal(map[string]string{traceTaskAttr: id})
	now := time.Now()
	for _, svc := range services.Data {
		if !strings.HasPrefix(svc, "a2amesh") {
			continue
		}
		q := url.Values{
			"service": {svc}, "tags": {string(tags)}, "limit": {"1"},
			"start": {fmt.Sprint(now.Add(-lookback).UnixMicro())}, "end": {fmt.Sprint(now.UnixMicro())},
		}
		res.Data = nil
		if err := j.get(ctx, "/api/traces", q, &res); err != nil {
			return nil, err
		}
		if len(res.Data) > 0 {
			// The search may return only the matching spans: fetch the whole trace.
			tid := res.Data[0].TraceID
			res.Data = nil
			if err := j.get(ctx, "/api/traces/"+tid, nil, &res); err != nil {
				return nil, err
			}
			if len(res.Data) > 0 {
				return &res.Data[0], nil
			}
		}
	}
	return nil, fmt.Errorf("no trace with id or task id %s in Jaeger at %s", id, j.base)
}

// printTrace writes the trace as an indented tree: each span with its
// service, operation, start offset, duration and the mesh's ids.
func printTrace(w io.Writer, tr *jaegerTrace) {
	byID := map[string]*jaegerSpan{}
	for i := range tr.Spans {
		byID[tr.Spans[i].SpanID] = &tr.Spans[i]
	}
	children := map[string][]*jaegerSpan{}
	var roots []*jaegerSpan
	var start int64
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if start == 0 || s.StartTime < start {
			start = s.StartTime
		}
		parent := ""
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" && byID[r.SpanID] != nil {
				parent = r.SpanID
				break
			}
		}
		if parent == "" {
			roots = append(roots, s)
		} else {
			children[parent] = append(children[parent], s)
		}
	}
	byStart := func(ss []*jaegerSpan) {
		sort.SliceStable(ss, func(a, b int) bool { return ss[a].StartTime < ss[b].StartTime })
	}
	services := map[string]bool{}
	for _, s := range tr.Spans {
		services[tr.Processes[s.ProcessID].ServiceName] = true
	}
	fmt.Fprintf(w, "trace %s: %d spans, %d services\n", tr.TraceID, len(tr.Spans), len(services))
	var walk func(s *jaegerSpan, depth int)
	walk = func(s *jaegerSpan, depth int) {
		if depth > 64 {
			return
		}
		var ids []string
		for _, t := range s.Tags {
			switch t.Key {
			case traceTaskAttr, "a2a.agent", "rpc.method", "messaging.destination.name", "http.response.status_code", "error":
				ids = append(ids, fmt.Sprintf("%s=%v", t.Key, t.Value))
			}
		}
		sort.Strings(ids)
		fmt.Fprintf(w, "%s%s: %s  +%s %s", strings.Repeat("  ", depth), tr.Processes[s.ProcessID].ServiceName, s.OperationName,
			time.Duration(s.StartTime-start)*time.Microsecond, time.Duration(s.Duration)*time.Microsecond)
		if len(ids) > 0 {
			fmt.Fprintf(w, "  [%s]", strings.Join(ids, " "))
		}
		fmt.Fprintln(w)
		kids := children[s.SpanID]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 0)
	}
}
