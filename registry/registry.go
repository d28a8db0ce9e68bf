// Package registry keeps the fleet's agents: each worker publishes its
// agent's card under <agent>.<instance> in the registry bucket and renews it
// with heartbeats, and writes the agent's record in the agents bucket,
// which outlives its workers (agents.go); edges watch both buckets and hold
// a routing table of the known agents and their live workers. It imports
// a2a and bus.
//
// A crashed worker leaves the live view at once. Each worker connection (one per
// process, shared by every agent it serves) answers probes on a subject
// of its own (proc.go), named in its entries; tables probe every such
// connection a few times a second. When a process dies the kernel closes
// its socket and the NATS servers drop its subscriptions at once, so a
// probe gets "no responders" within milliseconds; seen twice 500ms apart
// while the dead connection's server still answers for others, the
// worker is gone (about 0.6s after the crash). A probe that times out
// proves nothing.
//
// A JetStream failover must not make a live agent disappear. Heartbeats
// are KV writes, which fail while the registry bucket elects a leader, so
// each worker also answers liveness pings on core NATS, which keeps
// working through JetStream elections (ping.go). A table pings an instance
// whose heartbeat is late and keeps it while it answers; an instance that
// stopped cleanly deletes its entry and goes at once. Entries of releases
// without the connection probe are checked that way alone.
//
// A registration reaches edges on core NATS too (notice.go): each
// heartbeat is published there as well as written to the bucket, so an
// edge lists a new worker at once even while the bucket cannot be written
// or its watch is being recreated.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Entry is what a worker publishes about itself.
type Entry struct {
	Agent    string        `json:"agent"`
	Instance string        `json:"instance"`
	Card     a2a.AgentCard `json:"card"`
	// ExtendedCard is the agent's extended card (GetExtendedAgentCard),
	// nil when it has none. Edges serve it only when Card declares
	// capabilities.extendedAgentCard.
	ExtendedCard *a2a.AgentCard `json:"extendedCard,omitempty"`
	// TTL is how long the entry is valid without a heartbeat.
	TTL time.Duration `json:"ttl"`
	// Beat is when the entry was last renewed.
	Beat time.Time `json:"beat"`
	// Proc names the worker's NATS connection, which answers probes at
	// ProcSubject(Proc) for as long as it lives (proc.go). Every agent a
	// process serves over one connection names the same Proc. Empty in
	// entries of releases before it: those are checked by heartbeats and
	// pings alone.
	Proc string `json:"proc,omitempty"`
	// Server is the id of the NATS server the connection was on when the
	// entry was renewed (a hint until a probe answers with its server).
	Server string `json:"server,omitempty"`
	// CardCheck is what a proxy worker verified of its upstream's card
	// signatures (nil: not a proxy, or a release before it).
	CardCheck *CardCheck `json:"cardCheck,omitempty"`
	// Check, when set, gives CardCheck at each renewal (Publish).
	Check func() *CardCheck `json:"-"`
}

func key(agent, instance string) string { return agent + "." + instance }

// Heartbeat tuning.
const (
	// beatRetryFirst is the pause after a failed heartbeat; it doubles up
	// to beatRetryMax (or the heartbeat interval, if shorter).
	beatRetryFirst = 250 * time.Millisecond
	beatRetryMax   = time.Second
	// beatAttempt bounds one heartbeat write, so a write lost with a dead
	// leader is sent again once a new one is elected.
	beatAttempt = 3 * time.Second
)

// Publish registers e and renews it every TTL/3 until ctx ends, then
// deletes it so the agent disappears at once on a clean stop. When card is
// not nil each renewal registers the card it returns, so a card that
// changes reaches the edges within TTL/3.
//
// While it runs, the instance answers liveness pings (ping.go), so edges
// keep it through a JetStream failover that stops its heartbeats, and its
// connection answers probes (proc.go), so edges drop it within about a
// second of its process dying; the first Publish on a bus starts that
// answer and the last one to return stops it. A
// heartbeat that fails is retried at once with backoff (250ms doubling,
// up to 1s), not a whole interval later; the first registration is
// retried the same way until it succeeds or ctx ends. Publish returns an
// error only for an entry that can never be registered (an agent or
// instance name that is not a subject token). Its log lines do not repeat
// the agent and instance: log is expected to carry them (a worker's does).
func Publish(ctx context.Context, b *bus.Bus, e Entry, card func() a2a.AgentCard, log *slog.Logger) error {
	var cards func() (a2a.AgentCard, *a2a.AgentCard)
	if card != nil {
		cards = func() (a2a.AgentCard, *a2a.AgentCard) { return card(), e.ExtendedCard }
	}
	return PublishCards(ctx, b, e, cards, log)
}

