package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Building blocks of the scale and registry benchmarks: an embedded NATS
// server on a loopback port, bus connections of their own (one per worker
// or edge, as separate processes would have), and an in-process edge.

// openAttempt bounds one attempt to open the bus layout.
const openAttempt = 5 * time.Second

// startNATS starts an embedded NATS+JetStream server with its files in dir,
// serving clients on 127.0.0.1 at a free port.
func startNATS(dir string) (*natsnode.Server, error) {
	return natsnode.StartServer(natsnode.ServerConfig{DataDir: dir, Host: "127.0.0.1", Port: -1})
}

// openBus dials url with a connection of its own and opens the layout and
// the task store on it, retrying for up to wait (NATS may still be
// starting). The caller closes the connection.
func openBus(ctx context.Context, url, name string, cfg bus.Config, wait time.Duration) (*taskstore.Store, *nats.Conn, error) {
	nc, err := bus.Dial(bus.DialConfig{URL: url, Name: name})
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(wait)
	for attempt := 1; attempt <= 1000; attempt++ {
		octx, cancel := context.WithTimeout(ctx, openAttempt)
		s, err := openStore(octx, nc, cfg)
		cancel()
		if err == nil {
			return s, nc, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			nc.Close()
			return nil, nil, fmt.Errorf("bench: opening the bus at %s: %w", url, err)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	nc.Close()
	return nil, nil, errors.New("bench: opening the bus: too many attempts")
}

func openStore(ctx context.Context, nc *nats.Conn, cfg bus.Config) (*taskstore.Store, error) {
	b, err := bus.Open(ctx, nc, cfg)
	if err != nil {
		return nil, err
	}
	return taskstore.Open(ctx, b)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// edgeNode is an edge served in this process on a loopback port, with its
// own NATS connection and registry table.
type edgeNode struct {
	URL   string
	Table *registry.Table
	Store *taskstore.Store

	nc     *nats.Conn
	srv    *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// startEdge starts an edge against the NATS at natsURL and returns once its
// registry table holds the bucket's contents.
func startEdge(ctx context.Context, natsURL string, cfg bus.Config, log *slog.Logger) (_ *edgeNode, err error) {
	b, nc, err := openBus(ctx, natsURL, "a2amesh-bench-edge", cfg, 30*time.Second)
	if err != nil {
		return nil, err
	}
	n := &edgeNode{Store: b, nc: nc, Table: registry.NewTable(b.Bus())}
	n.Table.LostGrace = -1 // the registry bench times the drop of a crashed worker
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	rctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(1)
	go func() { // the bus's upkeep, as an edge role runs it
		defer n.wg.Done()
		_ = b.Run(rctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.Table.Run(rctx); err != nil && rctx.Err() == nil {
			log.Error("bench: edge registry watcher stopped", "err", err)
		}
	}()
	select {
	case <-n.Table.Ready():
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		return nil, errors.New("bench: edge registry table not ready after 30s")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: edge listen: %w", err)
	}
	n.URL = "http://" + ln.Addr().String()
	n.srv = edge.NewServer(edge.New(edge.Config{Store: b, Registry: n.Table, Logger: log}), log)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("bench: edge stopped", "err", err)
		}
	}()
	return n, nil
}

// Close stops the edge (requests in flight get 5s), its table and its
// connection.
func (n *edgeNode) Close() {
	n.once.Do(func() {
		if n.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := n.srv.Shutdown(ctx); err != nil {
				_ = n.srv.Close()
			}
			cancel()
		}
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		n.nc.Close()
	})
}

// quietLogger returns l, or when l is nil a logger of warnings and errors
// to stderr.
func quietLogger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// InProcMesh is an embedded NATS server on a loopback port and an edge in
// this process, each with its own connection.
type InProcMesh struct {
	NATSURL, EdgeURL string
	srv              *natsnode.Server
	edge             *edgeNode
	dir              string
}

// StartInProcMesh starts an InProcMesh with its JetStream files in a new
// directory under tempDir (removed by Close) and layout configuration cfg.
func StartInProcMesh(ctx context.Context, tempDir string, cfg bus.Config, log *slog.Logger) (_ *InProcMesh, err error) {
	m := &InProcMesh{}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.dir, err = os.MkdirTemp(tempDir, "a2amesh-bench-*"); err != nil {
		return nil, err
	}
	if m.srv, err = startNATS(m.dir); err != nil {
		return nil, err
	}
	m.NATSURL = m.srv.ClientURL()
	if m.edge, err = startEdge(ctx, m.NATSURL, cfg, quietLogger(log)); err != nil {
		return nil, err
	}
	m.EdgeURL = m.edge.URL
	return m, nil
}

// Close stops the edge and the server and removes the files.
func (m *InProcMesh) Close() {
	if m.edge != nil {
		m.edge.Close()
	}
	if m.srv != nil {
		m.srv.Shutdown()
	}
	if m.dir != "" {
		_ = os.RemoveAll(m.dir)
	}
}
