// Package proxy makes an A2A agent served elsewhere (by any implementation,
// in any language) a mesh agent: a proxy worker fetches the agent's card,
// registers it in the mesh under its name, and forwards each task turn to
// the agent with an A2A client, recording the agent's answers as the mesh
// task's events.
//
// The upstream speaks A2A 1.0 or 0.3 over JSON-RPC, or 1.0 over HTTP+JSON
// or gRPC; its card says which, and whether it streams. The worker calls
// JSON-RPC when the card offers it (1.0, else 0.3), else HTTP+JSON, else
// gRPC. A streaming agent is called with SendStreamingMessage
// (message/stream) and its events are recorded as they come; any other
// with a non-blocking SendMessage (message/send), then GetTask until the
// task settles.
//
// Every outbound request passes an SSRF guard (package internal/ssrf):
// only http and https (a gRPC address is checked as the http or https URL
// of its host and port), and no private, loopback, link-local or otherwise
// special address at dial time, unless the operator trusts it.
//
// Upstream task and context ids are kept in the bus's A2A_UPSTREAM bucket,
// so a later turn of a multi-turn task continues the same upstream task,
// and a turn re-run after its worker died follows the upstream task it
// already started instead of sending the message twice. The upstream sees
// each mesh turn's message id, so an upstream that deduplicates by message
// id also absorbs the one window (a worker dying between the send and the
// first answer) where a message is sent again.
package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/client"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
	"github.com/a2amesh/a2amesh/tracing"
)

// Config configures a proxied agent.
type Config struct {
	// URL is the agent's A2A base URL (its card is at
	// URL/.well-known/agent-card.json) or the URL of its card.
	URL string
	// Name is the agent's name in the mesh; by default it is derived from
	// the card's name (lower case, other characters than [a-z0-9_-]
	// become "-").
	Name string
	// Guard checks every outbound URL and address; nil trusts nothing
	// private.
	Guard *ssrf.Guard
	// Header is added to every upstream request (for example the
	// upstream's own Authorization).
	Header http.Header
	// RequireSignedCard refuses an upstream card without a signature that
	// verifies with a key of the JWK Set its jku names on the card's own
	// origin (cardcheck.go): New fails, and a refreshed card that does not
	// verify is not registered.
	RequireSignedCard bool
	// Bus holds the upstream id mappings.
	Store  *taskstore.Store
	Logger *slog.Logger
}

// ErrUnavailable is wrapped by New's error when the agent's card could not
// be fetched for a reason that may pass (the agent is not up yet, or
// answered 5xx); other errors (a refused address, a card without a
// usable interface) will not pass by retrying.
var ErrUnavailable = errors.New("agent unavailable")

// Agent is a proxied agent; it implements agentrt.Agent.
type Agent struct {
	name      string
	card      atomic.Pointer[a2a.AgentCard] // replaced by RefreshCard
	check     atomic.Pointer[registry.CardCheck]
	checker   *cardChecker
	require   bool                          // Config.RequireSignedCard
	ext       atomic.Pointer[a2a.AgentCard] // the upstream's extended card (nil: none); replaced by RefreshCard
	url       string                        // where the card was fetched
	cardOpts  []client.Option               // how to fetch it again
	iface     upstreamInterface             // where and how it forwards
	streaming bool
	cl        *client.Client
	kv        bus.KV
	log       *slog.Logger
}

var (
	_ agentrt.Agent          = (*Agent)(nil)
	_ agentrt.ExtendedCarder = (*Agent)(nil)
)

