// Command greeter is a complete a2amesh agent, small enough to copy as the
// start of your own. It answers "Hello, <your text>!", streamed word by
// word as chunks of one artifact, so a streaming client sees it arrive.
//
// Start a mesh whose NATS port is open to other processes, then this
// worker, then talk to it through the edge:
//
//	a2amesh dev --nats-listen 127.0.0.1:4222   # edge on 127.0.0.1:8080
//	go run ./examples/greeter                  # or: -nats nats://host:4222
//	a2amesh stream --agent greeter Ada         # the words as they come
//	a2amesh send --agent greeter Ada           # the finished task
//
// Any A2A client works too: the agent's card is at
// http://127.0.0.1:8080/agents/greeter/.well-known/agent-card.json.
//
// The worker registers the agent's card with the mesh, takes tasks from the
// agent's work queue until Ctrl-C (SIGINT) or SIGTERM, then hands any task
// it has not finished back to the queue for another worker. Start as many
// copies as you like: they share the queue.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/taskstore"
)

// Greeter is the agent. An agent is any type with the two methods of
// agentrt.Agent: Card (what the mesh publishes about it) and Run (one user
// turn of a task).
type Greeter struct {
	// WordDelay is the pause between streamed words; it only makes the
	// streaming visible to a person watching.
	WordDelay time.Duration
}

// Card describes the agent. The edge fills in the URLs a client uses, so
// the card says only what the agent is and does. Its name is the agent's
// name in the mesh: clients reach it at /agents/greeter.
func (Greeter) Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "greeter",
		Description: "Greets whoever you name, one word at a time.",
		Version:     "1.0.0",
		Capabilities: a2a.AgentCapabilities{
			Streaming:         a2a.Bool(true),  // Run sends artifact chunks as it goes
			PushNotifications: a2a.Bool(false), // leave push to the edge's configuration
		},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID:          "greet",
			Name:        "Greet",
			Description: `Answers "Hello, <text>!" for the text of your message.`,
			Tags:        []string{"example", "greeting"},
			Examples:    []string{"Ada", "world"},
		}},
	}
}

// Run handles one message. Everything the agent does goes through w, which
// appends it to the task's event log: clients of SendMessage get the task
// at the end, clients of SendStreamingMessage get each event as it happens.
// ctx ends when the client cancels the task, the task times out or the
// worker stops; return promptly then.
func (g Greeter) Run(ctx context.Context, req *agentrt.Request, w agentrt.EventWriter) error {
	name := strings.TrimSpace(req.Text())
	if name == "" {
		// A final state other than completed, with a reason for the client.
		return w.Reject("send some text: the greeter greets whoever the text names")
	}
	words := strings.Fields("Hello, " + name + "!")

	// One artifact, sent in chunks. The first chunk creates it (append
	// false), later ones add to it (append true), the last says so. The id
	// comes from req.ArtifactID, which is the same if this turn ever runs
	// again (a worker died mid-run): the first chunk then replaces the
	// partial greeting rather than adding a second one.
	id := req.ArtifactID("greeting")
	for i, word := range words {
		if i > 0 {
			word = " " + word
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(g.WordDelay):
			}
		}
		chunk := a2a.Artifact{ArtifactID: id, Name: "greeting", Parts: []a2a.Part{a2a.TextPart(word)}}
		if err := w.Artifact(chunk, i > 0, i == len(words)-1); err != nil {
			return err // the task was closed (e.g. canceled): stop
		}
	}
	// Complete ends the task. Returning nil without it would complete it
	// too; returning an error would fail it.
	return w.Complete("")
}

// Config is what run needs; main fills it from flags and the environment.
type Config struct {
	// NATSURL lists the mesh's NATS servers, comma-separated.
	NATSURL string
	// Replicas must match the rest of the mesh: 1 on a single NATS node,
	// 3 on a 3-node cluster. Every process opening the bus makes the
	// streams match its own settings.
	Replicas int
	// Concurrency is how many tasks this worker runs at once.
	Concurrency int
	// WordDelay: see Greeter.
	WordDelay time.Duration
	Logger    *slog.Logger
}

// run connects to the mesh and runs the greeter's worker until ctx ends.
func run(ctx context.Context, cfg Config) error {
	// Dial keeps reconnecting for as long as the process lives, so the
	// worker rides out a NATS restart.
	nc, err := bus.Dial(bus.DialConfig{URL: cfg.NATSURL, Name: "greeter-example"})
	if err != nil {
		return err
	}
	defer nc.Close()

	// Open the mesh's streams and buckets, and the task store on them. Retry waits (bounded) while
	// NATS or JetStream is not up yet, so the worker may start first.
	var store *taskstore.Store
	err = bus.Retry(ctx, cfg.Logger, "JetStream at "+cfg.NATSURL, func(ctx context.Context) error {
		b, err := bus.Open(ctx, nc, bus.Config{Replicas: cfg.Replicas})
		if err != nil {
			return err
		}
		store, err = taskstore.Open(ctx, b)
		return err
	})
	if err != nil {
		return err
	}

	// The task store's upkeep (trimming tasks past their retention) runs beside
	// the worker, as in every process of the mesh, until ctx ends.
	var upkeep sync.WaitGroup
	upkeep.Add(1)
	go func() {
		defer upkeep.Done()
		_ = store.Run(ctx)
	}()
	defer upkeep.Wait()

	// The worker registers the card (and keeps it registered while it
	// runs), consumes the agent's queue, heartbeats running tasks, and
	// enforces the per-task timeout. Its Name defaults to the card's.
	w := &agentrt.Worker{
		Store:       store,
		Agent:       Greeter{WordDelay: cfg.WordDelay},
		Concurrency: cfg.Concurrency,
		Timeout:     30 * time.Second,
		Logger:      cfg.Logger,
	}
	return w.Run(ctx)
}

func main() {
	natsURL := flag.String("nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS servers of the mesh, comma-separated (env NATS_URL)")
	replicas := flag.Int("replicas", 1, "replicas of the mesh's streams: 1, or 3 on a 3-node NATS cluster (as the mesh's other processes)")
	concurrency := flag.Int("concurrency", 8, "tasks run at once")
	delay := flag.Duration("word-delay", 150*time.Millisecond, "pause between streamed words")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// Ctrl-C or SIGTERM ends ctx: the worker stops taking tasks and hands
	// back the ones in progress.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := run(ctx, Config{NATSURL: *natsURL, Replicas: *replicas, Concurrency: *concurrency, WordDelay: *delay, Logger: log})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "greeter:", err)
		os.Exit(1)
	}
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
