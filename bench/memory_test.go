package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/internal/testbin"
)

// bench memory sends tasks past --max-tasks through nats, edge and worker
// processes and measures each level: every level is reported, the mesh
// never holds more task logs than --max-tasks, every
// process is measured (after a forced GC, through --pprof-listen) and its
// heap profile written.
func TestBenchMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	bin := testbin.Build(t, "./cmd/a2amesh", false)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profiles := t.TempDir()
	var measured []int64
	res, err := RunMemory(ctx, MemoryOptions{
		Levels: []int64{100, 200}, MaxTasks: 50, Clients: 4, Bin: bin, TempDir: t.TempDir(),
		Idle: 200 * time.Millisecond, Settle: 10 * time.Second, HeapProfileDir: profiles,
		Measured: func(l MemoryLevel) { measured = append(measured, l.Sent) },
	})
	require.NoError(t, err)
	require.Equal(t, []int64{0, 100, 200}, measured)
	require.Len(t, res.Levels, 3)
	for _, l := range res.Levels {
		require.Zero(t, l.Fill.Errors, "at %d: %v", l.Sent, l.Fill.ErrorSummary())
		require.EqualValues(t, l.Sent, l.Tasks)
		// Retention held: the log's own bound (one subject per task,
		// which the listing reads too: there is no index), and the
		// trimmer's low water once the load stops.
		require.LessOrEqual(t, l.Retained, uint64(50), "at %d", l.Sent)
		require.LessOrEqual(t, l.Stream("A2A_LOG").Subjects, 50, "at %d", l.Sent)
		require.Positive(t, l.DataDir)
		require.Len(t, l.Procs, 3)
		for _, p := range l.Procs {
			require.Positive(t, p.Idle, "%s at %d", p.Role, l.Sent)
			require.Positive(t, p.GC, "%s at %d: no RSS after GC", p.Role, l.Sent)
			require.Positive(t, p.HeapAlloc, "%s at %d: no heap figures", p.Role, l.Sent)
			require.GreaterOrEqual(t, p.HWM, p.Idle)
		}
		require.Len(t, l.Profiles, 3)
		for _, f := range l.Profiles {
			st, err := os.Stat(f)
			require.NoError(t, err)
			require.Positive(t, st.Size())
			require.Equal(t, profiles, filepath.Dir(f))
		}
	}
	top := res.Levels[2]
	require.Positive(t, top.Retained, "tasks are retained")
	require.LessOrEqual(t, top.Retained, uint64(45), "the trimmer brought the tasks to 90%% of --max-tasks")
	require.GreaterOrEqual(t, top.Stream("A2A_LOG").LastSeq, uint64(2*200), "every task logged its events")

	var out bytes.Buffer
	PrintMemory(&out, res, time.Second)
	for _, want := range []string{"| 200 | nats |", "| 200 | edge |", "| 200 | worker |", "memory per retained task", "A2A_LOG", "A2A_WORK", "KV_A2A_PUSH"} {
		require.Contains(t, out.String(), want)
	}
}