// New fetches the upstream agent's card and prepares to forward to it.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	if cfg.Store.Bus() == nil {
		return nil, errors.New("proxy: a bus is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Guard.CheckURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("proxy: agent URL: %w", err)
	}
	// A blocking send to an agent that answers only when the task is done
	// may keep its response headers back for the whole task: the run's
	// context bounds it, not a header timeout.
	hc := cfg.Guard.HTTPClient(0)
	if tr, ok := hc.Transport.(*http.Transport); ok {
		tr.ResponseHeaderTimeout = 0
	}
	// Each upstream call within a run gets a client span and carries it
	// in a traceparent header.
	hc.Transport = tracing.Transport(hc.Transport)
	opts := []client.Option{client.WithHTTPClient(hc)}
	for k, vs := range cfg.Header {
		for _, v := range vs {
			opts = append(opts, client.WithHeader(k, v))
		}
	}
	card, raw, cardURL, err := fetchCard(ctx, cfg.URL, opts)
	if err != nil {
		return nil, err
	}
	checker := newCardChecker(cfg.Guard)
	check, checkErr := checker.check(ctx, raw, cardURL)
	if checkErr != nil && cfg.RequireSignedCard {
		if errors.Is(checkErr, errJWKSUnavailable) {
			checkErr = fmt.Errorf("%w: %w", ErrUnavailable, checkErr)
		}
		return nil, fmt.Errorf("proxy: agent card %s (--require-signed-card): %s: %w", cardURL, check.Status, checkErr)
	}
	iface, err := pickInterface(card)
	if err != nil {
		return nil, fmt.Errorf("proxy: agent %q: %w", card.Name, err)
	}
	if err := cfg.Guard.CheckURL(iface.checkURL()); err != nil {
		return nil, fmt.Errorf("proxy: agent %q %s endpoint: %w", card.Name, iface.Binding, err)
	}
	name := cfg.Name
	if name == "" {
		name = MeshName(card.Name)
	}
	if !bus.ValidToken(name) {
		return nil, fmt.Errorf("proxy: agent name %q is not a valid mesh name ([A-Za-z0-9_-], 1-128); set one", name)
	}
	kv, err := upstreamBucket(ctx, cfg.Store.Bus())
	if err != nil {
		return nil, err
	}
	cardOpts := append([]client.Option(nil), opts...)
	opts = append(opts, client.WithBinding(iface.Binding), client.WithProtocolVersion(iface.Version),
		// gRPC: every connection is dialed through the guard, and carries
		// the run's trace context.
		client.WithDialer(cfg.Guard.DialContext),
		client.WithGRPCDialOptions(grpc.WithUnaryInterceptor(traceUnary), grpc.WithStreamInterceptor(traceStream)))
	if iface.Tenant != "" {
		opts = append(opts, client.WithTenant(iface.Tenant))
	}
	a := &Agent{
		name:      name,
		url:       cfg.URL,
		checker:   checker,
		require:   cfg.RequireSignedCard,
		cardOpts:  cardOpts,
		iface:     iface,
		streaming: card.Capabilities.Streaming != nil && *card.Capabilities.Streaming,
		cl:        client.New(iface.URL, opts...),
		kv:        kv,
		log:       cfg.Logger.With("agent", name, "upstream", iface.URL, "binding", iface.Binding),
	}
	mc := meshCard(*card, name)
	a.card.Store(&mc)
	a.check.Store(check)
	a.ext.Store(a.fetchExtended(ctx, card))
	a.log.Info("proxying agent", "protocol", iface.Version, "streaming", a.streaming, "card_signature", check.Status)
	return a, nil
}

// fetchExtended reads the upstream's extended card, with the worker's
// upstream credentials (Config.Header), when its card declares one: the
// card edges serve to the mesh's authenticated callers. nil when it
// declares none, or the call failed (logged; edges then answer -32007
// until a refresh gets it).
func (a *Agent) fetchExtended(ctx context.Context, card *a2a.AgentCard) *a2a.AgentCard {
	if !card.DeclaresExtendedCard() {
		return nil
	}
	ext, err := a.cl.ExtendedCard(ctx)
	if err != nil {
		a.log.Warn("the agent's card declares an extended card, but fetching it failed; edges answer -32007 for it until a refresh gets it", "err", err)
		return nil
	}
	mc := meshCard(*ext, a.name)
	return &mc
}

