package bus

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fakeWatcher replays entries, then the end marker unless stall is set, in
// which case it goes quiet the way a watcher whose server died does.
type fakeWatcher struct {
	ch      chan jetstream.KeyValueEntry
	stopped atomic.Bool
}

func newFakeWatcher(keys []string, stall bool) *fakeWatcher {
	w := &fakeWatcher{ch: make(chan jetstream.KeyValueEntry, len(keys)+1)}
	for _, k := range keys {
		w.ch <- fakeEntry{key: k}
	}
	if !stall {
		w.ch <- nil
	}
	return w
}

func (w *fakeWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }
func (w *fakeWatcher) Stop() error                             { w.stopped.Store(true); return nil }

type fakeEntry struct {
	jetstream.KeyValueEntry
	key string
}

func (e fakeEntry) Key() string { return e.key }

func TestScanBucketStartsOverWhenStalled(t *testing.T) {
	defer func(d time.Duration) { scanStall = d }(scanStall)
	scanStall = 50 * time.Millisecond

	var watchers []*fakeWatcher
	open := func(context.Context) (jetstream.KeyWatcher, error) {
		w := newFakeWatcher([]string{"a", "b"}, len(watchers) == 0) // the first one stalls after two entries
		watchers = append(watchers, w)
		return w, nil
	}
	var got []string
	err := ScanBucket(context.Background(), "test", open, func() { got = got[:0] },
		func(e jetstream.KeyValueEntry) { got = append(got, e.Key()) })
	if err != nil {
		t.Fatal(err)
	}
	if len(watchers) != 2 {
		t.Fatalf("opened %d watchers, want 2", len(watchers))
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("got %v, want [a b] once", got)
	}
	for i, w := range watchers {
		if !w.stopped.Load() {
			t.Errorf("watcher %d not stopped", i)
		}
	}
}

func TestScanBucketGivesUp(t *testing.T) {
	defer func(d time.Duration) { scanStall = d }(scanStall)
	scanStall = 10 * time.Millisecond
	opens := 0
	open := func(context.Context) (jetstream.KeyWatcher, error) {
		opens++
		return newFakeWatcher(nil, true), nil
	}
	err := ScanBucket(context.Background(), "test", open, func() {}, func(jetstream.KeyValueEntry) {})
	if !errors.Is(err, errScanStalled) {
		t.Fatalf("err %v, want a stall", err)
	}
	if opens != scanAttempts {
		t.Fatalf("opened %d times, want %d", opens, scanAttempts)
	}
}

// A slow scan is not a stalled one: the stall clock restarts with each
// entry, and the caller's context still ends it.
func TestScanBucketHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := ScanBucket(ctx, "test", func(context.Context) (jetstream.KeyWatcher, error) {
		return newFakeWatcher(nil, true), nil
	}, func() {}, func(jetstream.KeyValueEntry) {})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want canceled", err)
	}
}
