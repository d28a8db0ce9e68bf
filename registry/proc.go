package registry

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/bus"
)

// Connection probes: how a table learns within a second that a worker's
// process died.
//
// Every bus that runs Publish answers requests on one subject of its own,
// ProcSubject(proc), with the id of the NATS server its connection is on
// at that moment. The subject lives as long as the connection: when the
// process dies, the kernel closes its socket and the NATS server drops
// its subscriptions at once, and the other servers of the cluster drop
// them as soon as the route tells them, so a request there gets "no
// responders" within milliseconds. One subject per connection, not per
// agent: a process serving a thousand agents costs a table one probe per
// period, not a thousand.
//
// A table probes every connection its entries name every ProbeEvery
// (200ms). One "no responders" proves little on its own: a worker whose
// NATS node died is reconnecting to another (tens of milliseconds; its
// subscriptions are gone meanwhile), and one whose connection dropped
// waits ReconnectWait (250ms) plus jitter (up to 100ms) before it tries
// the same server again. So the table asks again confirmAfter (500ms)
// later, and decides only when that probe finds no responders either:
//
//   - when the server the connection was last seen on answered for
//     another connection after the first miss (or is the table's own
//     server), the NATS side is whole and the connection is not on it:
//     the process is gone. Its entries stop being listed, and an agent
//     left with none is unknown at once (the crash is known);
//   - when that server did not answer (it died, is paused, or is cut off
//     from the table by a partition), the worker may well be alive and on
//     its way to another node: the table keeps probing and unlists the
//     entries only after slowConfirm (5s) of "no responders", with the
//     agent's LostGrace (sends still queue).
//
// A probe that times out, and any probe while the table's own connection
// is down or reconnected within reconnectGuard, proves nothing either way.
// A connection found gone is still probed, as often, until its entries
// expire: if it answers, they are listed again at once.

// Probe tuning.
const (
	// DefaultProbeEvery is how often a table probes each connection.
	DefaultProbeEvery = 200 * time.Millisecond
	// MaxProbeRate caps a table's probes per second: with more than
	// MaxProbeRate×ProbeEvery connections (400 at 200ms), each is probed
	// less often.
	MaxProbeRate = 2000
	// maxProcProbes bounds the probes one table has in flight (at
	// MaxProbeRate, 300ms each when its server is paused: 600).
	maxProcProbes = 256
	// procTick is how often the prober looks for connections due.
	procTick = 25 * time.Millisecond
	// confirmAfter is the least time between the first and the deciding
	// "no responders" (see above).
	confirmAfter = 500 * time.Millisecond
	// slowConfirm is how long a connection whose server does not answer
	// either must go unanswered before its entries are unlisted: longer
	// than a failover to another node takes a worker (a reconnect waits up
	// to 2s for each dead node ahead in its list), and about when a late
	// heartbeat's pings would unlist it anyway (half a TTL).
	slowConfirm = 5 * time.Second
	// procProbeTimeout bounds one probe; one that times out proves
	// nothing. Short, so that a probe the process took with it when it
	// died is soon followed by one that finds no responders.
	procProbeTimeout = 300 * time.Millisecond
)

// ProcSubject is where the worker connection proc answers probes. Its
// shape (three tokens past "alive") is unlike any instance's or agent's
// subject, which have at most two.
func ProcSubject(proc string) string { return subjAlivePrefix + "proc." + proc + ".conn" }

// ---- the worker side ----

// procAnswer is a bus's answer to probes, shared by the Publish calls
// running on it.
type procAnswer struct {
	id   string
	refs int
	stop func()
}

var (
	procMu      sync.Mutex
	procAnswers = map[*bus.Bus]*procAnswer{}
)

