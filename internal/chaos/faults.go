package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault modes.
const (
	FaultKill      = "kill"      // SIGKILL any role, then start it again on the same data
	FaultPause     = "pause"     // SIGSTOP a NATS node for PauseFor, then SIGCONT
	FaultPartition = "partition" // cut a NATS node's route traffic for PartitionFor
)

// Fault is one fault the harness injected and how the fleet recovered.
type Fault struct {
	Kind   string
	Role   string
	Member string
	At     time.Duration // since the harness started
	at     time.Time
	// Lasted is how long the fault itself lasted: for a kill, SIGKILL to
	// the process gone; for pause and partition, until the harness ended
	// them.
	Lasted time.Duration
	// Ready is the restart (or the end of the fault) to the role serving
	// again: a NATS node listening, an edge's /healthz answering 200, a
	// worker's new registry entry written.
	Ready    time.Duration
	ReadyErr string
	// CaughtUp (NATS faults) is the end of the fault to every stream and
	// durable consumer current on all replicas; -1 when not within the
	// budget.
	CaughtUp    time.Duration
	CaughtUpErr string
	// Isolated (partitions): the rest of the cluster saw the node offline
	// or behind during the cut, IsolatedAfter the cut began.
	Isolated      bool
	IsolatedAfter time.Duration
	Notes         []string
}

// injector injects faults every KillMin..KillMax until its context ends.
type injector struct {
	cfg *Config
	f   *fleet
	rng *rand.Rand

	natsSettled atomic.Bool // the cluster caught up after the last NATS fault
	catchups    sync.WaitGroup

	mu     sync.Mutex
	faults []*Fault
}

func newInjector(cfg *Config, f *fleet) *injector {
	in := &injector{cfg: cfg, f: f, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4a05))}
	in.natsSettled.Store(true)
	return in
}

func (in *injector) run(ctx context.Context) {
	for i := 0; i < 1_000_000; i++ {
		wait := in.cfg.KillMin
		if span := in.cfg.KillMax - in.cfg.KillMin; span > 0 {
			wait += time.Duration(in.rng.Int64N(int64(span)))
		}
		sleepCtx(ctx, wait)
		if ctx.Err() != nil {
			break
		}
		victim, kind := in.pick()
		if victim == nil {
			continue
		}
		in.inject(ctx, victim, kind)
	}
	in.catchups.Wait()
}

// pick chooses a victim among every role (a NATS node only when the
// cluster caught up since the last NATS fault), then a fault for it.
func (in *injector) pick() (*member, string) {
	var cands []*member
	for _, m := range in.f.all {
		if m.Role == RoleNATS && !in.natsSettled.Load() {
			continue
		}
		if m.Role != RoleNATS && !in.cfg.hasFault(FaultKill) {
			continue
		}
		if m.current() == nil {
			continue // down (a role exit being restarted)
		}
		cands = append(cands, m)
	}
	if len(cands) == 0 {
		return nil, ""
	}
	m := cands[in.rng.IntN(len(cands))]
	if m.Role != RoleNATS {
		return m, FaultKill
	}
	var kinds []string
	for _, k := range in.cfg.Faults {
		if k == FaultPartition && in.f.proxies == nil {
			continue
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		return nil, ""
	}
	return m, kinds[in.rng.IntN(len(kinds))]
}

func (in *injector) record(ft *Fault) {
	in.mu.Lock()
	in.faults = append(in.faults, ft)
	in.mu.Unlock()
}

func (in *injector) snapshot() []Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]Fault, len(in.faults))
	for i, f := range in.faults {
		out[i] = *f
	}
	return out
}

