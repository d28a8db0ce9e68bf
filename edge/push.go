package edge

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/google/uuid"
)

// Push notifications.
//
// Configs live in the A2A_PUSH bucket under <taskId>.<configId>, with the
// owner, the protocol version of the call that set them (deliveries use its
// wire shapes) and the task's last event at that moment: the events after
// it are delivered. Every edge running push (Start) takes part in two
// durable JetStream consumers, so delivery survives the loss or restart of
// any edge:
//
//   - push_dispatch reads the events stream; an in-memory index of the task
//     ids that have configs (kept by a watcher on the bucket) makes an event
//     of a task without config cost one map lookup. A matching event
//     becomes one job per config on the A2A_PUSH_OUT work queue.
//   - push_deliver POSTs each job's event to its webhook through the SSRF
//     guard (dial-time address check; an allow-list trusts internal
//     receivers), retrying with exponential backoff a bounded number of
//     times (push_deliver.go).
//
// What is delivered: every event of the task's log after the config was set
// (status and artifact updates, agent messages), not the task's creation
// entry nor the user's own turns, which a stream does not show either.
//
// Order: jobs are queued in log order, and one edge delivers the jobs of a
// task it holds one at a time, in order. A retried notification can be
// overtaken by later ones of the same task, as can jobs of one task taken
// by two edges: receivers should order by status timestamp, or GetTask.
// Delivery is at least once (a receiver may see a notification twice).
//
// Each POST carries:
//   - the event as a StreamResponse (1.0) or the 0.3 result shape;
//   - X-A2A-Notification-Token: the config's token, from either shape
//     (top-level token, else authentication.credentials; top-level wins);
//   - Authorization: {scheme} {credentials} when the config has
//     authentication (1.0 §4.3.3);
//   - a JWT signed by the mesh (ES256; iss, aud = the webhook URL, iat,
//     exp, jti, taskId, request_body_sha256) in X-A2A-Notification-Signature,
//     and also as Authorization: Bearer <jwt> when the config has no
//     authentication of its own (where the A2A guidance puts it). Receivers
//     verify it with the key set the edge serves at /.well-known/jwks.json.

// PushConfig configures push-notification delivery.
type PushConfig struct {
	// Enabled turns push notifications on (Start must then be called).
	Enabled bool
	// Trusted lists receivers allowed despite being private or loopback
	// addresses: IPs, CIDRs, host names or host:port (see ssrf.New).
	Trusted []string
	// MaxAttempts bounds the POSTs of one notification (default 6).
	MaxAttempts int
	// Backoff is the delay before the first retry; each next one doubles,
	// up to MaxBackoff (defaults 1s and 1m).
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one POST (default 10s).
	Timeout time.Duration
	// SigningKeyFile is a PEM file with the ECDSA P-256 key deliveries are
	// signed with. Empty: a key is generated once and kept in the NATS
	// bucket A2A_PUSH_KEYS, shared by every edge (the private key then
	// lives in NATS: protect NATS accordingly).
	SigningKeyFile string
	// MaxConfigsPerTask bounds the configs of one task (default 10).
	MaxConfigsPerTask int
	// Workers is how many deliveries one edge runs at once (default 16).
	Workers int
}

func (c PushConfig) withDefaults() PushConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 6
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.MaxBackoff < c.Backoff {
		c.MaxBackoff = c.Backoff
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxConfigsPerTask <= 0 {
		c.MaxConfigsPerTask = 10
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	return c
}

// Check reports a configuration error of c (the allow-list, the signing
// key file), without NATS: a role checks it before it waits for NATS, so a
// bad flag ends the process at once.
func (c PushConfig) Check() error {
	if !c.Enabled {
		return nil
	}
	_, _, err := c.prepare()
	return err
}

// prepare builds the SSRF guard and reads the signing key file, if any.
func (c PushConfig) prepare() (*ssrf.Guard, []byte, error) {
	guard, err := ssrf.New(c.Trusted)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: push allow-list: %w", err)
	}
	if c.SigningKeyFile == "" {
		return guard, nil, nil
	}
	pemBytes, err := os.ReadFile(c.SigningKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: push signing key: %w", err)
	}
	if _, err := pushsig.ParsePEM(pemBytes); err != nil {
		return nil, nil, fmt.Errorf("edge: push signing key %s: %w", c.SigningKeyFile, err)
	}
	return guard, pemBytes, nil
}

