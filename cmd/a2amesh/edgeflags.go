package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/edge"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/tokens"
)

// edgeFlags are the edge settings shared by `dev` and `edge`.
type edgeFlags struct {
	listen, publicURL, defaultAgent, cors *string
	grpcListen, publicGRPCURL             *string
	keepAlive, idemWindow                 *time.Duration
	strictCards                           *bool
	cardKeys                              *string
	authFile                              *string
	policyFile                            *string
	audit                                 *bool
	tlsCert, tlsKey, tlsClientCA          *string
	tlsClientPrincipal                    *string
	auditRetention                        *time.Duration
	oidcIssuer, oidcAudience, oidcAlgs    *string
	oidcPrincipal, oidcGrants             *string
	rateLimit                             *float64
	rateBurst                             *int
	rateScope                             *string
	push                                  *pushFlags
	metrics                               *bool
	console                               *bool
	jaegerUI, jaegerQuery                 *string
	lostGrace                             *time.Duration
	blockingTimeout                       *time.Duration
}

// pushFlags configure push-notification delivery.
type pushFlags struct {
	on                  *bool
	trusted, signingKey *string
	attempts            *int
	backoff, timeout    *time.Duration
}

func addPushFlags(fs *flag.FlagSet) *pushFlags {
	return &pushFlags{
		on:         fs.Bool("push", os.Getenv("A2AMESH_PUSH") != "false", "deliver push notifications (webhooks), durably through JetStream; cards then advertise pushNotifications; --push=false turns it off (env A2AMESH_PUSH)"),
		trusted:    fs.String("push-trusted", envOr("A2AMESH_PUSH_TRUSTED", ""), "comma-separated webhook receivers allowed although private or loopback: IPs, CIDRs, host names or host:port (env A2AMESH_PUSH_TRUSTED; default: public addresses only)"),
		signingKey: fs.String("push-signing-key", envOr("A2AMESH_PUSH_SIGNING_KEY", ""), "PEM file of the ECDSA P-256 key push notifications are signed with, the same on every edge (env A2AMESH_PUSH_SIGNING_KEY; default: one generated once and kept in NATS, bucket A2A_PUSH_KEYS)"),
		attempts:   fs.Int("push-attempts", envInt("A2AMESH_PUSH_ATTEMPTS", 6), "POSTs of one notification before giving up (env A2AMESH_PUSH_ATTEMPTS)"),
		backoff:    fs.Duration("push-backoff", envDuration("A2AMESH_PUSH_BACKOFF", time.Second), "delay before the first retry of a notification, doubling each time up to 1m (env A2AMESH_PUSH_BACKOFF)"),
		timeout:    fs.Duration("push-timeout", envDuration("A2AMESH_PUSH_TIMEOUT", 10*time.Second), "bound of one webhook POST (env A2AMESH_PUSH_TIMEOUT)"),
	}
}

func (f *pushFlags) config() (edge.PushConfig, error) {
	c := edge.PushConfig{Enabled: *f.on, SigningKeyFile: *f.signingKey, MaxAttempts: *f.attempts,
		Backoff: *f.backoff, Timeout: *f.timeout}
	for _, s := range strings.Split(*f.trusted, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Trusted = append(c.Trusted, s)
		}
	}
	if c.MaxAttempts < 1 || c.Backoff <= 0 || c.Timeout <= 0 {
		return c, fmt.Errorf("--push-attempts, --push-backoff and --push-timeout must be positive")
	}
	return c, nil
}