// inject applies one fault and waits until the victim serves again. The
// recovery steps run under their own deadline, not ctx: a fault started
// just before the load ends still gets its restart.
func (in *injector) inject(ctx context.Context, m *member, kind string) {
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ft := &Fault{Kind: kind, Role: m.Role, Member: m.Name, at: time.Now()}
	ft.At = ft.at.Sub(in.f.t0)
	var before map[string]bool
	if m.Role == RoleWorker {
		// The keys before the kill, to spot the restarted worker's new one.
		var err error
		for i := 0; i < 10; i++ {
			if before, err = in.f.admin.registryKeys(rctx); err == nil {
				break
			}
			sleepCtx(rctx, 200*time.Millisecond)
		}
		if err != nil {
			before = nil
		}
	}
	if m.Role == RoleNATS {
		in.natsSettled.Store(false)
	}
	switch kind {
	case FaultKill:
		m.log.note("SIGKILL by the chaos harness")
		p, err := m.kill()
		ft.Lasted = time.Since(ft.at)
		if err != nil {
			ft.ReadyErr = err.Error()
		}
		if p == nil {
			ft.ReadyErr = "was not running"
		}
		start := time.Now()
		if _, err := m.start(in.f.sp, in.f.onExit); err != nil {
			ft.ReadyErr = err.Error()
			break
		}
		var rerr error
		switch m.Role {
		case RoleNATS:
			rerr = in.f.waitListening(rctx, m, 60*time.Second)
		case RoleEdge:
			_, rerr = in.f.waitHealthy(rctx, m, 60*time.Second)
		case RoleWorker:
			if before == nil {
				rerr = fmt.Errorf("registry unreadable before the kill: restart not timed")
			} else {
				_, rerr = in.f.waitNewRegistration(rctx, m, before, 60*time.Second)
			}
		}
		ft.Ready = time.Since(start)
		if rerr != nil {
			ft.ReadyErr = rerr.Error()
		}
	case FaultPause:
		if err := m.pause(); err != nil {
			ft.ReadyErr = err.Error()
			break
		}
		sleepCtx(ctx, in.cfg.PauseFor)
		ft.Lasted = time.Since(ft.at)
		if err := m.resume(); err != nil {
			ft.ReadyErr = err.Error()
		}
	case FaultPartition:
		idx := in.natsIndex(m)
		links := in.f.proxies.links(idx)
		m.log.note("route traffic cut by the chaos harness (proxied connections to the other nodes: %v)", links)
		for other, n := range links {
			if n == 0 {
				ft.Notes = append(ft.Notes, fmt.Sprintf("no proxied connection between %s and nats-%d at the cut: their route bypasses the proxies", m.Name, other))
			}
		}
		in.f.proxies.cut(idx, true)
		// The rest of the cluster must notice: a route that bypasses the
		// proxies (one nats-server made to an address another node
		// gossiped) would make the cut a no-op.
		end := time.Now().Add(in.cfg.PartitionFor)
		for i := 0; i < 10_000 && time.Now().Before(end) && ctx.Err() == nil; i++ {
			other := in.f.nodeAdmin[(idx+1+i%2)%len(in.f.nodeAdmin)]
			if !ft.Isolated && other.seesOffline(ctx, m.serverName) {
				ft.Isolated = true
				ft.IsolatedAfter = time.Since(ft.at)
			}
			sleepCtx(ctx, min(time.Until(end), 500*time.Millisecond))
		}
		in.f.proxies.cut(idx, false)
		if !ft.Isolated && time.Since(ft.at) >= in.cfg.PartitionFor {
			ft.ReadyErr = "the cut did not isolate the node: the rest of the cluster still saw it current (a route bypassing the harness's proxies?)"
		}
		m.log.note("route traffic restored by the chaos harness")
		ft.Lasted = time.Since(ft.at)
	}
	in.record(ft)
	iso := ""
	if ft.Isolated {
		iso = fmt.Sprintf(", seen cut off by the others after %v", ft.IsolatedAfter.Round(time.Millisecond))
	}
	in.cfg.logf("fault %-9s %-15s at +%6.1fs: lasted %v, serving again after %v%s %s %s", kind, m.Name, ft.At.Seconds(),
		ft.Lasted.Round(time.Millisecond), ft.Ready.Round(time.Millisecond), iso, ft.ReadyErr, strings.Join(ft.Notes, "; "))
	if m.Role == RoleNATS {
		in.catchups.Add(1)
		go func() {
			defer in.catchups.Done()
			ended := time.Now()
			took, err := in.f.admin.waitCaughtUp(context.Background(), in.cfg.Replicas, in.cfg.CatchUpBudget)
			in.mu.Lock()
			ft.CaughtUp = took
			if err != nil {
				ft.CaughtUp, ft.CaughtUpErr = -1, err.Error()
			}
			in.mu.Unlock()
			if err != nil {
				// No more NATS faults: the next would hit a cluster
				// that has not recovered from this one.
				in.cfg.logf("cluster NOT caught up after the %s of %s: %v; no more NATS faults", kind, m.Name, err)
				return
			}
			in.cfg.logf("cluster caught up %v after the %s of %s ended", time.Since(ended).Round(time.Millisecond), kind, m.Name)
			in.natsSettled.Store(true)
		}()
	}
}

func (in *injector) natsIndex(m *member) int {
	for i, n := range in.f.nats {
		if n == m {
			return i
		}
	}
	panic(fmt.Sprintf("chaos: %s is not a NATS node", m.Name))
}
