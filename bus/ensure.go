package bus

import (
	"context"
	"errors"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureStream creates the stream, or updates it only when a setting the
// mesh chooses differs. Every process opening the bus ensures every stream,
// so in steady state this is one info request, not an update: an update
// rewrites the stream's store config, and nats-server 2.15 races doing that
// against a consumer being created on the same stream (seen under -race
// when several workers open the bus at once).
func (b *Bus) EnsureStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	for attempt := 0; attempt < 3; attempt++ {
		s, err := b.js.Stream(ctx, want.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			s, err = b.js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue // created meanwhile by another process: compare
			}
			return s, err
		case err != nil:
			return nil, err
		case sameStream(s.CachedInfo().Config, want):
			return s, nil
		default:
			return b.js.UpdateStream(ctx, want)
		}
	}
	return b.js.CreateOrUpdateStream(ctx, want)
}

// sameStream reports whether have already has every setting want names.
func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description &&
		slices.Equal(have.Subjects, want.Subjects) &&
		have.Retention == want.Retention &&
		have.Discard == want.Discard &&
		have.DiscardNewPerSubject == want.DiscardNewPerSubject &&
		(want.MaxMsgs == 0 || have.MaxMsgs == want.MaxMsgs) &&
		(want.MaxBytes == 0 || have.MaxBytes == want.MaxBytes) &&
		(want.MaxMsgsPerSubject == 0 || have.MaxMsgsPerSubject == want.MaxMsgsPerSubject) &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) &&
		have.MaxAge == want.MaxAge &&
		have.Storage == want.Storage &&
		max(have.Replicas, 1) == max(want.Replicas, 1) &&
		have.AllowDirect == want.AllowDirect &&
		have.Compression == want.Compression
}

// EnsureKV opens the bucket, creating it, or updating it only when its
// history, TTL, storage, replicas or description differ (see EnsureStream;
// settings the KV API does not expose, such as the task bucket's count
// bound, are left as they are).
func (b *Bus) EnsureKV(ctx context.Context, want jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := b.js.KeyValue(ctx, want.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		if kv, err = b.js.CreateOrUpdateKeyValue(ctx, want); err != nil {
			return nil, err
		}
		return b.directPolicy(ctx, want.Bucket, kv)
	}
	if err != nil {
		return nil, err
	}
	s, err := b.js.Stream(ctx, "KV_"+want.Bucket)
	if err != nil {
		return nil, err
	}
	have := s.CachedInfo().Config
	history := int64(max(want.History, 1))
	if have.MaxMsgsPerSubject == history && have.MaxAge == want.TTL && have.Storage == want.Storage &&
		max(have.Replicas, 1) == max(want.Replicas, 1) && have.Description == want.Description {
		return b.directPolicy(ctx, want.Bucket, kv)
	}
	if kv, err = b.js.CreateOrUpdateKeyValue(ctx, want); err != nil {
		return nil, err
	}
	return b.directPolicy(ctx, want.Bucket, kv)
}

// OpenKV is EnsureKV once per bucket and Bus: later calls return the
// handle the first one opened, with no round trip. For buckets a process
// opens on a path it takes often (a send's check that its agent is known).
func (b *Bus) OpenKV(ctx context.Context, want jetstream.KeyValueConfig) (KV, error) {
	b.kvMu.Lock()
	kv, ok := b.kvs[want.Bucket]
	b.kvMu.Unlock()
	if ok {
		return kv, nil
	}
	j, err := b.EnsureKV(ctx, want)
	if err != nil {
		return nil, err
	}
	kv = WrapKV(j)
	b.kvMu.Lock()
	defer b.kvMu.Unlock()
	if b.kvs == nil {
		b.kvs = map[string]KV{}
	}
	b.kvs[want.Bucket] = kv
	return kv, nil
}

// AllowDirect is whether streams and buckets answer direct gets: only on a
// single replica. A direct get on a replicated stream may be answered by
// any replica, including one that has not yet applied a write the caller
// already had acknowledged (seen on a 3-node cluster: about 1 in 30 reads
// right after a publish found nothing). Every read that decides what
// happens to a task (a worker's first read of the task it was handed, an
// edge's read after its own append, the dedupe checks, the janitor) must
// see such writes, so on R3 every get goes to the stream leader, which
// acknowledges a write only after applying it. nats-server 2.15 has no
// direct get bounded by a known sequence, which would have let followers
// answer reads that name the sequence they depend on.
func (b *Bus) AllowDirect() bool { return b.cfg.Replicas <= 1 }

// directPolicy makes bucket's stream answer direct gets only when
// AllowDirect says so (the KV API always enables them) and returns a
// handle bound to the result: a handle reads directly or through the
// leader according to the stream's setting when it was opened.
func (b *Bus) directPolicy(ctx context.Context, bucket string, kv jetstream.KeyValue) (jetstream.KeyValue, error) {
	s, err := b.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, err
	}
	cfg := s.CachedInfo().Config
	if cfg.AllowDirect == b.AllowDirect() {
		return kv, nil
	}
	cfg.AllowDirect = b.AllowDirect()
	if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
		return nil, err
	}
	return b.js.KeyValue(ctx, bucket)
}