// PublishCards is Publish for an agent with an extended card: when cards
// is not nil each renewal registers the card and the extended card (nil:
// none) it returns.
func PublishCards(ctx context.Context, b *bus.Bus, e Entry, cards func() (a2a.AgentCard, *a2a.AgentCard), log *slog.Logger) error {
	if !bus.ValidToken(e.Agent) || !bus.ValidToken(e.Instance) {
		return errors.New("registry: agent and instance names must be 1-128 of A-Z a-z 0-9 _ -")
	}
	if e.TTL <= 0 {
		e.TTL = b.Config().RegistryTTL
	}
	if log == nil {
		log = slog.Default().With("agent", e.Agent, "instance", e.Instance)
	}
	kv := b.Registry()
	rec := &recorder{b: b}
	proc, leaveProc := joinProc(b, log)
	defer leaveProc()
	e.Proc = proc
	put := func() error {
		if cards != nil {
			e.Card, e.ExtendedCard = cards()
		}
		if e.Check != nil {
			e.CardCheck = e.Check()
		}
		e.Beat = time.Now()
		e.Server = b.ServerID()
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		c, cancel := context.WithTimeout(ctx, min(beatAttempt, max(e.TTL/3, 100*time.Millisecond)))
		defer cancel()
		// Edges hear the notice on core NATS whatever becomes of the
		// bucket writes, which wait, then fail, while a bucket's stream
		// elects a leader or has no quorum. Until the instance's writes
		// first landed, the notice waits for them for at most firstWrite:
		// an instance an edge lists then has its agent's record and its
		// entry in the buckets (a worker that crashes at once leaves its
		// agent known), unless the buckets are electing. After that the
		// notice goes first.
		if !rec.written() {
			fc, fcancel := context.WithTimeout(c, firstWrite)
			recErr := rec.record(fc, e)
			_, err = kv.Put(fc, key(e.Agent, e.Instance), data)
			fcancel()
			if recErr == nil && err == nil {
				announce(b, e, false)
				return nil
			}
		}
		announce(b, e, false)
		recErr := rec.record(c, e)
		if _, err = kv.Put(c, key(e.Agent, e.Instance), data); err != nil {
			return err
		}
		return recErr
	}
	unping := answerPings(b, e.Agent, e.Instance, log)
	defer unping()
	interval := max(e.TTL/3, 10*time.Millisecond)
	timer := time.NewTimer(0) // the first registration at once
	defer timer.Stop()
	var failing, logged time.Time // when the current run of failures began, and was last logged
	retry := beatRetryFirst
	for {
		select {
		case <-ctx.Done():
			unping() // pings fail from now on: an edge that misses the delete drops the entry at once
			announce(b, e, true)
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = kv.Delete(c, key(e.Agent, e.Instance))
			cancel()
			if !rec.written() && !e.Beat.IsZero() {
				// Announced but never recorded (the agents bucket had no
				// leader): the agent must outlive this worker all the same.
				c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = rec.record(c, e)
				cancel()
			}
			return nil
		case <-timer.C:
		}
		err := put()
		if ctx.Err() != nil {
			continue
		}
		if err == nil {
			if !failing.IsZero() {
				log.Info("registry heartbeat restored", "failed_for_ms", time.Since(failing).Milliseconds())
				failing, logged, retry = time.Time{}, time.Time{}, beatRetryFirst
			}
			timer.Reset(interval)
			continue
		}
		now := time.Now()
		if failing.IsZero() {
			failing = now
		}
		d := bus.Jitter(min(retry, interval, beatRetryMax))
		if now.Sub(logged) >= 5*time.Second { // at most one line per 5s while it lasts
			logged = now
			log.Warn("registry heartbeat failed; retrying (the instance keeps answering liveness pings)",
				"err", err, "failing_for_ms", now.Sub(failing).Milliseconds(), "retry_in", d.Round(time.Millisecond))
		}
		retry = min(2*retry, beatRetryMax)
		timer.Reset(d)
	}
}

