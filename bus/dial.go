package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// DialConfig says how to reach a NATS server or cluster.
type DialConfig struct {
	// URL lists the servers, comma-separated (nats://, tls://).
	URL string
	// Name is the connection's name, shown by NATS monitoring.
	Name string
	// CredsFile is a NATS credentials file (JWT + nkey seed).
	CredsFile string
	// Token authenticates with a token; User/Password with a user.
	Token, User, Password string
	// CAFile, CertFile and KeyFile configure TLS: a CA to verify the
	// servers, and a client certificate for mutual TLS.
	CAFile, CertFile, KeyFile string
}

// Dial connects to NATS and keeps reconnecting for as long as the process
// lives: edges and workers ride out a NATS node's restart.
func Dial(cfg DialConfig) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		opts = append(opts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect to %s: %w", cfg.URL, err)
	}
	return nc, nil
}
