package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/a2amesh/a2amesh/a2a"
	"github.com/a2amesh/a2amesh/internal/natstest"
	"github.com/a2amesh/a2amesh/mesh/meshtest"
	"github.com/a2amesh/a2amesh/registry"
)

// fleetChecks is what GET /ops/v1/fleet tells of cards and failures.
type fleetChecks struct {
	Agents []struct {
		Name       string `json:"name"`
		CardIssues []struct {
			Severity, Field, Message string
		} `json:"cardIssues"`
		Failures []struct {
			TaskID string    `json:"taskId"`
			Reason string    `json:"reason"`
			Time   time.Time `json:"time"`
		} `json:"failures"`
	} `json:"agents"`
}

// The fleet checks each card as served (the mesh's own agents pass; a
// card of only a name breaks the specification's requirements) and lists
// an agent's newest dead letters, newest first, with their reasons.
func TestOpsFleetCardIssuesAndFailures(t *testing.T) {
	m := meshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func() (doc fleetChecks) {
		code, _, body := opsGet(t, m.URL, "/ops/v1/fleet", "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		require.NoError(t, json.Unmarshal(body, &doc))
		return doc
	}

	for i, reason := range []string{"max deliveries", "undecodable", "task not found", "max deliveries"} {
		require.NoError(t, m.Bus().DeadLetter(ctx, "echo", fmt.Appendf(nil, `{"taskId":"t%d"}`, i), reason))
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = registry.Publish(pctx, m.Bus(), registry.Entry{Agent: "bare", Instance: "b1", Card: a2a.AgentCard{Name: "bare"}}, nil, nil)
	}()
	defer func() { stop(); <-done }()
	var doc fleetChecks
	require.True(t, natstest.Eventually(ctx, 10*time.Second, func() bool {
		doc = read()
		for _, a := range doc.Agents {
			if a.Name == "bare" {
				return true
			}
		}
		return false
	}), "bare listed")
	for _, a := range doc.Agents {
		switch a.Name {
		case "bare":
			fields := map[string]string{}
			for _, is := range a.CardIssues {
				fields[is.Field] = is.Severity
			}
			for _, f := range []string{"description", "skills"} {
				require.Equal(t, "error", fields[f], "%s: %+v", f, a.CardIssues)
			}
			require.Empty(t, a.Failures)
		case "echo":
			// Its extended card is served without auth here: a
			// warning, no error.
			require.Len(t, a.CardIssues, 1, "%+v", a.CardIssues)
			require.Equal(t, "warning", a.CardIssues[0].Severity)
			require.Equal(t, "capabilities.extendedAgentCard", a.CardIssues[0].Field)
			require.Len(t, a.Failures, 3, "the newest three")
			for i, want := range []struct{ task, reason string }{{"t3", "max deliveries"}, {"t2", "task not found"}, {"t1", "undecodable"}} {
				require.Equal(t, want.task, a.Failures[i].TaskID)
				require.Equal(t, want.reason, a.Failures[i].Reason)
				require.WithinDuration(t, time.Now(), a.Failures[i].Time, time.Minute)
			}
		default:
			require.Empty(t, a.CardIssues, "the mesh's agent %s serves a card that passes", a.Name)
			require.NotNil(t, a.Failures)
			require.Empty(t, a.Failures)
		}
	}
}