func addEdgeFlags(fs *flag.FlagSet, defaultAgent string) *edgeFlags {
	defaultHelp := "agent that serves POST /a2a, the endpoint with no agent in its path (calls may still name one in params.tenant); without it, a send to /a2a naming no tenant is refused (-32602 'this edge has no default agent', naming how to call /agents/{name}); task calls on /a2a still find any task by id (env A2AMESH_DEFAULT_AGENT)"
	if defaultAgent == "" {
		defaultHelp += "; default: none"
	}
	return &edgeFlags{
		listen:        fs.String("listen", envOr("A2AMESH_LISTEN", "127.0.0.1:8080"), "HTTP listen address (env A2AMESH_LISTEN)"),
		publicURL:     fs.String("public-url", envOr("A2AMESH_PUBLIC_URL", ""), "base URL written into agent cards (env A2AMESH_PUBLIC_URL; default: the request's Host)"),
		grpcListen:    fs.String("grpc-listen", envOr("A2AMESH_GRPC_LISTEN", ""), "also serve the A2A gRPC binding (lf.a2a.v1.A2AService, plaintext HTTP/2) at host:port, where the request's tenant names the agent; auth, rate limit and the body limit apply as over HTTP; off: none (env A2AMESH_GRPC_LISTEN; default: off)"),
		publicGRPCURL: fs.String("public-grpc-url", envOr("A2AMESH_PUBLIC_GRPC_URL", ""), "host:port cards advertise for the gRPC binding (env A2AMESH_PUBLIC_GRPC_URL; default: the --grpc-listen address; an unspecified host such as 0.0.0.0, or a loopback one, is replaced by the host of the card request)"),
		defaultAgent:  fs.String("default-agent", envOr("A2AMESH_DEFAULT_AGENT", defaultAgent), defaultHelp),
		cors:          fs.String("cors-origin", envOr("A2AMESH_CORS_ORIGIN", ""), "comma-separated origins allowed by CORS, or * (env A2AMESH_CORS_ORIGIN; default off)"),
		keepAlive:     fs.Duration("keepalive", envDuration("A2AMESH_KEEPALIVE", 15*time.Second), "SSE keep-alive interval (env A2AMESH_KEEPALIVE)"),
		idemWindow:    fs.Duration("idempotency-window", envDuration("A2AMESH_IDEMPOTENCY_WINDOW", 2*time.Minute), "a send repeating a messageId within this window returns the earlier task; 0 turns it off (env A2AMESH_IDEMPOTENCY_WINDOW)"),
		strictCards:   fs.Bool("strict-cards", os.Getenv("A2AMESH_STRICT_CARDS") == "true", "serve cards with the 1.0 fields only, without the 0.3 compatibility fields (env A2AMESH_STRICT_CARDS)"),
		cardKeys:      fs.String("card-signing-key", envOr("A2AMESH_CARD_SIGNING_KEY", ""), "PEM files of the ECDSA P-256 keys agent cards are signed with, comma-separated, oldest first, at most 2 (two during a rotation: cards then carry a signature by each); the same on every edge (env A2AMESH_CARD_SIGNING_KEY; default: the key set kept in NATS, bucket A2A_CARD_KEYS, created by the first edge and rotated with `a2amesh card-keys`; see docs/cards.md)"),
		authFile:      fs.String("auth-file", envOr("A2AMESH_AUTH_FILE", ""), `require credentials: a file of "principal secret" lines (# comments; secrets of 16+ characters), mode 600; each secret works as x-api-key or Authorization: Bearer; a file without credentials is an error, not an open edge (env A2AMESH_AUTH_FILE; A2AMESH_API_KEYS="alice:secret,bob:secret" also works; default: no auth)`),
		// Rate limiting is off by default, for dev and edge alike: without
		// auth every client behind one NAT, proxy or ingress is one IP and
		// would share one bucket, and load tests (bench) drive an edge from
		// one host; the rate a principal deserves is the operator's call.
		rateLimit:          fs.Float64("rate-limit", envFloat("A2AMESH_RATE_LIMIT", 0), "calls per second allowed per principal (per client IP without auth), over every binding; across the whole fleet of edges on one NATS (see --rate-limit-scope); past it: HTTP 429 with Retry-After, error -32029 (env A2AMESH_RATE_LIMIT; default 0: off)"),
		rateBurst:          fs.Int("rate-burst", envInt("A2AMESH_RATE_BURST", 0), "calls a principal may make at once before --rate-limit applies (env A2AMESH_RATE_BURST; default 2×rate)"),
		rateScope:          fs.String("rate-limit-scope", envOr("A2AMESH_RATE_LIMIT_SCOPE", "fleet"), `"fleet": --rate-limit holds for the edges together, which tell each other over NATS every 100ms what they admitted (no NATS round trip on a call; an edge that hears nothing limits on its own); "edge": each edge limits on its own, so N edges admit up to N×rate (env A2AMESH_RATE_LIMIT_SCOPE)`),
		push:               addPushFlags(fs),
		lostGrace:          fs.Duration("lost-grace", envDuration("A2AMESH_LOST_GRACE", registry.DefaultLostGrace), "keep routing to an agent this long after its last worker stopped answering without a clean stop, for workers of releases that do not record their agent; agents of this release stay known for --agent-retention whatever their workers do; 0 turns it off (env A2AMESH_LOST_GRACE)"),
		blockingTimeout:    fs.Duration("blocking-timeout", envDuration("A2AMESH_BLOCKING_TIMEOUT", edge.DefaultBlockingTimeout), "a blocking send (SendMessage, message/send, tasks/send) waits this long for its task to finish or ask for input, then answers with the task as it stands (submitted or working), which stays queued and runs when a worker takes it: poll it with GetTask or follow it with SubscribeToTask; 0 waits without bound (env A2AMESH_BLOCKING_TIMEOUT)"),
		oidcIssuer:         fs.String("oidc-issuer", envOr("A2AMESH_OIDC_ISSUER", ""), "accept bearer tokens (JWTs) of this OpenID Connect issuer, beside or instead of API keys: its URL exactly as its tokens' iss says it; the edge reads its discovery document and key set (cached; read again for an unknown key id; an issuer that is down answers 503, retry) and checks signature, iss, aud, exp and nbf (30 s skew) (env A2AMESH_OIDC_ISSUER; default: no tokens)"),
		oidcAudience:       fs.String("oidc-audience", envOr("A2AMESH_OIDC_AUDIENCE", ""), "with --oidc-issuer: what a token's aud must contain (required with it) (env A2AMESH_OIDC_AUDIENCE)"),
		oidcAlgs:           fs.String("oidc-algorithms", envOr("A2AMESH_OIDC_ALGORITHMS", "RS256,ES256"), "with --oidc-issuer: signature algorithms accepted, comma-separated; none is never accepted (env A2AMESH_OIDC_ALGORITHMS)"),
		oidcPrincipal:      fs.String("oidc-principal-claim", envOr("A2AMESH_OIDC_PRINCIPAL_CLAIM", "sub"), "with --oidc-issuer: the claim that names the caller: the principal tasks belong to and the policy's principal:NAME (env A2AMESH_OIDC_PRINCIPAL_CLAIM)"),
		oidcGrants:         fs.String("oidc-grants-claim", envOr("A2AMESH_OIDC_GRANTS_CLAIM", ""), "with --oidc-issuer: the claim holding the caller's scopes or roles, which the policy's scope:NAME and role:NAME match: a space-separated string or an array (env A2AMESH_OIDC_GRANTS_CLAIM; default: scope, else scp)"),
		tlsCert:            fs.String("tls-cert", envOr("A2AMESH_TLS_CERT", ""), "serve HTTPS and gRPC over TLS with this PEM certificate (chain) file, with --tls-key (env A2AMESH_TLS_CERT; default: plain HTTP and gRPC, for a TLS-terminating proxy in front)"),
		tlsKey:             fs.String("tls-key", envOr("A2AMESH_TLS_KEY", ""), "the PEM private key of --tls-cert (env A2AMESH_TLS_KEY; default: none)"),
		tlsClientCA:        fs.String("tls-client-ca", envOr("A2AMESH_TLS_CLIENT_CA", ""), "with --tls-cert: verify client certificates against these PEM CA certificates, and name a caller that sends no other credential by its certificate (--tls-client-principal); a certificate that does not verify fails the handshake (env A2AMESH_TLS_CLIENT_CA; default: no client certificates)"),
		tlsClientPrincipal: fs.String("tls-client-principal", envOr("A2AMESH_TLS_CLIENT_PRINCIPAL", edge.CertPrincipalSAN), "with --tls-client-ca: the principal a client certificate names: san (its first URI SAN, a SPIFFE id, else DNS, else email SAN) or cn (its subject's common name) (env A2AMESH_TLS_CLIENT_PRINCIPAL)"),
		audit:              fs.Bool("audit", os.Getenv("A2AMESH_AUDIT") != "false", "keep an audit log: every state-changing call (send, cancel, push config set and delete, agent removal) and every denial, with who, from where, which agent and task, the method, the binding, the outcome and the trace id, never secrets, tokens or message content, in the JetStream stream A2A_AUDIT; appended in the background, never waited for; read with a2amesh audit or GET /ops/v1/audit; --audit=false turns it off (env A2AMESH_AUDIT)"),
		auditRetention:     fs.Duration("audit-retention", envDuration("A2AMESH_AUDIT_RETENTION", audit.DefaultRetention), "keep audit entries this long (env A2AMESH_AUDIT_RETENTION)"),
		policyFile:         fs.String("policy", envOr("A2AMESH_POLICY", ""), "access policy: a file of \"allow WHO AGENTS ACTIONS\" rules saying which principals, scopes or roles may send, read, cancel, configure push, read the extended card of, or use the operator API on which agents; what no rule allows is denied (403, PERMISSION_DENIED, JSON-RPC -31403). Read again when it changes or on SIGHUP; a change that does not parse keeps the policy in force and is logged; a file that does not parse at start stops the edge (env A2AMESH_POLICY; default: none, every caller may do everything; docs/configuration.md#access-policy)"),
		console:            fs.Bool("console", os.Getenv("A2AMESH_CONSOLE") != "false", "serve the web console at /console/ (static pages, public; the data it shows comes through the A2A endpoints and the operator API /ops/v1, with the user's key when --auth-file is set); --console=false turns it off (env A2AMESH_CONSOLE)"),
		jaegerUI:           fs.String("jaeger-ui", envOr("A2AMESH_JAEGER_UI", ""), "base URL of a Jaeger UI (e.g. http://127.0.0.1:16686): the console's task view links to the task's trace there (env A2AMESH_JAEGER_UI; default: no link)"),
		jaegerQuery:        fs.String("jaeger-query", envOr("A2AMESH_JAEGER_QUERY", ""), "base URL of Jaeger's HTTP query API (e.g. http://127.0.0.1:16686): the edge reads a task's spans from it for the console's trace waterfall, GET /ops/v1/tasks/{id}/trace (env A2AMESH_JAEGER_QUERY; default: no waterfall)"),
		metrics:            fs.Bool("metrics", os.Getenv("A2AMESH_METRICS") != "false", "serve Prometheus metrics on GET /metrics of the listen address, without auth (counts only, no task data); --metrics=false turns them off (env A2AMESH_METRICS)"),
	}
}

