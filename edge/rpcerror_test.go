package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// A bus error that is JetStream being briefly unavailable reaches a client
// as -32000 (retry), never as -32603.
func TestRPCErrorOfTransientBusErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("bus: get task: %w", nats.ErrTimeout), a2a.CodeServerBusy},
		{fmt.Errorf("stream: read events: %w", context.DeadlineExceeded), a2a.CodeServerBusy},
		{fmt.Errorf("bus: read log: %w", jetstream.ErrNoStreamResponse), a2a.CodeServerBusy},
		{fmt.Errorf("x: %w", nats.ErrNoResponders), a2a.CodeServerBusy},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, a2a.CodeServerBusy},
		{bus.ErrUnavailable, a2a.CodeServerBusy},
		{errors.New("bus: decode task: bad json"), a2a.CodeInternalError},
		{a2a.ErrTaskNotFound, a2a.CodeTaskNotFound},
	} {
		if got := rpcError(c.err).Code; got != c.code {
			t.Errorf("%v: code %d, want %d", c.err, got, c.code)
		}
	}
}

// Before the bus is open the gate answers every JSON-RPC call with -32000
// in the call's shape (an SSE event for a streaming method) and /healthz
// with 503 naming NATS; once open, it is the edge.
func TestGateBeforeTheBusOpens(t *testing.T) {
	g := NewGate()
	srv := httptest.NewServer(g)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"NATS"`) {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}
	if resp, err := http.Get(srv.URL + "/livez"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("livez: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	post := func(method string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/a2a",
			strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{}}`))
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body2 := post("SendMessage")
	var r a2a.Response
	if err := json.Unmarshal([]byte(body2), &r); err != nil || r.Error == nil || r.Error.Code != a2a.CodeServerBusy || string(r.ID) != "7" {
		t.Fatalf("send: %d %s", resp.StatusCode, body2)
	}
	resp, body2 = post("SendStreamingMessage")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || !strings.Contains(body2, "-32000") {
		t.Fatalf("stream: %s %s", ct, body2)
	}
}
