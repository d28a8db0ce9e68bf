package bus

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// Leases: work that one process of the mesh should do at a time, though
// every process can.
//
// Every process hosting the bus runs its upkeep (Run), and the trimmer's
// evictions all start at the front of the snapshot bucket: run from every
// edge and worker at once, each would evict the same oldest tasks, and
// the evictions a loaded server can take would be spent N times over. So
// a process trims only while it holds the "trim" lease, an entry of the
// A2A_LEASES bucket naming its holder. The holder renews it at every pass;
// another process takes it over once it has not been renewed for leaseTTL
// (the holder died, or cannot reach the bucket's leader).
//
// Creation and renewal are compare-and-set writes (the entry's revision),
// so two processes never both win the same lease. Takeover compares the
// entry's server-assigned time with the local clock: clocks more than a
// few seconds apart delay or hasten a takeover by that much, never make
// two holders at once.

// BucketLeases holds the leases (one small entry each).
const BucketLeases = "A2A_LEASES"

// leaseTTL is how long a lease stands without renewal (a variable for
// tests).
var leaseTTL atomic.Int64

func init() { leaseTTL.Store(int64(15 * time.Second)) }

// leaseBucketTTL clears leases nobody renews (their holders are gone).
const leaseBucketTTL = 5 * time.Minute

type leaseValue struct {
	Holder string `json:"holder"`
}

// HoldLease takes or renews the lease name for this bus and reports
// whether it holds it now. Any failure to reach the bucket is "no".
func (b *Bus) HoldLease(ctx context.Context, name string) bool {
	if b.leases == nil {
		return true // opened without the bucket (never in Open): no peers to share with
	}
	val, _ := json.Marshal(leaseValue{Holder: b.instance})
	e, err := b.leases.Get(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), err == nil && e.Operation() != jetstream.KeyValuePut:
		_, err = b.leases.Create(ctx, name, val)
		return err == nil
	case err != nil:
		return false
	}
	var cur leaseValue
	_ = json.Unmarshal(e.Value(), &cur)
	if cur.Holder != b.instance && time.Since(e.Created()) < time.Duration(leaseTTL.Load()) {
		return false
	}
	_, err = b.leases.Update(ctx, name, val, e.Revision())
	return err == nil
}

// newInstance names a Bus among the processes sharing the mesh.
func newInstance() string { return uuid.NewString() }