// grpcAddr is the address --grpc-listen asks for ("" or "off": none).
func (f *edgeFlags) grpcAddr() string {
	if a := strings.TrimSpace(*f.grpcListen); a != "off" {
		return a
	}
	return ""
}

// config returns the edge configuration the flags describe (Bus, Registry
// and Logger are the caller's). newMetrics builds the metrics when they
// are on (an edge's own, or dev's edge and worker families together); log
// gets the auth warnings and the line saying whether auth is on.
func (f *edgeFlags) config(log *slog.Logger, newMetrics func() *metrics.Metrics) (edge.Config, error) {
	c := edge.Config{
		PublicURL: *f.publicURL, GRPCURL: *f.publicGRPCURL, DefaultAgent: *f.defaultAgent, KeepAlive: *f.keepAlive,
		IdempotencyWindow: *f.idemWindow, StrictCards: *f.strictCards, DisableConsole: !*f.console,
	}
	if c.IdempotencyWindow <= 0 {
		c.IdempotencyWindow = -1 // off
	}
	for _, j := range []struct {
		flag string
		dst  *string
		val  string
	}{{"--jaeger-ui", &c.JaegerUI, *f.jaegerUI}, {"--jaeger-query", &c.JaegerQuery, *f.jaegerQuery}} {
		v := strings.TrimRight(strings.TrimSpace(j.val), "/")
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("invalid %s %q: want a base URL such as http://127.0.0.1:16686", j.flag, j.val)
		}
		*j.dst = v
	}
	c.BlockingTimeout = *f.blockingTimeout
	if c.BlockingTimeout <= 0 {
		c.BlockingTimeout = -1 // no bound
	}
	if *f.cors != "" {
		c.CORSOrigins = strings.Split(*f.cors, ",")
	}
	if f.grpcAddr() == "" {
		c.GRPCURL = "" // no gRPC listener: cards offer none
	}
	if *f.rateLimit < 0 || *f.rateBurst < 0 {
		return c, fmt.Errorf("--rate-limit and --rate-burst must not be negative")
	}
	if *f.rateScope != "fleet" && *f.rateScope != "edge" {
		return c, fmt.Errorf("--rate-limit-scope must be fleet or edge, not %q", *f.rateScope)
	}
	c.Limits = edge.Limits{Rate: *f.rateLimit, Burst: *f.rateBurst, PerEdge: *f.rateScope == "edge"}
	push, err := f.push.config()
	if err != nil {
		return c, err
	}
	c.Push = push
	if c.CardKeys, err = loadCardKeys(*f.cardKeys); err != nil {
		return c, err
	}
	auth, err := loadAuth(*f.authFile, os.Getenv("A2AMESH_API_KEYS"), log)
	if err != nil {
		return c, err
	}
	c.Auth = auth
	if auth != nil {
		log.Info("auth on: calls need an API key or bearer token", "principals", auth.Principals(),
			"auth_file", *f.authFile, "api_keys_env", os.Getenv("A2AMESH_API_KEYS") != "")
	} else if *f.oidcIssuer == "" {
		log.Info("auth off: any client may call (--auth-file or A2AMESH_API_KEYS turn it on)")
	}
	if *f.oidcIssuer != "" {
		if *f.oidcAudience == "" {
			return c, errors.New("--oidc-issuer needs --oidc-audience: the aud its tokens must carry for this mesh")
		}
		var algs []string
		for _, a := range strings.Split(*f.oidcAlgs, ",") {
			if a = strings.TrimSpace(a); a != "" {
				algs = append(algs, a)
			}
		}
		if c.Tokens, err = tokens.New(tokens.Config{Issuer: *f.oidcIssuer, Audience: *f.oidcAudience, Algorithms: algs,
			PrincipalClaim: *f.oidcPrincipal, GrantsClaim: *f.oidcGrants}); err != nil {
			return c, fmt.Errorf("--oidc-issuer: %w", err)
		}
		log.Info("bearer tokens on: calls may send a token of the issuer", "issuer", *f.oidcIssuer, "audience", *f.oidcAudience, "algorithms", algs)
	} else if *f.oidcAudience != "" {
		return c, errors.New("--oidc-audience is set but --oidc-issuer is not: name the issuer")
	}
	if *f.tlsClientCA != "" {
		if *f.tlsCert == "" {
			return c, errors.New("--tls-client-ca needs --tls-cert: client certificates come with TLS")
		}
		if p := *f.tlsClientPrincipal; p != edge.CertPrincipalSAN && p != edge.CertPrincipalCN {
			return c, fmt.Errorf("--tls-client-principal must be san or cn, not %q", p)
		}
		c.ClientCertPrincipal = *f.tlsClientPrincipal
	}
	if *f.policyFile != "" {
		if c.Policy, err = policy.Load(*f.policyFile, log); err != nil {
			return c, fmt.Errorf("--policy: %w", err)
		}
		log.Info("access policy on: what no rule allows is denied", "policy", *f.policyFile, "rules", c.Policy.Policy().Rules())
	}
	if *f.metrics {
		c.Metrics = newMetrics()
	}
	return c, nil
}