// firstWrite bounds how long an instance's first notice waits for its
// first bucket writes (PublishCards).
const firstWrite = 500 * time.Millisecond

// Table tuning.
const (
	// maxProbes bounds the pings one table has in flight.
	maxProbes = 64
	// missRetry is the pause before pinging again an instance that did
	// not answer.
	missRetry = time.Second
	// reconnectGuard: for this long after the table's own connection
	// reconnected, "no responders" is not believed at once (the node it
	// reached may not have its routes' interest yet).
	reconnectGuard = 5 * time.Second
)

// slot is a table entry with what the table knows about its liveness.
type slot struct {
	e Entry
	// until extends the entry past its heartbeat: the instance answered a
	// ping (local clock).
	until time.Time
	// misses counts pings in a row that found no answer.
	misses int
	// probing is set while a ping is in flight; gen changes at every
	// heartbeat, so a ping's late answer does not touch a newer entry.
	probing bool
	gen     uint64
}

// due is when the entry must be pinged: when its heartbeat is late (half
// its TTL; heartbeats come every third), or when the last ping's answer
// stops vouching for it.
func (s *slot) due() time.Time {
	late := s.e.Beat.Add(s.e.TTL / 2)
	if s.until.After(late) {
		return s.until
	}
	return late
}

// Table is an edge's view of the live fleet, fed by a bucket watcher and
// checked with probes of the workers' connections (proc.go) and liveness
// pings of instances whose heartbeats are late.
//
// What "gone" means. An instance is listed (Agents, GET /agents) while
// its entry is in the bucket and nothing shows it dead. When its
// connection is found gone it stops being listed, and then:
//
//   - if the server that connection was on still answers for other
//     connections (or is the table's own server), the process died or
//     stopped: the crash is known, and the agent shows no live worker at
//     once (GET /agents, the console).
//   - otherwise (its server itself is unreachable: a NATS node died,
//     paused or cut off by a partition) nothing is known about the
//     process; it is unlisted only after the probes failed for 5s.
//
// Either way the agent stays known (agents.go): its card is served and
// its sends wait in its queue for the next worker. Only a name the agents
// bucket does not hold (never registered, removed, or forgotten after
// bus.Config.AgentRetention) is refused as unknown.
//
// A connection found gone that answers again (a worker that took longer
// than the confirmation to reconnect) is listed again at once, without
// waiting for its next heartbeat.
type Table struct {
	// Logger, when set before Run, gets the table's waits and drops.
	Logger *slog.Logger

	// LostGrace is how long an agent stays routable after its last
	// instance was dropped while its fate is unknown (a late heartbeat
	// and unanswered pings, or a connection gone together with its NATS
	// server), not after a clean stop or a known crash: default
	// DefaultLostGrace, negative for none. Set it before Run.
	LostGrace time.Duration

	// ProbeEvery is how often the table probes each worker connection its
	// entries name (DefaultProbeEvery when 0; longer when the table holds
	// many connections, so it sends at most MaxProbeRate probes a second);
	// negative: never, and entries are only checked once their heartbeats
	// are late (the way of tables that run in workers for calls between
	// agents, which need no sub-second view). Set it before Run.
	ProbeEvery time.Duration

	bus     *bus.Bus
	mu      sync.RWMutex
	entries map[string]*slot            // key -> entry
	byAgent map[string]map[string]*slot // agent -> key -> entry
	procs   map[string]*procState       // connection -> what probes found
	buried  map[string]time.Time        // connection found gone, its entries all gone -> until when to remember it
	// stopped: instance key -> when it said it stopped (its own clock, as
	// its heartbeats' Beat). A heartbeat written before that and
	// delivered after the notice (a bucket write in flight at the stop)
	// must not list the instance again. Kept for stoppedFor.
	stopped map[string]time.Time
	seen    map[string]time.Time // NATS server id -> when a connection on it last answered a probe
	lost    map[string]lostAgent
	gen     uint64
	// known holds the agents bucket (agents.go): every agent that may be
	// sent to, live or not.
	known       map[string]Known
	ready       chan struct{}
	readyOnce   sync.Once
	loaded      bool // the registry bucket was read whole
	knownLoaded bool // and so was the agents bucket

	// The table's own connection, sampled by the prober under mu: its
	// server, its reconnects and when they last changed.
	ownServer   string
	reconnects  uint64
	reconnected time.Time
}

