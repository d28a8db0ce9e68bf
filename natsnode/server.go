package natsnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ServerConfig configures an embedded NATS server with JetStream.
type ServerConfig struct {
	// DataDir holds JetStream's files. Required.
	DataDir string
	// Host and Port for client connections; Port -1 picks a free port,
	// and DontListen serves in-process connections only.
	Host       string
	Port       int
	DontListen bool
	// SyncAlways makes JetStream fsync every write (sync_interval: always),
	// trading throughput for surviving an OS crash; see the README.
	SyncAlways bool
	// ServerName names the node (defaults to a generated one; a cluster
	// needs stable, distinct names).
	ServerName string
	// Cluster joins a JetStream cluster: its name, this node's route
	// address (host:port) and the routes to the other nodes
	// (nats-route://host:port, comma-separated).
	ClusterName   string
	ClusterListen string
	Routes        string
	// Token, when set, is required from NATS clients.
	Token string
	// MonitorListen, host:port, serves nats-server's HTTP monitoring
	// endpoints (/varz, /jsz, /healthz) there: what the KEDA nats-jetstream
	// scaler reads a consumer's pending count from. Empty: none.
	MonitorListen string
	// MaxStore bounds JetStream's file store in bytes (max_file_store).
	// Zero leaves nats-server's default: 75% of the disk space free when
	// the server starts. Past it, writes are refused ("insufficient
	// resources", -32000 at the edge) before the disk itself is full; a
	// disk that fills anyway (other files) makes nats-server stop
	// JetStream on this node until space returns (storewatch.go).
	MaxStore int64
	// Logger, when set, receives nats-server's warnings and errors (a
	// write error, JetStream disabled for lack of space, a route lost);
	// its notices go at debug level. Nil keeps the server silent.
	Logger *slog.Logger
}

// Server is an embedded NATS server with JetStream enabled.
type Server struct {
	mu sync.Mutex
	ns *server.Server // the running server; replaced by a restart (storewatch.go)
	// opts are the server's options as first given (copied for each
	// start, with the client port the first start picked); log is
	// nats-server's logger (nil: silent).
	opts    server.Options
	log     *slog.Logger
	dataDir string
	watch   storeWatch
}

// StartServer starts an embedded NATS server and waits until it is ready.
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("natsnode: an embedded server needs a data dir")
	}
	opts := server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		DontListen:         cfg.DontListen,
		JetStream:          true,
		StoreDir:           cfg.DataDir,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20,
		JetStreamMaxMemory: 256 << 20,
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = -1
	}
	if cfg.SyncAlways {
		opts.SyncAlways = true
	}
	if cfg.MaxStore > 0 {
		opts.JetStreamMaxStore = cfg.MaxStore
	}
	opts.Authorization = cfg.Token
	if cfg.MonitorListen != "" {
		host, port, err := hostPort("monitoring address", cfg.MonitorListen)
		if err != nil {
			return nil, err
		}
		opts.HTTPHost, opts.HTTPPort = host, port
	}
	if cfg.ClusterName != "" || cfg.ClusterListen != "" {
		host, port, err := hostPort("cluster listen address", cfg.ClusterListen)
		if err != nil {
			return nil, err
		}
		opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: host, Port: port}
		opts.Routes = server.RoutesFromStr(cfg.Routes)
		if opts.ServerName == "" {
			return nil, errors.New("natsnode: a cluster node needs a server name")
		}
	}
	s := &Server{opts: opts, log: cfg.Logger, dataDir: cfg.DataDir,
		watch: storeWatch{stop: make(chan struct{}), done: make(chan struct{})}}
	ns, err := startNATS(opts, cfg.Logger, &s.watch.outOfSpace)
	if err != nil {
		return nil, err
	}
	if a, ok := ns.Addr().(*net.TCPAddr); ok && !opts.DontListen {
		s.opts.Port = a.Port // a restart serves clients where they were
	}
	s.ns = ns
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	go s.watchStore(log.With("component", "a2amesh-nats", "server", ns.Name()))
	return s, nil
}