// watchPolicy applies the policy file's changes (read every 2 s) and
// reads it again on SIGHUP, until ctx ends.
func watchPolicy(ctx context.Context, f *policy.File) {
	if f == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go f.Watch(ctx, 0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = f.Reload()
		}
	}
}

// envFloat reads a number from the environment, def when unset or bad.
func envFloat(key string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(key), 64); err == nil {
		return v
	}
	return def
}

// loadAuth builds the edge's credential table from a file and/or an
// A2AMESH_API_KEYS list ("principal:secret,..."); neither means no auth.
// Either one given but holding no credential is an error: a mistyped or
// emptied key file must not leave the edge open. A key file others can
// read gets a warning on log.
func loadAuth(file, list string, log *slog.Logger) (*edge.Auth, error) {
	creds := map[string][]string{}
	var skills, roles map[string][]string // skills= and roles= of the file's lines
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--auth-file: %w", err)
		}
		parsed, err := edge.ParseAuthText(string(b))
		if err != nil {
			return nil, fmt.Errorf("--auth-file %s: %w", file, err)
		}
		creds, skills, roles = parsed.Secrets, parsed.Skills, parsed.Roles
		if len(creds) == 0 {
			return nil, fmt.Errorf("--auth-file %s: no credentials in it (want \"principal secret\" lines); refusing to start without auth when auth was asked for", file)
		}
		if st, err := os.Stat(file); err == nil && st.Mode().Perm()&0o077 != 0 {
			log.Warn("auth file is readable by group or others; run chmod 600 on it", "file", file,
				"mode", fmt.Sprintf("%#o", st.Mode().Perm()))
		}
	}
	if list != "" {
		more, err := edge.ParseCredentials(strings.ReplaceAll(list, ",", "\n"))
		if err != nil {
			return nil, fmt.Errorf("A2AMESH_API_KEYS: %w", err)
		}
		if len(more) == 0 {
			return nil, fmt.Errorf("A2AMESH_API_KEYS is set but holds no credentials (want \"principal:secret,...\"); unset it to run without auth")
		}
		for p, ss := range more {
			creds[p] = append(creds[p], ss...)
		}
	}
	if len(creds) == 0 {
		return nil, nil
	}
	return edge.NewAuthFrom(edge.Credentials{Secrets: creds, Skills: skills, Roles: roles})
}

// grace is the registry table's LostGrace the flags ask for.
func (f *edgeFlags) grace() time.Duration {
	if *f.lostGrace <= 0 {
		return -1 // off
	}
	return *f.lostGrace
}

// tlsConfig is the TLS the edge serves with (nil: none): its certificate,
// and the client CAs whose certificates it verifies when a client sends
// one.
func (f *edgeFlags) tlsConfig() (*tls.Config, error) {
	if *f.tlsCert == "" && *f.tlsKey == "" {
		return nil, nil
	}
	if *f.tlsCert == "" || *f.tlsKey == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(*f.tlsCert, *f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if *f.tlsClientCA != "" {
		pem, err := os.ReadFile(*f.tlsClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", *f.tlsClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
