package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

func init() {
	register("trace", "print a trace tree from Jaeger's query API, by trace id or task id", runTrace)
}

// traceTaskAttr is the span attribute the mesh records a task's id under;
// a task id is looked up by it.
const traceTaskAttr = "a2a.task.id"

// jaegerEnv names the Jaeger query URL; defaultJaegerURL is its default.
const (
	jaegerEnv        = "A2AMESH_JAEGER_URL"
	defaultJaegerURL = "http://127.0.0.1:16686"
)

// traceWait is how long trace keeps asking for a trace Jaeger does not
// have yet (the exporters send spans in batches, every few seconds), and
// traceRetryEvery the pause between two asks.
const (
	traceWait       = 5 * time.Second
	traceRetryEvery = 250 * time.Millisecond
)

var traceIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{16,32}$`)

func runTrace(ctx context.Context, args []string) error { return traceCmd(ctx, args, os.Stdout) }

func traceCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("trace", "TRACE_ID|TASK_ID",
		"Print a trace tree from Jaeger's query API, by trace id or task id.\n\n"+
			"A trace id is 16 or 32 hex digits; anything else is taken as a task id and\n"+
			"searched for as the span attribute "+traceTaskAttr+" in every a2amesh service.\n"+
			"Right after a call Jaeger may not have the spans yet (they are exported in\n"+
			"batches): a trace not found is asked for again every "+traceRetryEvery.String()+" for up to\n"+
			"--wait before the command says it is not there.")
	jaeger := fs.String("jaeger", envOr(jaegerEnv, defaultJaegerURL), "base URL of Jaeger's query API and UI (env "+jaegerEnv+")")
	lookback := fs.Duration("lookback", 24*time.Hour, "how far back to search for a task id's trace (a trace id is fetched whatever its age)")
	wait := fs.Duration("wait", traceWait, "keep asking for a trace that is not found yet for up to this long; 0: ask once")
	if err := parseFlagsN(fs, args, 1, "one TRACE_ID or TASK_ID"); err != nil {
		return err
	}
	base := strings.TrimRight(strings.TrimSpace(*jaeger), "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid --jaeger %q: want e.g. %s", *jaeger, defaultJaegerURL)
	}
	if *wait < 0 || *lookback <= 0 {
		return errors.New("--wait must be 0 or more, --lookback more than 0")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second+*wait)
	defer cancel()
	jc := &jaegerClient{base: base, hc: &http.Client{}}
	tr, err := jc.findWaiting(ctx, fs.Arg(0), *lookback, *wait)
	if err != nil {
		return err
	}
	printTrace(out, tr)
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
		if ctx.Err() != nil {
			return ctx.Err()
		}
		why := err.Error()
		if errors.Is(err, syscall.ECONNREFUSED) {
			why = "connection refused"
		}
		return &jaegerUnreachable{err: err, msg: fmt.Sprintf("cannot reach Jaeger at %s (%s): is it running? point --jaeger or %s at its query API (default %s)",
			j.base, why, jaegerEnv, defaultJaegerURL)}
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

// jaegerUnreachable is a request to Jaeger that got no answer; it says
// which URL was tried and how to change it.
type jaegerUnreachable struct {
	msg string
	err error
}

func (e *jaegerUnreachable) Error() string { return e.msg }
func (e *jaegerUnreachable) Unwrap() error { return e.err }

// traceNotFound says which trace was not found; it is errTraceNotFound.
type traceNotFound struct{ msg string }

func (e traceNotFound) Error() string        { return e.msg }
func (e traceNotFound) Is(target error) bool { return target == errTraceNotFound }

// findWaiting is find, asked again every traceRetryEvery while the trace
// is not found, for up to wait: spans reach Jaeger seconds after the call.
func (j *jaegerClient) findWaiting(ctx context.Context, id string, lookback, wait time.Duration) (*jaegerTrace, error) {
	deadline := time.Now().Add(wait)
	for attempt := 0; ; attempt++ {
		tr, err := j.find(ctx, id, lookback)
		if err == nil || !errors.Is(err, errTraceNotFound) {
			return tr, err
		}
		left := time.Until(deadline)
		if left <= 0 || attempt >= int(wait/traceRetryEvery)+1 {
			if wait > 0 {
				return nil, fmt.Errorf("%w (asked for %v; Jaeger may still be receiving the spans: try again, or raise --wait)", err, wait)
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(left, traceRetryEvery)):
		}
	}
}

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
	return nil, traceNotFound{fmt.Sprintf("no trace with id or task id %s in Jaeger at %s", id, j.base)}
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