// DefaultLostGrace keeps an agent whose instances all stopped answering
// routable for a while: sends are queued (JetStream keeps them) instead of
// refused with "unknown agent". What looks like a crash from an edge may
// be a worker cut off with a NATS node (a partition: its heartbeats and
// pings cannot cross), or a worker being restarted by its supervisor;
// either way a worker takes the queued task within seconds. An agent
// whose last worker stopped cleanly, or whose crash is known (its
// connection vanished from a NATS server that still answers), goes at
// once.
const DefaultLostGrace = 30 * time.Second

// lostAgent is an agent whose last instance was dropped without a clean
// stop, with the cards it last had.
type lostAgent struct {
	card a2a.AgentCard
	ext  *a2a.AgentCard
	at   time.Time
}

// visibleLocked reports whether s is listed: its connection is not known
// to be gone. t.mu is held (read or write).
func (t *Table) visibleLocked(s *slot) bool {
	if s.e.Proc == "" {
		return true
	}
	ps := t.procs[s.e.Proc]
	return ps == nil || !ps.gone
}

// listedLocked reports whether agent has a listed instance. t.mu is held.
func (t *Table) listedLocked(agent string) bool {
	for _, s := range t.byAgent[agent] {
		if t.visibleLocked(s) {
			return true
		}
	}
	return false
}

// linkLocked adds s under key to the table and its indexes. t.mu is held.
func (t *Table) linkLocked(key string, s *slot, now time.Time) {
	t.entries[key] = s
	m := t.byAgent[s.e.Agent]
	if m == nil {
		m = map[string]*slot{}
		t.byAgent[s.e.Agent] = m
	}
	m[key] = s
	if s.e.Proc != "" {
		t.procLocked(s.e.Proc, s.e.Server, now).keys[key] = struct{}{}
	}
}

// removeLocked takes entry key out of the table and its indexes and
// returns it (nil when absent). t.mu is held.
func (t *Table) removeLocked(key string) *slot {
	s := t.entries[key]
	if s == nil {
		return nil
	}
	delete(t.entries, key)
	if m := t.byAgent[s.e.Agent]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(t.byAgent, s.e.Agent)
		}
	}
	if ps := t.procs[s.e.Proc]; ps != nil {
		delete(ps.keys, key)
		if len(ps.keys) == 0 {
			delete(t.procs, s.e.Proc)
			if ps.gone {
				// Its entries stay in the bucket for up to 3 TTLs after
				// their last renewal (the bucket's age limit): a watch that
				// starts again replays them, and they must not be listed
				// again as if alive.
				t.buried[s.e.Proc] = time.Now().Add(3 * max(s.e.TTL, bus.DefaultConfig.RegistryTTL))
			}
		}
	}
	return s
}

// dropLocked removes entry key, noting its agent as lost when it was the
// agent's last listed instance. t.mu is held.
func (t *Table) dropLocked(key string, now time.Time) {
	s := t.removeLocked(key)
	if s == nil || t.lostGrace() < 0 || t.listedLocked(s.e.Agent) {
		return
	}
	t.loseLocked(s.e, now)
}

// loseLocked starts the grace of agent, which just lost its last listed
// instance without a clean stop. t.mu is held.
func (t *Table) loseLocked(e Entry, now time.Time) {
	if t.lostGrace() < 0 {
		return
	}
	if t.lost == nil {
		t.lost = map[string]lostAgent{}
	}
	t.lost[e.Agent] = lostAgent{card: e.Card, ext: e.ExtendedCard, at: now}
}

func (t *Table) lostGrace() time.Duration {
	if t.LostGrace == 0 {
		return DefaultLostGrace
	}
	return t.LostGrace
}

// forgetLost ends the grace of agents lost longer than LostGrace ago.
// t.mu is held.
func (t *Table) forgetLost(now time.Time) {
	for a, l := range t.lost {
		if now.Sub(l.at) >= t.lostGrace() {
			delete(t.lost, a)
		}
	}
}

