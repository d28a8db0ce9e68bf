package registry

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fakeEntry is a KeyValueEntry for feeding Table.apply directly.
type fakeEntry struct {
	key string
	e   Entry
	op  jetstream.KeyValueOp // zero: a put
}

func (f fakeEntry) Bucket() string { return "test" }
func (f fakeEntry) Key() string    { return f.key }
func (f fakeEntry) Value() []byte {
	b, _ := json.Marshal(f.e)
	return b
}
func (f fakeEntry) Revision() uint64                { return 1 }
func (f fakeEntry) Created() time.Time              { return f.e.Beat }
func (f fakeEntry) Delta() uint64                   { return 0 }
func (f fakeEntry) Operation() jetstream.KeyValueOp { return f.op }
