package agentrt

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/a2amesh/a2amesh/registry"
)

// routes is a worker's view of the live fleet, for its agent's calls to
// other agents: one registry watcher per worker, started by the first call,
// instead of a read of the registry bucket per call.
type routes struct {
	once    sync.Once
	table   *registry.Table
	running atomic.Bool
	wg      sync.WaitGroup
}

// start runs the table until ctx (the worker's) ends.
func (r *routes) start(ctx context.Context, w *Worker) {
	r.once.Do(func() {
		r.table = registry.NewTable(w.Store.Bus())
		// No connection probes: a table in every worker probing every
		// worker's connection a few times a second would cost the fleet
		// workers² requests. A call to an agent whose last worker just
		// crashed is queued, as before, until its heartbeats are late.
		r.table.ProbeEvery = -1
		r.running.Store(true)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.running.Store(false)
			if err := r.table.Run(ctx); err != nil && ctx.Err() == nil {
				w.Logger.Warn("registry watch for agent calls ended; calls read the registry directly", "err", err)
			}
		}()
	})
}

// wait waits for the table's goroutine, once the worker's context ended.
func (r *routes) wait() { r.wg.Wait() }

// liveAgent reports whether agent may be called: it is known to the mesh
// (registry.Routable). The table answers once it has caught up; an agent
// it does not know (perhaps one that joined a moment ago) and any question
// asked before it caught up or after its watch failed go to the registry
// itself.
func (w *Worker) liveAgent(ctx context.Context, agent string) (bool, error) {
	r := &w.routes
	if w.runCtx != nil {
		r.start(w.runCtx, w)
	}
	if r.table != nil && r.running.Load() {
		select {
		case <-r.table.Ready():
			if _, ok := r.table.Lookup(agent); ok {
				return true, nil
			}
		default:
		}
	}
	return registry.Routable(ctx, w.Store.Bus(), agent)
}