// NewTable returns an empty table of the registry on b; Run fills it.
func NewTable(b *bus.Bus) *Table {
	return &Table{bus: b, entries: map[string]*slot{}, byAgent: map[string]map[string]*slot{},
		procs: map[string]*procState{}, buried: map[string]time.Time{}, stopped: map[string]time.Time{}, seen: map[string]time.Time{},
		known: map[string]Known{}, ready: make(chan struct{})}
}

// markLoaded closes Ready once both buckets were read whole.
func (t *Table) markLoaded() {
	t.mu.RLock()
	both := t.loaded && t.knownLoaded
	t.mu.RUnlock()
	if both {
		t.readyOnce.Do(func() { close(t.ready) })
	}
}

// Run watches the registry bucket until ctx ends, and pings instances
// whose heartbeats are late. It returns only when ctx ends (nil): a watch
// that cannot start, or stops, is started again with backoff, and the
// entries stay meanwhile, checked by pings.
func (t *Table) Run(ctx context.Context) error {
	b := t.bus
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	readyOnce := t.markLoaded
	defer t.readyOnce.Do(func() { close(t.ready) })
	knownDone := make(chan struct{})
	go func() {
		defer close(knownDone)
		t.watchKnown(ctx, log)
	}()
	defer func() { <-knownDone }()
	// Pings run beside the watch, so a watch that waits for JetStream
	// never holds them up.
	p := &prober{t: t, log: log, sem: make(chan struct{}, maxProbes), procSem: make(chan struct{}, maxProcProbes)}
	if b != nil {
		p.nc = b // before the loop starts: it reads it
		t.mu.Lock()
		t.reconnects = b.Reconnects() // a reconnect before Run is no reason for the guard
		t.mu.Unlock()
	}
	if b != nil && t.ProbeEvery >= 0 {
		if sub := t.hearNotices(log); sub != nil {
			defer sub.Stop()
		}
	}
	pctx, stopProbes := context.WithCancel(ctx)
	probing := make(chan struct{})
	go func() {
		defer close(probing)
		p.loop(pctx)
	}()
	defer func() { stopProbes(); <-probing }()

	var w *bus.Watcher
	defer func() {
		if w != nil {
			_ = w.Stop()
		}
	}()
	watch := func() (*bus.Watcher, error) {
		// The watcher lives as long as its context (nats.go stops it when
		// the context ends): ctx, not one bounding its creation, which
		// nats.go bounds with its default request timeout.
		return b.Registry().Watch(ctx, ">", false)
	}
	wait := 250 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		nw, err := watch()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			d := bus.Jitter(wait)
			wait = min(2*wait, 5*time.Second)
			log.Warn("registry: waiting for a watch of the registry bucket", "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond))
			bus.Sleep(ctx, d)
			continue
		}
		if attempt > 1 {
			log.Info("registry: watching the registry bucket", "attempts", attempt)
		}
		w = nw
		started := time.Now()
		t.follow(ctx, &w, watch, readyOnce, log)
		_ = w.Stop()
		w = nil
		// A watcher that stops at once is not retried at once.
		if time.Since(started) > time.Minute {
			attempt, wait = 0, 250*time.Millisecond
		} else {
			d := bus.Jitter(wait)
			wait = min(2*wait, 5*time.Second)
			bus.Sleep(ctx, d)
		}
	}
	return nil
}

// follow applies the updates of *w until ctx ends or the watcher stops.
// Live workers renew their entries every TTL/3, so a watcher that has
// delivered nothing for TTL/2 while the table holds entries has most
// likely lost its server: follow then replaces it (a new watcher replays
// the bucket), keeping the old one if that fails.
func (t *Table) follow(ctx context.Context, w **bus.Watcher, watch func() (*bus.Watcher, error), loaded func(), log *slog.Logger) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	updates := (*w).Updates()
	last := time.Now()      // when the watcher last delivered
	restarted := time.Now() // when it was last replaced
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			quiet := t.quietLimit()
			if quiet == 0 || now.Sub(last) <= quiet || now.Sub(restarted) <= 2*quiet {
				continue
			}
			restarted = now
			if nw, err := watch(); err == nil {
				_ = (*w).Stop()
				*w, updates = nw, nw.Updates()
			}
		case u, ok := <-updates:
			if !ok {
				if ctx.Err() == nil {
					log.Warn("registry: the registry bucket's watcher stopped; watching again")
				}
				return
			}
			last = time.Now()
			if u == nil {
				t.mu.Lock()
				t.loaded = true
				t.mu.Unlock()
				loaded()
				continue
			}
			t.apply(u)
		}
	}
}

