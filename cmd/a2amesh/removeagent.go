package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/registry"
)

const removeAgentDesc = "forget an agent: sends to it are refused as unknown and its card is no longer served"

func init() {
	register("remove-agent", removeAgentDesc, runRemoveAgent)
}

const removeAgentMore = `An agent stays known from its first registration, with or without a live
worker: its card is served and its sends wait in its queue for the next
worker (scale to zero). It is forgotten after --agent-retention with no
worker, or at once with this command. Stop its workers first: a worker that
still runs registers it again within its refresh (a tenth of the
retention, at most an hour), so without --force an agent with a live
worker is not removed. Work already queued for it stays queued until a
worker of it comes back. Against a2amesh dev, start dev with --nats-listen
and point --nats there.`

// removeAgentWait bounds the wait for NATS and the removal.
const removeAgentWait = 30 * time.Second

func runRemoveAgent(ctx context.Context, args []string) error {
	return removeAgent(ctx, args, os.Stdout)
}

func removeAgent(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("remove-agent", "<agent>", removeAgentDesc+"\n\n"+removeAgentMore)
	nf := addNATSFlags(fs)
	force := fs.Bool("force", false, "remove the agent even while a worker of it is live")
	if err := parseFlagsN(fs, args, 1, "the agent's name"); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	agent := fs.Arg(0)
	if !bus.ValidToken(agent) {
		return fmt.Errorf("%q is not an agent name (1-128 of A-Z a-z 0-9 _ -)", agent)
	}
	ctx, cancel := context.WithTimeout(ctx, removeAgentWait)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, closeBus, err := nf.openBus(ctx, "a2amesh-remove-agent", log, nil)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("NATS at %s did not answer within %v", *nf.url, removeAgentWait)
		}
		return err
	}
	defer closeBus()
	b := store.Bus()
	if !*force {
		live, err := registry.Answering(ctx, b, agent)
		if err != nil {
			return fmt.Errorf("cannot tell whether %s has a live worker: %w", agent, err)
		}
		if live {
			return errors.New(agent + " has a live worker: stop its workers first, or use --force")
		}
	}
	removed, err := registry.Remove(ctx, b, agent)
	if err != nil {
		return err
	}
	if !removed {
		return fmt.Errorf("no agent named %s is known to the mesh", agent)
	}
	fmt.Fprintf(out, "removed %s: sends to it are now refused as unknown\n", agent)
	return nil
}