// hostPort splits addr, host:port with a numeric port, naming it what in
// an error.
func hostPort(what, addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("natsnode: %s %q: %w", what, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", 0, fmt.Errorf("natsnode: %s %q: port %q is not a number", what, addr, portStr)
	}
	return host, port, nil
}

// startNATS starts a server with a copy of opts and waits until it is
// ready.
func startNATS(opts server.Options, log *slog.Logger, outOfSpace *atomic.Bool) (*server.Server, error) {
	ns, err := server.NewServer(&opts)
	if err != nil {
		return nil, fmt.Errorf("bus: new server: %w", err)
	}
	sl := serverLog{outOfSpace: outOfSpace}
	if log != nil {
		sl.l = log.With("component", "nats-server")
	}
	ns.SetLogger(sl, false, false)
	go ns.Start()
	// Starting reads the JetStream store back, which takes a while for a
	// large one, or on a loaded machine: wait, saying so, up to
	// serverStartWait.
	for waited := time.Duration(0); ; waited += serverStartStep {
		if ns.ReadyForConnections(serverStartStep) {
			return ns, nil
		}
		if waited+serverStartStep >= serverStartWait {
			ns.Shutdown()
			return nil, fmt.Errorf("bus: embedded NATS server not ready after %v", serverStartWait)
		}
		if log != nil {
			log.Warn("embedded NATS server still starting (reading its JetStream store?)", "waited", waited+serverStartStep)
		}
	}
}

// serverStartWait bounds how long an embedded server may take to start;
// serverStartStep is how often a start that takes longer says so.
const (
	serverStartWait = 2 * time.Minute
	serverStartStep = 15 * time.Second
)

// current is the running server.
func (s *Server) current() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ns
}

// ClientURL is the URL clients connect to (empty with DontListen).
func (s *Server) ClientURL() string { return s.current().ClientURL() }

// Connect opens a client connection to the embedded server (in-process,
// no sockets), with the mesh's usual reconnect settings. It reconnects to
// the server as restarted (storewatch.go).
func (s *Server) Connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(inProcess{s}), nats.Name(name), nats.MaxReconnects(-1))
}

// inProcess dials whichever server is running.
type inProcess struct{ s *Server }

func (p inProcess) InProcessConn() (net.Conn, error) { return p.s.current().InProcessConn() }

// Shutdown stops the server and waits for it to finish.
func (s *Server) Shutdown() {
	s.watch.once.Do(func() { close(s.watch.stop) })
	<-s.watch.done
	ns := s.current()
	ns.Shutdown()
	ns.WaitForShutdown()
}

// serverLog passes nats-server's log lines to slog (when l is set):
// notices at debug level (start-up banners, routine cluster news),
// warnings and errors as such. It also notes, in outOfSpace, nats-server
// saying it stops JetStream for lack of space (storewatch.go).
type serverLog struct {
	l          *slog.Logger
	outOfSpace *atomic.Bool
}

func (s serverLog) Noticef(format string, v ...any) { s.log(slog.LevelDebug, format, v) }
func (s serverLog) Warnf(format string, v ...any)   { s.log(slog.LevelWarn, format, v) }
func (s serverLog) Fatalf(format string, v ...any)  { s.log(slog.LevelError, format, v) }
func (s serverLog) Debugf(format string, v ...any)  { s.log(slog.LevelDebug, format, v) }
func (s serverLog) Tracef(format string, v ...any)  {}

func (s serverLog) Errorf(format string, v ...any) {
	// "JetStream out of %s resources, will be DISABLED", "JetStream out
	// of resources, will be DISABLED", "JetStream out of space, will be
	// DISABLED" (nats-server 2.15's handleOutOfSpace and stream sources).
	if strings.HasPrefix(format, "JetStream out of") && strings.Contains(format, "will be DISABLED") {
		s.outOfSpace.Store(true)
	}
	s.log(slog.LevelError, format, v)
}

func (s serverLog) log(level slog.Level, format string, v []any) {
	if s.l != nil {
		s.l.Log(context.Background(), level, fmt.Sprintf(format, v...))
	}
}
