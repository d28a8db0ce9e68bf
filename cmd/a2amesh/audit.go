package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/audit"
	"github.com/a2amesh/a2amesh/bus"
)

const auditDesc = "read the audit log: state-changing calls and denials"

func init() {
	register("audit", auditDesc, runAudit)
}

const auditMore = `Every edge with --audit (the default) records each state-changing call
(SendMessage, SendStreamingMessage, CancelTask, push config set and delete,
agent removal) and each denial (a credential refused, a call the access
policy does not allow): who, from where, the binding, the method, the agent
and task, the outcome and the trace id; never secrets, tokens or message
content. This command reads them from NATS (the JetStream stream A2A_AUDIT),
in time order. Against a2amesh dev, start dev with --nats-listen and point
--nats there. Edges also serve them to auditors at GET /ops/v1/audit.`

func runAudit(ctx context.Context, args []string) error { return auditCmd(ctx, args, os.Stdout) }

func auditCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("audit", "", auditDesc+"\n\n"+auditMore)
	nf := addNATSFlags(fs)
	since := fs.String("since", "24h", "entries from this long ago (1h, 30m) or this RFC 3339 time; \"\" for the oldest kept")
	agent := fs.String("agent", "", "only this agent's entries (default: every agent's)")
	principal := fs.String("principal", "", "only this principal's entries (default: everyone's)")
	outcome := fs.String("outcome", "", "only entries of this outcome: ok, denied, failed, or unauthenticated (and its reason) (default: any)")
	method := fs.String("method", "", "only entries of this method (SendMessage, CancelTask, RemoveAgent, ...) (default: any)")
	limit := fs.Int("limit", 100, fmt.Sprintf("at most this many entries, in [1, %d]", audit.MaxLimit))
	asJSON := fs.Bool("json", false, "print JSON, one object per entry, instead of a table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > audit.MaxLimit {
		return usageError{fmt.Errorf("--limit must be in [1, %d]", audit.MaxLimit)}
	}
	from, err := audit.ParseSince(*since, time.Now())
	if err != nil {
		return usageError{fmt.Errorf("--%w", err)}
	}
	ctx, cancel := context.WithTimeout(ctx, agentsWait)
	defer cancel()
	store, closeBus, err := nf.openTool(ctx, "a2amesh-audit")
	if err != nil {
		return err
	}
	defer closeBus()
	f := audit.Filter{Since: from, Agent: *agent, Principal: *principal, Outcome: *outcome, Method: *method, Limit: *limit}
	entries, more, err := audit.Read(ctx, store.Bus(), f, nil)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		for _, e := range entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tPRINCIPAL\tFROM\tBINDING\tMETHOD\tAGENT\tTASK\tOUTCOME")
		for _, e := range entries {
			outc := e.Outcome
			if e.Code != 0 {
				outc = fmt.Sprintf("%s (%d)", e.Outcome, e.Code)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), dash(e.Principal), dash(e.From),
				e.Binding, e.Method, dash(e.Agent), dash(e.Task), outc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if more {
		fmt.Fprintf(os.Stderr, "more entries match: raise --limit, or pass --since %s\n", entries[len(entries)-1].Time.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// auditCLI appends what a command changed from outside an edge (card key
// rotation, agent removal) to the audit log, naming the operating-system
// user and host it ran as; a failure to append is reported, not fatal.
func auditCLI(ctx context.Context, b *bus.Bus, method, agent string, failed error) {
	who := "cli"
	if u, err := user.Current(); err == nil {
		who = "cli:" + u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	e := audit.Entry{Principal: who, Binding: "cli", Method: method, Agent: agent, Outcome: audit.OK}
	if failed != nil {
		e.Outcome = audit.Failed
	}
	if err := audit.Append(ctx, b, e); err != nil {
		fmt.Fprintf(os.Stderr, "warning: not recorded in the audit log: %v\n", err)
	}
}