// tickEvery is how often the table looks for late entries: 500ms, or less
// when an entry's TTL is short (tests).
func (t *Table) tickEvery() time.Duration {
	t.mu.RLock()
	defer t.mu.RUnlock()
	d := 500 * time.Millisecond
	for _, s := range t.entries {
		if q := s.e.TTL / 4; q > 0 && q < d {
			d = max(q, 20*time.Millisecond)
		}
	}
	return d
}

// quietLimit is how long the watcher may deliver nothing before it is
// presumed lost: half the shortest TTL in the table, at least 2s (0 when
// the table is empty, since then nothing is expected).
func (t *Table) quietLimit() time.Duration {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var shortest time.Duration
	for _, s := range t.entries {
		if s.e.TTL > 0 && (shortest == 0 || s.e.TTL < shortest) {
			shortest = s.e.TTL
		}
	}
	if shortest == 0 {
		return 0
	}
	return max(shortest/2, 2*time.Second)
}

func (t *Table) apply(u *bus.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if u.Deleted {
		t.removeLocked(u.Key) // a clean stop: gone at once
		if agent, _, ok := strings.Cut(u.Key, "."); ok {
			delete(t.lost, agent)
		}
		return
	}
	var e Entry
	if json.Unmarshal(u.Value, &e) != nil || !bus.ValidToken(e.Agent) || !bus.ValidToken(e.Instance) ||
		u.Key != key(e.Agent, e.Instance) || (e.Proc != "" && !bus.ValidToken(e.Proc)) {
		return
	}
	if e.TTL <= 0 {
		e.TTL = bus.DefaultConfig.RegistryTTL
	}
	if old := t.entries[u.Key]; old != nil && old.e.Beat.After(e.Beat) {
		return // older than what a notice (or the bucket) already gave
	}
	if at, ok := t.stopped[u.Key]; ok && !e.Beat.After(at) {
		return // written before the instance said it stopped
	}
	t.removeLocked(u.Key)
	t.gen++
	s := &slot{e: e, gen: t.gen}
	t.linkLocked(u.Key, s, now)
	if t.visibleLocked(s) {
		delete(t.lost, e.Agent)
	} else {
		// A renewal of a connection found gone: most likely written just
		// before it went and delivered late, but perhaps a worker that
		// took longer to reconnect than the probes waited. Ask it now.
		t.procs[e.Proc].next = now
	}
}

// stoppedFor is how long a table remembers a clean stop heard as a
// notice: past any bucket write in flight at the stop.
const stoppedFor = time.Minute

// applyStop is an instance's notice that it stopped at `at` (its clock).
func (t *Table) applyStop(agent, instance string, at time.Time) {
	k := key(agent, instance)
	t.mu.Lock()
	if !at.IsZero() {
		t.stopped[k] = at
	}
	t.mu.Unlock()
	t.apply(&bus.Entry{Key: k, Deleted: true})
}

// Loaded reports whether the table holds the registry and agents buckets'
// contents: its first watches have caught up. Before that, an agent
// missing from it may be known.
func (t *Table) Loaded() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.loaded && t.knownLoaded
}

// Ready is closed once the table holds the buckets' initial contents (or
// Run has returned).
func (t *Table) Ready() <-chan struct{} { return t.ready }

// Lookup returns the card of a known agent: one with a listed instance,
// one lost within LostGrace, or one in the agents bucket (agents.go) with
// no live worker now, whose sends wait in its queue for the next. Its
// cost does not grow with the size of the table.
func (t *Table) Lookup(agent string) (a2a.AgentCard, bool) {
	c, _, ok := t.Cards(agent)
	return c, ok
}

// Cards returns what Lookup does and the agent's extended card, nil when
// its newest instance registered none.
func (t *Table) Cards(agent string) (card a2a.AgentCard, ext *a2a.AgentCard, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var best *slot
	for _, s := range t.byAgent[agent] {
		if t.visibleLocked(s) && (best == nil || s.e.Beat.After(best.e.Beat)) {
			best = s
		}
	}
	if best == nil {
		if l, ok := t.lost[agent]; ok && time.Since(l.at) < t.lostGrace() {
			return l.card, l.ext, true
		}
		if k, ok := t.known[agent]; ok && t.keptLocked(k, time.Now()) {
			return k.Card, k.ExtendedCard, true
		}
		return a2a.AgentCard{}, nil, false
	}
	return best.e.Card, best.e.ExtendedCard, true
}