// ExtendedCard is the upstream's extended card as registered in the mesh
// (nil: none), read at every registry heartbeat (agentrt.ExtendedCarder).
func (a *Agent) ExtendedCard() *a2a.AgentCard { return a.ext.Load() }

// Close releases the upstream client's connections (a gRPC upstream's);
// the agent must not run after.
func (a *Agent) Close() error { return a.cl.Close() }

// traceUnary and traceStream send the trace context of a gRPC call's
// context as traceparent (and tracestate) metadata, as the HTTP
// bindings' transport sends it in headers.
func traceUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(withTraceMD(ctx), method, req, reply, cc, opts...)
}

func traceStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(withTraceMD(ctx), desc, cc, method, opts...)
}

func withTraceMD(ctx context.Context) context.Context {
	h := http.Header{}
	tracing.Inject(ctx, h)
	for k, vs := range h {
		for _, v := range vs {
			ctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(k), v)
		}
	}
	return ctx
}

// RefreshCard fetches the upstream's card again and registers what it
// says about the agent (description, skills, modes, version) from the next
// registry heartbeat on. Where and how the worker forwards stays as it was
// at start: a card naming another interface is logged, and takes a
// restart.
func (a *Agent) RefreshCard(ctx context.Context) error {
	card, raw, cardURL, err := fetchCard(ctx, a.url, a.cardOpts)
	if err != nil {
		return err
	}
	check, checkErr := a.checker.check(ctx, raw, cardURL)
	if checkErr != nil && a.require {
		return fmt.Errorf("proxy: agent card %s (--require-signed-card): %s: %w", cardURL, check.Status, checkErr)
	}
	if in, err := pickInterface(card); err != nil || in != a.iface {
		a.log.Warn("the agent's card names another interface now; restart the worker to forward there",
			"card_endpoint", in.URL, "card_binding", in.Binding, "card_protocol", in.Version, "card_tenant", in.Tenant)
	}
	mc := meshCard(*card, a.name)
	if old := a.card.Swap(&mc); !reflect.DeepEqual(*old, mc) {
		a.log.Info("agent card changed upstream; registering the new one")
	}
	if old := a.check.Swap(check); old.Status != check.Status {
		a.log.Info("the agent card's signature check changed", "was", old.Status, "now", check.Status, "err", check.Error)
	}
	a.ext.Store(a.fetchExtended(ctx, card))
	return nil
}

// WatchCard refreshes the card every interval until ctx ends, and returns
// nil then, with nothing of it left running; a failed fetch keeps the card
// as it was.
func (a *Agent) WatchCard(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if err := a.RefreshCard(fctx); err != nil && ctx.Err() == nil {
				a.log.Warn("could not refresh the agent's card; keeping the last one", "err", err)
			}
			cancel()
		}
	}
}

// fetchCard reads the card at url (or the agent's well-known card), trying
// the pre-0.3 /.well-known/agent.json when agent-card.json is missing. It
// returns the card, the document as served (for its signatures) and the
// URL it came from.
func fetchCard(ctx context.Context, url string, opts []client.Option) (*a2a.AgentCard, []byte, string, error) {
	cardURL := client.CardURL(url)
	card, raw, err := readCard(ctx, cardURL, opts)
	var he *client.HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound && !client.IsCardURL(url) {
		old := strings.TrimSuffix(cardURL, "agent-card.json") + "agent.json"
		if c, r, err2 := readCard(ctx, old, opts); err2 == nil {
			return c, r, old, nil
		}
	}
	if err != nil {
		if transient(err) || errors.As(err, &he) && (he.StatusCode >= 500 || he.StatusCode == http.StatusNotFound) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, nil, "", fmt.Errorf("proxy: fetching agent card %s: %w", cardURL, err)
	}
	return card, raw, cardURL, nil
}

func readCard(ctx context.Context, cardURL string, opts []client.Option) (*a2a.AgentCard, []byte, error) {
	raw, err := client.CardJSON(ctx, cardURL, opts...)
	if err != nil {
		return nil, nil, err
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, nil, err // CardJSON decoded it already: not reached
	}
	return &card, raw, nil
}

