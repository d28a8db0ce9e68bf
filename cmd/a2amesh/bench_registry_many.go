package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/a2amesh/a2amesh/agentrt/agents"
	"github.com/a2amesh/a2amesh/cmd/a2amesh/internal/bench"
)

// runBenchRegistryMany is bench registry --agents: the registry with many
// agents on a mesh of processes (an a2amesh nats, two a2amesh edges, one
// with --lost-grace 0 and one with the default), the agents registered by
// this process over conns connections (bench.RunManyAgents).
func runBenchRegistryMany(ctx context.Context, bin string, n, conns, rounds int, agent string) error {
	a, ok := agents.Builtin()[agent]
	if !ok {
		return fmt.Errorf("--agent must name a built-in agent, got %q", agent)
	}
	bin, err := benchBinary(bin)
	if err != nil {
		return err
	}
	m, err := bench.StartProcMesh(ctx, bin, "")
	if err != nil {
		return err
	}
	defer m.Close()
	ge, geURL, err := bench.StartEdgeProc(ctx, bin, m.NATSURL)
	if err != nil {
		return err
	}
	defer ge.Stop(5 * time.Second)
	res, err := bench.RunManyAgents(ctx, bench.ManyOptions{
		NATSURL: m.NATSURL, EdgeURLs: []string{m.EdgeURL, geURL}, Edges: []*bench.Proc{m.Edge, ge},
		Agents: n, Conns: conns, Card: a.Card(), Rounds: rounds,
		Progress: func(msg string) { fmt.Fprintln(os.Stderr, "bench registry:", msg) },
	})
	if err != nil {
		return err
	}
	fmt.Printf("bench registry --agents %d: %d agents (%s cards) registered over %d connections; 2 edge processes; registry TTL %v; "+
		"edges probe each connection every %v (%.0f probes/s in all)\n\n",
		n, res.Agents, agent, res.Conns, res.TTL, bench.RegistryProbeEvery, res.ProbesPerSec)
	fmt.Println("| measure | edge 1 | edge 2 |")
	fmt.Println("|---|---|---|")
	pair := func(name string, f func(i int) string) {
		fmt.Printf("| %s | %s | %s |\n", name, f(0), f(1))
	}
	mib := func(v uint64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	if len(res.RSSBefore) == 2 && len(res.RSSAfter) == 2 {
		pair("RSS, no agent", func(i int) string { return mib(res.RSSBefore[i]) })
		pair(fmt.Sprintf("RSS, %d agents", res.Agents), func(i int) string { return mib(res.RSSAfter[i]) })
		pair("RSS per agent", func(i int) string {
			return fmt.Sprintf("%.1f KiB", (float64(res.RSSAfter[i])-float64(res.RSSBefore[i]))/1024/float64(res.Agents))
		})
	}
	if len(res.CPUIdle) == 2 && len(res.CPULoaded) == 2 {
		pair("CPU at rest, no agent", func(i int) string { return fmt.Sprintf("%.3f cores", res.CPUIdle[i]) })
		pair(fmt.Sprintf("CPU at rest, %d agents (heartbeats, probes)", res.Agents), func(i int) string { return fmt.Sprintf("%.3f cores", res.CPULoaded[i]) })
	}
	fmt.Println()
	fmt.Println("| measure | n | min | median | p90 | max |")
	fmt.Println("|---|---|---|---|---|---|")
	row := func(name string, v []time.Duration) {
		if len(v) == 0 {
			return
		}
		s := bench.Summarize(v)
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", name, s.N, fmtDur(s.Min), fmtDur(s.Median), fmtDur(s.P90), fmtDur(s.Max))
	}
	row(fmt.Sprintf("GET /agents (%d agents, %d KiB)", res.Agents, res.AgentsBytes>>10), res.AgentsGET)
	row("a new agent: Publish → listed by every edge", res.Join)
	row("a new agent: Publish → listed by one edge", res.JoinEach)
	row("its connection closed → every edge refuses sends", res.Crash)
	fmt.Println()
	fmt.Printf("Registering all %d agents: %v to be listed by both edges. A registry.Table of %d agents: %d KiB of Go heap; Table.Lookup (a send's route lookup): %.0f ns.\n",
		res.Agents, res.Register.Round(time.Millisecond), res.Agents, res.TableHeap>>10, res.LookupNs)
	return nil
}
