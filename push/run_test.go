package push_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/taskstore"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// warmBus is testBus after one Deliverer ran on it and stopped: the
// server has the bucket, streams and consumers, so the goroutines it runs
// for them are there before a test takes its goroutine snapshot.
func warmBus(t *testing.T) *taskstore.Store {
	t.Helper()
	b := testBus(t)
	d, err := push.New(b, push.Config{Logger: quiet()})
	require.NoError(t, err)
	stop := run(t, d)
	<-d.Ready()
	require.NoError(t, stop())
	return b
}

// testBus opens a bus on a fresh single NATS node.
func testBus(t *testing.T) *taskstore.Store {
	t.Helper()
	nd := natstest.StartSingle(t)
	nc := natstest.Connect(t, "push-test", nd.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bustest.OpenStoreOn(ctx, nc, bus.Config{})
	require.NoError(t, err)
	return b
}

// run starts d.Run and returns a func that stops it and returns Run's
// error.
func run(t *testing.T, d *push.Deliverer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-ran:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30s of its context ending")
			return nil
		}
	}
}

// Run serves until its context ends, then returns nil with every
// goroutine it started gone; before and after, the store and key set are
// not offered. A second Run is refused.
func TestRunReturnsWithItsGoroutinesGone(t *testing.T) {
	b := warmBus(t)
	leaks := goleak.IgnoreCurrent()
	d, err := push.New(b, push.Config{Logger: quiet()})
	require.NoError(t, err)
	require.Equal(t, push.Idle, d.State())
	require.Nil(t, d.Store())
	stop := run(t, d)
	select {
	case <-d.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("not running within 30s")
	}
	require.Equal(t, push.Running, d.State())
	require.NotNil(t, d.Store())
	set, ok := d.JWKS()
	require.True(t, ok)
	require.Len(t, set.Keys, 1)
	require.Error(t, d.Run(context.Background()), "a second Run")

	require.NoError(t, stop())
	require.Equal(t, push.Stopped, d.State())
	require.Nil(t, d.Store())
	_, ok = d.JWKS()
	require.False(t, ok)
	goleak.VerifyNone(t, leaks)
}

// Run stopped while it starts returns nil too, its goroutines gone.
func TestRunStoppedWhileStarting(t *testing.T) {
	b := warmBus(t)
	leaks := goleak.IgnoreCurrent()
	d, err := push.New(b, push.Config{Logger: quiet()})
	require.NoError(t, err)
	stop := run(t, d)
	require.NoError(t, stop())
	require.Equal(t, push.Stopped, d.State())
	goleak.VerifyNone(t, leaks)
}

// New refuses a bad allow-list or key file, as Check does.
func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []push.Config{
		{Enabled: true, Trusted: []string{"not a host:port:x"}},
		{Enabled: true, SigningKeyFile: "/nonexistent/key.pem"},
	} {
		require.Error(t, c.Check(), "%+v", c)
		_, err := push.New(nil, c)
		require.Error(t, err, "%+v", c)
	}
}

// The component on its own (no edge): a config stored through Store gets
// the task's next event, signed with a key of JWKS.
func TestDeliversWithoutAnEdge(t *testing.T) {
	b := testBus(t)
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- body
	}))
	defer rcv.Close()
	d, err := push.New(b, push.Config{Logger: quiet(), Trusted: []string{strings.TrimPrefix(rcv.URL, "http://")}, Issuer: "https://edge.example"})
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	<-d.Ready()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := uuid.NewString()
	rec, err := b.CreateTask(ctx, &taskstore.TaskRecord{Agent: "echo", Owner: "alice",
		Task: a2a.Task{ID: id, ContextID: uuid.NewString(), Status: a2a.TaskStatus{State: a2a.StateSubmitted}}})
	require.NoError(t, err)
	s := d.Store()
	cfg := a2a.TaskPushNotificationConfig{URL: rcv.URL + "/hook", Token: "tok"}
	require.NoError(t, s.Validate(&cfg))
	pr, err := s.Save(ctx, rec, cfg, a2a.V10)
	require.NoError(t, err)
	require.Equal(t, "alice", pr.Owner)
	require.NotEmpty(t, pr.Config.ID)
	_, err = b.SetStatus(ctx, id, nil, a2a.StateWorking, "")
	require.NoError(t, err)

	select {
	case r := <-got:
		body := <-bodies
		require.Equal(t, "tok", r.Header.Get("X-A2A-Notification-Token"))
		set, _ := d.JWKS()
		claims, err := pushsig.Verify(r.Header.Get("X-A2A-Notification-Signature"), set, time.Now())
		require.NoError(t, err)
		require.Equal(t, "https://edge.example", claims.Issuer)
		var ev a2a.StreamResponse
		require.NoError(t, json.Unmarshal(body, &ev))
		require.NotNil(t, ev.StatusUpdate)
		require.Equal(t, a2a.StateWorking, ev.StatusUpdate.Status.State)
	case <-ctx.Done():
		t.Fatal("no notification within 30s")
	}
}
