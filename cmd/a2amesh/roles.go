package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	neturl "net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/agentrt/proxy"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// The fleet's roles as separate processes: a NATS+JetStream node, edges
// and workers, which meet only on NATS and may start in any order.

// One-line descriptions of the roles, for the command list and for -h.
const (
	natsDesc   = "run a NATS server with JetStream for the mesh: a single node, or one node of a cluster (--cluster, --routes)"
	edgeDesc   = "run an HTTP edge: serves A2A JSON-RPC, SSE and agent cards on --listen, and carries calls to the workers over NATS"
	workerDesc = "run a worker: one built-in agent (--agent), or a proxy to an A2A agent elsewhere (--proxy), taking its tasks from NATS"
)

func init() {
	register("nats", natsDesc, runNATS)
	register("edge", edgeDesc, runEdge)
	register("worker", workerDesc, runWorker)
}

func runNATS(ctx context.Context, args []string) error {
	fs := newFlagSet("nats", "", natsDesc)
	data := fs.String("data", envOr("A2AMESH_DATA", ".a2amesh-nats"), "JetStream data directory (env A2AMESH_DATA)")
	listen := fs.String("listen", envOr("A2AMESH_NATS_LISTEN", "127.0.0.1:4222"), "client address (env A2AMESH_NATS_LISTEN)")
	name := fs.String("name", envOr("A2AMESH_NATS_NAME", ""), "server name; required in a cluster, distinct per node (env A2AMESH_NATS_NAME)")
	cluster := fs.String("cluster", envOr("A2AMESH_CLUSTER", ""), "cluster name, to run as one node of a cluster (env A2AMESH_CLUSTER)")
	clusterListen := fs.String("listen-cluster", envOr("A2AMESH_LISTEN_CLUSTER", ""), "route address of this node, host:port (env A2AMESH_LISTEN_CLUSTER)")
	routes := fs.String("routes", envOr("A2AMESH_ROUTES", ""), "routes to the other nodes, nats-route://host:port,... (env A2AMESH_ROUTES)")
	token := fs.String("token", envOr("A2AMESH_NATS_TOKEN", ""), "require this token from clients (env A2AMESH_NATS_TOKEN)")
	monitorListen := fs.String("monitor-listen", envOr("A2AMESH_NATS_MONITOR_LISTEN", ""),
		"serve NATS's HTTP monitoring endpoints (/varz, /jsz: what KEDA's nats-jetstream scaler reads) at host:port, e.g. 0.0.0.0:8222 (env A2AMESH_NATS_MONITOR_LISTEN; none: not served)")
	syncAlways := fs.Bool("sync-always", os.Getenv("A2AMESH_SYNC_ALWAYS") == "true", "fsync every JetStream write (env A2AMESH_SYNC_ALWAYS)")
	maxStore := sizeVar(fs, "max-store", "A2AMESH_MAX_STORE", "JetStream's file store limit, e.g. 8G, below the disk's size; writes past it are refused (-32000). Over 1G: the work queue reserves 1 GiB of it. Default: 75% of the disk space free at start (env A2AMESH_MAX_STORE)")
	pprofListen := addPprofFlag(fs)
	lf := addLogFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tuneGCForServer()
	log := lf.logger()
	stopPprof, err := servePprof(*pprofListen, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	host, port, err := splitHostPort(*listen)
	if err != nil {
		return err
	}
	storeLimit, err := maxStore.Bytes()
	if err != nil {
		return err
	}
	srv, err := natsnode.StartServer(natsnode.ServerConfig{
		DataDir: *data, Host: host, Port: port, ServerName: *name, SyncAlways: *syncAlways,
		ClusterName: *cluster, ClusterListen: *clusterListen, Routes: *routes, Token: *token,
		MonitorListen: *monitorListen, MaxStore: storeLimit, Logger: log,
	})
	if err != nil {
		return err
	}
	log.Info("a2amesh nats ready", "url", srv.ClientURL(), "data", *data, "cluster", *cluster)
	<-ctx.Done()
	log.Info("shutting down")
	srv.Shutdown()
	return nil
}

// natsFlags are the client-side NATS settings shared by edge and worker.
type natsFlags struct {
	url, creds, token, ca, cert, key *string
	replicas                         *int
	retention, agentRetention        *time.Duration
	maxTasks                         *int64
}

func addNATSFlags(fs *flag.FlagSet) *natsFlags {
	return &natsFlags{
		url:      fs.String("nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS servers, comma-separated (env NATS_URL)"),
		creds:    fs.String("nats-creds", envOr("NATS_CREDS", ""), "NATS credentials file (env NATS_CREDS; none: no credentials)"),
		token:    fs.String("nats-token", envOr("NATS_TOKEN", ""), "NATS token (env NATS_TOKEN; none: no token)"),
		ca:       fs.String("nats-ca", envOr("NATS_CA", ""), "CA file to verify NATS servers over TLS (env NATS_CA; none: the system's roots when the URL is tls://)"),
		cert:     fs.String("nats-cert", envOr("NATS_CERT", ""), "client certificate for mutual TLS (env NATS_CERT; none: no client certificate)"),
		key:      fs.String("nats-key", envOr("NATS_KEY", ""), "client key for mutual TLS (env NATS_KEY; none: no client certificate)"),
		replicas: fs.Int("replicas", envInt("A2AMESH_REPLICAS", 1), "replicas of every stream and bucket: 1, or 3 on a cluster (env A2AMESH_REPLICAS)"),
		// Every process opening the bus configures the streams: give edges
		// and workers the same retention, or the last one started wins.
		retention: fs.Duration("retention", envDuration("A2AMESH_RETENTION", bus.DefaultConfig.Retention), "keep tasks this long after their last change; the same on every edge and worker (env A2AMESH_RETENTION)"),
		agentRetention: fs.Duration("agent-retention", envDuration("A2AMESH_AGENT_RETENTION", bus.DefaultConfig.AgentRetention),
			"keep an agent known (its card served, its sends queued) this long after its last worker was seen; the same on every edge and worker (env A2AMESH_AGENT_RETENTION)"),
		maxTasks: fs.Int64("max-tasks", envInt64("A2AMESH_MAX_TASKS", bus.DefaultMaxTasks), "keep at most this many tasks, evicting the least recently changed; the same on every edge and worker (env A2AMESH_MAX_TASKS)"),
	}
}

// check reports configuration errors of the NATS flags (files that cannot
// be read, a certificate without its key, replicas out of range) before
// anything waits for NATS: they end the process; NATS being unreachable
// does not.
func (f *natsFlags) check() error {
	if strings.TrimSpace(*f.url) == "" {
		return errors.New("--nats: no NATS server given")
	}
	for _, c := range []struct{ flag, path string }{
		{"--nats-creds", *f.creds}, {"--nats-ca", *f.ca}, {"--nats-cert", *f.cert}, {"--nats-key", *f.key},
	} {
		if c.path == "" {
			continue
		}
		if _, err := os.ReadFile(c.path); err != nil {
			return fmt.Errorf("%s: %w", c.flag, err)
		}
	}
	if (*f.cert == "") != (*f.key == "") {
		return errors.New("--nats-cert and --nats-key go together")
	}
	if *f.cert != "" {
		if _, err := tls.LoadX509KeyPair(*f.cert, *f.key); err != nil {
			return fmt.Errorf("--nats-cert/--nats-key: %w", err)
		}
	}
	if *f.replicas < 1 || *f.replicas > 5 {
		return fmt.Errorf("--replicas must be 1 to 5, got %d", *f.replicas)
	}
	return nil
}

// openBus connects to NATS and opens the layout, retrying until NATS
// answers, so roles can start in any order and ride out a failover at
// start-up. While no NATS server can be reached it says so at once, with
// the address and why (waitNATS); then bus.Retry waits for JetStream the
// same way. status, when not nil, gets what it waits for at each step
// (an edge's /healthz shows it). It returns an error only for a NATS URL
// that cannot be used, or when ctx ends.
func (f *natsFlags) openBus(ctx context.Context, name string, log *slog.Logger, status func(string)) (*taskstore.Store, func(), error) {
	if status == nil {
		status = func(string) {}
	}
	nc, err := bus.Dial(bus.DialConfig{URL: *f.url, Name: name, CredsFile: *f.creds, Token: *f.token,
		CAFile: *f.ca, CertFile: *f.cert, KeyFile: *f.key})
	if err != nil {
		return nil, nil, err
	}
	if err := waitNATS(ctx, nc, *f.url, log, status); err != nil {
		nc.Close()
		return nil, nil, err
	}
	shown := showURLs(*f.url)
	status("waiting for JetStream at " + shown + ": opening the mesh's streams and buckets")
	var b *taskstore.Store
	err = bus.Retry(ctx, log, "JetStream: the mesh's streams and buckets at "+shown, func(ctx context.Context) error {
		bb, err := bus.Open(ctx, nc, bus.Config{Replicas: *f.replicas, Retention: *f.retention, AgentRetention: *f.agentRetention, MaxTasks: *f.maxTasks})
		if err == nil {
			b, err = taskstore.Open(ctx, bb)
		}
		if err != nil {
			status("waiting for JetStream at " + shown + ": " + err.Error())
		}
		return errOldLayoutPermanent(err)
	})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return b, func() { _ = nc.Drain() }, nil
}

// Waiting for a NATS server to accept the connection.
const (
	natsPollEvery  = 50 * time.Millisecond // how often the connection's state is read
	natsProbeFirst = 250 * time.Millisecond
	natsProbeMax   = 5 * time.Second
	natsLogEvery   = 5 * time.Second // at most one "cannot reach" line per this
	natsProbeDial  = 800 * time.Millisecond
)

// waitNATS waits until nc is connected (the client reconnects by itself;
// bus.Dial asks it to). Until then it finds out why not, by dialing the
// servers itself with backoff (250ms doubling to 5s), and logs
// "cannot reach NATS at URL (why); retrying" at once and then at most
// every 5s; status gets the same reason. It returns ctx's error when ctx
// ends first.
func waitNATS(ctx context.Context, nc *nats.Conn, urls string, log *slog.Logger, status func(string)) error {
	if nc.IsConnected() {
		return nil
	}
	start := time.Now()
	shown := showURLs(urls)
	var logged, nextProbe time.Time
	probeEvery := natsProbeFirst
	tick := time.NewTicker(natsPollEvery)
	defer tick.Stop()
	for {
		if nc.IsConnected() {
			if !logged.IsZero() {
				log.Info("NATS reachable", "nats", shown, "waited_ms", time.Since(start).Milliseconds())
			}
			return nil
		}
		if nc.IsClosed() {
			return fmt.Errorf("NATS connection to %s closed", shown)
		}
		if now := time.Now(); !now.Before(nextProbe) {
			reason := natsUnreachable(ctx, nc, urls)
			if nc.IsConnected() { // it connected while we probed
				continue
			}
			status("waiting for NATS at " + shown + ": " + reason)
			if logged.IsZero() || now.Sub(logged) >= natsLogEvery {
				logged = now
				log.Warn(fmt.Sprintf("cannot reach NATS at %s (%s); retrying", shown, reason),
					"nats", shown, "reason", reason, "waited_ms", now.Sub(start).Milliseconds())
			}
			nextProbe = time.Now().Add(probeEvery)
			probeEvery = min(2*probeEvery, natsProbeMax)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// natsUnreachable says why nc is not connected to any of urls: for a
// server that cannot be dialed, the dial's error (connection refused, no
// such host, timed out); for one that takes the TCP connection, the
// client's last error (TLS, authorization) if it has one.
func natsUnreachable(ctx context.Context, nc *nats.Conn, urls string) string {
	var reasons []string
	servers := splitList(urls)
	for _, s := range servers {
		addr, err := natsAddr(s)
		if err != nil {
			reasons = append(reasons, showURLs(s)+": "+err.Error())
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, natsProbeDial)
		c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
		cancel()
		var why string
		if err != nil {
			why = dialReason(err)
		} else {
			_ = c.Close()
			why = "the server takes TCP connections, but the NATS connection is not up"
			if lerr := nc.LastError(); lerr != nil {
				why += ": " + lerr.Error()
			}
		}
		if len(servers) == 1 {
			return why
		}
		reasons = append(reasons, showURLs(s)+": "+why)
	}
	return strings.Join(reasons, "; ")
}

// showURLs is a NATS server list fit for logs and /healthz: without the
// user, password or token a URL may carry.
func showURLs(urls string) string {
	var out []string
	for _, s := range splitList(urls) {
		if at := strings.LastIndex(s, "@"); at >= 0 {
			scheme := ""
			if i := strings.Index(s, "://"); i >= 0 && i < at {
				scheme = s[:i+3]
			}
			s = scheme + s[at+1:]
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// natsAddr is the host:port of a NATS server URL (nats://, tls://, or a
// bare host[:port]; the port defaults to 4222).
func natsAddr(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := neturl.Parse(s)
	if err != nil || u.Hostname() == "" {
		return "", errors.New("not a NATS server URL")
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// dialReason is the short cause of a failed dial: "connection refused",
// "no such host", "timed out".
func dialReason(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return err.Error()
}

// startingHealth answers GET /healthz while the edge waits for NATS, with
// 503 and what it waits for (the edge's own /healthz takes over once it is
// built); everything else goes to next.
type startingHealth struct {
	next     http.Handler
	opened   *atomic.Bool
	draining *atomic.Bool // set on SIGTERM: /healthz says so while the edge still serves
	reason   *atomic.Pointer[string]
}

func (h startingHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	isHealth := r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	if isHealth && h.draining != nil && h.draining.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "draining",
			"reason": "stopping: still serving, but route new calls to another edge"})
		return
	}
	if h.draining != nil && h.draining.Load() && r.ProtoMajor == 1 {
		// Draining: close this connection after its answer. Idle
		// keep-alive connections are left open (not closed under a client
		// that may be sending on one at that moment, which it cannot
		// retry: a POST), each closed after its next answer or at the end
		// of the drain.
		w.Header().Set("Connection", "close")
	}
	if h.opened.Load() || !isHealth {
		h.next.ServeHTTP(w, r)
		return
	}
	reason := "waiting for NATS"
	if p := h.reason.Load(); p != nil {
		reason = *p
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "starting", "waiting_for": []string{"NATS"}, "reason": reason})
}

// runEdge runs an edge. It listens at once, and serves /healthz (503 with
// what it waits for until it is ready) from the start. Once the bus is
// open it serves A2A calls: task calls at once, sends once its registry
// table has loaded, push calls once push delivery runs (-32000, retry,
// meanwhile). Nothing NATS does ends it: only configuration errors (flags,
// files, a busy port) do, and they are checked before it waits for NATS.
func runEdge(ctx context.Context, args []string) error {
	fs := newFlagSet("edge", "", edgeDesc)
	nf := addNATSFlags(fs)
	ef := addEdgeFlags(fs, "")
	drain := fs.Duration("drain", envDuration("A2AMESH_DRAIN", defaultDrain),
		"on SIGTERM, answer /healthz 503 and keep serving this long before closing the listeners, so load balancers stop routing here first; then open streams get 5s to end (env A2AMESH_DRAIN)")
	pprofListen := addPprofFlag(fs)
	lf := addLogFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log := lf.logger()
	stopPprof, err := servePprof(*pprofListen, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	cfg, err := ef.config(log, metrics.NewEdge)
	if err != nil {
		return err
	}
	go watchPolicy(ctx, cfg.Policy)
	if err := cfg.Push.Check(); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, tracing.ServiceEdge, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	tlsCfg, err := ef.tlsConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *ef.listen)
	if err != nil {
		return fmt.Errorf("edge: listen: %w", err)
	}
	url := "http://" + ln.Addr().String()
	var gopts []grpc.ServerOption
	if tlsCfg != nil {
		ln, url = tls.NewListener(ln, tlsCfg), "https://"+ln.Addr().String()
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	gate := edge.NewGate()
	srv := edge.NewServer(gate, log)
	// The gRPC binding (--grpc-listen) listens now too, a busy port failing
	// the start; until the edge is built its calls answer UNAVAILABLE.
	var (
		gsrv     *grpc.Server
		gserved  chan struct{} // closed when gsrv.Serve returns (nil: no gRPC)
		gserveEr error
	)
	if ef.grpcAddr() != "" {
		gln, err := net.Listen("tcp", ef.grpcAddr())
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("edge: grpc listen: %w", err)
		}
		if cfg.GRPCURL == "" {
			cfg.GRPCURL = gln.Addr().String()
		}
		gsrv, gserved = gate.GRPCServer(cfg, gopts...), make(chan struct{})
		go func() { gserveEr = gsrv.Serve(gln); close(gserved) }()
		log.Info("a2amesh edge serving gRPC", "addr", gln.Addr().String())
	}
	var opened, draining atomic.Bool
	var waiting atomic.Pointer[string]
	setWaiting := func(s string) { waiting.Store(&s) }
	setWaiting("waiting for NATS at " + showURLs(*nf.url) + ": connecting")
	srv.Handler = startingHealth{next: srv.Handler, opened: &opened, draining: &draining, reason: &waiting}
	served := make(chan struct{})
	var serveErr error
	go func() { serveErr = srv.Serve(ln); close(served) }()
	log.Info("a2amesh edge listening; ready once NATS answers", "url", url, "nats", showURLs(*nf.url))
	stopServing := func() error {
		gstopped := make(chan struct{})
		go func() { // beside the HTTP server: both cut open streams after 5s
			defer close(gstopped)
			if gsrv != nil {
				edge.StopGRPC(gsrv, 5*time.Second)
			}
		}()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
		<-served
		<-gstopped
		if gserved != nil {
			<-gserved
		}
		if errors.Is(serveErr, http.ErrServerClosed) {
			serveErr = nil
		}
		return errors.Join(serveErr, gserveEr)
	}

	b, closeBus, err := nf.openBus(ctx, "a2amesh-edge", log, setWaiting)
	if err != nil {
		serr := stopServing()
		if ctx.Err() != nil {
			return serr
		}
		return errors.Join(err, serr)
	}
	defer closeBus()
	table := registry.NewTable(b.Bus())
	table.Logger = log
	table.LostGrace = ef.grace()
	var wg sync.WaitGroup
	defer wg.Wait()
	// The background work outlives ctx (SIGTERM) by the drain: the edge
	// still serves meanwhile, with a registry table and push delivery that
	// follow the fleet. It stops once the listeners are closed.
	rctx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = b.Run(rctx) // the task store's upkeep (retention), until rctx ends
	}()
	go func() {
		defer wg.Done()
		_ = table.Run(rctx) // returns when rctx ends; retries its watch meanwhile
	}()
	cfg.Store, cfg.Registry, cfg.Logger = b, table, log
	if *ef.audit {
		cfg.Audit = audit.New(b.Bus(), *ef.auditRetention, log) // published by e.Run below
	}
	// Push delivery (--push) runs beside the HTTP server; the edge serves
	// the push-config methods from it.
	pusher, err := edge.NewPushDeliverer(cfg)
	if err != nil {
		return errors.Join(err, stopServing())
	}
	cfg.PushDeliverer = pusher
	e := edge.New(cfg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.Run(rctx) // rate limits shared with the other edges (--rate-limit-scope), the audit log, until rctx ends
	}()
	gate.Open(e)
	opened.Store(true)
	ran := make(chan error, 1) // push delivery's end: a configuration error, or nil once rctx ends
	if pusher != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ran <- pusher.Run(rctx) // retries through failovers; errs on configuration only
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		logReady(rctx, e, url, showURLs(*nf.url), log)
	}()
	var runErr error
	select {
	case <-served: // the HTTP server failed; stopServing returns why
	case <-gserved: // the gRPC server failed (never, without gRPC: a nil channel)
	case runErr = <-ran: // a configuration error (push delivery runs until rctx ends)
	case <-ctx.Done():
		drainFor(*drain, &draining, srv, served, log)
	}
	log.Info("shutting down")
	serr := stopServing()
	stopBackground()
	wg.Wait()
	return errors.Join(runErr, serr)
}

// defaultDrain is how long a stopping edge keeps serving with /healthz at
// 503: longer than a Kubernetes endpoint update takes to reach the load
// balancers and kube-proxy (a few seconds), well inside the default
// 30s termination grace with the 5s that open streams get after it.
const defaultDrain = 5 * time.Second

// drainFor turns /healthz to 503 and keeps serving for d (or until the
// server fails), closing each keep-alive connection after its next
// answer, so that clients and load balancers move to another edge before
// the listeners close. Calls in flight and new ones meanwhile are served
// as usual.
func drainFor(d time.Duration, draining *atomic.Bool, srv *http.Server, served <-chan struct{}, log *slog.Logger) {
	if d <= 0 {
		return
	}
	draining.Store(true) // startingHealth closes each connection after its next answer
	log.Info("draining: /healthz answers 503; still serving", "for", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-served:
	}
}

// logReady logs "a2amesh edge ready" once the edge is, and what it still
// waits for every 10s until then.
func logReady(ctx context.Context, e *edge.Edge, url, natsURL string, log *slog.Logger) {
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastLog := start
	for {
		waiting := e.WaitingFor()
		if len(waiting) == 0 {
			log.Info("a2amesh edge ready", "url", url, "nats", natsURL, "after_ms", time.Since(start).Milliseconds())
			return
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			log.Warn("a2amesh edge not ready yet; task calls are served, sends and push calls answer -32000 (retry)", "waiting_for", waiting)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func runWorker(ctx context.Context, args []string) error {
	fs := newFlagSet("worker", "", workerDesc)
	nf := addNATSFlags(fs)
	agentName := fs.String("agent", envOr("A2AMESH_AGENT", ""), "built-in agent to run: echo, slow, ask, upper, planner (delegates to echo and upper), hello (answers with a message) or tck (env A2AMESH_AGENT)")
	proxyURL := fs.String("proxy", envOr("A2AMESH_PROXY", ""), "forward tasks to the A2A agent at this URL (its base URL or card URL) instead of running a built-in agent (env A2AMESH_PROXY)")
	name := fs.String("name", envOr("A2AMESH_NAME", ""), "the agent's name in the mesh (default: --agent, or derived from the proxied card's name) (env A2AMESH_NAME)")
	cardRefresh := fs.Duration("card-refresh", envDuration("A2AMESH_CARD_REFRESH", 5*time.Minute), "with --proxy: fetch the agent's card again this often and register its changes; 0 turns it off (env A2AMESH_CARD_REFRESH)")
	requireSigned := fs.Bool("require-signed-card", os.Getenv("A2AMESH_REQUIRE_SIGNED_CARD") == "true", "with --proxy: refuse the agent's card unless a signature on it verifies with a key of the JWK Set its jku names on the card's own origin; a refreshed card that does not verify is not registered (env A2AMESH_REQUIRE_SIGNED_CARD; see docs/cards.md)")
	trusted := fs.String("trusted-agents", envOr("A2AMESH_TRUSTED_AGENTS", ""), "comma-separated hosts, host:ports, IPs or CIDRs a proxy may reach although they are private or loopback (env A2AMESH_TRUSTED_AGENTS)")
	var headers headerFlags
	fs.Var(&headers, "proxy-header", `header sent with every request to the proxied agent, "Name: value" (repeatable; env A2AMESH_PROXY_AUTHORIZATION sets Authorization)`)
	concurrency := fs.Int("concurrency", envInt("A2AMESH_CONCURRENCY", 16), "tasks this worker runs at once (env A2AMESH_CONCURRENCY)")
	timeout := fs.Duration("task-timeout", envDuration("A2AMESH_TASK_TIMEOUT", 120*time.Second), "per-task agent timeout (env A2AMESH_TASK_TIMEOUT)")
	delegateWait := addDelegateWaitFlag(fs)
	metricsListen := fs.String("metrics-listen", envOr("A2AMESH_METRICS_LISTEN", ""), "serve Prometheus metrics on GET /metrics at host:port, without auth (env A2AMESH_METRICS_LISTEN; default off)")
	pprofListen := addPprofFlag(fs)
	lf := addLogFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*agentName == "") == (*proxyURL == "") {
		return errors.New("worker: give exactly one of --agent (a built-in agent) or --proxy (an A2A agent's URL)")
	}
	var guard *ssrf.Guard
	if *proxyURL != "" {
		var err error
		if guard, err = ssrf.New(splitList(*trusted)); err != nil {
			return fmt.Errorf("worker: --trusted-agents: %w", err)
		}
		if v := os.Getenv("A2AMESH_PROXY_AUTHORIZATION"); v != "" && headers.h.Get("Authorization") == "" {
			headers.set("Authorization", v)
		}
	}
	var a agentrt.Agent
	if *agentName != "" {
		var ok bool
		if a, ok = agents.Builtin()[*agentName]; !ok {
			return fmt.Errorf("worker: --agent must name a built-in agent (echo, slow, ask, upper, planner, hello, tck), got %q", *agentName)
		}
		if *name == "" {
			*name = *agentName
		}
	}
	if err := nf.check(); err != nil {
		return err
	}
	log := lf.logger()
	stopPprof, err := servePprof(*pprofListen, log)
	if err != nil {
		return err
	}
	defer stopPprof()
	stopTracing, err := startTracing(ctx, tracing.ServiceWorker(firstNonEmpty(*name, *agentName, "proxy")), log)
	if err != nil {
		return err
	}
	defer stopTracing()
	b, closeBus, err := nf.openBus(ctx, "a2amesh-worker-"+firstNonEmpty(*name, *agentName, "proxy"), log, nil)
	if err != nil {
		return err
	}
	defer closeBus()
	// The worker's components: the bus's upkeep and, for a proxy, its card
	// refresh run beside the worker and are gone when runWorker returns.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = b.Run(ctx)
	}()
	if *proxyURL != "" {
		p, err := openProxy(ctx, proxy.Config{URL: *proxyURL, Name: *name, Guard: guard, Header: headers.h, RequireSignedCard: *requireSigned, Store: b, Logger: log})
		if errors.Is(err, ssrf.ErrBlocked) {
			return fmt.Errorf("worker: %w (an operator who trusts this address can allow it with --trusted-agents)", err)
		}
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		defer p.Close() // a gRPC upstream's connection
		a, *name = p, p.Name()
		if *cardRefresh > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = p.WatchCard(ctx, *cardRefresh)
			}()
		}
	}
	w := &agentrt.Worker{Store: b, Agent: a, Name: *name, Concurrency: *concurrency, Timeout: *timeout, DelegateWait: delegateWait(), Logger: log}
	if *metricsListen != "" {
		w.Metrics = metrics.NewWorker()
		stop, err := serveMetrics(*metricsListen, w.Metrics, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	return w.Run(ctx)
}

// serveMetrics serves m on GET /metrics at addr until stop is called.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	return serveSide(ln, mux, "metrics", log), nil
}

// serveSide serves h on ln (a side listener: metrics, profiles) until the
// returned stop, which shuts it down within 2 s and waits for it.
func serveSide(ln net.Listener, h http.Handler, what string, log *slog.Logger) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" server stopped", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}

// addPprofFlag adds --pprof-listen (nats, edge, worker): off by default.
func addPprofFlag(fs *flag.FlagSet) *string {
	return fs.String("pprof-listen", envOr("A2AMESH_PPROF_LISTEN", ""),
		"serve Go's profiles (/debug/pprof/) and POST /debug/free-os-memory (a GC that returns freed memory to the OS) "+
			"at host:port, loopback only, without auth; for benchmarks and diagnosis (env A2AMESH_PPROF_LISTEN; default off)")
}

// servePprof serves net/http/pprof's handlers, and POST
// /debug/free-os-memory, at addr until stop is called; "" serves nothing.
// Only a loopback address is accepted: profiles show the process's
// memory.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof-listen: %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /debug/free-os-memory", func(w http.ResponseWriter, _ *http.Request) {
		debug.FreeOSMemory()
		w.WriteHeader(http.StatusNoContent)
	})
	log.Info("profiles served", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return serveSide(ln, mux, "pprof", log), nil
}

