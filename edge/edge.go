package edge

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/console"
	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/policy"
	"github.com/a2amesh/a2amesh/push"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/service"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tokens"
)

// Config configures an edge. Bus and Registry are required.
type Config struct {
	Store    *taskstore.Store
	Registry *registry.Table
	// PublicURL is the base URL clients reach this edge at, used in cards
	// (default: derived from each request's Host).
	PublicURL string
	// GRPCURL is the address gRPC clients reach this edge's gRPC
	// listener at, listed in cards ("": the edge serves no gRPC). A host
	// of "" or 0.0.0.0 (":9090") is replaced by the host of PublicURL or
	// of the card request.
	GRPCURL string
	// DefaultAgent serves POST /a2a calls that name no tenant.
	DefaultAgent string
	// IdempotencyWindow is how long a send repeating an earlier messageId
	// (same agent and caller) returns the task the first one created
	// (default 2m, JetStream's duplicate window); negative turns it off.
	IdempotencyWindow time.Duration
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE comment keep-alives (default 15s).
	KeepAlive time.Duration
	// BlockingTimeout bounds how long a blocking send waits for its task
	// to settle (default DefaultBlockingTimeout, 60s; negative: no bound).
	// Past it the call answers with the task as it stands, still queued
	// or working, for the client to poll or subscribe to (send.go).
	BlockingTimeout time.Duration
	// CORSOrigins lists origins allowed to call from a browser ("*" for
	// any); empty disables CORS.
	CORSOrigins []string
	// StrictCards serves cards with the 1.0 fields only, dropping the 0.3
	// compatibility fields (0.3 clients then cannot read them).
	StrictCards bool
	// MeshName and MeshDescription describe the mesh card.
	MeshName        string
	MeshDescription string
	// Auth decides who may call by API key (nil: no keys; with Tokens nil
	// too, anyone, as one anonymous principal).
	Auth *Auth
	// Tokens, when set, accepts bearer tokens (JWTs) of an OpenID Connect
	// issuer beside or instead of API keys (package tokens).
	Tokens *tokens.Verifier
	// ClientCertPrincipal, when set (CertPrincipalSAN or CertPrincipalCN),
	// names a caller that sends no credential by its TLS client
	// certificate, verified by the host's tls.Config (ClientCAs,
	// VerifyClientCertIfGiven) on HTTP and gRPC: its first URI, DNS or
	// email SAN, or its subject's common name.
	ClientCertPrincipal string
	// Policy decides what each caller may do to which agent (package
	// policy): the service asks it for every call of every binding, and
	// GET /agents, the mesh card and the operator API show each caller
	// only the agents it may see. nil: every caller may do everything.
	Policy *policy.File
	// Audit, when set, records every state-changing call and every denial
	// (package audit); its host runs it (audit.Log.Run). nil: no audit.
	Audit *audit.Log
	// Limits bounds what each principal may ask of the edge (limit.go).
	Limits Limits
	// Push configures push notifications (push.go): NewPushDeliverer makes
	// from it the deliverer its host runs and gives as PushDeliverer.
	Push PushConfig
	// PushDeliverer, when set, is the push deliverer its host runs beside
	// the edge (push.Deliverer.Run): the edge serves the push-config
	// methods from its store and lists its key in /.well-known/jwks.json,
	// and waits for it to run before it is ready (nil: push off).
	PushDeliverer *push.Deliverer
	// CardKeys, when set, are the keys cards are signed with (the same on
	// every edge); nil: the key set kept in NATS (cardsign.go).
	CardKeys *cardsig.Keys
	// Metrics, when set, records the edge's metrics and serves them on
	// GET /metrics (public, like /healthz: counts only, no task data).
	Metrics *metrics.Metrics
	// DisableConsole turns off the web console (package console), served
	// otherwise at GET /console/. The operator API it reads (/ops/v1,
	// ops.go) stays.
	DisableConsole bool
	// JaegerUI is the base URL of a Jaeger UI: a task's view in the
	// console links to its trace there ("": no link).
	JaegerUI string
	// JaegerQuery is the base URL of Jaeger's HTTP query API: the edge
	// reads a task's spans from it for the console's waterfall (GET
	// /ops/v1/tasks/{id}/trace; "": none).
	JaegerQuery string
	Logger      *slog.Logger
}

