package natsnode

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
// storeRecoverFree bytes free again, restarts the server with the same
// options (restart). JetStream reads its streams back from disk: every
// write that was acknowledged had reached the files (a single node writes
// each message through to its file before acknowledging it; a cluster has
// it on the other nodes), and the write that failed was not
// acknowledged. A fault that is not for lack of space (the node was
// removed from its cluster, the file system refused a write) is left to
// the operator: nats-server says when it stops JetStream for lack of
// space, a stream's write error names it, and otherwise a disk still
// short of room when the fault is seen counts as such. Restarts are
// spaced out (restartGapMin doubling to restartGapMax) in case the disk
// fills again.

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
	// outOfSpace is set when nats-server says it stops JetStream for
	// lack of space (serverLog), cleared once JetStream writes again.
	outOfSpace atomic.Bool
}

// watchStore runs until s.watch.stop is closed.
func (s *Server) watchStore(log *slog.Logger) {
	defer close(s.watch.done)
	tick := time.NewTicker(storeCheckEvery)
	defer tick.Stop()
	var (
		faulty      bool      // a fault was seen and not yet cleared
		forSpace    bool      // ... and the disk was full when it was seen
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
			s.watch.outOfSpace.Store(false)
			if !lastRestart.IsZero() && time.Since(lastRestart) > restartGapMax {
				gap = restartGapMin // healthy for long enough: start over
			}
			continue
		}
		free, need := diskFree(s.dataDir), storeRecoverFree.Load()
		if !faulty {
			// For lack of space: nats-server said so, or the disk is
			// (still) short of room. Otherwise (the node was removed from
			// its cluster, the file system refused a write) a restart
			// would not mend it.
			faulty = true
			forSpace = s.watch.outOfSpace.Load() || strings.Contains(why, "no space left") ||
				free < 0 || free < need || why == serverDown
			if !forSpace {
				log.Error("JetStream stopped on this node, not for lack of disk space; restart the node once the cause is fixed",
					"cause", why, "data", s.dataDir, "free_bytes", free)
			} else {
				log.Error("JetStream stopped writing on this node; it is restarted once its disk has space",
					"cause", why, "data", s.dataDir, "free_bytes", free, "needed_bytes", need)
			}
		}
		if !forSpace {
			continue
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
		log.Warn("restarting this NATS server to restart JetStream; its clients reconnect", "cause", why, "free_bytes", free)
		if err := s.restart(); err != nil {
			log.Error("NATS server restart failed; will try again", "err", err, "retry_in", gap)
		}
	}
}

// serverDown is the fault of a server a restart failed to start again.
const serverDown = "the server is down (a restart failed)"

// storeFault says why JetStream on this node no longer writes, or "".
func (s *Server) storeFault() string {
	ns := s.current()
	if !ns.Running() {
		return serverDown
	}
	if !ns.JetStreamEnabled() {
		return "JetStream was disabled (out of space, or a write was refused)"
	}
	if ns.JetStreamIsClustered() {
		// A clustered node that cannot write disables JetStream (above);
		// its streams' state is the raft groups' business.
		return ""
	}
	h := ns.Healthz(&server.HealthzOptions{Details: true})
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	return ""
}

// restart stops the server and starts it again with the same options:
// JetStream reads every stream back from disk before the server takes
// routes and clients again, as at any start. Its clients reconnect (over
// TCP, or in-process through Connect). Re-enabling JetStream on the
// running server instead would answer reads "stream not found" while
// the streams are being recovered, to clients already connected.
func (s *Server) restart() error {
	old := s.current()
	old.Shutdown()
	old.WaitForShutdown()
	ns, err := startNATS(s.opts, s.log, &s.watch.outOfSpace)
	if err != nil {
		return err // the server stays down: the watch tries again
	}
	s.mu.Lock()
	s.ns = ns
	s.mu.Unlock()
	return nil
}

// JetStreamRestarts is how many times the server was restarted after a
// JetStream write fault (watchStore).
func (s *Server) JetStreamRestarts() int64 { return s.watch.restarts.Load() }

// JetStreamEnabled reports whether JetStream runs on this server (nats-server
// stops it on a clustered node whose disk is full).
func (s *Server) JetStreamEnabled() bool { return s.current().JetStreamEnabled() }