// upstreamInterface is the interface of the upstream's card the worker
// calls.
type upstreamInterface struct {
	URL     string
	Binding string // a2a.BindingJSONRPC, a2a.BindingHTTPJSON or a2a.BindingGRPC
	Version string // "1.0" or "0.3" (JSON-RPC only)
	Tenant  string
}

// checkURL is the URL the SSRF guard vets before any call: the
// interface's URL, or for gRPC the http (or, for TLS, https) URL of its
// host and port.
func (in upstreamInterface) checkURL() string {
	if in.Binding != a2a.BindingGRPC {
		return in.URL
	}
	scheme, rest, ok := strings.Cut(in.URL, "://")
	if !ok {
		return "http://" + in.URL
	}
	switch strings.ToLower(scheme) {
	case "grpc":
		scheme = "http"
	case "grpcs":
		scheme = "https"
	}
	return scheme + "://" + rest
}

// pickInterface chooses the interface to call: JSON-RPC 1.0 if the card
// offers it, else JSON-RPC 0.3, else HTTP+JSON 1.0, else gRPC 1.0, each
// the first the card lists.
func pickInterface(c *a2a.AgentCard) (upstreamInterface, error) {
	is := func(in a2a.AgentInterface, binding, major string) bool {
		return strings.EqualFold(in.ProtocolBinding, binding) && strings.HasPrefix(in.ProtocolVersion, major) && in.URL != ""
	}
	jsonrpc := func(binding string) bool { return strings.EqualFold(binding, a2a.BindingJSONRPC) }
	for _, in := range c.SupportedInterfaces {
		if is(in, a2a.BindingJSONRPC, "1.") {
			return upstreamInterface{URL: in.URL, Binding: a2a.BindingJSONRPC, Version: "1.0", Tenant: in.Tenant}, nil
		}
	}
	for _, in := range c.SupportedInterfaces {
		if is(in, a2a.BindingJSONRPC, "0.") {
			return upstreamInterface{URL: in.URL, Binding: a2a.BindingJSONRPC, Version: "0.3"}, nil
		}
	}
	if c.URL != "" && (c.PreferredTransport == "" || jsonrpc(c.PreferredTransport)) {
		return upstreamInterface{URL: c.URL, Binding: a2a.BindingJSONRPC, Version: "0.3"}, nil
	}
	for _, in := range c.AdditionalInterfaces {
		if jsonrpc(in.Transport) && in.URL != "" {
			return upstreamInterface{URL: in.URL, Binding: a2a.BindingJSONRPC, Version: "0.3"}, nil
		}
	}
	for _, binding := range []string{a2a.BindingHTTPJSON, a2a.BindingGRPC} {
		for _, in := range c.SupportedInterfaces {
			if is(in, binding, "1.") {
				return upstreamInterface{URL: in.URL, Binding: binding, Version: "1.0", Tenant: in.Tenant}, nil
			}
		}
	}
	return upstreamInterface{}, errors.New("the card offers no interface the proxy speaks (JSON-RPC 1.0 or 0.3, HTTP+JSON 1.0, gRPC 1.0)")
}

// MeshName derives a mesh agent name from a card's name: lower case, runs
// of characters outside [a-z0-9_-] become one "-".
func MeshName(cardName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(cardName) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 128 {
		s = strings.TrimRight(s[:128], "-")
	}
	return s
}

