package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/internal/ssrf"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Dispatcher tuning.
const (
	// dispatchBatch is the most events one dispatch handles, and the
	// dispatch consumer's MaxAckPending: one batch out at a time, mesh-wide.
	dispatchBatch = 256
	// dispatchAckWait is how long a batch held by a deliverer that died
	// blocks the others before it is redelivered.
	dispatchAckWait = 30 * time.Second
	// dispatchFetchWait bounds one pull; a deliverer stopping hands its
	// batch back within about this long.
	dispatchFetchWait = time.Second
	// indexWait bounds the wait for the config index to catch up with the
	// bucket before a batch.
	indexWait = 5 * time.Second
)

// State is where a Deliverer is in its life.
type State int32

// The states of a Deliverer, in order.
const (
	// Idle: Run has not been called.
	Idle State = iota
	// Starting: Run waits for NATS (the bucket, the signing key, the
	// config index, the consumers), retrying through failovers.
	Starting
	// Running: notifications are dispatched and delivered; Store and JWKS
	// answer.
	Running
	// Stopped: Run's context ended (or Run failed on a bad key).
	Stopped
)

// Deliverer is the push-delivery component: the config index and its
// watcher, the dispatcher (consumer push_dispatch) and the sharded senders
// (consumer push_deliver), the signer and the SSRF-guarded client. Make
// one with New and run it with Run; Store is the config store its host
// serves the push-config methods from, and JWKS the key set receivers
// verify signatures with.
type Deliverer struct {
	cfg     Config
	bus     *bus.Bus
	log     *slog.Logger
	guard   *ssrf.Guard
	keyFile []byte // the signing key file's PEM (nil: the key kept in NATS)
	client  *http.Client
	index   *index
	// reindex asks the config watcher for a new watch (the index fell
	// behind the bucket: its watcher may have lost its server).
	reindex chan struct{}
	state   atomic.Int32
	ready   chan struct{} // closed once Running

	// Set while Run starts, before the state is Running; read only then.
	kv     *configs
	tasks  *taskstore.Store
	store  *Store
	signer *pushsig.Signer
	wg     sync.WaitGroup
}

// New returns a deliverer for cfg on bus b. It fails only on a
// configuration error (the allow-list, the signing key file: see
// Config.Check); it does not touch NATS.
func New(s *taskstore.Store, cfg Config) (*Deliverer, error) {
	cfg = cfg.withDefaults()
	guard, keyFile, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	client := guard.HTTPClient(cfg.Timeout)
	client.CheckRedirect = func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a webhook answers itself; a redirect is a failure
	}
	return &Deliverer{
		cfg: cfg, bus: s.Bus(), tasks: s, log: cfg.Logger, guard: guard, keyFile: keyFile, client: client,
		index: newIndex(), reindex: make(chan struct{}, 1), ready: make(chan struct{}),
	}, nil
}

// State returns where d is in its life.
func (d *Deliverer) State() State { return State(d.state.Load()) }

// Ready is closed once d delivers (State Running).
func (d *Deliverer) Ready() <-chan struct{} { return d.ready }

// Store returns the config store, nil until d is Running.
func (d *Deliverer) Store() *Store {
	if d.State() != Running {
		return nil
	}
	return d.store
}

// JWKS returns the public key set push signatures verify with; false until
// d is Running.
func (d *Deliverer) JWKS() (pushsig.JWKSet, bool) {
	if d.State() != Running {
		return pushsig.JWKSet{}, false
	}
	return d.signer.JWKS(), true
}