// Agents returns the known agents' entries, sorted by name: of an agent
// with listed instances, its newest; of one with none, an entry made of
// its record in the agents bucket, with no Instance and Beat set to when
// a worker of it was last seen. Workers says which are live.
func (t *Table) Agents() []Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	best := make([]*slot, 0, len(t.byAgent))
	for _, m := range t.byAgent {
		var b *slot
		for _, s := range m {
			if t.visibleLocked(s) && (b == nil || s.e.Beat.After(b.e.Beat)) {
				b = s
			}
		}
		if b != nil {
			best = append(best, b)
		}
	}
	now := time.Now()
	for name, k := range t.known {
		if !t.listedLocked(name) && t.keptLocked(k, now) {
			best = append(best, &slot{e: Entry{Agent: name, Card: k.Card, ExtendedCard: k.ExtendedCard,
				CardCheck: k.CardCheck, Beat: k.Seen}})
		}
	}
	// Sort pointers, not entries: a card is large.
	slices.SortFunc(best, func(a, b *slot) int { return strings.Compare(a.e.Agent, b.e.Agent) })
	out := make([]Entry, len(best))
	for i, s := range best {
		out[i] = s.e
	}
	return out
}

// Status says whether a known agent's workers run. GET /agents, the
// operator API's fleet and `a2amesh agents` all show it.
type Status struct {
	// Workers counts its live worker instances.
	Workers int `json:"workers"`
	// LastSeen is when a worker of it last renewed its registration (or
	// wrote its agent record, for an agent with no listed instance).
	LastSeen time.Time `json:"lastSeen"`
	// Queuing: it has no live worker, so its sends wait in its queue for
	// the next one.
	Queuing bool `json:"queuing"`
}

// Listed is a known agent: its newest entry (as Agents gives it) and its
// status.
type Listed struct {
	Entry
	Status Status
}

// Listing returns every known agent with its status, sorted by name.
func (t *Table) Listing() []Listed {
	entries, workers := t.Agents(), t.Workers()
	out := make([]Listed, len(entries))
	for i, e := range entries {
		n := workers[e.Agent]
		out[i] = Listed{Entry: e, Status: Status{Workers: n, LastSeen: e.Beat.UTC(), Queuing: n == 0}}
	}
	return out
}

// Workers returns how many listed instances each listed agent has: the
// workers serving it now, as far as the table knows.
func (t *Table) Workers() map[string]int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]int, len(t.byAgent))
	for agent, m := range t.byAgent {
		for _, s := range m {
			if t.visibleLocked(s) {
				out[agent]++
			}
		}
	}
	return out
}

// ---- liveness checks ----

// prober pings the instances of a table whose heartbeats are late, and
// probes the connections its entries name (proc.go).
type prober struct {
	t       *Table
	nc      conn // nil: no pings, entries expire by their heartbeats
	log     *slog.Logger
	sem     chan struct{} // pings in flight
	procSem chan struct{} // connection probes in flight
	wg      sync.WaitGroup
}

// loop checks the table's entries every tick until ctx ends, then waits
// for the pings and probes in flight. Late heartbeats are looked for every
// tickEvery; connections, when probed, every procTick.
func (p *prober) loop(ctx context.Context) {
	defer p.wg.Wait()
	procs := p.nc != nil && p.t.ProbeEvery >= 0
	every := p.t.tickEvery()
	tickOf := func(scan time.Duration) time.Duration {
		if procs {
			return min(scan, procTick)
		}
		return scan
	}
	tick := time.NewTicker(tickOf(every))
	defer tick.Stop()
	var nextScan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p.sampleConn(now)
			if procs {
				p.probeProcs(ctx, now)
			}
			if now.Before(nextScan) {
				continue
			}
			if d := p.t.tickEvery(); d != every {
				every = d
				tick.Reset(tickOf(d))
			}
			nextScan = now.Add(every - every/8) // a tick early rather than one late
			p.probeDue(ctx, now)
		}
	}
}

