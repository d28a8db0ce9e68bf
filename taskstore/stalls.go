package taskstore

import (
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// stalls delivers NoticeStoreFull to the settle watches of one process
// through one subscription (a2a.stalled.*, made by the first watch),
// rather than a subscription per blocking send: a send's hot path
// subscribes only to its task's snapshots.
type stalls struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	waiters map[string]map[chan struct{}]struct{}
}

// add registers ch to be signalled when task id is noticed stalled.
func (s *stalls) add(nc *nats.Conn, id string, ch chan struct{}) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub == nil {
		sub, err := nc.Subscribe(subjStalledPrefix+"*", s.deliver)
		if err != nil {
			return err
		}
		s.sub = sub
		s.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if s.waiters[id] == nil {
		s.waiters[id] = map[chan struct{}]struct{}{}
	}
	s.waiters[id][ch] = struct{}{}
	return nil
}

// remove forgets ch.
func (s *stalls) remove(id string, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters[id], ch)
	if len(s.waiters[id]) == 0 {
		delete(s.waiters, id)
	}
}

// deliver signals the watches of the noticed task (a watch already
// signalled keeps its one signal).
func (s *stalls) deliver(m *nats.Msg) {
	id := strings.TrimPrefix(m.Subject, subjStalledPrefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
