package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/a2agoecho"
)

func TestBodyShapes(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   string
	}{
		{MethodSend03, `{"jsonrpc":"2.0","method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi \"there\""}]}},"id":7}`},
		{MethodSend10, `{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"hi \"there\""}]}},"id":7}`},
	} {
		got := string(Body(tc.method, `hi "there"`, "m-1", 7))
		if got != tc.want {
			t.Errorf("%s body:\n got %s\nwant %s", tc.method, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s body is not valid JSON", tc.method)
		}
	}
}

func TestCheckReply(t *testing.T) {
	ok03 := `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"hello"}]}]}}`
	ok10 := `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"hello"}]}]}}}`
	for _, tc := range []struct {
		name, method, body string
		ok                 bool
	}{
		{"0.3 ok", MethodSend03, ok03, true},
		{"1.0 ok", MethodSend10, ok10, true},
		{"0.3 body for 1.0", MethodSend10, ok03, false},
		{"1.0 body for 0.3", MethodSend03, ok10, false},
		{"working", MethodSend03, strings.Replace(ok03, `"completed"`, `"working"`, 1), false},
		{"wrong text", MethodSend03, strings.Replace(ok03, `"text":"hello"`, `"text":"bye"`, 1), false},
		{"no artifacts", MethodSend03, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","status":{"state":"completed"}}}`, false},
		{"message", MethodSend03, `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hello"}]}}`, false},
		{"rpc error", MethodSend03, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`, false},
		{"not json", MethodSend03, `<html>`, false},
	} {
		err := CheckReply(tc.method, "hello", []byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckReply error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestPercentiles(t *testing.T) {
	lat := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	p50, p99, mean := percentiles(lat)
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50 %v p99 %v, want 50ms 99ms", p50, p99)
	}
	if mean != 50500*time.Microsecond {
		t.Fatalf("mean %v, want 50.5ms", mean)
	}
	if a, b, c := percentiles(nil); a != 0 || b != 0 || c != 0 {
		t.Fatal("empty percentiles not zero")
	}
	if a, b, _ := percentiles([]time.Duration{3}); a != 3 || b != 3 {
		t.Fatal("single-sample percentiles wrong")
	}
}

func TestOptionsValidation(t *testing.T) {
	ctx := context.Background()
	for _, o := range []Options{
		{},
		{URL: "http://127.0.0.1:1", Method: "tasks/get"},
		{URL: "http://127.0.0.1:1", Concurrency: MaxConcurrency + 1},
		{URL: "http://127.0.0.1:1", Duration: MaxDuration + time.Second},
	} {
		if _, err := Run(ctx, o); err == nil {
			t.Errorf("Run(%+v) accepted bad options", o)
		}
	}
}

// TestRunCountsErrorsAndBounds runs against a fake server that fails every
// other request and checks the counts add up and MaxRequests is honoured.
func TestRunCountsErrorsAndBounds(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Message struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"message"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Params.Message.Parts) != 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if n.Add(1)%2 == 0 {
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32603,"message":"nope"}}`))
			return
		}
		text, _ := json.Marshal(req.Params.Message.Parts[0].Text)
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":` + string(text) + `}]}]}}`))
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, Options{URL: srv.URL, Concurrency: 4, Duration: 5 * time.Second, MaxRequests: 200})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks+res.Errors != 200 || n.Load() != 200 {
		t.Fatalf("tasks %d + errors %d, server saw %d; want 200 in all", res.Tasks, res.Errors, n.Load())
	}
	if res.Tasks != 100 || res.Errors != 100 {
		t.Fatalf("tasks %d errors %d, want 100/100", res.Tasks, res.Errors)
	}
	if res.ErrorSamples["JSON-RPC error -32603: nope"] != 100 {
		t.Fatalf("error samples %v", res.ErrorSamples)
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Throughput <= 0 {
		t.Fatalf("implausible figures %+v", res)
	}
}

