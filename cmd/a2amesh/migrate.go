package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/natsnode"
	"github.com/a2amesh/a2amesh/taskstore"
)

const migrateDesc = "move the tasks an earlier a2amesh kept in NATS into this release's layout (run it with every edge, worker and dev stopped)"

func init() {
	register("migrate", migrateDesc, runMigrate)
}

const migrateMore = `A release whose task store changed its layout refuses to start on a NATS
holding the earlier one, naming this command. Stop every edge, worker and
dev process of the mesh (a NATS server stays up), run migrate with the same
NATS flags they use (or, for a2amesh dev, with --data naming its data
directory), then start the new release. Each task is moved as it stands;
SSE event ids start afresh; work still queued stays queued. An interrupted
run can be run again: tasks already moved are skipped. See
docs/deployment.md#upgrading.`

func runMigrate(ctx context.Context, args []string) error {
	fs := newFlagSet("migrate", "", migrateDesc+"\n\n"+migrateMore)
	nf := addNATSFlags(fs)
	data := fs.String("data", "", "the data directory of an a2amesh dev (its --data): migrate its embedded NATS instead of connecting to --nats (none: connect to --nats)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var nc *nats.Conn
	if *data != "" {
		dir := filepath.Join(*data, "jetstream") // where dev keeps it (mesh.Start)
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("--data: no a2amesh dev data: %w", err)
		}
		srv, err := natsnode.StartServer(natsnode.ServerConfig{DataDir: dir, DontListen: true, Logger: log})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		if nc, err = srv.Connect("a2amesh-migrate"); err != nil {
			return err
		}
	} else {
		var err error
		nc, err = bus.Dial(bus.DialConfig{URL: *nf.url, Name: "a2amesh-migrate", CredsFile: *nf.creds, Token: *nf.token,
			CAFile: *nf.ca, CertFile: *nf.cert, KeyFile: *nf.key})
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, migrateWaitNATS)
		err = waitNATS(wctx, nc, *nf.url, log, func(string) {})
		cancel()
		if err != nil {
			nc.Close()
			return err
		}
	}
	defer nc.Close()
	b, err := bus.Open(ctx, nc, bus.Config{Replicas: *nf.replicas, Retention: *nf.retention, MaxTasks: *nf.maxTasks})
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := taskstore.Migrate(ctx, b, func(r taskstore.MigrateReport) {
		fmt.Fprintf(os.Stderr, "a2amesh migrate: %s so far\n", migrateSummary(r))
	})
	if err != nil {
		return fmt.Errorf("%w (%s before it stopped; run migrate again)", err, migrateSummary(rep))
	}
	printMigrate(migrateOut, rep, time.Since(start))
	return nil
}

// migrateWaitNATS bounds how long migrate waits for NATS to answer.
const migrateWaitNATS = 30 * time.Second

// migrateSummary is what a report counts.
func migrateSummary(r taskstore.MigrateReport) string {
	return fmt.Sprintf("%d tasks moved, %d already moved, %d unreadable", r.Moved, r.Already, r.Unreadable)
}

// printMigrate prints what a run of migrate did.
func printMigrate(w io.Writer, r taskstore.MigrateReport, took time.Duration) {
	if r == (taskstore.MigrateReport{}) {
		fmt.Fprintln(w, "nothing to migrate: this NATS holds no tasks in an earlier layout")
		return
	}
	fmt.Fprintf(w, "migrated in %v: %s\n", took.Round(time.Millisecond), migrateSummary(r))
	if r.Unreadable > 0 {
		fmt.Fprintln(w, "unreadable tasks (a log that lost its start, with no snapshot left) could not be moved and are gone")
	}
}

// migrateOut is where migrate prints its report (tests replace it).
var migrateOut io.Writer = os.Stdout

// errOldLayoutPermanent makes a store refusing the earlier layout end the
// start-up at once (bus.Retry would wait for it): only migrate helps.
func errOldLayoutPermanent(err error) error {
	if errors.Is(err, taskstore.ErrOldLayout) {
		return bus.Permanent(err)
	}
	return err
}
