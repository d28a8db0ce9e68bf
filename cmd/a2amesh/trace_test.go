package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
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

// A Jaeger that has not received the trace yet: it answers as fakeJaeger
// only after notYet trace requests (by id, or a search) came back empty.
func lateJaeger(t *testing.T, notYet int) (*httptest.Server, *atomic.Int32) {
	full := fakeJaeger(t)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/traces") && int(asked.Add(1)) <= notYet {
			if r.URL.Path == "/api/traces" {
				_, _ = w.Write([]byte(`{"data":[]}`))
				return
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`))
			return
		}
		resp, err := http.Get(full.URL + r.URL.RequestURI())
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func TestTraceWaitsForLateSpans(t *testing.T) {
	for _, id := range []string{"4bf92f3577b34da6a3ce929d0e0e4736", "task-1"} {
		// A trace id is asked for directly and then searched for (2
		// requests per round): 4 empty answers is two rounds.
		srv, asked := lateJaeger(t, 4)
		var out bytes.Buffer
		start := time.Now()
		err := traceCmd(context.Background(), []string{"--jaeger", srv.URL, id}, &out)
		require.NoError(t, err, id)
		assert.Contains(t, out.String(), "trace 4bf92f3577b34da6a3ce929d0e0e4736: 4 spans", id)
		assert.Greater(t, int(asked.Load()), 4, id)
		assert.Less(t, time.Since(start), traceWait, id)
	}

	// Still missing after --wait: not found, saying how long it asked.
	srv, asked := lateJaeger(t, 1000)
	start := time.Now()
	err := traceCmd(context.Background(), []string{"--jaeger", srv.URL, "--wait", "600ms", "task-1"}, io.Discard)
	require.ErrorIs(t, err, errTraceNotFound)
	assert.ErrorContains(t, err, "no trace with id or task id task-1 in Jaeger at "+srv.URL)
	assert.ErrorContains(t, err, "asked for 600ms")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 600*time.Millisecond)
	assert.Less(t, took, 3*time.Second)
	assert.Greater(t, int(asked.Load()), 1)

	// --wait 0 asks once.
	srv, asked = lateJaeger(t, 1000)
	err = traceCmd(context.Background(), []string{"--jaeger", srv.URL, "--wait", "0", "task-1"}, io.Discard)
	require.ErrorIs(t, err, errTraceNotFound)
	assert.EqualValues(t, 1, asked.Load())
}

func TestTraceJaegerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	start := time.Now()
	err = traceCmd(context.Background(), []string{"--jaeger", closed, "task-1"}, io.Discard)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, "cannot reach Jaeger at "+closed+" (connection refused): is it running? point --jaeger or A2AMESH_JAEGER_URL at its query API (default http://127.0.0.1:16686)", err.Error())
	assert.Less(t, time.Since(start), 2*time.Second, "an unreachable Jaeger is not waited for")

	// The environment variable names it too.
	t.Setenv(jaegerEnv, closed+"/")
	err = traceCmd(context.Background(), []string{"4bf92f3577b34da6a3ce929d0e0e4736"}, io.Discard)
	assert.ErrorContains(t, err, "cannot reach Jaeger at "+closed+" ")

	for _, args := range [][]string{{}, {"a", "b"}, {"--jaeger", "localhost:16686", "x"}, {"--wait", "-1s", "x"}} {
		err := traceCmd(context.Background(), args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}
