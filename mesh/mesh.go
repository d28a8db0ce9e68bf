// Package mesh runs a whole a2amesh in one process: an embedded NATS
// server with JetStream, one HTTP edge that serves A2A, the registry table
// the edge routes by, and a worker for each built-in agent (echo, slow,
// ask, upper, planner, tck; see package agentrt/agents).
//
// It is what `a2amesh dev` runs, and it is meant to be embedded: in a
// program that wants an A2A endpoint without running NATS, or in tests
// that need a real mesh (package mesh/meshtest starts one per test).
// Workers of your own join it over the bus: set Config.NATSListen and
// point an agentrt.Worker at NATSURL, or use Bus in the same process.
//
// Start returns once the mesh serves requests and every built-in agent is
// registered; Close stops everything and returns when it has stopped.
package mesh

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Config configures a mesh. Only DataDir is required; the zero value of
// every other field is a working default.
type Config struct {
	// LostGrace is the edge's registry grace for agents whose workers
	// stopped answering (registry.Table.LostGrace; 0: the default).
	LostGrace time.Duration
	// Listen is the edge's HTTP address (default 127.0.0.1:8080; port 0
	// picks a free one).
	Listen string
	// GRPCListen, when set (host:port; port 0 picks a free one), is where
	// the edge also serves the A2A gRPC binding. Edge.GRPCURL, the address
	// cards advertise for it, defaults to the address listened on.
	GRPCListen string
	// DataDir holds JetStream's files (required).
	DataDir string
	// NATSListen, when set (host:port), also serves NATS clients there so
	// external workers and tools can join; by default NATS is in-process.
	NATSListen string
	// Edge configures the edge; its Bus, Registry and Logger are filled in
	// here, and DefaultAgent defaults to echo. Its Metrics, when set, are
	// shared by the built-in workers: one /metrics for the whole mesh.
	Edge edge.Config
	// TaskTimeout bounds one run of an agent (default 120s).
	TaskTimeout time.Duration
	// DelegateWait bounds an agent's wait for an agent it calls
	// (agentrt.Worker.DelegateWait; 0: agentrt.DefaultMaxWait).
	DelegateWait time.Duration
	// StaleAfter and SweepEvery: see agentrt.Worker (defaults 30s, 10m).
	StaleAfter, SweepEvery time.Duration
	// Concurrency is each built-in worker's task limit (default 64).
	Concurrency int
	// SyncAlways fsyncs every JetStream write (survives an OS crash;
	// slower).
	SyncAlways bool
	// Bus sets the bus's JetStream settings (ack wait, retention, task
	// limits; see bus.Config; zero fields take bus.DefaultConfig's).
	Bus bus.Config
	// TLS, when set, is what the edge serves HTTPS and gRPC with (its
	// certificate; with ClientCAs and a ClientAuth that verifies, client
	// certificates, which Edge.ClientCertPrincipal turns into principals).
	TLS *tls.Config
	// Audit turns on the audit log (package audit): the edge records every
	// state-changing call and every denial in the stream A2A_AUDIT, kept
	// for AuditRetention (0: audit.DefaultRetention).
	Audit          bool
	AuditRetention time.Duration
	// Logger receives the logs of the edge, the workers and the registry
	// table (default slog.Default()).
	Logger *slog.Logger
}

// Mesh is a running mesh, from Start until Close.
type Mesh struct {
	srv    *natsnode.Server
	nc     *nats.Conn
	bus    *bus.Bus
	store  *taskstore.Store
	http   *http.Server
	ln     net.Listener
	grpc   *grpc.Server
	grpcLn net.Listener
	scheme string // of URL: http, or https with Config.TLS
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
	once   sync.Once
}

