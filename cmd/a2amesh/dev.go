package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/console"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/tracing"
)

const devDesc = "run a whole mesh in one process: an embedded NATS server with JetStream, one edge and the built-in agents (the default command)"

func init() {
	register("dev", devDesc, runDev)
}

func runDev(ctx context.Context, args []string) error {
	fs := newFlagSet("dev", "", devDesc)
	ef := addEdgeFlags(fs, "echo")
	fs.Lookup("grpc-listen").Usage = "serve the A2A gRPC binding (lf.a2a.v1.A2AService, plaintext HTTP/2) at host:port, where the request's tenant names the agent; " +
		"off: none (env A2AMESH_GRPC_LISTEN; default " + devGRPCListen + ", or none, with a warning, when that port is taken)"
	data := fs.String("data", envOr("A2AMESH_DATA", ".a2amesh"), "directory for JetStream data (env A2AMESH_DATA)")
	natsListen := fs.String("nats-listen", envOr("A2AMESH_NATS_LISTEN", ""), "also serve NATS clients at host:port, e.g. 127.0.0.1:4222 (env A2AMESH_NATS_LISTEN)")
	timeout := fs.Duration("task-timeout", envDuration("A2AMESH_TASK_TIMEOUT", 120*time.Second), "per-task agent timeout (env A2AMESH_TASK_TIMEOUT)")
	delegateWait := addDelegateWaitFlag(fs)
	ackWait := fs.Duration("ack-wait", envDuration("A2AMESH_ACK_WAIT", bus.DefaultConfig.AckWait), "redeliver a task to another worker after this long without a heartbeat (env A2AMESH_ACK_WAIT)")
	retention := fs.Duration("retention", envDuration("A2AMESH_RETENTION", 24*time.Hour), "keep tasks this long after their last change (env A2AMESH_RETENTION)")
	agentRetention := fs.Duration("agent-retention", envDuration("A2AMESH_AGENT_RETENTION", bus.DefaultConfig.AgentRetention),
		"keep an agent known (its card served, its sends queued) this long after its last worker was seen (env A2AMESH_AGENT_RETENTION)")
	maxTasks := fs.Int64("max-tasks", envInt64("A2AMESH_MAX_TASKS", bus.DefaultMaxTasks), "keep at most this many tasks, evicting the least recently changed (env A2AMESH_MAX_TASKS)")
	syncAlways := fs.Bool("sync-always", os.Getenv("A2AMESH_SYNC_ALWAYS") == "true", "fsync every JetStream write (survives OS crash; slower) (env A2AMESH_SYNC_ALWAYS)")
	lf := addLogFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tuneGCForServer()
	log := lf.logger()
	grpcDefault := false
	if *ef.grpcListen == "" && os.Getenv("A2AMESH_GRPC_LISTEN") == "" && !flagSet(fs, "grpc-listen") {
		// dev serves every binding: gRPC on devGRPCListen unless told
		// otherwise (--grpc-listen off).
		*ef.grpcListen, grpcDefault = devGRPCListen, true
	}
	*ef.grpcListen = ef.grpcAddr()
	if grpcDefault && !portFree(*ef.grpcListen) {
		log.Warn("gRPC not served: its default address is taken; pass --grpc-listen host:port to serve it elsewhere",
			"addr", *ef.grpcListen)
		*ef.grpcListen = ""
	}
	ecfg, err := ef.config(log, metrics.New)
	if err != nil {
		return err
	}
	tlsCfg, err := ef.tlsConfig()
	if err != nil {
		return err
	}
	go watchPolicy(ctx, ecfg.Policy)
	stopTracing, err := startTracing(ctx, tracing.ServiceDev, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg := mesh.Config{
		Listen: *ef.listen, GRPCListen: *ef.grpcListen, DataDir: *data, NATSListen: *natsListen, Edge: ecfg,
		TaskTimeout: *timeout, DelegateWait: delegateWait(), SyncAlways: *syncAlways, Logger: log, LostGrace: ef.grace(),
		Audit: *ef.audit, AuditRetention: *ef.auditRetention, TLS: tlsCfg,
		Bus: bus.Config{AckWait: *ackWait, Retention: *retention, AgentRetention: *agentRetention, MaxTasks: *maxTasks},
	}
	m, err := mesh.Start(ctx, cfg)
	if err != nil {
		return err
	}
	consoleURL := ""
	if !ecfg.DisableConsole {
		consoleURL = m.URL() + console.Prefix + "/"
	}
	log.Info("a2amesh dev ready", "url", m.URL(), "data", *data,
		"card", m.URL()+"/.well-known/agent-card.json", "agents", m.URL()+"/agents", "console", consoleURL)
	if a := m.GRPCAddr(); a != "" {
		log.Info("a2amesh dev serving gRPC", "addr", a)
	}
	if !lf.json() {
		// For people: the addresses to try. A JSON log has them in the
		// record above and nothing else on stderr.
		fmt.Fprintf(os.Stderr, "\n  a2amesh is ready: %s\n  mesh card: %s/.well-known/agent-card.json\n  agents:    %s/agents\n", m.URL(), m.URL(), m.URL())
		if consoleURL != "" {
			fmt.Fprintf(os.Stderr, "  console:   %s\n", consoleURL)
		}
		if a := m.GRPCAddr(); a != "" {
			fmt.Fprintf(os.Stderr, "  gRPC:      %s (A2AService; name the agent in tenant)\n", a)
		}
		fmt.Fprintln(os.Stderr)
	}
	<-ctx.Done()
	log.Info("shutting down")
	m.Close()
	return nil
}

// devGRPCListen is where dev serves the gRPC binding unless --grpc-listen
// says otherwise. When it is taken (another dev, another service), dev
// runs without gRPC and says so; an address given with --grpc-listen must
// be free.
var devGRPCListen = "127.0.0.1:9090" // a var for tests

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// portFree reports whether addr can be listened on now.
func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func envDuration(key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// logFlags are the logging flags every role takes.
type logFlags struct{ level, format *string }

func addLogFlags(fs *flag.FlagSet) logFlags {
	return logFlags{
		level:  fs.String("log-level", envOr("A2AMESH_LOG_LEVEL", "info"), "debug, info, warn or error (env A2AMESH_LOG_LEVEL)"),
		format: fs.String("log-format", envOr("A2AMESH_LOG_FORMAT", "text"), "text (logfmt) or json, one object per line (env A2AMESH_LOG_FORMAT)"),
	}
}

// json reports whether the log is JSON: then nothing but JSON records may
// go to stderr.
func (f logFlags) json() bool { return strings.EqualFold(*f.format, "json") }

// logger builds the process's logger on stderr. Lines about a task carry
// task_id, and trace_id when tracing is on, so logs and traces meet.
func (f logFlags) logger() *slog.Logger {
	var l slog.Level
	badLevel := l.UnmarshalText([]byte(*f.level)) != nil
	if badLevel {
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	var log *slog.Logger
	switch {
	case f.json():
		log = slog.New(slog.NewJSONHandler(os.Stderr, opts))
	default:
		log = slog.New(slog.NewTextHandler(os.Stderr, opts))
		if v := strings.ToLower(*f.format); v != "text" && v != "logfmt" {
			log.Warn("unknown --log-format; using text", "log_format", *f.format)
		}
	}
	if badLevel {
		log.Warn("unknown --log-level; using info", "log_level", *f.level)
	}
	return log
}