// pushState is an edge's running push machinery. It is kept beside the
// Edge (keyed by it) rather than in it, so the rest of the edge stays
// unaware of push. store and signer are set while it starts, before
// running is; readers check running first.
type pushState struct {
	cfg     PushConfig
	store   *bus.PushStore
	guard   *ssrf.Guard
	client  *http.Client
	signer  *pushsig.Signer
	index   *pushIndex
	running atomic.Bool
	stopped atomic.Bool
	wg      sync.WaitGroup
	// reindex asks the config watcher for a new watch (the index fell
	// behind the bucket: its watcher may have lost its server).
	reindex chan struct{}
}

// push is the edge's push state, nil until Start runs push.
func (e *Edge) push() *pushState { return e.pushSt.Load() }

// pushEnabled reports whether this edge delivers push notifications (what
// cards advertise): configured and started (perhaps still waiting for
// NATS: calls are then answered -32000, retry), and not stopped.
func (e *Edge) pushEnabled() bool {
	st := e.push()
	return st != nil && !st.stopped.Load()
}

// errPushStarting answers push calls while this edge's push machinery
// waits for NATS (start-up, or a failover during it).
var errPushStarting = a2a.ErrServerBusy.With("push notifications are starting on this edge (waiting for NATS); retry shortly")

// pushRunning returns the push state for a call that needs it: the
// "not supported" error when push is off, -32000 while it starts.
func (e *Edge) pushRunning() (*pushState, error) {
	st := e.push()
	switch {
	case st == nil || st.stopped.Load():
		return nil, a2a.ErrPushNotificationNotSupported
	case !st.running.Load():
		return nil, errPushStarting
	}
	return st, nil
}

// Start starts the edge's background work: with push enabled, the push
// dispatcher and deliverer, which run until ctx ends (Wait waits for them).
// Without push it does nothing.
//
// It returns once push delivery runs. Every step that needs JetStream (the
// push bucket and stream, the signing key, the config index, the two
// consumers) is retried through a failover with backoff, logging what it
// waits for: Start returns an error only for a configuration error (see
// PushConfig.Check), and nil when ctx ends first. Meanwhile /healthz says
// not ready and push calls are answered -32000.
func (e *Edge) Start(ctx context.Context) error {
	pc := e.cfg.Push.withDefaults()
	if !pc.Enabled {
		return nil
	}
	guard, keyFile, err := pc.prepare()
	if err != nil {
		return err
	}
	client := guard.HTTPClient(pc.Timeout)
	client.CheckRedirect = func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a webhook answers itself; a redirect is a failure
	}
	st := &pushState{cfg: pc, guard: guard, client: client, index: newPushIndex(), reindex: make(chan struct{}, 1)}
	if !e.pushSt.CompareAndSwap(nil, st) {
		return errors.New("edge: already started")
	}
	// This goroutine holds st.wg until Start returns, so Wait never sees
	// the count reach zero while Start still adds to it.
	starting := make(chan struct{})
	defer close(starting)
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		<-ctx.Done()
		st.stopped.Store(true)
		st.running.Store(false)
		<-starting
	}()
	if err := st.start(ctx, e, keyFile); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	st.running.Store(true)
	e.log.Info("push notifications on", "signing_kid", st.signer.KeyID(), "max_attempts", pc.MaxAttempts, "trusted", pc.Trusted)
	return nil
}

// Wait blocks until the background work Start began has stopped.
func (e *Edge) Wait() {
	if st := e.push(); st != nil {
		st.wg.Wait()
	}
}

// signingKeyName is the A2A_PUSH_KEYS entry of a generated key.
const signingKeyName = "signing"

// loadSigner makes the signer from the key file's bytes (keyFile), or from
// the key kept in NATS (generated by the first edge), retrying through a
// failover. A key that does not parse is a configuration error.
func (e *Edge) loadSigner(ctx context.Context, keyFile []byte) (*pushsig.Signer, error) {
	pemBytes := keyFile
	if pemBytes == nil {
		err := bus.Retry(ctx, e.log, "the push signing key (bucket "+bus.BucketPushKeys+")", func(ctx context.Context) error {
			b, err := e.bus.LoadOrCreateSecret(ctx, signingKeyName, func() ([]byte, error) {
				k, err := pushsig.GenerateKey()
				if err != nil {
					return nil, err
				}
				return pushsig.EncodePEM(k)
			})
			pemBytes = b
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("edge: push signing key: %w", err)
		}
	}
	key, err := pushsig.ParsePEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("edge: push signing key: %w", err)
	}
	return pushsig.NewSigner(key, e.cfg.PublicURL, pushsig.DefaultTTL)
}

// serveJWKS serves the public key set push signatures verify with.
func (e *Edge) serveJWKS(w http.ResponseWriter, r *http.Request) {
	st, err := e.pushRunning()
	if errors.Is(err, errPushStarting) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "push notifications are starting (waiting for NATS)"})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "push notifications are not enabled"})
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, st.signer.JWKS())
}