// Run runs push delivery until ctx ends, and returns once every goroutine
// it started is gone. It can be called once.
//
// Every step that needs JetStream (the push bucket and stream, the signing
// key, the config index, the two consumers) is retried through a failover
// with backoff, logging what it waits for; meanwhile State is Starting.
// Run returns nil when ctx ends, and an error only for a signing key that
// does not parse (one kept in NATS: a key file is checked by New).
func (d *Deliverer) Run(ctx context.Context) error {
	if !d.state.CompareAndSwap(int32(Idle), int32(Starting)) {
		return errors.New("push: Run called twice")
	}
	// Stopped as soon as ctx ends, even while starting: a host's card then
	// stops offering push at once.
	stop := context.AfterFunc(ctx, func() { d.state.Store(int32(Stopped)) })
	defer stop()
	rctx, cancel := context.WithCancel(ctx)
	defer d.wg.Wait()
	defer cancel()
	if err := d.start(rctx); err != nil {
		d.state.Store(int32(Stopped))
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if d.state.CompareAndSwap(int32(Starting), int32(Running)) {
		close(d.ready)
		d.log.Info("push notifications on", "signing_kid", d.signer.KeyID(), "max_attempts", d.cfg.MaxAttempts, "trusted", d.cfg.Trusted)
	}
	<-ctx.Done()
	return nil
}

// signingKeyName is the A2A_PUSH_KEYS entry of a generated key.
const signingKeyName = "signing"

// loadSigner makes the signer from the key file's bytes (keyFile), or from
// the key kept in NATS (generated by the first deliverer), retrying
// through a failover. A key that does not parse is a configuration error.
func (d *Deliverer) loadSigner(ctx context.Context, keyFile []byte) (*pushsig.Signer, error) {
	pemBytes := keyFile
	if pemBytes == nil {
		err := bus.Retry(ctx, d.log, "the push signing key (bucket "+bucketKeys+")", func(ctx context.Context) error {
			b, err := loadOrCreateKey(ctx, d.bus, signingKeyName, func() ([]byte, error) {
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
			return nil, fmt.Errorf("push: signing key: %w", err)
		}
	}
	key, err := pushsig.ParsePEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("push: signing key: %w", err)
	}
	return pushsig.NewSigner(key, d.cfg.Issuer, pushsig.DefaultTTL)
}

// start brings up the push machinery, each step that needs JetStream
// retried through a failover (bus.Retry logs what it waits for): the push
// bucket and delivery stream, the signing key, the config index (its
// watcher restarts itself for as long as d runs), then the two
// consumers and their loops. It returns nil once they run, ctx's error if
// ctx ends first, and any other error only for a bad key.
func (d *Deliverer) start(ctx context.Context) error {
	err := bus.Retry(ctx, d.log, "the push config bucket and delivery stream", func(ctx context.Context) error {
		kv, err := openConfigs(ctx, d.bus)
		d.kv = kv
		return err
	})
	if err != nil {
		return err
	}
	d.store = newStore(d.tasks, d.kv, d.guard, d.cfg)
	if d.signer, err = d.loadSigner(ctx, d.keyFile); err != nil {
		return err
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.watchConfigs(ctx)
	}()
	for !d.index.waitApplied(ctx, 0, 15*time.Second) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.log.Warn("NATS: waiting for the push config index to load")
	}
	var dispatch, deliver bus.Consumer
	err = bus.Retry(ctx, d.log, "consumer "+bus.ConsumerPushDispatch, func(ctx context.Context) error {
		c, err := d.tasks.DispatchConsumer(ctx, dispatchBatch, dispatchAckWait)
		dispatch = c
		return err
	})
	if err != nil {
		return err
	}
	// A job waits in this deliverer's queue behind at most one delivery of its
	// shard, and InProgress restarts the clock when its turn comes.
	err = bus.Retry(ctx, d.log, "consumer "+ConsumerDeliver, func(ctx context.Context) error {
		c, err := d.kv.DeliverConsumer(ctx, d.cfg.MaxAttempts, 2*d.cfg.Timeout+5*time.Second)
		deliver = c
		return err
	})
	if err != nil {
		return err
	}
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		d.dispatchLoop(ctx, dispatch)
	}()
	go func() {
		defer d.wg.Done()
		d.deliverLoop(ctx, deliver)
	}()
	return nil
}

// watchConfigs keeps the config index fed from a watcher on the push
// bucket until ctx ends. A watch that cannot start, or stops, is started
// again with backoff; so is one the dispatcher finds behind the bucket
// (reindex). A new watch replays the bucket: configs deleted meanwhile
// leave the index when the replay is done.
func (d *Deliverer) watchConfigs(ctx context.Context) {
	retention := d.bus.Config().Retention
	expiry := time.NewTicker(time.Minute)
	defer expiry.Stop()
	wait := 250 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		// The watcher lives as long as ctx (nats.go stops it with ctx).
		w, err := d.kv.Watch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			pause := bus.Jitter(wait)
			wait = min(2*wait, 5*time.Second)
			d.log.Warn("NATS: waiting for a watch of the push config bucket", "err", err, "attempt", attempt, "retry_in", pause.Round(time.Millisecond))
			bus.Sleep(ctx, pause)
			continue
		}
		if attempt > 1 {
			d.log.Info("NATS: watching the push config bucket", "attempts", attempt)
		}
		started := time.Now()
		d.index.beginReplay()
		d.followConfigs(ctx, w, expiry.C, retention)
		_ = w.Stop()
		if time.Since(started) > time.Minute {
			attempt, wait = 0, 250*time.Millisecond
			continue
		}
		pause := bus.Jitter(wait)
		wait = min(2*wait, 5*time.Second)
		bus.Sleep(ctx, pause)
	}
}

// followConfigs applies w's updates to the index until ctx ends, w stops,
// or the dispatcher asks for a new watch.
func (d *Deliverer) followConfigs(ctx context.Context, w *bus.Watcher, expiry <-chan time.Time, retention time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-expiry:
			d.index.expire(now.Add(-retention))
		case <-d.reindex:
			d.log.Warn("push: config index behind the bucket; watching the bucket again")
			return
		case en, ok := <-w.Updates():
			if !ok {
				if ctx.Err() == nil {
					d.log.Warn("push: config watcher stopped; watching again")
				}
				return
			}
			d.index.apply(en)
		}
	}
}
