package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

// writeOldLayout writes, on nc, task id as a release before the log held
// the owner in its subjects kept it: its log on a2a.events.<id> in stream
// A2A_EVENTS, one event a message, the creation naming agent and owner in
// its headers.
func writeOldLayout(t *testing.T, nc *nats.Conn, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "A2A_EVENTS", Subjects: []string{"a2a.events.>"}})
	require.NoError(t, err)
	publish := func(ev a2a.StreamResponse, hdr nats.Header) {
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		_, err = js.PublishMsg(ctx, &nats.Msg{Subject: "a2a.events." + id, Data: data, Header: hdr})
		require.NoError(t, err)
	}
	publish(a2a.StreamResponse{Task: &a2a.Task{ID: id, ContextID: "ctx-" + id, Status: a2a.TaskStatus{State: a2a.StateSubmitted},
		History: []a2a.Message{{MessageID: "m-" + id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("hi")}}}}},
		nats.Header{"A2a-Agent": {"echo"}, "A2a-Owner": {"alice"}})
	publish(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: "ctx-" + id,
		Status: a2a.TaskStatus{State: a2a.StateCompleted}}}, nats.Header{})
}

// requireMoved checks task id reads from the new layout as it stood.
func requireMoved(t *testing.T, nc *nats.Conn, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Open(ctx, nc, bus.Config{})
	require.NoError(t, err)
	s, err := taskstore.Open(ctx, b)
	require.NoError(t, err, "the new release starts once migrate ran")
	rec, err := s.LoadTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, a2a.StateCompleted, rec.Task.Status.State)
	assert.Equal(t, "echo", rec.Agent)
	assert.Equal(t, "alice", rec.Owner)
	assert.Equal(t, "ctx-"+id, rec.Task.ContextID)
	require.Len(t, rec.Task.History, 1)
	assert.Equal(t, "m-"+id, rec.Task.History[0].MessageID)
}

// TestMigrateCommand: an edge or worker on a NATS holding the earlier
// layout stops at once, naming migrate; migrate moves the tasks and says
// how many; the new release then opens the store and reads them; a second
// run finds nothing to do.
func TestMigrateCommand(t *testing.T) {
	nd := natstest.StartSingle(t)
	nc, err := nats.Connect(nd.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	writeOldLayout(t, nc, "old-1")

	// Refused at start, not waited on.
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nf := addNATSFlags(fs)
	require.NoError(t, fs.Parse([]string{"--nats", nd.URL()}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t0 := time.Now()
	_, _, err = nf.openBus(ctx, "a2amesh-test", nil, nil)
	require.ErrorIs(t, err, taskstore.ErrOldLayout)
	assert.Contains(t, err.Error(), "a2amesh migrate")
	assert.Contains(t, err.Error(), "docs/deployment.md#upgrading")
	assert.Less(t, time.Since(t0), 5*time.Second, "the refusal ends the start-up: no retry helps")

	var out bytes.Buffer
	migrateOut = &out
	t.Cleanup(func() { migrateOut = os.Stdout })
	require.NoError(t, runMigrate(ctx, []string{"--nats", nd.URL()}))
	assert.Contains(t, out.String(), "1 tasks moved, 0 already moved, 0 unreadable")
	requireMoved(t, nc, "old-1")

	out.Reset()
	require.NoError(t, runMigrate(ctx, []string{"--nats", nd.URL()}))
	assert.Contains(t, out.String(), "nothing to migrate")
	requireMoved(t, nc, "old-1")
}

// TestMigrateDevData: --data migrates the embedded NATS of an a2amesh dev
// kept in that directory, and refuses a directory holding none.
func TestMigrateDevData(t *testing.T) {
	dir := t.TempDir()
	jsDir := filepath.Join(dir, "jetstream") // as mesh.Start keeps it
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: jsDir, DontListen: true})
	require.NoError(t, err)
	nc, err := srv.Connect("old-dev")
	require.NoError(t, err)
	writeOldLayout(t, nc, "old-dev-1")
	nc.Close()
	srv.Shutdown()

	var out bytes.Buffer
	migrateOut = &out
	t.Cleanup(func() { migrateOut = os.Stdout })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, runMigrate(ctx, []string{"--data", dir}))
	assert.Contains(t, out.String(), "1 tasks moved")

	srv, err = natsnode.StartServer(natsnode.ServerConfig{DataDir: jsDir, DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err = srv.Connect("new-dev")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	requireMoved(t, nc, "old-dev-1")

	require.ErrorContains(t, runMigrate(ctx, []string{"--data", filepath.Join(dir, "none")}), "no a2amesh dev data")
}