// ---- JSON-RPC: the push-config methods ----

// pushIDParams reads the params of get, list and delete in both shapes:
// 1.0 {taskId, id} and 0.3 {id: taskId, pushNotificationConfigId}.
type pushIDParams struct {
	Tenant                   string       `json:"tenant,omitempty"`
	TaskID                   string       `json:"taskId"`
	ID                       string       `json:"id"`
	PushNotificationConfigID string       `json:"pushNotificationConfigId"`
	PageSize                 *int         `json:"pageSize"`
	PageToken                string       `json:"pageToken"`
	Metadata                 a2a.Metadata `json:"metadata,omitempty"`
}

// UnmarshalJSON reads each field under its JSON or its proto name
// (task_id, page_size, ...), as for every request type.
func (p *pushIDParams) UnmarshalJSON(b []byte) error {
	type plain pushIDParams
	return a2a.UnmarshalProtoJSON(b, "params", (*plain)(p))
}

// check refuses what the call's version requires and p lacks. In 1.0 the
// task is always taskId (a 1.0 call without it must not be read as 0.3,
// where "id" names the task), and get and delete name the config by id.
func (p *pushIDParams) check(c *call) error {
	if c.version != a2a.V10 {
		return nil
	}
	if p.TaskID == "" {
		return a2a.ErrInvalidParams.With("Invalid parameters: taskId is required")
	}
	if (c.op == a2a.OpPushGet || c.op == a2a.OpPushDelete) && p.ID == "" && p.PushNotificationConfigID == "" {
		return a2a.ErrInvalidParams.With("Invalid parameters: id is required (the push notification config's id)")
	}
	return nil
}

// ids returns the task id and config id the params name.
func (p *pushIDParams) ids() (taskID, configID string) {
	if p.TaskID != "" { // 1.0: the config's own id is "id"
		if p.ID != "" {
			return p.TaskID, p.ID
		}
		return p.TaskID, p.PushNotificationConfigID
	}
	return p.ID, p.PushNotificationConfigID // 0.3: "id" is the task's
}

// pushConfigCall serves the four push-config methods of both versions.
func (e *Edge) pushConfigCall(c *call) (any, error) {
	st, err := e.pushRunning()
	if err != nil {
		return nil, err
	}
	switch c.op {
	case a2a.OpPushSet:
		return e.pushSet(c, st)
	case a2a.OpPushGet:
		return e.pushGet(c, st)
	case a2a.OpPushList:
		return e.pushList(c, st)
	case a2a.OpPushDelete:
		return e.pushDelete(c, st)
	}
	return nil, a2a.ErrMethodNotFound
}

// Bounds of a push config's fields.
const (
	maxPushURL    = 2048
	maxPushSecret = 4096
	maxPushScheme = 64
)

// validatePushConfig checks a config a client sent (from a set call or a
// send's configuration) and fills in the id. It refuses URLs the SSRF guard
// refuses, so a bad webhook fails at set time with a reason.
func (st *pushState) validatePushConfig(cfg *a2a.TaskPushNotificationConfig) error {
	switch {
	case strings.TrimSpace(cfg.URL) == "":
		return a2a.ErrInvalidParams.With("Invalid parameters: push notification config url is required")
	case len(cfg.URL) > maxPushURL:
		return a2a.ErrInvalidParams.With("Invalid parameters: push notification url is longer than %d bytes", maxPushURL)
	case cfg.ID != "" && !bus.ValidToken(cfg.ID):
		return a2a.ErrInvalidParams.With("Invalid parameters: push notification config id must be 1-128 of A-Z a-z 0-9 _ -")
	case len(cfg.Token) > maxPushSecret || !headerSafe(cfg.Token):
		return a2a.ErrInvalidParams.With("Invalid parameters: push notification token must be at most %d printable characters", maxPushSecret)
	}
	if a := cfg.Authentication; a != nil {
		if a.Scheme == "" && a.Credentials == "" {
			cfg.Authentication = nil
		} else {
			switch {
			case !httpToken(a.Scheme) || len(a.Scheme) > maxPushScheme:
				return a2a.ErrInvalidParams.With("Invalid parameters: authentication.scheme must be an HTTP auth scheme such as Bearer or Basic")
			case len(a.Credentials) > maxPushSecret || !headerSafe(a.Credentials):
				return a2a.ErrInvalidParams.With("Invalid parameters: authentication.credentials must be at most %d printable characters", maxPushSecret)
			}
		}
	}
	if err := st.guard.CheckURL(cfg.URL); err != nil {
		return a2a.ErrInvalidParams.With("Invalid parameters: push notification url refused: %s", strings.TrimPrefix(err.Error(), ssrf.ErrBlocked.Error()+": "))
	}
	return nil
}

