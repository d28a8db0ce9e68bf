package registry

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/a2a"
)

// A table of 1000 agents, one instance each, as an edge of a large mesh
// holds: the cost of a send's route lookup and of listing the agents.

func tableOf(b *testing.B, n int) (*Table, []string) {
	b.Helper()
	table := NewTable(nil)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("agent-%05d", i)
		table.apply(fakeEntry{key: names[i] + ".w", e: Entry{Agent: names[i], Instance: "w",
			Card: a2a.AgentCard{Name: names[i], Description: "an agent"}, TTL: time.Minute, Beat: time.Now()}}.entry())
	}
	return table, names
}

func BenchmarkTableLookup1000(b *testing.B) {
	table, names := tableOf(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := table.Lookup(names[i%len(names)]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkTableAgents1000(b *testing.B) {
	table, _ := tableOf(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(table.Agents()) != 1000 {
			b.Fatal("missing")
		}
	}
}
