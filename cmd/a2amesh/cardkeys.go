package main

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/cardsig"
	"github.com/a2amesh/a2amesh/internal/pushsig"
)

func init() {
	register("card-keys", "show, rotate or retire the keys edges sign agent cards with (kept in NATS)", runCardKeys)
}

const cardKeysDesc = `Show, rotate or retire the keys edges sign agent cards with.

The key set is kept in NATS (bucket A2A_CARD_KEYS); the first edge to serve
a card creates it with one key. Every edge reads it again within 2 s of a
change.

  show    print the key ids (kids), oldest first
  rotate  add a new key: every card then carries two signatures, by the
          old key and the new one
  retire  drop every key but the newest: cards carry its signature only

Between rotate and retire wait longer than clients cache cards and the JWK
Set (60 s and 300 s, see docs/cards.md), so that every client has seen the
new key before the old one goes. Edges given --card-signing-key ignore the
stored key set. Of the NATS flags only the connection's and --replicas
(for a bucket not created yet) apply: the command opens the key bucket
alone and leaves the mesh's streams as they are.`

// cardKeysWaitNATS bounds how long the command waits for NATS.
const cardKeysWaitNATS = 30 * time.Second

func runCardKeys(ctx context.Context, args []string) error {
	fs := newFlagSet("card-keys", "show|rotate|retire", cardKeysDesc)
	nf := addNATSFlags(fs)
	if err := parseFlagsN(fs, args, 1, "one of show, rotate, retire"); err != nil {
		return err
	}
	op := fs.Arg(0)
	if op != "show" && op != "rotate" && op != "retire" {
		return fmt.Errorf("want show, rotate or retire, not %q", op)
	}
	if err := nf.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cardKeysWaitNATS)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, err := bus.Dial(bus.DialConfig{URL: *nf.url, Name: "a2amesh-card-keys", CredsFile: *nf.creds, Token: *nf.token,
		CAFile: *nf.ca, CertFile: *nf.cert, KeyFile: *nf.key})
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := waitNATS(ctx, nc, *nf.url, log, func(string) {}); err != nil {
		return err
	}
	st, err := cardsig.OpenCardKeys(ctx, nc, *nf.replicas)
	if err != nil {
		return err
	}
	var keys *cardsig.Keys
	switch op {
	case "show":
		keys, err = cardsig.Load(ctx, st)
	case "rotate":
		keys, err = cardsig.Rotate(ctx, st)
	case "retire":
		keys, err = cardsig.Retire(ctx, st)
	}
	if op != "show" {
		if ab, aerr := bus.Attach(nc, bus.Config{Replicas: *nf.replicas}); aerr == nil {
			auditCLI(ctx, ab, map[string]string{"rotate": "RotateCardKeys", "retire": "RetireCardKeys"}[op], "", err)
		}
	}
	if err != nil {
		return err
	}
	printCardKeys(cardKeysOut, keys)
	return nil
}

// printCardKeys prints the kids of keys, oldest first, one a line.
func printCardKeys(w io.Writer, keys *cardsig.Keys) {
	ids := keys.KeyIDs()
	for i, id := range ids {
		note := ""
		if len(ids) > 1 {
			note = map[bool]string{true: "  (old: retire ends the rotation)", false: "  (new)"}[i == 0]
		}
		fmt.Fprintf(w, "%s%s\n", id, note)
	}
}

// loadCardKeys reads the comma-separated PEM files of --card-signing-key
// (nil: none given, the edges use the key set kept in NATS).
func loadCardKeys(list string) (*cardsig.Keys, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var keys []*ecdsa.PrivateKey
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--card-signing-key: %w", err)
		}
		k, err := pushsig.ParsePEM(data)
		if err != nil {
			return nil, fmt.Errorf("--card-signing-key %s: %w", f, err)
		}
		keys = append(keys, k)
	}
	k, err := cardsig.NewKeys(keys...)
	if err != nil {
		return nil, fmt.Errorf("--card-signing-key: %w", err)
	}
	return k, nil
}

// cardKeysOut is where card-keys prints (tests replace it).
var cardKeysOut io.Writer = os.Stdout
