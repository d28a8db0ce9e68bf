package registry

import (
	"encoding/json"

	"github.com/a2amesh/a2amesh/bus"
)

// fakeEntry builds a watched bucket entry for feeding Table.apply directly.
type fakeEntry struct {
	key     string
	e       Entry
	deleted bool
}

func (f fakeEntry) entry() *bus.Entry {
	if f.deleted {
		return &bus.Entry{Key: f.key, Revision: 1, Deleted: true}
	}
	b, _ := json.Marshal(f.e)
	return &bus.Entry{Key: f.key, Value: b, Revision: 1}
}
