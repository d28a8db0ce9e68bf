package bus

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// When the disk under an embedded server's JetStream fills up (before
// JetStream's own limit, MaxStore, refuses writes cleanly: other files on
// the disk, a raft log), nats-server does not recover by itself once space
// returns:
//
//   - a single node marks each stream whose write failed ("critical write
//     error: no space left on device") and from then on answers none of
//     its publishes (clients time out) until the server restarts; reads
//     still work;
//   - a clustered node stops JetStream altogether ("JetStream out of
//     resources, will be DISABLED"); the other nodes carry on without it
//     (two of three keep the quorum), and it stays out until restarted.
//
// watchStore does that restart in-process: every storeCheckEvery it looks
// for either state and, once the data directory's file system has
// storeRecoverFree bytes free again, restarts JetStream (its streams are
// read back from disk; every write that was acknowledged had reached the
// files, and the failed one had not been acknowledged). Restarts are
// spaced out (restartGapMin doubling to restartGapMax) so that a fault
// that is not space (a file system that refuses writes) does not make it
// spin.

var (
	// storeCheckEvery spaces the checks.
	storeCheckEvery = 2 * time.Second
	// storeRecoverFree is the free space JetStream's data directory needs
	// before JetStream is restarted (32 MiB; atomic: tests change it).
	storeRecoverFree atomic.Int64
	// restartGapMin and restartGapMax bound the wait between restarts.
	restartGapMin = 10 * time.Second
	restartGapMax = 5 * time.Minute
)

func init() { storeRecoverFree.Store(32 << 20) }

// storeWatch is the state of one server's watch.
type storeWatch struct {
	once     sync.Once
	stop     chan struct{}
	done     chan struct{}
	restarts atomic.Int64
}

// watchStore runs until s.watch.stop is closed.
func (s *Server) watchStore(log *slog.Logger) {
	defer close(s.watch.done)
	tick := time.NewTicker(storeCheckEvery)
	defer tick.Stop()
	var (
		faulty      bool      // a fault was seen and not yet cleared
		lastRestart time.Time // the last restart
		gap         = restartGapMin
		lastWait    time.Time // the last "waiting for space" line
	)
	for {
		select {
		case <-s.watch.stop:
			return
		case <-tick.C:
		}
		why := s.storeFault()
		if why == "" {
			if faulty {
				log.Info("JetStream writes again on this node", "restarts", s.watch.restarts.Load())
				faulty = false
			}
			if !lastRestart.IsZero() && time.Since(lastRestart) > restartGapMax {
				gap = restartGapMin // healthy for long enough: start over
			}
			continue
		}
		free, need := diskFree(s.dataDir), storeRecoverFree.Load()
		if !faulty {
			faulty = true
			log.Error("JetStream stopped writing on this node; it is restarted once its disk has space",
				"cause", why, "data", s.dataDir, "free_bytes", free, "needed_bytes", need)
		}
		if free >= 0 && free < need {
			if time.Since(lastWait) >= time.Minute {
				lastWait = time.Now()
				log.Warn("JetStream waits for disk space: free some, or give JetStream a larger disk",
					"data", s.dataDir, "free_bytes", free, "needed_bytes", need)
			}
			continue
		}
		if !lastRestart.IsZero() && time.Since(lastRestart) < gap {
			continue
		}
		if !lastRestart.IsZero() {
			gap = min(2*gap, restartGapMax)
		}
		lastRestart = time.Now()
		s.watch.restarts.Add(1)
		log.Warn("restarting JetStream on this node", "cause", why, "free_bytes", free)
		if err := s.restartJetStream(); err != nil {
			log.Error("JetStream restart failed; will try again", "err", err, "retry_in", gap)
		}
	}
}

// storeFault says why JetStream on this node no longer writes, or "".
func (s *Server) storeFault() string {
	if !s.ns.JetStreamEnabled() {
		return "JetStream was disabled (out of space, or a write was refused)"
	}
	if s.ns.JetStreamIsClustered() {
		// A clustered node that cannot write disables JetStream (above);
		// its streams' state is the raft groups' business.
		return ""
	}
	h := s.ns.Healthz(&server.HealthzOptions{Details: true})
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	return ""
}

// restartJetStream stops JetStream (if still up) and starts it again with
// the server's settings, reading every stream back from disk.
func (s *Server) restartJetStream() error {
	if s.ns.JetStreamEnabled() {
		if err := s.ns.ShutdownJetStream(); err != nil {
			return err
		}
	}
	return s.ns.EnableJetStream(&server.JetStreamConfig{
		StoreDir:   s.dataDir,
		MaxMemory:  s.maxMemory,
		MaxStore:   s.maxStore, // 0: 75% of the disk space free now
		SyncAlways: s.syncAlways,
		Strict:     true,
		CompressOK: true,
	})
}

// JetStreamRestarts is how many times the server restarted JetStream after
// a write fault (watchStore).
func (s *Server) JetStreamRestarts() int64 { return s.watch.restarts.Load() }
