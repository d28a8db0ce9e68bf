package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/registry"
	"github.com/a2amesh/a2amesh/taskstore"
)

const agentsDesc = "list the agents the mesh knows, with their live workers and queues, or remove one"

func init() {
	register("agents", agentsDesc, runAgents)
}

const agentsMore = `  list            (the default) every known agent: its live workers, the
                  tasks queued for it and in flight, when a worker of it was
                  last seen, and whether its sends are queuing (no live worker)
  remove <agent>  forget an agent: sends to it are refused as unknown and its
                  card is no longer served

An agent stays known from its first registration, with or without a live
worker: its card is served and its sends wait in its queue for the next
worker (scale to zero). It is forgotten after --agent-retention with no
worker, or at once by remove. Stop its workers first: a worker that still
runs registers it again within its refresh (a tenth of the retention, at
most an hour), so remove refuses an agent with a live worker unless
--force. Tasks already queued for a removed agent stay queued, and run if a
worker of it comes back; until then they wait like any queued task (a
blocking send answers at its bound with the task submitted). Against
a2amesh dev, start dev with --nats-listen and point --nats there.`

// agentsWait bounds the wait for NATS and the command's reads.
const agentsWait = 30 * time.Second

// agentsSettle is how long list lets its registry table probe the workers'
// connections before it reads it: long enough for a crashed worker's
// connection to be found gone (two probes 500ms apart).
const agentsSettle = 1500 * time.Millisecond

func runAgents(ctx context.Context, args []string) error {
	return agentsCmd(ctx, args, os.Stdout)
}

func agentsCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("agents", "[list | remove <agent>]", agentsDesc+"\n\n"+agentsMore)
	nf := addNATSFlags(fs)
	force := fs.Bool("force", false, "remove: remove the agent even while a worker of it is live")
	asJSON := fs.Bool("json", false, "list: print JSON, one object per agent, instead of a table")
	// Flags may come before, between or after the words.
	var words []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return parseFlagsN(fs, rest, 0, "") // prints the usage
		}
		if fs.NArg() == 0 {
			break
		}
		words, rest = append(words, fs.Arg(0)), fs.Args()[1:]
	}
	op := "list"
	if len(words) > 0 {
		op = words[0]
	}
	switch {
	case op == "list" && len(words) <= 1:
	case op == "remove" && len(words) == 2:
		if !bus.ValidToken(words[1]) {
			return fmt.Errorf("%q is not an agent name (1-128 of A-Z a-z 0-9 _ -)", words[1])
		}
	case op == "remove":
		return usageError{errors.New("remove takes one agent's name")}
	default:
		return usageError{fmt.Errorf("want list, or remove <agent>, not %q", op)}
	}
	ctx, cancel := context.WithTimeout(ctx, agentsWait)
	defer cancel()
	store, closeBus, err := nf.openTool(ctx, "a2amesh-agents")
	if err != nil {
		return err
	}
	defer closeBus()
	if op == "remove" {
		return removeAgent(ctx, store.Bus(), words[1], *force, out)
	}
	return listAgents(ctx, store.Bus(), *asJSON, out)
}

func removeAgent(ctx context.Context, b *bus.Bus, agent string, force bool, out io.Writer) error {
	if !force {
		live, err := registry.Answering(ctx, b, agent)
		if err != nil {
			return fmt.Errorf("cannot tell whether %s has a live worker: %w", agent, err)
		}
		if live {
			return errors.New(agent + " has a live worker: stop its workers first, or use --force")
		}
	}
	removed, err := registry.Remove(ctx, b, agent)
	if removed || err != nil {
		auditCLI(ctx, b, "RemoveAgent", agent, err)
	}
	if err != nil {
		return err
	}
	if !removed {
		return fmt.Errorf("no agent named %s is known to the mesh", agent)
	}
	fmt.Fprintf(out, "removed %s: sends to it are now refused as unknown\n", agent)
	return nil
}

// agentRow is one agent as list prints it.
type agentRow struct {
	Name string `json:"name"`
	registry.Status
	Queued   uint64 `json:"queued"`
	InFlight uint64 `json:"inFlight"`
}

func listAgents(ctx context.Context, b *bus.Bus, asJSON bool, out io.Writer) error {
	table := registry.NewTable(b)
	tctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = table.Run(tctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-table.Ready():
	case <-ctx.Done():
		return fmt.Errorf("the registry could not be read within %v", agentsWait)
	}
	if !table.Loaded() {
		return errors.New("the registry could not be read")
	}
	// The table probes each worker's connection: a worker that crashed
	// a moment ago (its entry not yet expired) is known gone once two
	// probes found it missing, as an edge knows it.
	bus.Sleep(ctx, agentsSettle)
	queues, err := b.Queues(ctx)
	if err != nil {
		return err
	}
	var rows []agentRow
	for _, a := range table.Listing() {
		q := queues[a.Agent]
		rows = append(rows, agentRow{Name: a.Agent, Status: a.Status, Queued: q.Pending, InFlight: q.AckPending})
	}
	if asJSON {
		enc := json.NewEncoder(out)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tWORKERS\tQUEUED\tIN FLIGHT\tLAST SEEN\tSTATUS")
	for _, r := range rows {
		status := "live"
		if r.Queuing {
			status = "queuing: no live worker"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", r.Name, r.Workers, r.Queued, r.InFlight, r.LastSeen.Format(time.RFC3339), status)
	}
	return tw.Flush()
}

// openTool opens the bus for a command that reads or changes the mesh
// from outside it (agents, audit), within ctx's bound (agentsWait),
// logging only warnings.
func (f *natsFlags) openTool(ctx context.Context, name string) (*taskstore.Store, func(), error) {
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, closeBus, err := f.openBus(ctx, name, log, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("NATS at %s did not answer within %v", *f.url, agentsWait)
		}
		return nil, nil, err
	}
	return store, closeBus, nil
}