// headerSafe reports whether s can travel in an HTTP header value as is.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			return false
		}
	}
	return true
}

// httpToken reports whether s is an RFC 9110 token (an auth scheme).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0) {
			return false
		}
	}
	return true
}

// storePushConfig stores a validated config of task rec for the caller and
// queues the events the task logged while it was being stored (see
// catchUp), so a config never misses an event after fromSeq.
func (e *Edge) storePushConfig(ctx context.Context, c *call, st *pushState, rec *bus.TaskRecord, cfg a2a.TaskPushNotificationConfig) (*bus.PushRecord, error) {
	cfg.TaskID = rec.Task.ID
	if cfg.Tenant != c.agent {
		cfg.Tenant = "" // kept (and echoed in 1.0) only when it names the agent called
	}
	if cfg.ID == "" {
		cfg.ID = uuid.NewString()
	}
	existing, err := st.store.List(ctx, rec.Task.ID)
	if err != nil {
		return nil, err
	}
	created := a2a.Now()
	replaced := false
	for _, x := range existing {
		if x.Config.ID == cfg.ID {
			replaced, created = true, x.Created
		}
	}
	if !replaced && len(existing) >= st.cfg.MaxConfigsPerTask {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: task %s already has %d push notification configs (the limit); delete one first",
			rec.Task.ID, len(existing))
	}
	pr := &bus.PushRecord{Config: cfg, Owner: rec.Owner, Version: c.version, FromSeq: rec.LastSeq, Created: created}
	if err := st.store.Put(ctx, pr); err != nil {
		return nil, err
	}
	e.catchUp(ctx, c, st, pr)
	return pr, nil
}

// maxCatchUp bounds the events catchUp queues itself.
const maxCatchUp = 1000

// catchUp queues the jobs of events logged between the snapshot the config
// was based on and the moment it was stored. The dispatcher sees a config
// before each batch it handles (it catches up with the bucket first), so
// only events it may have handled before the config existed need this;
// jobs it queues too are dropped as duplicates (same message id).
func (e *Edge) catchUp(ctx context.Context, c *call, st *pushState, pr *bus.PushRecord) {
	seqs, err := e.bus.EventSeqsAfter(ctx, pr.Config.TaskID, pr.FromSeq, maxCatchUp)
	if err != nil {
		c.log.Warn("push: could not read events logged while the config was stored", "task_id", pr.Config.TaskID, "err", err)
	}
	for _, seq := range seqs {
		if err := st.store.PublishJob(ctx, bus.PushJob{TaskID: pr.Config.TaskID, ConfigID: pr.Config.ID, Seq: seq}); err != nil {
			c.log.Warn("push: could not queue a delivery", "task_id", pr.Config.TaskID, "seq", seq, "err", err)
		}
	}
}

func (e *Edge) pushSet(c *call, st *pushState) (any, error) {
	var cfg a2a.TaskPushNotificationConfig
	if err := a2a.DecodeParams(c.req.Params, &cfg); err != nil {
		return nil, err
	}
	if cfg.TaskID == "" {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: taskId is required")
	}
	ctx := c.r.Context()
	rec, err := e.loadTask(ctx, c, cfg.TaskID)
	if err != nil {
		return nil, err
	}
	if err := st.validatePushConfig(&cfg); err != nil {
		return nil, err
	}
	pr, err := e.storePushConfig(ctx, c, st, rec, cfg)
	if err != nil {
		return nil, err
	}
	return c.encodePushConfig(pr.Config, true), nil
}

func (e *Edge) pushGet(c *call, st *pushState) (any, error) {
	var p pushIDParams
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	if err := p.check(c); err != nil {
		return nil, err
	}
	taskID, configID := p.ids()
	ctx := c.r.Context()
	if _, err := e.loadTask(ctx, c, taskID); err != nil {
		return nil, err
	}
	if configID == "" {
		// 0.3 get without pushNotificationConfigId: the task's config
		// (the oldest when it has several).
		list, err := st.store.List(ctx, taskID)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, a2a.ErrTaskNotFound.With("Task %s has no push notification config", taskID)
		}
		return c.encodePushConfig(list[0].Config, false), nil
	}
	pr, err := st.store.Get(ctx, taskID, configID)
	if errors.Is(err, bus.ErrPushConfigNotFound) {
		return nil, a2a.ErrTaskNotFound.With("Push notification config %s not found for task %s", trunc(configID, 64), taskID)
	}
	if err != nil {
		return nil, err
	}
	return c.encodePushConfig(pr.Config, false), nil
}

