package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/bus"
)

// Workers counts each agent's live instances as they join and leave.
func TestWorkersCountsInstances(t *testing.T) {
	b := openBus(t, bus.Config{RegistryTTL: 600 * time.Millisecond})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	table, ctx, _ := watchTable(t, b)
	start := func(agent, instance string) (stop func()) {
		c, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = Publish(c, b, Entry{Agent: agent, Instance: instance, Card: a2a.AgentCard{Name: agent}}, nil, log)
		}()
		return func() { cancel(); <-done }
	}
	stopA := start("echo", "a")
	stopB := start("echo", "b")
	stopC := start("slow", "c")
	defer stopC()
	waitFor(t, "echo with 2 workers, slow with 1", func() bool {
		w := table.Workers()
		return len(w) == 2 && w["echo"] == 2 && w["slow"] == 1
	})
	stopA()
	waitFor(t, "echo with 1 worker", func() bool { return table.Workers()["echo"] == 1 })
	stopB()
	waitFor(t, "echo gone", func() bool { _, ok := table.Workers()["echo"]; return !ok })
}
