package push

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Store is the push-config store the A2A push-config methods call: it
// validates, stores, reads, lists and deletes the configs of a task, in
// the A2A_PUSH bucket. It does not check who calls: the caller loads the
// task for its principal first (a task of another owner is not found).
// Its errors for the client are *a2a.Error values.
type Store struct {
	tasks      *taskstore.Store
	kv         *configs
	guard      *ssrf.Guard
	maxConfigs int
	log        *slog.Logger
}

// OpenStore opens the config store on b, creating the push bucket and the
// delivery stream when they are missing, for a host that serves the
// push-config methods while Deliverers run elsewhere (a Deliverer opens
// its own: Deliverer.Store). Only cfg's Trusted, MaxConfigsPerTask and
// Logger matter here.
func OpenStore(ctx context.Context, ts *taskstore.Store, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	guard, err := ssrf.New(cfg.Trusted)
	if err != nil {
		return nil, fmt.Errorf("push: allow-list: %w", err)
	}
	kv, err := openConfigs(ctx, ts.Bus())
	if err != nil {
		return nil, err
	}
	return newStore(ts, kv, guard, cfg), nil
}

func newStore(ts *taskstore.Store, kv *configs, guard *ssrf.Guard, cfg Config) *Store {
	return &Store{tasks: ts, kv: kv, guard: guard, maxConfigs: cfg.MaxConfigsPerTask, log: cfg.Logger}
}

// Bounds of a push config's fields.
const (
	maxPushURL    = 2048
	maxPushSecret = 4096
	maxPushScheme = 64
)

// Validate checks a config a client sent (from a set call or a send's
// configuration); an empty authentication is dropped. It refuses URLs the
// SSRF guard refuses, so a bad webhook fails at set time with a reason.
func (s *Store) Validate(cfg *a2a.TaskPushNotificationConfig) error {
	return validate(s.guard, cfg)
}

func validate(guard *ssrf.Guard, cfg *a2a.TaskPushNotificationConfig) error {
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
	if err := guard.CheckURL(cfg.URL); err != nil {
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

// CheckRoom reports, as -32602, that task taskID already has as many
// configs as it may: a send carrying a new config checks it before it
// records anything.
func (s *Store) CheckRoom(ctx context.Context, taskID string) error {
	existing, err := s.kv.List(ctx, taskID)
	if err != nil {
		return err
	}
	if len(existing) >= s.maxConfigs {
		return tooMany(trunc(taskID, 64), len(existing))
	}
	return nil
}

func tooMany(taskID string, n int) error {
	return a2a.ErrInvalidParams.With("Invalid parameters: task %s already has %d push notification configs (the limit); delete one first",
		taskID, n)
}

// Save stores a validated config of task rec, owned by the task's owner,
// for deliveries in the shapes of protocol version v: the events after
// the task's last one (rec.LastSeq) are delivered. Without an id it gets
// a new one; a config with the id of an existing one replaces it. It also
// queues the events the task logged while the config was being stored
// (see catchUp), so a config never misses an event after rec.LastSeq.
func (s *Store) Save(ctx context.Context, rec *taskstore.TaskRecord, cfg a2a.TaskPushNotificationConfig, v a2a.Version) (*Record, error) {
	cfg.TaskID = rec.Task.ID
	if cfg.ID == "" {
		cfg.ID = uuid.NewString()
	}
	existing, err := s.kv.List(ctx, rec.Task.ID)
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
	if !replaced && len(existing) >= s.maxConfigs {
		return nil, tooMany(rec.Task.ID, len(existing))
	}
	pr := &Record{Config: cfg, Owner: rec.Owner, Version: v, FromSeq: rec.LastSeq, Created: created}
	if err := s.kv.Put(ctx, pr); err != nil {
		return nil, err
	}
	s.catchUp(ctx, pr)
	return pr, nil
}

// maxCatchUp bounds the events catchUp queues itself.
const maxCatchUp = 1000

// catchUp queues the jobs of events logged between the snapshot the config
// was based on and the moment it was stored. The dispatcher sees a config
// before each batch it handles (it catches up with the bucket first), so
// only events it may have handled before the config existed need this;
// jobs it queues too are dropped as duplicates (same message id).
func (s *Store) catchUp(ctx context.Context, pr *Record) {
	seqs, err := s.tasks.EventSeqsAfter(ctx, pr.Config.TaskID, pr.FromSeq, maxCatchUp)
	if err != nil {
		s.log.Warn("push: could not read events logged while the config was stored", "task_id", pr.Config.TaskID, "err", err)
	}
	for _, seq := range seqs {
		if err := s.kv.PublishJob(ctx, Job{TaskID: pr.Config.TaskID, ConfigID: pr.Config.ID, Seq: seq}); err != nil {
			s.log.Warn("push: could not queue a delivery", "task_id", pr.Config.TaskID, "seq", seq, "err", err)
		}
	}
}

// Get returns a config of a task; a config it does not have is
// ErrTaskNotFound (-32001) naming both.
func (s *Store) Get(ctx context.Context, taskID, configID string) (*Record, error) {
	pr, err := s.kv.Get(ctx, taskID, configID)
	if errors.Is(err, errConfigNotFound) {
		return nil, a2a.ErrTaskNotFound.With("Push notification config %s not found for task %s", trunc(configID, 64), taskID)
	}
	return pr, err
}

// First returns a task's oldest config (0.3's get without a config id);
// a task without one is ErrTaskNotFound.
func (s *Store) First(ctx context.Context, taskID string) (*Record, error) {
	list, err := s.kv.List(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, a2a.ErrTaskNotFound.With("Task %s has no push notification config", taskID)
	}
	return list[0], nil
}

// List returns a task's configs, oldest first.
func (s *Store) List(ctx context.Context, taskID string) ([]*Record, error) {
	return s.kv.List(ctx, taskID)
}

// Attempts returns the last delivery attempts of a task's config (the
// push log, at most LogDepth), oldest first.
func (s *Store) Attempts(ctx context.Context, taskID, configID string) ([]Attempt, error) {
	return s.kv.Attempts(ctx, taskID, configID)
}

// Delete deletes a config of a task (deleting one that is not there is
// not an error). Its deliveries still queued are dropped.
func (s *Store) Delete(ctx context.Context, taskID, configID string) error {
	return s.kv.Delete(ctx, taskID, configID)
}

// ParsePageToken reads a page token of a list (empty: the first page);
// a token it did not make is -32602.
func ParsePageToken(tok string) (int, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	n, aerr := strconv.Atoi(string(b))
	if err != nil || aerr != nil || n < 0 {
		return 0, a2a.ErrInvalidParams.With("Invalid parameters: pageToken is not valid")
	}
	return n, nil
}

// Page returns the page of list that starts at start (from ParsePageToken)
// with at most size configs (0: all the rest), and the token of the next
// page ("" when this is the last).
func Page(list []*Record, start, size int) ([]*Record, string) {
	start = min(start, len(list))
	end := len(list)
	if size > 0 {
		end = min(start+size, len(list))
	}
	next := ""
	if end < len(list) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return list[start:end], next
}

// trunc shortens s to n bytes for an error message.
func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
