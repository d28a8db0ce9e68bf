package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// keyCheck is a slog handler that records every record's message and
// reports any record carrying a key twice (from the logger's With and the
// call, or twice in either).
type keyCheck struct {
	mu     *sync.Mutex
	msgs   *[]string
	dups   *[]string
	prefix string
	keys   []string // keys the logger carries (With), group-qualified
}

func newKeyCheck() keyCheck {
	return keyCheck{mu: &sync.Mutex{}, msgs: &[]string{}, dups: &[]string{}}
}

func (h keyCheck) Enabled(context.Context, slog.Level) bool { return true }

func (h keyCheck) Handle(_ context.Context, r slog.Record) error {
	seen := map[string]bool{}
	var dup []string
	for _, k := range h.keys {
		if seen[k] {
			dup = append(dup, k)
		}
		seen[k] = true
	}
	r.Attrs(func(a slog.Attr) bool {
		k := h.prefix + a.Key
		if seen[k] {
			dup = append(dup, k)
		}
		seen[k] = true
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.msgs = append(*h.msgs, r.Message)
	if len(dup) > 0 {
		*h.dups = append(*h.dups, fmt.Sprintf("%q repeats %v", r.Message, dup))
	}
	return nil
}

func (h keyCheck) WithAttrs(as []slog.Attr) slog.Handler {
	keys := append([]string(nil), h.keys...)
	for _, a := range as {
		keys = append(keys, h.prefix+a.Key)
	}
	h.keys = keys
	return h
}

func (h keyCheck) WithGroup(name string) slog.Handler {
	h.prefix += name + "."
	return h
}

func (h keyCheck) seen(msg string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range *h.msgs {
		if strings.HasPrefix(m, msg) {
			return true
		}
	}
	return false
}

func (h keyCheck) repeated() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), *h.dups...)
}

func TestKeyCheckCatchesRepeats(t *testing.T) {
	h := newKeyCheck()
	log := slog.New(h).With("agent", "echo")
	log.Info("fine", "err", "x")
	log.WithGroup("g").Info("fine too", "agent", "other")
	require.Empty(t, h.repeated())
	log.Info("bad", "agent", "echo")
	require.Len(t, h.repeated(), 1)
}

// A worker's log lines name its agent and instance once, the registry
// heartbeat's warning included (the worker's logger carries them; Publish
// must not add them again).
func TestWorkerLogFieldsOnce(t *testing.T) {
	nd := natstest.StartSingle(t)
	nc := natstest.Connect(t, "worker", nd.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{RegistryTTL: 900 * time.Millisecond}) // a heartbeat every 300ms
	require.NoError(t, err)

	h := newKeyCheck()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	w := &agentrt.Worker{Store: b, Agent: agents.Builtin()["echo"], Name: "echo", Logger: slog.New(h)}
	go func() { done <- w.Run(wctx) }()
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return h.seen("worker started") }))

	// Take the registry bucket away: the next heartbeats fail, and say so.
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, "KV_"+bus.BucketRegistry))
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool { return h.seen("registry heartbeat failed") }),
		"a heartbeat failed")
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the worker did not stop")
	}
	require.Empty(t, h.repeated(), "log records with a key twice")
}

// A worker's /metrics carries the worker's series and its consumer's, not
// the edge's (requests, SSE streams, push deliveries).
func TestWorkerMetricsAreWorkers(t *testing.T) {
	nd := natstest.StartSingle(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freeLoopback(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runWorker(ctx, []string{"--agent", "echo", "--nats", nd.URL(), "--metrics-listen", addr, "--log-level", "error"})
	}()
	var body string
	client := &http.Client{Timeout: 2 * time.Second}
	ok := natstest.Eventually(ctx, 20*time.Second, func() bool {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		// The consumer's statistics appear once the worker made it.
		return resp.StatusCode == http.StatusOK && strings.Contains(body, `a2amesh_consumer_pending{consumer="`)
	})
	require.True(t, ok, "worker metrics served; last scrape:\n%s", body)
	require.Contains(t, body, "go_goroutines")
	var edgeSeries []string
	for _, line := range strings.Split(body, "\n") {
		for _, edgeOnly := range []string{"a2amesh_edge_", "a2amesh_push_", "a2amesh_registry_agents"} {
			if strings.HasPrefix(line, edgeOnly) {
				edgeSeries = append(edgeSeries, line)
			}
		}
	}
	require.Empty(t, edgeSeries, "a worker's metrics carry no edge series")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the worker did not stop")
	}
}
