package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A KV reads, writes and deletes; its Watcher replays, marks the end of the
// replay with nil, follows changes, and leaves nothing running once
// stopped, even while nobody reads its updates.
func TestKVAndWatcher(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv := b.Registry()
	_, err := kv.Get(ctx, "a.one")
	require.ErrorIs(t, err, ErrKeyNotFound)
	_, err = kv.Put(ctx, "a.one", []byte("1"))
	require.NoError(t, err)
	v, err := kv.Get(ctx, "a.one")
	require.NoError(t, err)
	require.Equal(t, "1", string(v))

	leaks := goleak.IgnoreCurrent()
	w, err := kv.Watch(ctx, "a.*", false)
	require.NoError(t, err)
	next := func() *Entry {
		t.Helper()
		select {
		case e, ok := <-w.Updates():
			require.True(t, ok, "updates closed")
			return e
		case <-ctx.Done():
			t.Fatal("no update")
			return nil
		}
	}
	e := next()
	require.Equal(t, "a.one", e.Key)
	require.Equal(t, "1", string(e.Value))
	require.False(t, e.Deleted)
	require.NotZero(t, e.Revision)
	require.Nil(t, next(), "the replay ends with nil")
	require.NoError(t, kv.Delete(ctx, "a.one"))
	e = next()
	require.Equal(t, "a.one", e.Key)
	require.True(t, e.Deleted)
	_, err = kv.Put(ctx, "a.two", []byte("2")) // left unread
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, w.Stop())
	require.NoError(t, w.Stop(), "Stop twice")
	_, open := <-w.Updates()
	require.False(t, open, "updates close with Stop")
	goleak.VerifyNone(t, leaks)
}

// A work consumer fetches a message with its delivery info; a nak brings
// it back as a second delivery, an ack settles it.
func TestWorkConsumerFetch(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, b.Enqueue(ctx, "echo", "t1", []byte(`{"taskId":"t1"}`), WorkMsgID("t1", "m1"), nil))
	cons, err := b.WorkConsumer(ctx, "echo")
	require.NoError(t, err)
	fetch := func() *Msg {
		t.Helper()
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		defer fcancel()
		msgs, err := cons.Fetch(fctx, 1)
		require.NoError(t, err)
		var got []*Msg
		for m := range msgs {
			got = append(got, m)
		}
		require.Len(t, got, 1)
		return got[0]
	}
	m := fetch()
	require.Equal(t, WorkSubject("echo", "t1"), m.Subject())
	require.Equal(t, WorkMsgID("t1", "m1"), m.MsgID())
	info, err := m.Info()
	require.NoError(t, err)
	require.EqualValues(t, 1, info.NumDelivered)
	require.NotZero(t, info.Seq)
	require.NoError(t, m.Nak())
	m = fetch()
	info2, err := m.Info()
	require.NoError(t, err)
	require.EqualValues(t, 2, info2.NumDelivered)
	require.Equal(t, info.Seq, info2.Seq)
	require.NoError(t, m.AckSync(ctx))
	held, err := b.WorkHeld(ctx, info.Seq)
	require.NoError(t, err)
	require.False(t, held, "acked work leaves the queue")

	stats := b.ConsumerStats(ctx, StreamWork, ConsumerName("echo"), "nobody")
	require.Len(t, stats, 1, "a missing consumer is left out")
	require.Equal(t, ConsumerName("echo"), stats[0].Consumer)
	require.Zero(t, stats[0].Pending)
}

// Request reaches a responder; with none it fails with ErrNoResponders.
func TestRequestRespond(t *testing.T) {
	b := openTestBus(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := b.Request(ctx, "test.ping")
	require.True(t, errors.Is(err, ErrNoResponders), "%v", err)
	stop, err := b.Respond("test.ping", "q", []byte("pong"))
	require.NoError(t, err)
	got, err := b.Request(ctx, "test.ping")
	require.NoError(t, err)
	require.Equal(t, "pong", string(got))
	stop()
	require.NoError(t, b.Flush(ctx))
	require.True(t, b.Connected())
}