// joinProc returns the id under which b's connection answers probes,
// starting the answer when no other Publish on b runs, and a func to call
// when this Publish ends (the last one to end stops the answer). When
// the subscription fails the id is "" for every Publish on b until they
// all end (the entries then carry none, and tables check them by
// heartbeats and pings alone).
func joinProc(b *bus.Bus, log *slog.Logger) (string, func()) {
	procMu.Lock()
	defer procMu.Unlock()
	pa := procAnswers[b]
	if pa == nil {
		id := newProcID()
		stop, err := b.RespondFunc(ProcSubject(id), func() []byte { return []byte(b.ServerID()) })
		if err == nil && selfProbe(b, id) {
			stop()
			err = errors.New("a probe of this connection found no responders: no right to subscribe to " + subjAlivePrefix + ">?")
		}
		if err != nil {
			// Said once per bus; its other Publish calls share the outcome.
			log.Warn("registry: cannot answer connection probes; edges will notice a crash only when a heartbeat is late", "err", err)
			id, stop = "", func() {}
		}
		pa = &procAnswer{id: id, stop: stop}
		procAnswers[b] = pa
	}
	pa.refs++
	return pa.id, sync.OnceFunc(func() {
		procMu.Lock()
		defer procMu.Unlock()
		pa.refs--
		if pa.refs == 0 {
			pa.stop()
			if procAnswers[b] == pa {
				delete(procAnswers, b)
			}
		}
	})
}

// selfProbe reports whether a probe of connection id through its server
// finds nobody answering: the server refused the subscription (NATS
// authorization refuses it after Subscribe returned). Advertised anyway,
// such a connection would be taken for dead by every edge. A probe that
// cannot be sent or answered in time (the connection is not up yet)
// proves nothing: the connection is advertised.
func selfProbe(b *bus.Bus, id string) (refused bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := b.Request(ctx, ProcSubject(id))
	return errors.Is(err, bus.ErrNoResponders)
}

// newProcID is 16 random hex digits.
func newProcID() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ---- the table side ----

// procState is what a table knows of one worker connection.
type procState struct {
	keys map[string]struct{} // the entries that name it
	// server is the NATS server it last answered from (or, before any
	// answer, the one its entries named).
	server string
	// next is when to probe it again; probing is set while a probe is in
	// flight.
	next    time.Time
	probing bool
	// missSince is when a probe first found no responders since it last
	// answered (zero: it answers), lastMiss when one last did.
	missSince, lastMiss time.Time
	// wholeMisses counts, while gone but not known crashed, probes in a
	// row that found no responders although its server answered for
	// others since the probe before.
	wholeMisses int
	// gone: its entries are not listed; crash: it went from a server that
	// answered for others (the process is known to be gone).
	gone, crash bool
}

// procLocked returns the state of connection id, creating it (with
// server as its first guess and its first probe within one period; gone,
// and probed at once, when it was found gone before). t.mu is held.
func (t *Table) procLocked(id, server string, now time.Time) *procState {
	ps := t.procs[id]
	if ps == nil {
		ps = &procState{keys: map[string]struct{}{}, server: server}
		// Spread the first probes of many new connections over a period.
		ps.next = now.Add(rand.N(t.probeEveryLocked()))
		if _, ok := t.buried[id]; ok {
			// A connection found gone before (an entry of it replayed by
			// a new watch): gone still, unless it answers at once.
			delete(t.buried, id)
			ps.gone, ps.crash, ps.next = true, true, now
		}
		t.procs[id] = ps
	}
	return ps
}

// probeEveryLocked is how often each connection is probed now. t.mu is
// held.
func (t *Table) probeEveryLocked() time.Duration {
	every := t.ProbeEvery
	if every <= 0 {
		every = DefaultProbeEvery
	}
	every = max(every, 10*time.Millisecond)
	return max(every, time.Duration(len(t.procs))*time.Second/MaxProbeRate)
}

// probeProcs starts a probe of every connection that is due, up to the
// free room of maxProcProbes in flight (the rest wait for a later tick):
// first those that a probe found missing, whose confirmation decides.
func (p *prober) probeProcs(ctx context.Context, now time.Time) {
	t := p.t
	var due []string
	t.mu.Lock()
	room := cap(p.procSem) - len(p.procSem)
	for _, suspects := range []bool{true, false} {
		for id, ps := range t.procs {
			if len(due) >= room {
				break
			}
			if ps.probing || now.Before(ps.next) || ps.missSince.IsZero() == suspects {
				continue
			}
			ps.probing = true
			due = append(due, id)
		}
	}
	t.mu.Unlock()
	for i, id := range due {
		select {
		case p.procSem <- struct{}{}:
		default:
			t.mu.Lock()
			for _, rest := range due[i:] {
				if ps := t.procs[rest]; ps != nil {
					ps.probing = false
				}
			}
			t.mu.Unlock()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.procSem }()
			pctx, cancel := context.WithTimeout(ctx, procProbeTimeout)
			server, err := p.nc.Request(pctx, ProcSubject(id))
			cancel()
			if ctx.Err() != nil {
				return
			}
			p.settleProc(id, string(server), err, time.Now())
		}()
	}
}

