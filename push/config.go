package push

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/a2amesh/a2amesh/internal/metrics"
	"github.com/a2amesh/a2amesh/internal/pushsig"
	"github.com/a2amesh/a2amesh/internal/ssrf"
)

// Config configures push-notification delivery.
type Config struct {
	// Enabled turns push notifications on. New does not read it: it is
	// the host's switch (an edge makes a Deliverer only when it is set).
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
	// bucket A2A_PUSH_KEYS, shared by every deliverer (the private key
	// then lives in NATS: protect NATS accordingly).
	SigningKeyFile string
	// MaxConfigsPerTask bounds the configs of one task (default 10).
	MaxConfigsPerTask int
	// Workers is how many deliveries one deliverer runs at once (default 16).
	Workers int

	// Issuer is the iss claim of the signatures: the public URL of the
	// edge that serves the key set (a hosting edge fills it in with its
	// own when empty).
	Issuer string
	// Metrics, when set, counts delivery outcomes
	// (a2amesh_push_deliveries_total).
	Metrics *metrics.Metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults fills in the defaults of the zero fields.
func (c Config) withDefaults() Config {
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Check reports a configuration error of c (the allow-list, the signing
// key file), without NATS: a role checks it before it waits for NATS, so a
// bad flag ends the process at once. It checks nothing when c is not
// Enabled.
func (c Config) Check() error {
	if !c.Enabled {
		return nil
	}
	_, _, err := c.prepare()
	return err
}

// prepare builds the SSRF guard and reads the signing key file, if any.
func (c Config) prepare() (*ssrf.Guard, []byte, error) {
	guard, err := ssrf.New(c.Trusted)
	if err != nil {
		return nil, nil, fmt.Errorf("push: allow-list: %w", err)
	}
	if c.SigningKeyFile == "" {
		return guard, nil, nil
	}
	pemBytes, err := os.ReadFile(c.SigningKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("push: signing key: %w", err)
	}
	if _, err := pushsig.ParsePEM(pemBytes); err != nil {
		return nil, nil, fmt.Errorf("push: signing key %s: %w", c.SigningKeyFile, err)
	}
	return guard, pemBytes, nil
}