// Edge is the HTTP handler of one edge node.
type Edge struct {
	cfg   Config
	bus   *bus.Bus
	store *taskstore.Store
	reg   *registry.Table
	log   *slog.Logger
	mux   *http.ServeMux
	// svc is the A2A service (package service) every call of every
	// binding goes through; the JSON-RPC handler (rpc.go) is a codec
	// over it.
	svc *service.Service

	cardSigner *cardSigner // the keys cards are signed with (cardsign.go)
	id         identity    // who calls: API keys, tokens (auth.go)

	limiter *limiter // nil: no rate limit (limit.go)
	// pusher is the push deliverer its host runs (Config.PushDeliverer;
	// nil: push off).
	pusher *push.Deliverer
	// budget bounds how long a call or stream rides out a failover
	// before it answers -32000 (0: bus.FailoverBudget; tests change it).
	budget time.Duration
}

// DefaultBlockingTimeout is how long a blocking send waits for its task
// to settle unless Config.BlockingTimeout says otherwise (see
// service.DefaultBlockingTimeout).
const DefaultBlockingTimeout = service.DefaultBlockingTimeout

// failoverBudget is how long a call or a stream waits out a failover.
func (e *Edge) failoverBudget() time.Duration {
	if e.budget > 0 {
		return e.budget
	}
	return bus.FailoverBudget
}

// New returns an edge serving cfg.
func New(cfg Config) *Edge {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.IdempotencyWindow == 0 {
		cfg.IdempotencyWindow = 2 * time.Minute
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.BlockingTimeout == 0 {
		cfg.BlockingTimeout = DefaultBlockingTimeout
	}
	if cfg.MeshName == "" {
		cfg.MeshName = "a2amesh"
	}
	if cfg.MeshDescription == "" {
		cfg.MeshDescription = "An A2A mesh: every agent of the fleet behind one endpoint. Name an agent with the 1.0 tenant field, or call /agents/{name}."
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	e := &Edge{cfg: cfg, bus: cfg.Store.Bus(), store: cfg.Store, reg: cfg.Registry, log: cfg.Logger, mux: http.NewServeMux(),
		id: identity{keys: cfg.Auth, tokens: cfg.Tokens, certs: cfg.ClientCertPrincipal}}
	if cfg.Limits.Rate > 0 {
		e.limiter = newLimiter(cfg.Limits, nil)
	}
	e.pusher = cfg.PushDeliverer
	e.cardSigner = &cardSigner{static: cfg.CardKeys, bus: cfg.Store.Bus()}
	e.svc = service.New(service.Config{
		Store: cfg.Store, Agents: cfg.Registry,
		Tasks:           taskstore.NewLifecycle(cfg.Store, taskstore.LifecycleConfig{IdempotencyWindow: cfg.IdempotencyWindow}),
		DefaultAgent:    cfg.DefaultAgent,
		BlockingTimeout: cfg.BlockingTimeout,
		KeepAlive:       cfg.KeepAlive,
		PushStore:       e.pushStore,
		FailoverBudget:  e.failoverBudget,
		SkillVisible:    cfg.Auth.skillVisible(),
		Policy:          cfg.Policy,
		Audit:           cfg.Audit,
		Logger:          cfg.Logger,
	})
	e.routes()
	e.watchMetrics()
	return e
}

func (e *Edge) routes() {
	for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		e.mux.HandleFunc("GET "+p, e.serveMeshCard)
		e.mux.HandleFunc("GET /agents/{name}"+p, e.serveAgentCard)
	}
	e.mux.HandleFunc("GET /agents", e.serveAgents)
	e.mux.HandleFunc("GET /agents/{$}", e.serveAgents)
	// Each JSON-RPC endpoint also answers with a trailing slash: clients
	// that join "/" onto the card's URL (httpx's base_url, the A2A TCK)
	// post there.
	rpc := e.rpcHandler()
	e.mux.Handle("POST /agents/{name}", rpc)
	e.mux.Handle("POST /agents/{name}/{$}", rpc)
	e.mux.Handle("POST /a2a", rpc)
	e.mux.Handle("POST /a2a/{$}", rpc)
	e.mux.Handle("POST /{$}", rpc)
	e.mux.HandleFunc("GET "+JWKSPath, e.serveKeySet) // card and push signatures (cardsign.go)
	e.mux.HandleFunc("GET /healthz", e.serveHealth)
	e.mux.HandleFunc("GET /livez", serveLive)
	if e.cfg.Metrics != nil {
		e.mux.Handle("GET /metrics", e.cfg.Metrics.Handler())
	}
	e.opsRoutes() // ops.go
	if !e.cfg.DisableConsole {
		// The page and its assets are public: they hold no data. What the
		// page reads, it reads through the A2A endpoints and /ops/v1,
		// with the key its user enters.
		c := console.New()
		e.mux.Handle("GET "+console.Prefix, c)
		e.mux.Handle("GET "+console.Prefix+"/", c)
	}
	// The HTTP+JSON binding (rest.go) routes its paths itself, at the
	// root, under /{tenant} and under /agents/{name}; it answers every
	// other path 404.
	e.mux.Handle("/", e.restHandler())
}

// Run runs the edge's background work until ctx ends: the rate limits
// shared with the other edges (RunLimits) and the audit log's publisher
// (Config.Audit).
func (e *Edge) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if e.cfg.Audit != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.cfg.Audit.Run(ctx)
		}()
	}
	err := e.RunLimits(ctx)
	wg.Wait()
	return err
}