// sampleConn notes the table's own server and a reconnect of its
// connection; after a reconnect, what probes found before counts no more.
func (p *prober) sampleConn(now time.Time) {
	if p.nc == nil {
		return
	}
	n, own := p.nc.Reconnects(), p.nc.ServerID()
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ownServer = own
	if n != t.reconnects {
		t.reconnects, t.reconnected = n, now
		for _, ps := range t.procs {
			ps.missSince = time.Time{}
		}
	}
}

// steadyLocked reports whether "no responders" can be believed: the
// table's connection is up and did not reconnect lately. t.mu is held.
func (p *prober) steadyLocked(now time.Time) bool {
	return p.nc.Connected() && now.Sub(p.t.reconnected) > reconnectGuard
}

type probe struct {
	key, agent, instance string
	gen                  uint64
	timeout              time.Duration
}

// probeDue starts a ping of every entry that is due and not already being
// pinged, up to maxProbes in flight (the rest wait for the next tick).
// Entries of a connection found gone are not pinged: they go when their
// heartbeats expire, or come back when it answers again.
func (p *prober) probeDue(ctx context.Context, now time.Time) {
	t := p.t
	var due []probe
	t.mu.Lock()
	t.forgetLost(now)
	for id, at := range t.seen {
		if now.Sub(at) > time.Minute { // a server no connection answered from lately
			delete(t.seen, id)
		}
	}
	for id, until := range t.buried {
		if now.After(until) {
			delete(t.buried, id)
		}
	}
	for k, at := range t.stopped {
		if now.Sub(at) > stoppedFor {
			delete(t.stopped, k)
		}
	}
	for k, s := range t.entries {
		if s.probing || now.Before(s.due()) {
			continue
		}
		if !t.visibleLocked(s) {
			if !now.Before(s.e.Beat.Add(s.e.TTL)) {
				t.removeLocked(k) // its agent's fate was settled when its connection went
			}
			continue
		}
		if p.nc == nil { // nothing to ask: expire as heartbeats say
			if !now.Before(s.e.Beat.Add(s.e.TTL)) {
				t.dropLocked(k, now)
			}
			continue
		}
		if len(due) >= cap(p.sem) {
			break
		}
		s.probing = true
		due = append(due, probe{key: k, agent: s.e.Agent, instance: s.e.Instance, gen: s.gen, timeout: pingTimeout(s.e.TTL)})
	}
	t.mu.Unlock()
	for i, pr := range due {
		select {
		case p.sem <- struct{}{}:
		default:
			// Saturated: release the rest for a later tick.
			t.mu.Lock()
			for _, rest := range due[i:] {
				if s := t.entries[rest.key]; s != nil && s.gen == rest.gen {
					s.probing = false
				}
			}
			t.mu.Unlock()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.sem }()
			err := ping(ctx, p.nc, InstanceSubject(pr.agent, pr.instance), pr.timeout)
			if ctx.Err() != nil {
				return
			}
			p.settle(pr, err, time.Now())
		}()
	}
}

// settle applies a ping's outcome to the entry it was for.
func (p *prober) settle(pr probe, err error, now time.Time) {
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.entries[pr.key]
	if s == nil || s.gen != pr.gen {
		return // deleted, or renewed by a heartbeat meanwhile
	}
	s.probing = false
	if err == nil {
		if s.misses > 0 || now.After(s.e.Beat.Add(s.e.TTL)) {
			p.log.Debug("registry: heartbeat late but the instance answers; kept", "agent", pr.agent, "instance", pr.instance)
		}
		s.misses = 0
		s.until = now.Add(probeEvery(s.e.TTL))
		return
	}
	expired := !now.Before(s.e.Beat.Add(s.e.TTL))
	definite := errors.Is(err, bus.ErrNoResponders) && now.Sub(t.reconnected) > reconnectGuard
	connected := p.nc.Connected()
	if connected || definite {
		s.misses++
	}
	drop := (definite && (s.misses >= 2 || expired)) || (expired && s.misses >= 3)
	if drop {
		p.log.Info("registry: instance gone (heartbeat late, no answer to pings)", "agent", pr.agent, "instance", pr.instance,
			"err", err, "late_ms", now.Sub(s.e.Beat).Milliseconds())
		t.dropLocked(pr.key, now)
		return
	}
	s.until = now.Add(min(missRetry, probeEvery(s.e.TTL)))
}