func TestA2AGoEchoServesBothVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url, stop, err := a2agoecho.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// The card carries both the 1.0 and the 0.3 fields.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/.well-known/agent-card.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cardJSON, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var card struct {
		ProtocolVersion     string `json:"protocolVersion"`
		URL                 string `json:"url"`
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(cardJSON, &card); err != nil || card.URL != url || len(card.SupportedInterfaces) != 2 {
		t.Fatalf("card %s (err %v)", cardJSON, err)
	}

	for _, method := range []string{MethodSend03, MethodSend10} {
		ep := A2AGoEndpoint(url, method)
		body := Body(method, "hello", "11111111-2222-3333-4444-555555555555", 1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := CheckReply(method, "hello", reply); err != nil {
			t.Fatalf("%s: %v\nreply: %s", method, err, reply)
		}

		res, err := Run(ctx, Options{URL: ep, Method: method, Concurrency: 8, Duration: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Errors != 0 || res.Tasks == 0 {
			t.Fatalf("%s: %v; errors: %v", method, res, res.ErrorSummary())
		}
		t.Logf("%s against a2a-go: %v", method, res)
	}

	// The 0.3 endpoint refuses the 1.0 method and vice versa, so a
	// mismatched endpoint shows up as errors, not as silent success.
	res, err := Run(ctx, Options{URL: url, Method: MethodSend10, Concurrency: 1, Duration: 100 * time.Millisecond, MaxRequests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 0 || res.Errors == 0 {
		t.Fatalf("1.0 method on the 0.3 endpoint: %v", res)
	}
}

func TestA2AGoEchoStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err := a2agoecho.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	stop() // waits for shutdown; a second stop is a no-op
	stop()
	c := &http.Client{Timeout: 2 * time.Second}
	if resp, err := c.Get(url + "/.well-known/agent-card.json"); err == nil {
		resp.Body.Close()
		t.Fatal("server still answering after stop")
	}
}

// BenchmarkA2AGoEcho measures the a2a-go SDK echo server alone: one
// message/send round trip per op, spread over GOMAXPROCS×parallelism
// goroutines (-cpu and b.SetParallelism tune it).
func BenchmarkA2AGoEcho(b *testing.B) {
	for _, method := range []string{MethodSend03, MethodSend10} {
		b.Run(method, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			url, stop, err := a2agoecho.Start(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			o := Options{URL: A2AGoEndpoint(url, method), Method: method}
			if err := o.normalize(); err != nil {
				b.Fatal(err)
			}
			client := NewClient(256)
			defer client.CloseIdleConnections()
			var workers atomic.Int64
			var failures atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				s := newRPCSender(client, o, int(workers.Add(1)))
				for pb.Next() {
					if err := s.send(ctx); err != nil {
						if failures.Add(1) == 1 {
							b.Error(err)
						}
					}
				}
			})
			b.StopTimer()
			if f := failures.Load(); f > 0 {
				b.Fatalf("%d requests failed", f)
			}
		})
	}
}

// The generator loads a2a-go's server over HTTP+JSON and gRPC too, each
// reply checked; a server that answers something else (the binding's
// errors, a reply of another shape) is counted as errors, not tasks.
func TestRunBindings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, tc := range []struct{ binding, goBinding string }{
		{BindingREST, "HTTP+JSON"},
		{BindingGRPC, "GRPC"},
	} {
		t.Run(tc.binding, func(t *testing.T) {
			srv, err := a2agoecho.StartBinding(ctx, a2agoecho.Options{Binding: tc.goBinding})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			res, err := Run(ctx, Options{URL: srv.Endpoint, Binding: tc.binding, Concurrency: 4, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if res.Errors != 0 || res.Tasks == 0 {
				t.Fatalf("%v; errors: %v", res, res.ErrorSummary())
			}
		})
	}
	// A REST load at a JSON-RPC endpoint is all errors.
	url, stop, err := a2agoecho.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	res, err := Run(ctx, Options{URL: url, Binding: BindingREST, Concurrency: 1, Duration: 100 * time.Millisecond, MaxRequests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 0 || res.Errors == 0 {
		t.Fatalf("REST at a JSON-RPC server: %v", res)
	}
	// A gRPC load at an HTTP/1 server is all errors too.
	res, err = Run(ctx, Options{URL: strings.TrimPrefix(url, "http://"), Binding: BindingGRPC, Concurrency: 1,
		Duration: 100 * time.Millisecond, MaxRequests: 3, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 0 || res.Errors == 0 {
		t.Fatalf("gRPC at an HTTP/1 server: %v", res)
	}
	if _, err := Run(ctx, Options{URL: url, Binding: "soap"}); err == nil {
		t.Fatal("an unknown binding is refused")
	}
	if _, err := Run(ctx, Options{URL: url, Binding: BindingGRPC, Method: MethodSend03}); err == nil {
		t.Fatal("gRPC with the 0.3 method is refused")
	}
}
