// Package agents holds the mesh's built-in agents, which need no LLM: echo,
// slow, ask, upper, planner (a multi-agent example that delegates to echo
// and upper), hello (answers with a message, not a task), and tck (the system under test of the A2A conformance
// suite). They are examples of the agentrt API as much as test fixtures.
package agents

import (
	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/agentrt"
)

// Builtin returns every built-in agent by name.
func Builtin() map[string]agentrt.Agent {
	return map[string]agentrt.Agent{
		"echo":    Echo{},
		"slow":    Slow{},
		"ask":     Ask{},
		"upper":   Upper{},
		"planner": Planner{},
		"tck":     TCK{},
		"hello":   Hello{},
	}
}

func card(name, desc string, skills ...a2a.AgentSkill) a2a.AgentCard {
	return a2a.AgentCard{
		Name: name, Description: desc, Version: "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false)},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             skills,
	}
}
