package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
