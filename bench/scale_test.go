package bench

import (
	"context"
	"testing"
	"time"
)

// TestScaleSmall runs the scale benchmark on 1 and 2 workers for a second
// each, with more clients than slots, and checks that every task
// completed, that no worker ran more than its concurrency, and that the
// surplus waited in the queue.
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two meshes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const conc, clients = 3, 12
	rows, err := RunScale(ctx, ScaleOptions{
		Workers: []int{1, 2}, Concurrency: conc, Work: 50 * time.Millisecond, Clients: clients,
		Duration: time.Second, TempDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		t.Logf("%d workers: %v; ideal %.0f/s, efficiency %.0f%%, speedup %.2f, in flight %v (total %d), queued ≤ %d, acked-pending ≤ %d",
			r.Workers, r.Result, r.Ideal, 100*r.Efficiency, r.Speedup, r.MaxInFlight, r.MaxInFlightTotal, r.MaxQueued, r.MaxAckPending)
		if r.Result.Errors != 0 || r.Result.Tasks == 0 {
			t.Fatalf("%d workers: %v; errors: %v", r.Workers, r.Result, r.Result.ErrorSummary())
		}
		if len(r.MaxInFlight) != r.Workers {
			t.Fatalf("%d workers but %d in-flight counts", r.Workers, len(r.MaxInFlight))
		}
		for i, m := range r.MaxInFlight {
			if m < 1 || m > conc {
				t.Errorf("%d workers: worker %d ran up to %d tasks at once, want 1..%d", r.Workers, i, m, conc)
			}
		}
		if r.MaxInFlightTotal > int64(r.Workers*conc) {
			t.Errorf("%d workers: %d tasks at once in all, above %d slots", r.Workers, r.MaxInFlightTotal, r.Workers*conc)
		}
		// MaxAckPending (the server's count of unacknowledged deliveries)
		// may briefly exceed the slots: the server can serve a worker's
		// next fetch before it has counted that worker's previous ack.
		// The workers' own in-flight counts above are the bound.
		if r.Runs < r.Result.Tasks || r.Ideal <= 0 {
			t.Errorf("%d workers: %d runs for %d tasks, ideal %v", r.Workers, r.Runs, r.Result.Tasks, r.Ideal)
		}
	}
	if rows[0].Speedup != 1 {
		t.Errorf("speedup of 1 worker = %v, want 1", rows[0].Speedup)
	}
}

func TestScaleOptionsValidation(t *testing.T) {
	for _, o := range []ScaleOptions{
		{Workers: []int{0}},
		{Workers: []int{MaxScaleWorkers + 1}},
		{Workers: []int{2}, Concurrency: MaxScaleSlots},
		{Work: MaxScaleWork + time.Second},
		{Clients: MaxConcurrency + 1},
		{Method: "tasks/get"},
	} {
		if err := o.normalize(); err == nil {
			t.Errorf("normalize(%+v) accepted bad options", o)
		}
	}
	var o ScaleOptions
	if err := o.normalize(); err != nil || len(o.Workers) != 3 || o.Concurrency != 8 || o.Clients != 64 || o.Method != MethodSend10 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
}

func TestSlowText(t *testing.T) {
	if text, last := slowText(100 * time.Millisecond); text != "chunks=2 delay=100ms" || last != "chunk 2/2" {
		t.Fatalf("slowText(100ms) = %q, %q", text, last)
	}
	if text, last := slowText(0); text != "chunks=1" || last != "chunk 1/1" {
		t.Fatalf("slowText(0) = %q, %q", text, last)
	}
}