// settleProc applies a probe's outcome to its connection.
func (p *prober) settleProc(id, server string, err error, now time.Time) {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := t.procs[id]
	if ps == nil {
		return // its entries went meanwhile
	}
	ps.probing = false
	every := t.probeEveryLocked()
	// Later probes keep their phase, with a little jitter so that many
	// tables do not fall into step.
	ps.next = now.Add(every - every/8 + rand.N(every/4))
	if err == nil {
		if server != "" {
			ps.server = server
			t.seen[server] = now
		}
		ps.missSince, ps.lastMiss, ps.wholeMisses = time.Time{}, time.Time{}, 0
		if ps.gone {
			p.reviveLocked(id, ps, now)
		}
		return
	}
	if !errors.Is(err, bus.ErrNoResponders) || !p.steadyLocked(now) {
		return // a timeout, or our own connection is not steady: proves nothing
	}
	prev := ps.lastMiss
	ps.lastMiss = now
	if ps.gone {
		if !ps.crash {
			// Unlisted while its server did not answer: once that server
			// answers for others again (a partition healed) and this
			// connection still does not, the crash is known after all.
			if p.wholeSinceLocked(ps, prev) {
				ps.wholeMisses++
			} else {
				ps.wholeMisses = 0
			}
			if ps.wholeMisses >= 2 {
				p.goneLocked(id, ps, true, now.Sub(ps.missSince), now)
			}
		}
		return
	}
	if ps.missSince.IsZero() {
		ps.missSince = now
		ps.next = now.Add(confirmAfter)
		return
	}
	missing := now.Sub(ps.missSince)
	if missing < confirmAfter {
		ps.next = ps.missSince.Add(confirmAfter)
		return
	}
	whole := p.wholeSinceLocked(ps, ps.missSince)
	if whole || missing >= slowConfirm {
		p.goneLocked(id, ps, whole, missing, now)
	}
}

// wholeSinceLocked reports whether the NATS side of connection ps is
// whole: its server answered for another connection since when, or is
// our own server (we are steadily connected to it). Then a connection
// missing there is not there. t.mu is held.
func (p *prober) wholeSinceLocked(ps *procState, since time.Time) bool {
	t := p.t
	return ps.server != "" && (ps.server == t.ownServer || t.seen[ps.server].After(since))
}

// goneLocked unlists the entries of connection id. An agent left with no
// listed instance is unknown at once when the crash is known, and lost
// (routable for LostGrace) when it is not. t.mu is held.
func (p *prober) goneLocked(id string, ps *procState, crash bool, missing time.Duration, now time.Time) {
	t := p.t
	ps.gone, ps.crash = true, crash
	agents := map[string]*slot{}
	for k := range ps.keys {
		if s := t.entries[k]; s != nil {
			agents[s.e.Agent] = s
		}
	}
	for agent, s := range agents {
		if t.listedLocked(agent) {
			continue // another instance serves it
		}
		if crash {
			delete(t.lost, agent)
		} else {
			t.loseLocked(s.e, now)
		}
	}
	why := "its NATS server answers for others but not for it: the process is gone"
	if !crash {
		why = "its NATS server does not answer either (failover or partition?): unlisted, its agents stay routable for the lost grace"
	}
	p.log.Info("registry: worker connection gone; "+why, "proc", id, "server", ps.server, "entries", len(ps.keys),
		"no_responders_for_ms", missing.Milliseconds())
}

// reviveLocked lists again the entries of a connection found gone that
// answered. t.mu is held.
func (p *prober) reviveLocked(id string, ps *procState, now time.Time) {
	t := p.t
	ps.gone, ps.crash = false, false
	for k := range ps.keys {
		if s := t.entries[k]; s != nil {
			delete(t.lost, s.e.Agent)
		}
	}
	p.log.Warn("registry: a worker connection found gone answers again; its entries are listed again", "proc", id,
		"server", ps.server, "entries", len(ps.keys))
}
