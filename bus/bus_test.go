package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/natsnode"
)

func openTestBus(t testing.TB, cfg Config) *Bus {
	t.Helper()
	srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: t.TempDir(), DontListen: true})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("bus-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Open(ctx, nc, cfg)
	require.NoError(t, err)
	return b
}

func TestEnqueueRefusesWhenQueueFull(t *testing.T) {
	b := openTestBus(t, Config{MaxQueued: 2})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		require.NoError(t, b.Enqueue(ctx, "echo", fmt.Sprint("q", i), []byte("{}"), "", nil))
	}
	err := b.Enqueue(ctx, "echo", "q2", []byte("{}"), "", nil)
	assert.ErrorIs(t, err, ErrQueueFull)
}

func TestEnqueueDeduplicatesByMsgID(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx := context.Background()
	require.NoError(t, b.Enqueue(ctx, "echo", "d1", []byte(`{"taskId":"d1"}`), "same", nil))
	require.NoError(t, b.Enqueue(ctx, "echo", "d1", []byte(`{"taskId":"d1"}`), "same", nil))
	s, err := b.js.Stream(ctx, StreamWork)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, info.State.Msgs, "a retried enqueue within the window is dropped")
	var got struct {
		TaskID string `json:"taskId"`
	}
	m, err := s.GetMsg(ctx, info.State.FirstSeq)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(m.Data, &got))
	assert.Equal(t, "d1", got.TaskID)
}

func TestValidToken(t *testing.T) {
	for _, s := range []string{"echo", "a-b_C9", "550e8400-e29b-41d4-a716-446655440000"} {
		assert.True(t, ValidToken(s), s)
	}
	for _, s := range []string{"", "a.b", "a b", "a*", "a>", string(make([]byte, 129))} {
		assert.False(t, ValidToken(s), "%q", s)
	}
}
