package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestIsTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{nats.ErrNoResponders, true},
		{fmt.Errorf("bus: bucket A2A_PUSH: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("push signing key: bus: read signing: %w", nats.ErrNoResponders), true},
		{jetstream.ErrNoStreamResponse, true},
		{fmt.Errorf("x: %w", ErrUnavailable), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10023}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{jetstream.ErrKeyNotFound, false},
		{context.Canceled, false},
	} {
		if got := IsTransient(c.err); got != c.want {
			t.Errorf("IsTransient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetry(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	n := 0
	err := Retry(ctx, log, "a thing", func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("an attempt has no deadline")
		}
		if n++; n < 3 {
			return nats.ErrNoResponders
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d attempts, want nil after 3", err, n)
	}
	bad := errors.New("bad key file")
	n = 0
	if err := Retry(ctx, log, "a thing", func(context.Context) error { n++; return Permanent(bad) }); err != bad || n != 1 {
		t.Fatalf("permanent: err %v after %d attempts", err, n)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := Retry(cctx, log, "a thing", func(context.Context) error { return nats.ErrNoResponders }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx end: %v", err)
	}
}

func TestJitter(t *testing.T) {
	for i := 0; i < 100; i++ {
		if d := Jitter(time.Second); d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("jitter %v", d)
		}
	}
	if Jitter(0) != 0 {
		t.Fatal("jitter of 0")
	}
}