// meshCard is the card registered for the agent: the upstream's, with
// what belongs to the upstream's own front door removed. Edges rewrite
// the interfaces to their public URL and speak for the mesh's security and
// push support. Whether the agent has an extended card is kept, in the
// 1.0 field.
func meshCard(c a2a.AgentCard, name string) a2a.AgentCard {
	c.Name = name
	c.SupportedInterfaces = nil
	c.URL, c.PreferredTransport, c.AdditionalInterfaces, c.ProtocolVersion = "", "", nil, ""
	c.SecuritySchemes, c.SecurityReqs = nil, nil
	c.Capabilities.ExtendedAgentCard = a2a.Bool(c.DeclaresExtendedCard())
	c.SupportsAuthenticatedExtendedCard = nil
	c.Capabilities.PushNotifications = nil
	c.Capabilities.Streaming = a2a.Bool(true) // the mesh streams every agent
	c.Signatures = nil                        // edges sign the card they serve
	return c
}

// Name is the agent's name in the mesh.
func (a *Agent) Name() string { return a.name }

// Endpoint is the upstream interface in use: its URL (for gRPC its
// address), binding (a2a.BindingJSONRPC, a2a.BindingHTTPJSON or
// a2a.BindingGRPC) and protocol version ("1.0" or "0.3").
func (a *Agent) Endpoint() (url, binding, version string) {
	return a.iface.URL, a.iface.Binding, a.iface.Version
}

// Card is the card registered in the mesh.
func (a *Agent) Card() a2a.AgentCard { return *a.card.Load() }

// RepliesWithMessage declares that the agent may answer with a Message:
// an upstream agent may, and a Message it answers the turn that created
// the task with is forwarded as the send's answer (agentrt.Reply).
func (a *Agent) RepliesWithMessage() bool { return true }

// upstream is where a mesh task lives at the upstream agent.
type upstream struct {
	TaskID    string `json:"taskId,omitempty"`
	ContextID string `json:"contextId,omitempty"`
	// Turn is the mesh message id of the turn last forwarded to TaskID.
	Turn string `json:"turn,omitempty"`
}

func key(kind, id string) string {
	sum := sha256.Sum256([]byte(id))
	return kind + "." + hex.EncodeToString(sum[:16])
}

func (a *Agent) load(ctx context.Context, k string) (upstream, error) {
	var up upstream
	v, err := a.kv.Get(ctx, k)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return up, nil
	}
	if err != nil {
		return up, err
	}
	return up, json.Unmarshal(v, &up)
}

func (a *Agent) save(ctx context.Context, k string, up upstream) error {
	b, err := json.Marshal(up)
	if err != nil {
		return err
	}
	_, err = a.kv.Put(ctx, k, b)
	return err
}

// Run forwards one turn.
func (a *Agent) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	taskKey := key("task", req.TaskID)
	up, err := a.load(ctx, taskKey)
	if err != nil {
		return fmt.Errorf("proxy: loading upstream ids: %w", err)
	}
	t := &turn{a: a, req: req, w: w, taskKey: taskKey, up: up}
	if len(req.Extensions) > 0 {
		// The client's extensions go upstream; what the upstream echoes
		// as activated is activated here too, before the events that
		// follow are recorded (see activate).
		t.exts = &client.Extensions{Requested: req.Extensions}
		ctx = client.WithExtensions(ctx, t.exts)
	}
	defer t.cancelUpstreamIfCanceled(ctx)
	if up.TaskID != "" && up.Turn == req.Message.MessageID {
		// This turn was forwarded before, by a run that died: follow the
		// upstream task rather than sending the message again.
		a.log.Info("following upstream task of an interrupted run", "task_id", req.TaskID, "upstream_task", up.TaskID)
		if err := t.follow(ctx); !errors.Is(err, errNotReceived) {
			return err
		}
		a.log.Info("upstream never got the turn; sending it", "task_id", req.TaskID, "upstream_task", up.TaskID)
	}
	if up.TaskID != "" && up.Turn != req.Message.MessageID {
		// A later turn of the upstream task: note it before sending, so a
		// run that dies from here on is followed, not repeated.
		t.up.Turn = req.Message.MessageID
		if err := a.save(ctx, taskKey, t.up); err != nil {
			return fmt.Errorf("proxy: saving upstream ids: %w", err)
		}
	}
	msg := req.Message
	msg.Role = a2a.RoleUser
	msg.TaskID, msg.ContextID = up.TaskID, up.ContextID
	msg.ReferenceTaskIDs = nil // mesh ids mean nothing upstream
	if msg.ContextID == "" && req.ContextID != "" {
		if cu, err := a.load(ctx, key("ctx", req.ContextID)); err == nil {
			msg.ContextID = cu.ContextID
		}
	}
	sreq := &a2a.SendMessageRequest{
		Message:       &msg,
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: req.AcceptedOutputModes},
		Metadata:      tracing.ToMetadata(ctx, req.Metadata), // the run's span, for upstreams reading a2a.trace
	}
	t.continuing = msg.TaskID != ""
	if a.streaming {
		return t.stream(ctx, sreq)
	}
	return t.send(ctx, sreq)
}