// WaitingFor lists what the edge still waits for before it is ready
// (empty: ready): "agent registry" until its registry table has loaded
// the registry, "push delivery" while push is configured but its
// deliverer is not running (see Config.PushDeliverer).
func (e *Edge) WaitingFor() []string {
	var w []string
	if !e.reg.Loaded() {
		w = append(w, "agent registry")
	}
	if e.pushWaiting() {
		w = append(w, "push delivery")
	}
	return w
}

// serveHealth answers /healthz: 200 {"status":"ok"} once the edge is
// ready; until then 503 {"status":"starting","waiting_for":[...]} (task
// calls are served meanwhile; sends wait for the registry, push calls for
// push delivery: they answer -32000, retry).
func (e *Edge) serveHealth(w http.ResponseWriter, r *http.Request) {
	if waiting := e.WaitingFor(); len(waiting) > 0 {
		writeStarting(w, waiting)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// serveLive answers /livez: 200 whenever the process serves HTTP, ready or
// not (a liveness probe must not restart an edge that waits for NATS).
func serveLive(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"live"}` + "\n"))
}

// writeStarting answers 503 saying what the edge waits for.
func writeStarting(w http.ResponseWriter, waiting []string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "starting", "waiting_for": waiting})
}

// registryLoading answers a card request 503 while the registry table
// has not loaded: its agents are not known yet, not absent.
func (e *Edge) registryLoading(w http.ResponseWriter) bool {
	if e.reg.Loaded() {
		return false
	}
	writeStarting(w, []string{"agent registry"})
	return true
}

// ServeHTTP serves the edge's routes, with CORS and panic recovery.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			e.log.Error("panic serving request", "path", r.URL.Path, "panic", p)
			writeJSON(w, http.StatusInternalServerError, a2a.NewError(nil, a2a.ErrInternal))
		}
	}()
	if e.cors(w, r) {
		return
	}
	e.mux.ServeHTTP(w, r)
}

// baseURL is the public base URL for links in cards.
func (e *Edge) baseURL(r *http.Request) string {
	if e.cfg.PublicURL != "" {
		return e.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

// agentCard is an agent's registered card with its interfaces pointing at
// this edge: /agents/{name} and /a2a with the agent as tenant.
func (e *Edge) agentCard(r *http.Request, name string, c a2a.AgentCard) a2a.AgentCard {
	return e.agentCardAt(e.baseURL(r), name, c)
}

// agentCardAt is agentCard for the public base URL base. The card says
// whether the agent has an extended card (GetExtendedAgentCard) in the
// fields of both versions, as its worker registered it.
func (e *Edge) agentCardAt(base, name string, c a2a.AgentCard) a2a.AgentCard {
	c.Name = name
	ext := c.DeclaresExtendedCard()
	c.Capabilities.ExtendedAgentCard = a2a.Bool(ext)
	c.SupportsAuthenticatedExtendedCard = a2a.Bool(ext)
	if c.Version == "" {
		c.Version = "1.0.0"
	}
	if c.Skills == nil {
		c.Skills = []a2a.AgentSkill{}
	}
	if len(c.DefaultInputModes) == 0 {
		c.DefaultInputModes = []string{"text/plain"}
	}
	if len(c.DefaultOutputModes) == 0 {
		c.DefaultOutputModes = []string{"text/plain"}
	}
	return e.finishCard(c.WithEndpoint(base+"/agents/"+name, base+"/a2a", name).WithBindings(e.moreBindings(base, name)...))
}

func (e *Edge) serveAgentCard(w http.ResponseWriter, r *http.Request) {
	if e.registryLoading(w) {
		return
	}
	name := r.PathValue("name")
	c, ok := e.reg.Lookup(name)
	if !ok || !bus.ValidToken(name) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no agent named " + name + " is known to the mesh"})
		return
	}
	e.writeCard(w, r, e.agentCard(r, name, c))
}

func (e *Edge) serveAgents(w http.ResponseWriter, r *http.Request) {
	if e.registryLoading(w) {
		return
	}
	agents := e.visible(r, e.reg.Listing())
	cards := make([]a2a.AgentCard, 0, len(agents))
	for _, a := range agents {
		c, err := e.signCard(r, e.agentCard(r, a.Agent, a.Card))
		if err != nil {
			e.cardUnavailable(w, err)
			return
		}
		cards = append(cards, c)
	}
	if e.cfg.Policy != nil {
		w.Header().Set("Vary", "Authorization, X-Api-Key") // the list depends on the caller
	}
	e.writeCached(w, r, agentList(cards, agents), cardMaxAge)
}

// visible keeps the agents the request's caller may see under the access
// policy (all of them without one). Card routes are public: a request
// that carries a valid credential is its principal's, any other is
// anonymous, and sees the agents a "*" rule names.
func (e *Edge) visible(r *http.Request, agents []registry.Listed) []registry.Listed {
	pol := e.cfg.Policy.Policy()
	if pol == nil {
		return agents
	}
	caller := callerFrom(r.Context())
	if caller.Principal == "" && e.id.on() {
		if c, err := e.id.identify(r.Context(), r.Header.Get(APIKeyHeader), r.Header.Get("Authorization"), r.TLS); err == nil {
			caller = c
		}
	}
	out := agents[:0:0]
	for _, a := range agents {
		if pol.Sees(caller, a.Agent) {
			out = append(out, a)
		}
	}
	return out
}

// serveMeshCard is the card of the mesh itself: one interface, /a2a,
// serving every agent by tenant (and the default agent without one); its
// skills are the live agents.
func (e *Edge) serveMeshCard(w http.ResponseWriter, r *http.Request) {
	if e.registryLoading(w) {
		return
	}
	base := e.baseURL(r)
	entries := e.visible(r, e.reg.Listing())
	if e.cfg.Policy != nil {
		w.Header().Set("Vary", "Authorization, X-Api-Key")
	}
	skills := make([]a2a.AgentSkill, 0, len(entries))
	for _, en := range entries {
		skills = append(skills, a2a.AgentSkill{
			ID: en.Agent, Name: en.Agent, Description: en.Card.Description,
			Tags: []string{"agent"},
		})
	}
	c := a2a.AgentCard{
		Name: e.cfg.MeshName, Description: e.cfg.MeshDescription, Version: "1.0.0",
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true), ExtendedAgentCard: a2a.Bool(false),
		},
		SupportsAuthenticatedExtendedCard: a2a.Bool(false),
		DefaultInputModes:                 []string{"text/plain", "application/json"},
		DefaultOutputModes:                []string{"text/plain", "application/json"},
		Skills:                            skills,
	}
	e.writeCard(w, r, e.finishCard(c.WithEndpoint(base+"/a2a", "", "").WithBindings(e.moreBindings(base, "")...)))
}

// writeCard serves card signed (cardsign.go), with the caching headers
// of cardcache.go.
func (e *Edge) writeCard(w http.ResponseWriter, r *http.Request, card a2a.AgentCard) {
	card, err := e.signCard(r, card)
	if err != nil {
		e.cardUnavailable(w, err)
		return
	}
	e.writeCached(w, r, card, cardMaxAge)
}

// finishCard adds what every card of this edge says the same way: push
// support, the mesh's own extensions and the security schemes of its
// auth; and drops the 0.3 fields for StrictCards.
func (e *Edge) finishCard(c a2a.AgentCard) a2a.AgentCard {
	c.Capabilities.PushNotifications = a2a.Bool(e.pushEnabled())
	c = withMeshExtensions(c) // extensions.go
	c.SecuritySchemes, c.SecurityReqs, c.Security = nil, nil, nil
	if e.id.on() {
		c.SecuritySchemes, c.SecurityReqs, c.Security = e.id.cardSecurity()
	}
	if e.cfg.StrictCards {
		c = c.Strict10()
		if c.SecuritySchemes != nil {
			c.SecuritySchemes = strict10Security(c.SecuritySchemes)
		}
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	noteAnswer(w, v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// cors applies the CORS policy; it reports true when it answered a
// preflight request itself.
func (e *Edge) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(e.cfg.CORSOrigins) == 0 {
		return false
	}
	allowed := false
	for _, o := range e.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			allowed = true
			break
		}
	}
	if !allowed {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Content-Type, A2A-Extensions, X-A2A-Extensions")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, X-API-Key, A2A-Version, A2A-Extensions, X-A2A-Extensions, Last-Event-ID, traceparent, tracestate")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}
