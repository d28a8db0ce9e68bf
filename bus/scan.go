package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// scanStall is how long a bucket scan waits for its next entry before it
// starts over. A scan reads the bucket through an ordered consumer; if the
// server holding that consumer goes away (a cluster node lost), nats.go
// replaces it only after its heartbeats have gone missing, about 10 s,
// and the caller (a ListTasks call, a client waiting) would sit through
// that. Starting over lands on a live server at once.
var scanStall = 2 * time.Second

// scanAttempts bounds the starts of one scan.
const scanAttempts = 5

var errScanStalled = errors.New("bus: bucket scan stalled")

// ScanBucket calls each for every entry a watcher opened by open delivers
// before its end-of-initial-values marker. A scan that stalls is started
// over: reset is called first, so each must gather afresh.
func ScanBucket(ctx context.Context, what string, open func(context.Context) (jetstream.KeyWatcher, error),
	reset func(), each func(jetstream.KeyValueEntry)) error {
	var err error
	for attempt := 1; attempt <= scanAttempts; attempt++ {
		if attempt > 1 {
			reset()
		}
		err = scanOnce(ctx, open, each)
		if !errors.Is(err, errScanStalled) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("bus: %s: %w", what, err)
	}
	return nil
}

func scanOnce(ctx context.Context, open func(context.Context) (jetstream.KeyWatcher, error), each func(jetstream.KeyValueEntry)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Opening the watcher is a request that a node just rejoining may
	// never answer: bound it like the waits below (the watcher must live
	// on wctx, which nats.go ties its life to, so the bound is a timer).
	type opened struct {
		w   jetstream.KeyWatcher
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		w, err := open(wctx)
		ch <- opened{w, err}
	}()
	var w jetstream.KeyWatcher
	openStall := time.NewTimer(AttemptTimeout)
	defer openStall.Stop()
	select {
	case o := <-ch:
		if o.err != nil {
			if transient(o.err) && ctx.Err() == nil {
				return errScanStalled
			}
			return o.err
		}
		w = o.w
	case <-openStall.C:
		cancel()
		if o := <-ch; o.err == nil {
			_ = o.w.Stop()
		}
		return errScanStalled
	case <-ctx.Done():
		cancel()
		if o := <-ch; o.err == nil {
			_ = o.w.Stop()
		}
		return ctx.Err()
	}
	defer func() { _ = w.Stop() }()
	stall := time.NewTimer(scanStall)
	defer stall.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok || e == nil {
				return nil
			}
			each(e)
			stall.Reset(scanStall)
		case <-stall.C:
			return errScanStalled
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
