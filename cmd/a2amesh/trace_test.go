package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Jaeger query API answering for one three-service trace.
const fakeTrace = `{"data":[{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","spans":[
 {"spanID":"c1","operationName":"process a2a.work.echo","references":[{"refType":"CHILD_OF","spanID":"p1"}],"startTime":1000300,"duration":500,"processID":"w","tags":[{"key":"a2a.task.id","value":"task-1"}]},
 {"spanID":"r1","operationName":"SendMessage","references":[],"startTime":1000000,"duration":2000,"processID":"e","tags":[{"key":"rpc.method","value":"SendMessage"},{"key":"a2a.task.id","value":"task-1"}]},
 {"spanID":"p1","operationName":"publish a2a.work.echo","references":[{"refType":"CHILD_OF","spanID":"r1"}],"startTime":1000100,"duration":100,"processID":"e","tags":[]},
 {"spanID":"x1","operationName":"POST","references":[{"refType":"CHILD_OF","spanID":"c1"}],"startTime":1000600,"duration":50,"processID":"x","tags":[]}
],"processes":{"e":{"serviceName":"a2amesh-edge"},"w":{"serviceName":"a2amesh-worker-echo"},"x":{"serviceName":"a2amesh-push"}}}]}`

func fakeJaeger(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/traces/4bf92f3577b34da6a3ce929d0e0e4736":
			_, _ = w.Write([]byte(fakeTrace))
		case r.URL.Path == "/api/services":
			_, _ = w.Write([]byte(`{"data":["jaeger-all-in-one","a2amesh-edge"]}`))
		case r.URL.Path == "/api/traces" && r.URL.Query().Get("service") == "a2amesh-edge" &&
			strings.Contains(r.URL.Query().Get("tags"), `"task-1"`):
			_, _ = w.Write([]byte(fakeTrace))
		case r.URL.Path == "/api/traces":
			_, _ = w.Write([]byte(`{"data":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTraceTree(t *testing.T) {
	srv := fakeJaeger(t)
	jc := &jaegerClient{base: srv.URL, hc: srv.Client()}
	for _, id := range []string{"4bf92f3577b34da6a3ce929d0e0e4736", "task-1"} {
		tr, err := jc.find(context.Background(), id, time.Hour)
		require.NoError(t, err, id)
		var out bytes.Buffer
		printTrace(&out, tr)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, lines, 5, out.String())
		assert.Equal(t, "trace 4bf92f3577b34da6a3ce929d0e0e4736: 4 spans, 3 services", lines[0])
		assert.True(t, strings.HasPrefix(lines[1], "a2amesh-edge: SendMessage  +0s 2ms  [a2a.task.id=task-1 rpc.method=SendMessage]"), lines[1])
		assert.True(t, strings.HasPrefix(lines[2], "  a2amesh-edge: publish a2a.work.echo  +100µs"), lines[2])
		assert.True(t, strings.HasPrefix(lines[3], "    a2amesh-worker-echo: process a2a.work.echo"), lines[3])
		assert.True(t, strings.HasPrefix(lines[4], "      a2amesh-push: POST"), lines[4])
	}
	_, err := jc.find(context.Background(), "no-such-task", time.Hour)
	assert.ErrorContains(t, err, "no trace")
}
