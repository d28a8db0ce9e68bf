package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/bustest"
)

// Entries recorded are published in batches and read back oldest first,
// with the filters; Record never blocks, and an entry that finds the queue
// full is dropped and counted.
func TestRecordAndRead(t *testing.T) {
	b := bustest.Open(t, bus.Config{})
	l := audit.New(b, time.Hour, nil)
	for i := 0; i < 300; i++ {
		agent := "echo"
		if i%3 == 0 {
			agent = "upper"
		}
		outcome := audit.OK
		if i%10 == 0 {
			outcome = audit.Denied
		}
		l.Record(audit.Entry{Principal: fmt.Sprintf("p%d", i%2), Binding: "jsonrpc", Method: "SendMessage", Agent: agent, Outcome: outcome})
	}
	l.Record(audit.Entry{Binding: "rest", Method: "POST /x", Outcome: audit.Unauthenticated + ": no valid credential"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx) }()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	var all []audit.Entry
	for i := 0; i < 200 && len(all) < 301; i++ {
		var err error
		all, _, err = audit.Read(rctx, b, audit.Filter{Limit: audit.MaxLimit}, nil)
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	require.Len(t, all, 301)
	assert.Equal(t, uint64(301), l.Written())
	s, err := b.JetStream().Stream(rctx, audit.Stream)
	require.NoError(t, err)
	info, err := s.Info(rctx)
	require.NoError(t, err)
	assert.Less(t, info.State.Msgs, uint64(20), "entries are batched: %d messages for 301 entries", info.State.Msgs)

	upper, _, err := audit.Read(rctx, b, audit.Filter{Agent: "upper", Limit: audit.MaxLimit}, nil)
	require.NoError(t, err)
	assert.Len(t, upper, 100)
	denied, more, err := audit.Read(rctx, b, audit.Filter{Outcome: audit.Denied, Principal: "p0", Limit: 10}, nil)
	require.NoError(t, err)
	assert.Len(t, denied, 10)
	assert.True(t, more, "30 denied entries of p0 match; 10 asked for")
	unauth, _, err := audit.Read(rctx, b, audit.Filter{Outcome: audit.Unauthenticated}, nil)
	require.NoError(t, err)
	require.Len(t, unauth, 1, "an outcome matches its word before a reason")
	future, _, err := audit.Read(rctx, b, audit.Filter{Since: time.Now().Add(time.Hour)}, nil)
	require.NoError(t, err)
	assert.Empty(t, future)

	cancel()
	<-done
	// Run has stopped: the queue fills, and what does not fit is dropped,
	// never waited for (a Record that waited would hang here).
	for i := 0; i < audit.QueueSize+10; i++ {
		l.Record(audit.Entry{Method: "SendMessage", Outcome: audit.OK})
	}
	assert.Equal(t, uint64(10), l.Dropped())
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	got, err := audit.ParseSince("90m", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(-90*time.Minute), got)
	got, err = audit.ParseSince("2026-11-28T10:00:00Z", now)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), got)
	got, err = audit.ParseSince("", now)
	require.NoError(t, err)
	assert.True(t, got.IsZero())
	_, err = audit.ParseSince("yesterday", now)
	require.Error(t, err)
}
