package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ListResult is what ListLatency measured: the latency of ListTasks
// calls, and the totalSize and next page token the mesh reported.
type ListResult struct {
	Calls         int
	P50, P99      time.Duration
	Max           time.Duration
	TotalSize     int
	PageTasks     int
	NextPageToken string
	FirstError    string
}

// ListFirstPage is the ListTasks query ListLatency makes by default: the
// first page of 50, no history, no artifacts.
const ListFirstPage = `{"pageSize":50,"historyLength":0}`

// ListLatency calls 1.0 ListTasks (JSON-RPC) with params (a JSON object;
// "" for ListFirstPage) at url calls times, one after another, and
// measures each call. A call that fails ends the measurement with
// FirstError set.
func ListLatency(ctx context.Context, client *http.Client, url string, calls int, params string) (ListResult, error) {
	if calls < 1 || calls > 10_000 {
		return ListResult{}, fmt.Errorf("bench: %d list calls: want 1 to 10000", calls)
	}
	if params == "" {
		params = ListFirstPage
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":` + params + `}`)
	var (
		res   ListResult
		lat   []time.Duration
		reply bytes.Buffer
	)
	for i := 0; i < calls; i++ {
		t0 := time.Now()
		if err := post(ctx, client, url, 5*time.Minute, "application/json", "application/json", body, &reply); err != nil {
			res.FirstError = err.Error()
			break
		}
		d := time.Since(t0)
		var r struct {
			Result *struct {
				Tasks         []json.RawMessage `json:"tasks"`
				TotalSize     int               `json:"totalSize"`
				NextPageToken string            `json:"nextPageToken"`
			} `json:"result"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(reply.Bytes(), &r); err != nil || r.Result == nil {
			res.FirstError = fmt.Sprintf("not a ListTasks result: %.200s", reply.String())
			if r.Error != nil {
				res.FirstError = fmt.Sprintf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
			}
			break
		}
		res.TotalSize, res.PageTasks, res.NextPageToken = r.Result.TotalSize, len(r.Result.Tasks), r.Result.NextPageToken
		lat = append(lat, d)
	}
	res.Calls = len(lat)
	res.P50, res.P99, _ = percentiles(lat)
	for _, d := range lat {
		res.Max = max(res.Max, d)
	}
	return res, ctx.Err()
}

// ListOptions is one run of `a2amesh bench list`.
type ListOptions struct {
	// Endpoint is the echo agent's JSON-RPC endpoint of the mesh to fill.
	Endpoint string
	// Levels are the numbers of retained tasks to measure at, increasing.
	Levels []int
	// Calls is the ListTasks calls of each query at each level; Clients
	// the concurrent senders filling the mesh.
	Calls, Clients int
}

// RunList fills the mesh at o.Endpoint with echo tasks (blocking sends)
// up to each level and there times the ListTasks queries of listQueries,
// writing a row to w as soon as it is measured (a large level takes
// minutes).
func RunList(ctx context.Context, w io.Writer, o ListOptions) error {
	hc := NewClient(o.Clients)
	defer hc.CloseIdleConnections()

	fmt.Fprintf(w, "bench list: ListTasks (pageSize 50) on a dev mesh at %s, %d calls per level\n", o.Endpoint, o.Calls)
	const row = "%14v  %12v  %-16v  %10v  %10v  %10v  %6v  %10v\n"
	fmt.Fprintf(w, row, "retained tasks", "fill tasks/s", "query", "list p50", "p99", "max", "tasks", "totalSize")
	have := 0
	for _, level := range o.Levels {
		fill := Result{}
		if n := level - have; n > 0 {
			var err error
			fill, err = Run(ctx, Options{URL: o.Endpoint, Method: MethodSend10, Concurrency: o.Clients,
				Duration: MaxDuration, MaxRequests: int64(n), Client: hc})
			if err != nil {
				return err
			}
			if fill.Errors > 0 {
				return fmt.Errorf("filling to %d tasks: %d sends failed: %v", level, fill.Errors, fill.ErrorSummary())
			}
			have += int(fill.Tasks)
		}
		first, err := ListLatency(ctx, hc, o.Endpoint, 1, "")
		if err != nil {
			return err
		}
		if first.FirstError != "" {
			return fmt.Errorf("at %d tasks: ListTasks: %s", have, first.FirstError)
		}
		for _, q := range listQueries(first.NextPageToken) {
			res, err := ListLatency(ctx, hc, o.Endpoint, o.Calls, q.params)
			if err != nil {
				return err
			}
			if res.FirstError != "" {
				return fmt.Errorf("at %d tasks: ListTasks %s: %s", have, q.name, res.FirstError)
			}
			fmt.Fprintf(w, row, have, fmt.Sprintf("%.0f", fill.Throughput), q.name,
				fmtLatency(res.P50), fmtLatency(res.P99), fmtLatency(res.Max), res.PageTasks, res.TotalSize)
		}
	}
	return nil
}

type listQuery struct{ name, params string }

// listQueries are the ListTasks calls RunList times at each level: the
// first page; the page after it; a status every task has (completed); a
// status none has (working: the whole index is looked through); a
// context no task has (the server's subject filter answers).
func listQueries(next string) []listQuery {
	qs := []listQuery{{"first page", ListFirstPage}}
	if next != "" {
		qs = append(qs, listQuery{"second page", `{"pageSize":50,"historyLength":0,"pageToken":"` + next + `"}`})
	}
	return append(qs,
		listQuery{"status=completed", `{"pageSize":50,"historyLength":0,"status":"TASK_STATE_COMPLETED"}`},
		listQuery{"status=working", `{"pageSize":50,"historyLength":0,"status":"TASK_STATE_WORKING"}`},
		listQuery{"unknown context", `{"pageSize":50,"historyLength":0,"contextId":"no-such-context"}`})
}
