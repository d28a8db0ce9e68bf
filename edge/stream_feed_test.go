package edge

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Many streams of several tasks share the edge's one event feed. The NATS
// server restarting under them (the edge's connection drops and
// reconnects, the feed's consumer is gone, events are appended while it
// comes back) loses none of their events: the feed reads the log again
// after the last event it handed out, and every stream gets every event
// after its Last-Event-ID exactly once, in order, and ends soon after its
// task, without waiting for a stream's own probe of the log (5 s quiet).
func TestStreamsRideOutServerRestart(t *testing.T) {
	f := startSingleEdge(t, Config{})
	ctx := f.ctx
	const tasks, perTask = 3, 8
	writers := make([]*testWriter, tasks)
	for i := range writers {
		writers[i] = newTestWriter(t, f.worker, uuid.NewString())
		writers[i].append(ctx, 2)
	}
	results := make([][]sseResult, tasks)
	var wg sync.WaitGroup
	for i, w := range writers {
		results[i] = make([]sseResult, perTask)
		after := w.seqs[0]
		for j := range perTask {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i][j] = readStream(f.srv.URL, w.id, after, 90*time.Second)
			}()
		}
	}
	time.Sleep(time.Second) // the streams caught up and wait on the feed
	for _, w := range writers {
		w.append(ctx, 2)
	}
	time.Sleep(200 * time.Millisecond)

	node := f.c.Nodes[0]
	node.Stop()
	node.Start(t)
	for _, w := range writers {
		w.append(ctx, 3) // retried until the server answers
	}
	for _, w := range writers {
		w.complete(ctx)
	}
	completed := time.Now()
	wg.Wait()
	took := time.Since(completed)
	t.Logf("every stream ended %v after its task", took.Round(time.Millisecond))
	for i, w := range writers {
		for j, r := range results[i] {
			require.NoError(t, r.err, "task %d stream %d", i, j)
			require.Empty(t, r.errors, "task %d stream %d: no error frame", i, j)
			require.Equal(t, w.seqs[1:], r.ids, "task %d stream %d: every event after Last-Event-ID exactly once, in order", i, j)
		}
	}
	require.Less(t, took, 4*time.Second, "the feed read the log again at once")
}