// turn is one forwarded turn.
type turn struct {
	a       *Agent
	req     *agentrt.Request
	w       agentrt.EventWriter
	taskKey string
	up      upstream
	settled bool // a final or interrupted state (or a reply message) was recorded
	// continuing: this turn continues an upstream task. A stream then
	// starts with the task as it was before the turn (still
	// input-required, say), so only status updates settle it.
	continuing bool
	// exts collects the extensions the upstream echoed (nil when the
	// client requested none).
	exts *client.Extensions
}

// activate activates the extensions the upstream echoed so far. An
// upstream echoes them in its answer's headers, before the events it
// carries, so they are recorded with the first of those events. What an
// upstream echoes only in a gRPC stream's trailer, after the stream's last
// event, is too late for the turn.
func (t *turn) activate() {
	if t.exts == nil {
		return
	}
	for _, u := range t.exts.Activated() {
		t.req.Activate(u)
	}
}

// stream forwards with a streaming call and records events as they come.
// A stream cut before the task settles is resumed by resubscribing.
func (t *turn) stream(ctx context.Context, sreq *a2a.SendMessageRequest) error {
	var s *client.Stream
	err := retry(ctx, func() (err error) {
		s, err = t.a.cl.Stream(ctx, sreq)
		return err
	})
	if err != nil {
		return upstreamError(err)
	}
	if err := t.drain(ctx, s); err != nil || t.settled {
		return err
	}
	return t.follow(ctx)
}

// send forwards with a SendMessage call, then polls until the task
// settles. A turn starting an upstream task is sent non-blocking: a
// blocking call would tell the task's id only when it ends, so a run
// stopped meanwhile could not follow it. A later turn of a known task is
// sent blocking, since a non-blocking answer could be the task as it was
// before the turn (still input-required).
func (t *turn) send(ctx context.Context, sreq *a2a.SendMessageRequest) error {
	cfg := *sreq.Configuration
	cfg.ReturnImmediately = sreq.Message.TaskID == ""
	sreq.Configuration = &cfg
	var res *a2a.StreamResponse
	err := retry(ctx, func() (err error) {
		res, err = t.a.cl.Send(ctx, sreq)
		return err
	})
	if err != nil {
		return upstreamError(err)
	}
	if err := t.record(ctx, res, true); err != nil || t.settled {
		return err
	}
	return t.poll(ctx)
}

// follow catches up with an upstream task already started: it records the
// task as it is now and, unless that is settled, subscribes to it
// (streaming agents) or polls it.
func (t *turn) follow(ctx context.Context) error {
	if t.up.TaskID == "" {
		return publicError{msg: "the upstream agent ended its answer before the task finished"}
	}
	task, err := t.a.cl.GetTask(ctx, t.up.TaskID, nil)
	if err != nil {
		return upstreamError(err)
	}
	if task.Status.State.Interrupted() && !received(task, t.req.Message.MessageID) {
		return errNotReceived
	}
	if !t.a.streaming {
		return t.poll(ctx)
	}
	var last string
	if err := t.pollOnce(ctx, &last); err != nil || t.settled {
		return err
	}
	for attempt := 0; attempt < 3 && !t.settled; attempt++ {
		s, err := t.a.cl.Subscribe(ctx, t.up.TaskID, "")
		if err != nil {
			break // fall back to polling
		}
		if err := t.drain(ctx, s); err != nil {
			var rpcErr *a2a.Error
			if errors.As(err, &rpcErr) {
				break // e.g. the task settled meanwhile: poll reads it
			}
			return err
		}
	}
	if t.settled {
		return nil
	}
	return t.poll(ctx)
}

