package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
)

// An edge started while JetStream has no quorum (2 nodes of 3 down) does
// not exit: it listens at once and answers /healthz 503 saying what it
// waits for, and becomes ready (registry loaded, push delivery running)
// once a node is back.
func TestEdgeStartsWithoutQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster: skipped with -short")
	}
	c := natstest.StartCluster(t, 3)
	// The layout exists, as on a cluster that has run before.
	nc := natstest.Connect(t, "setup", c.Nodes[0].URL())
	require.True(t, natstest.Eventually(context.Background(), 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := bustest.OpenStoreOn(ctx, nc, bus.Config{Replicas: 3})
		return err == nil
	}), "layout created")
	c.Nodes[1].Stop()
	c.Nodes[2].Stop()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runEdge(ctx, []string{"--nats", c.Nodes[0].URL(), "--replicas", "3", "--listen", addr,
			"--log-level", "error", "--metrics=false", "--push=true"})
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	health := func() (int, string) {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// It answers at once (it does not wait for NATS to listen), not
	// ready, for a while, and keeps running.
	require.True(t, natstest.Eventually(ctx, 3*time.Second, func() bool { code, _ := health(); return code != 0 }),
		"the edge answers /healthz while it waits for NATS")
	until := time.Now().Add(8 * time.Second)
	for time.Now().Before(until) {
		select {
		case err := <-done:
			t.Fatalf("the edge exited while JetStream had no quorum: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		code, body := health()
		require.Equal(t, http.StatusServiceUnavailable, code, body)
		require.Contains(t, body, "waiting_for")
	}

	c.Nodes[1].Start(t)
	var last string
	ready := natstest.Eventually(ctx, 120*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the edge exited: %v", err)
		default:
		}
		code, body := health()
		last = body
		return code == http.StatusOK
	})
	require.True(t, ready, "ready once quorum is back; last /healthz: %s", last)
	resp, err := http.Get("http://" + addr + "/.well-known/agent-card.json")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.True(t, strings.Contains(string(body), `"pushNotifications":true`), "push advertised: %s", body)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the edge did not stop")
	}
}