// openProxy prepares a proxy, waiting for an upstream that is not up yet:
// workers may start before the agents they front. A refused address or a
// card that cannot work fails at once.
func openProxy(ctx context.Context, cfg proxy.Config) (*proxy.Agent, error) {
	for delay := time.Second; ; delay = min(2*delay, 15*time.Second) {
		p, err := proxy.New(ctx, cfg)
		if err == nil || !errors.Is(err, proxy.ErrUnavailable) {
			return p, err
		}
		cfg.Logger.Warn("proxied agent not reachable yet; retrying", "url", cfg.URL, "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// headerFlags collects repeated "Name: value" flags.
type headerFlags struct{ h http.Header }

func (f *headerFlags) String() string { return "" }

func (f *headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("header %q: want \"Name: value\"", v)
	}
	f.set(k, strings.TrimSpace(val))
	return nil
}

func (f *headerFlags) set(k, v string) {
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(k, v)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// parseHook, when a test sets it, stands in for parseFlags: a role hands
// it its flag set and arguments, then returns the hook's error without
// running (the hook never returns nil). deploy_test.go checks the command
// lines of deploy/ against each role's real flags this way.
var parseHook func(fs *flag.FlagSet, args []string) error

func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	var port int
	if _, err := fmt.Sscan(portStr, &port); err != nil {
		return "", 0, fmt.Errorf("address %q: bad port", addr)
	}
	return host, port, nil
}

func envInt64(key string, def int64) int64 {
	var v int64
	if s := os.Getenv(key); s != "" {
		if _, err := fmt.Sscan(s, &v); err == nil {
			return v
		}
	}
	return def
}

func envInt(key string, def int) int {
	var v int
	if s := os.Getenv(key); s != "" {
		if _, err := fmt.Sscan(s, &v); err == nil {
			return v
		}
	}
	return def
}

// addDelegateWaitFlag adds --delegate-wait (worker, dev) and returns the
// value for agentrt.Worker.DelegateWait: 0 on the command line means no
// bound but the task timeout (-1 for the worker).
func addDelegateWaitFlag(fs *flag.FlagSet) func() time.Duration {
	d := fs.Duration("delegate-wait", envDuration("A2AMESH_DELEGATE_WAIT", agentrt.DefaultMaxWait),
		"an agent's call to another agent (the planner's delegations) waits this long for the called task, then fails naming the agent, the task and its state; sooner when --task-timeout ends first; 0 waits until the task timeout (env A2AMESH_DELEGATE_WAIT)")
	return func() time.Duration {
		if *d == 0 {
			return -1
		}
		return *d
	}
}