func (e *Edge) pushList(c *call, st *pushState) (any, error) {
	var p pushIDParams
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	if err := p.check(c); err != nil {
		return nil, err
	}
	taskID, _ := p.ids()
	if p.PageSize != nil && (*p.PageSize < 0 || *p.PageSize > listMaxPageSize) {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageSize must be between 0 and %d", listMaxPageSize)
	}
	start := 0
	if p.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(p.PageToken)
		n, aerr := strconv.Atoi(string(b))
		if err != nil || aerr != nil || n < 0 {
			return nil, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
		}
		start = n
	}
	ctx := c.r.Context()
	if _, err := e.loadTask(ctx, c, taskID); err != nil {
		return nil, err
	}
	list, err := st.store.List(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if c.version == a2a.V03 {
		out := make([]any, 0, len(list))
		for _, pr := range list {
			out = append(out, c.encodePushConfig(pr.Config, false))
		}
		return out, nil
	}
	start = min(start, len(list))
	end := len(list)
	if p.PageSize != nil && *p.PageSize > 0 {
		end = min(start+*p.PageSize, len(list))
	}
	res := struct {
		Configs       []any  `json:"configs"`
		NextPageToken string `json:"nextPageToken"`
	}{Configs: make([]any, 0, end-start)}
	for _, pr := range list[start:end] {
		res.Configs = append(res.Configs, c.encodePushConfig(pr.Config, false))
	}
	if end < len(list) {
		res.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return res, nil
}

func (e *Edge) pushDelete(c *call, st *pushState) (any, error) {
	var p pushIDParams
	if err := a2a.DecodeParams(c.req.Params, &p); err != nil {
		return nil, err
	}
	if err := p.check(c); err != nil {
		return nil, err
	}
	taskID, configID := p.ids()
	if configID == "" {
		return nil, a2a.ErrInvalidParams.With("Invalid parameters: the push notification config id is required")
	}
	ctx := c.r.Context()
	if _, err := e.loadTask(ctx, c, taskID); err != nil {
		return nil, err
	}
	if err := st.store.Delete(ctx, taskID, configID); err != nil {
		return nil, err
	}
	if c.version == a2a.V03 {
		return nil, nil // result null
	}
	return struct{}{}, nil // google.protobuf.Empty
}

// encodePushConfig shapes a config for the call's version. Read back (get,
// list), authentication.credentials is left out, as the A2A docs say.
func (c *call) encodePushConfig(cfg a2a.TaskPushNotificationConfig, withCredentials bool) any {
	if cfg.Authentication != nil && !withCredentials {
		a := *cfg.Authentication
		a.Credentials = ""
		cfg.Authentication = &a
	}
	if c.version == a2a.V03 {
		return cfg.ToV03()
	}
	return &cfg
}

// ---- a config inside a send ----

// checkSendPush validates the push config of a send before the send records
// anything, including the per-task limit when it continues task taskID.
func (e *Edge) checkSendPush(ctx context.Context, c *call, taskID string, cfg *a2a.TaskPushNotificationConfig) error {
	st, err := e.pushRunning()
	if err != nil {
		return err
	}
	if err := st.validatePushConfig(cfg); err != nil {
		return err
	}
	if taskID == "" {
		return nil
	}
	existing, err := st.store.List(ctx, taskID)
	if err != nil {
		return err
	}
	if len(existing) >= st.cfg.MaxConfigsPerTask {
		return a2a.ErrInvalidParams.With("Invalid parameters: task %s already has %d push notification configs (the limit); delete one first",
			trunc(taskID, 64), len(existing))
	}
	return nil
}

// storeSendPush stores the push config of a send once its turn is recorded
// and before it is enqueued, so every event of the agent's run is delivered.
// Without a client-given id, the id derives from the task and the turn's
// messageId: a retried send stores the same config again, not a second one.
func (e *Edge) storeSendPush(ctx context.Context, c *call, p *sendPlan) error {
	if p.params.Configuration == nil || p.params.Configuration.TaskPushNotificationConfig == nil {
		return nil
	}
	st, err := e.pushRunning()
	if err != nil {
		return err
	}
	cfg := *p.params.Configuration.TaskPushNotificationConfig
	if cfg.ID == "" {
		cfg.ID = uuid.NewSHA1(taskIDSpace, []byte("push\x00"+p.rec.Task.ID+"\x00"+p.params.Message.MessageID)).String()
	}
	_, err = e.storePushConfig(ctx, c, st, p.rec, cfg)
	return err
}