// Start starts a mesh and returns once its edge serves requests on
// cfg.Listen and every built-in agent is registered. ctx bounds the start
// only: the mesh runs until Close. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (_ *Mesh, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("mesh: DataDir is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:8080"
	}
	if cfg.Edge.DefaultAgent == "" {
		cfg.Edge.DefaultAgent = "echo"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Mesh{log: cfg.Logger}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	// Take the HTTP port first: a busy port fails before anything starts.
	if m.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("mesh: listen: %w", err)
	}
	m.scheme = "http"
	if cfg.TLS != nil {
		m.ln, m.scheme = tls.NewListener(m.ln, cfg.TLS), "https"
	}
	if cfg.GRPCListen != "" {
		if m.grpcLn, err = net.Listen("tcp", cfg.GRPCListen); err != nil {
			return nil, fmt.Errorf("mesh: grpc listen: %w", err)
		}
		if cfg.Edge.GRPCURL == "" {
			cfg.Edge.GRPCURL = m.grpcLn.Addr().String()
		}
	}
	scfg := natsnode.ServerConfig{DataDir: filepath.Join(cfg.DataDir, "jetstream"), DontListen: cfg.NATSListen == "", SyncAlways: cfg.SyncAlways}
	if cfg.NATSListen != "" {
		host, port, err := net.SplitHostPort(cfg.NATSListen)
		if err != nil {
			return nil, fmt.Errorf("mesh: nats listen address: %w", err)
		}
		var p int
		if _, err := fmt.Sscan(port, &p); err != nil {
			return nil, fmt.Errorf("mesh: nats listen port: %w", err)
		}
		scfg.Host, scfg.Port = host, p
	}
	if m.srv, err = natsnode.StartServer(scfg); err != nil {
		return nil, err
	}
	if m.nc, err = m.srv.Connect("a2amesh-dev"); err != nil {
		return nil, fmt.Errorf("mesh: connect: %w", err)
	}
	if m.bus, err = bus.Open(ctx, m.nc, cfg.Bus); err == nil {
		m.store, err = taskstore.Open(ctx, m.bus)
	}
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = m.store.Run(runCtx) // the task store's upkeep (retention), until runCtx ends
	}()

	table := registry.NewTable(m.bus)
	table.Logger = cfg.Logger
	table.LostGrace = cfg.LostGrace
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = table.Run(runCtx) // until runCtx ends, riding out what NATS does
	}()
	builtin := agents.Builtin()
	for name, a := range builtin {
		w := &agentrt.Worker{Store: m.store, Agent: a, Name: name, Concurrency: cfg.Concurrency,
			Timeout: cfg.TaskTimeout, DelegateWait: cfg.DelegateWait, StaleAfter: cfg.StaleAfter,
			SweepEvery: cfg.SweepEvery, Metrics: cfg.Edge.Metrics, Logger: cfg.Logger}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := w.Run(runCtx); err != nil {
				m.log.Error("worker stopped", "agent", name, "err", err)
			}
		}()
	}
	if err := waitAgents(ctx, table, builtin); err != nil {
		return nil, err
	}

	ecfg := cfg.Edge
	ecfg.Store, ecfg.Registry, ecfg.Logger = m.store, table, cfg.Logger
	if cfg.Audit && ecfg.Audit == nil {
		ecfg.Audit = audit.New(m.bus, cfg.AuditRetention, cfg.Logger)
	}
	// Push delivery (with Edge.Push.Enabled) runs beside the edge, which
	// serves the push-config methods from it, and stops with the mesh.
	// Start returns once it runs (it retries what NATS refuses meanwhile,
	// bounded by ctx here), so the mesh is ready when Start returns.
	pusher, err := edge.NewPushDeliverer(ecfg)
	if err != nil {
		return nil, err
	}
	ecfg.PushDeliverer = pusher
	e := edge.New(ecfg)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = e.Run(runCtx) // rate limits shared with other edges on the bus, the audit log, until runCtx ends
	}()
	if pusher != nil {
		ran := make(chan error, 1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			ran <- pusher.Run(runCtx)
		}()
		select {
		case <-pusher.Ready():
		case err := <-ran: // a bad signing key; nil: runCtx ended
			if err != nil {
				return nil, err
			}
		case <-ctx.Done(): // Close (deferred above) ends runCtx, and so Run
			return nil, fmt.Errorf("mesh: push delivery not started: %w", ctx.Err())
		}
	}
	m.http = edge.NewServer(e, cfg.Logger)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("http server stopped", "err", err)
		}
	}()
	if m.grpcLn != nil {
		var opts []grpc.ServerOption
		if cfg.TLS != nil {
			opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
		}
		m.grpc = e.GRPCServer(opts...)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			if err := m.grpc.Serve(m.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				m.log.Error("grpc server stopped", "err", err)
			}
		}()
	}
	return m, nil
}

func waitAgents(ctx context.Context, t *registry.Table, want map[string]agentrt.Agent) error {
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := 0
		live := t.Workers() // not Lookup: an agent known from an earlier run may have no worker yet
		for name := range want {
			if live[name] == 0 {
				missing++
			}
		}
		if missing == 0 && t.Loaded() { // Loaded: the agents bucket read too, so the edge serves cards
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("mesh: %d built-in agents not registered after 15s", missing)
		case <-tick.C:
		}
	}
}

// URL is the edge's base URL.
func (m *Mesh) URL() string { return m.scheme + "://" + m.ln.Addr().String() }

// GRPCAddr is the address the edge serves gRPC at (host:port; "" when
// Config.GRPCListen was not set).
func (m *Mesh) GRPCAddr() string {
	if m.grpcLn == nil {
		return ""
	}
	return m.grpcLn.Addr().String()
}

// NATSURL is the NATS client URL for workers and tools outside this
// process. It is meaningful only when Config.NATSListen was set: otherwise
// NATS serves this process only and the URL names no listener.
func (m *Mesh) NATSURL() string { return m.srv.ClientURL() }

// Bus is the mesh's bus connection, shared by its edge and workers; a
// worker in this process may use it too. It is closed by Close.
func (m *Mesh) Bus() *bus.Bus { return m.bus }

// Store is the mesh's task store, on its bus.
func (m *Mesh) Store() *taskstore.Store { return m.store }

// Close stops the edge (open streams are cut after a short grace), the
// workers (tasks in hand go back to the queue), the registry table and the
// NATS server, and returns when they have stopped. The data in
// Config.DataDir stays: a later Start with the same DataDir finds the
// tasks again. Close may be called more than once.
func (m *Mesh) Close() {
	m.once.Do(func() {
		if m.http == nil && m.ln != nil {
			_ = m.ln.Close() // started, but never served
		}
		if m.grpc == nil && m.grpcLn != nil {
			_ = m.grpcLn.Close()
		}
		grpcStopped := make(chan struct{})
		go func() { // beside the HTTP server's shutdown: both cut streams after 2s
			defer close(grpcStopped)
			if m.grpc != nil {
				edge.StopGRPC(m.grpc, 2*time.Second)
			}
		}()
		if m.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := m.http.Shutdown(ctx); err != nil {
				_ = m.http.Close()
			}
			cancel()
		}
		<-grpcStopped
		if m.cancel != nil {
			m.cancel()
		}
		m.wg.Wait()
		if m.nc != nil {
			_ = m.nc.Drain()
			m.nc.Close()
		}
		if m.srv != nil {
			m.srv.Shutdown()
		}
	})
}