// errNotReceived says an upstream task still waits for the turn being
// followed: the run that died never delivered it.
var errNotReceived = errors.New("proxy: the upstream task never got this turn")

// received reports whether task shows the user message id in its history.
// An upstream that keeps no history cannot tell; then the turn counts as
// received.
func received(task *a2a.Task, id string) bool {
	users := 0
	for _, m := range task.History {
		if m.Role == a2a.RoleUser {
			if m.MessageID == id {
				return true
			}
			users++
		}
	}
	return users == 0
}

// drain records a stream's events until it ends or the task settles. An
// error event is returned as the upstream's error; a cut stream is not an
// error (the caller resumes).
func (t *turn) drain(ctx context.Context, s *client.Stream) error {
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	for !t.settled {
		ev, err := s.Next()
		if err != nil {
			var rpcErr *a2a.Error
			if errors.As(err, &rpcErr) {
				return upstreamError(err)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
		if err := t.record(ctx, ev.Response, !t.continuing); err != nil {
			return err
		}
	}
	return nil
}

// poll reads the upstream task until it settles, recording each change.
func (t *turn) poll(ctx context.Context) error {
	if t.up.TaskID == "" {
		return publicError{msg: "the upstream agent answered without a task"}
	}
	delay := 50 * time.Millisecond
	var last string
	failures := 0
	for {
		err := t.pollOnce(ctx, &last)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			failures = 0
		case errors.Is(err, agentrt.ErrTaskClosed):
			return err
		default:
			if failures++; failures >= 5 {
				return upstreamError(err)
			}
		}
		if t.settled {
			return nil
		}
		if err := sleep(ctx, delay); err != nil {
			return err
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// pollOnce reads the upstream task and records it if it changed since
// *last (a Task event re-records every artifact, so unchanged polls are
// skipped).
func (t *turn) pollOnce(ctx context.Context, last *string) error {
	task, err := t.a.cl.GetTask(ctx, t.up.TaskID, nil)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(struct {
		S a2a.TaskState
		A []a2a.Artifact
	}{task.Status.State, task.Artifacts})
	if string(b) == *last {
		return nil
	}
	*last = string(b)
	return t.record(ctx, &a2a.StreamResponse{Task: task}, true)
}

// record notes the upstream ids an event carries, then records the event
// in the mesh task. taskSettles says whether a Task event in an
// interrupted state settles the turn (see turn.continuing).
func (t *turn) record(ctx context.Context, ev *a2a.StreamResponse, taskSettles bool) error {
	if ev == nil {
		return nil
	}
	t.activate()
	taskID, ctxID := upstreamIDs(ev)
	if taskID != "" && (taskID != t.up.TaskID || t.up.Turn != t.req.Message.MessageID) {
		t.up = upstream{TaskID: taskID, ContextID: ctxID, Turn: t.req.Message.MessageID}
		if err := t.a.save(ctx, t.taskKey, t.up); err != nil {
			return fmt.Errorf("proxy: saving upstream ids: %w", err)
		}
		if ctxID != "" && t.req.ContextID != "" {
			if err := t.a.save(ctx, key("ctx", t.req.ContextID), upstream{ContextID: ctxID}); err != nil {
				t.a.log.Warn("saving upstream context id failed", "err", err)
			}
		}
	}
	if ev.Task != nil && ev.Task.Status.State.Interrupted() && !taskSettles {
		// The task as it was before this turn: keep its artifacts, not its
		// stale state (the mesh task is working on the turn).
		task := *ev.Task
		task.Status = a2a.TaskStatus{State: a2a.StateWorking}
		ev = &a2a.StreamResponse{Task: &task}
	}
	if err := t.w.Event(ev); err != nil {
		return err
	}
	switch {
	case ev.Message != nil:
		t.settled = true
	case ev.Task != nil:
		st := ev.Task.Status.State
		t.settled = st.Terminal() || st.Interrupted() && taskSettles
	case ev.StatusUpdate != nil:
		t.settled = ev.StatusUpdate.Status.State.Final()
	}
	return nil
}

// upstreamIDs returns the upstream task and context ids an event names.
func upstreamIDs(ev *a2a.StreamResponse) (taskID, ctxID string) {
	switch {
	case ev.Task != nil:
		return ev.Task.ID, ev.Task.ContextID
	case ev.StatusUpdate != nil:
		return ev.StatusUpdate.TaskID, ev.StatusUpdate.ContextID
	case ev.ArtifactUpdate != nil:
		return ev.ArtifactUpdate.TaskID, ev.ArtifactUpdate.ContextID
	case ev.Message != nil:
		return ev.Message.TaskID, ev.Message.ContextID
	}
	return "", ""
}

// cancelUpstreamIfCanceled cancels the upstream task when the mesh task
// was canceled or timed out (not when the worker is stopping: then the
// task runs on and another worker follows it).
func (t *turn) cancelUpstreamIfCanceled(ctx context.Context) {
	cause := context.Cause(ctx)
	if t.up.TaskID == "" || t.settled || (!errors.Is(cause, agentrt.ErrCanceled) && !errors.Is(cause, agentrt.ErrTimedOut)) {
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := t.a.cl.Cancel(cctx, t.up.TaskID); err != nil {
		t.a.log.Warn("canceling upstream task failed", "task_id", t.req.TaskID, "upstream_task", t.up.TaskID, "err", err)
	}
}

// retry runs call up to three times while it fails to reach the upstream
// at all (connection refused or reset before an answer); any answer, even
// an error, is final.
func retry(ctx context.Context, call func() error) error {
	delay := 250 * time.Millisecond
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = call(); err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if sleep(ctx, delay) != nil {
			return err
		}
		delay *= 4
	}
	return err
}

func transient(err error) bool {
	if errors.Is(err, ssrf.ErrBlocked) {
		return false
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// publicError is an error whose text the client may see (agentrt fails the
// task with PublicMessage, and logs Error).
type publicError struct {
	msg string
	err error
}

func (e publicError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}
func (e publicError) PublicMessage() string { return e.msg }
func (e publicError) Unwrap() error         { return e.err }

// upstreamError describes a failed upstream call for the client. An A2A
// error the protocol defines for clients (invalid params, task not found,
// not cancelable, unsupported...) keeps its code and message; an internal
// or implementation-defined error only its code, since its text may hold
// the upstream's internals; a transport failure says only what kind it was.
func upstreamError(err error) error {
	var rpcErr *a2a.Error
	var he *client.HTTPError
	switch {
	case errors.As(err, &rpcErr):
		if rpcErr.Code == a2a.CodeInvalidParams || rpcErr.Code <= -32001 && rpcErr.Code >= -32009 {
			msg := rpcErr.Message
			if len(msg) > 200 {
				msg = msg[:200]
			}
			return publicError{msg: fmt.Sprintf("the upstream agent answered with error %d: %s", rpcErr.Code, msg), err: err}
		}
		return publicError{msg: fmt.Sprintf("the upstream agent failed (error %d)", rpcErr.Code), err: err}
	case errors.Is(err, ssrf.ErrBlocked):
		return publicError{msg: "the upstream agent's address is refused by the mesh's outbound policy", err: err}
	case errors.As(err, &he):
		return publicError{msg: fmt.Sprintf("the upstream agent answered HTTP %d", he.StatusCode), err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return publicError{msg: "the upstream agent could not be reached", err: err}
	}
}
