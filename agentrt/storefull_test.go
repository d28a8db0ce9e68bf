package agentrt_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// A worker that cannot record a task's step because the store is full
// tells whoever waits for the task (NoticeStoreFull): a blocking send then
// answers with the task as it stands at once instead of waiting out its
// bound. Without the notice the wait below lasts its whole 8 s bound.
func TestWorkerNoticesStoreFull(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true, MaxStore: 4 << 20, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("storefull-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := bustest.OpenStoreOn(ctx, nc, bus.Config{MaxQueueBytes: 1 << 20}) // a bound reserves its bytes
	require.NoError(t, err)

	// A send taken while there is room: created, its work queued, no
	// worker yet.
	lc := taskstore.NewLifecycle(store, taskstore.LifecycleConfig{})
	sub, err := lc.Submit(ctx, taskstore.Turn{Agent: "echo", Wait: true,
		Message: a2a.Message{MessageID: "m-full", Parts: []a2a.Part{a2a.TextPart("hello")}}})
	require.NoError(t, err)

	// Then the store fills up (bounded: 4 MiB in 256 KiB messages).
	js := store.Bus().JetStream()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("x", 256<<10))
	full := false
	for i := 0; i < 64 && !full; i++ {
		_, err := js.Publish(ctx, "fill", chunk)
		full = err != nil && taskstore.IsStorageFull(err)
		if err != nil && !full {
			require.NoError(t, err)
		}
	}
	require.True(t, full, "the store never filled")

	// The worker takes the work and cannot claim the task.
	startWorkerWith(t, &agentrt.Worker{Store: store, Agent: agents.Echo{}, Name: "echo", Concurrency: 1, Logger: quiet})
	start := time.Now()
	rec, err := lc.Await(ctx, sub, start.Add(8*time.Second))
	took := time.Since(start)
	var ue *taskstore.UnsettledError
	require.True(t, errors.As(err, &ue), "Await: %v", err)
	require.True(t, ue.StoreFull, "the wait ended for lack of storage")
	require.Less(t, took, 4*time.Second, "answered on the worker's notice, not at the bound")
	require.Equal(t, a2a.StateSubmitted, rec.Task.Status.State, "the task as it stands")
}
