// Package policy decides what each caller of the mesh may do: which
// actions (send, read, cancel, push configuration, the extended card, the
// operator API, the audit log, removing an agent) on which agents. It knows callers only as a
// principal and its grants (scopes or roles), as the edge authenticated
// them; it reads a policy file and answers Allows and Sees. The service
// asks it once per call, whichever binding carried the call.
//
// The file is a list of rules, one per line; what no rule allows is
// denied:
//
//	# allow WHO AGENTS ACTIONS
//	allow principal:alice   echo,slow   send,read,cancel
//	allow scope:a2a.call    *           send,read
//	allow role:operators    *           ops,read
//	allow role:auditors     *           audit
//	allow *                 public-*    send,read
//
// WHO is principal:NAME (an API key's principal, a token's subject, a
// client certificate's name), scope:NAME or role:NAME (one of the caller's
// grants: a token's scopes or roles, or an API key's roles=), or * (every
// caller, including an unauthenticated one where the route admits it).
// AGENTS are names or globs (path.Match: *, ?, [a-z]). ACTIONS are the
// Action names, or * for all of them.
package policy

import (
	"bufio"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Action is what a call does to an agent.
type Action string

// The actions a rule grants.
const (
	// Send: SendMessage and SendStreamingMessage (message/send,
	// message/stream, tasks/send, tasks/sendSubscribe).
	Send Action = "send"
	// Read: GetTask, ListTasks, SubscribeToTask (tasks/resubscribe).
	Read Action = "read"
	// Cancel: CancelTask.
	Cancel Action = "cancel"
	// Push: the push notification config methods (set, get, list, delete).
	Push Action = "push"
	// ExtendedCard: GetExtendedAgentCard.
	ExtendedCard Action = "extended-card"
	// Ops: the operator API (/ops/v1) and the console's views of the
	// fleet and of tasks.
	Ops Action = "ops"
	// Audit: reading the audit log.
	Audit Action = "audit"
	// Remove: forgetting an agent (DELETE /ops/v1/agents/{name}).
	Remove Action = "remove"
)

// Actions lists every action, in the order the docs give them.
var Actions = []Action{Send, Read, Cancel, Push, ExtendedCard, Ops, Audit, Remove}

func (a Action) valid() bool { return slices.Contains(Actions, a) }

// Caller is who a call comes from, as the edge authenticated it.
type Caller struct {
	// Principal names the caller ("" for an unauthenticated one).
	Principal string
	// Grants are its scopes or roles (a token's scope claim, an API key's
	// roles=): what scope:NAME and role:NAME rules match.
	Grants []string
}

// Policy is a parsed policy file. The zero Policy denies everything; a
// nil *Policy allows everything (no policy configured).
type Policy struct {
	rules []rule
}

type rule struct {
	line    int
	kind    string // "principal", "grant", "*"
	name    string
	agents  []string
	actions map[Action]bool // nil: all
}

// Parse reads a policy file's text. Every error names its line.
func Parse(text string) (*Policy, error) {
	p := &Policy{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		r, err := parseRule(line)
		if err != nil {
			return nil, fmt.Errorf("policy: line %d: %w", n, err)
		}
		r.line = n
		p.rules = append(p.rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if len(p.rules) == 0 {
		return nil, errors.New("policy: no rules: a policy that allows nothing is most likely a mistake (write one rule, or run without --policy)")
	}
	return p, nil
}

const ruleForm = `want "allow WHO AGENTS ACTIONS", e.g. "allow principal:alice echo,slow send,read"`

func parseRule(line string) (rule, error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "allow" {
		return rule{}, errors.New(ruleForm)
	}
	var r rule
	who := f[1]
	switch {
	case who == "*":
		r.kind = "*"
	default:
		kind, name, ok := strings.Cut(who, ":")
		if !ok || name == "" {
			return rule{}, fmt.Errorf("who %q: want principal:NAME, scope:NAME, role:NAME or *", who)
		}
		switch kind {
		case "principal":
			r.kind = "principal"
		case "scope", "role":
			r.kind = "grant"
		default:
			return rule{}, fmt.Errorf("who %q: want principal:NAME, scope:NAME, role:NAME or *", who)
		}
		r.name = name
	}
	for _, a := range strings.Split(f[2], ",") {
		if a == "" {
			return rule{}, fmt.Errorf("agents %q: an empty name", f[2])
		}
		if _, err := path.Match(a, ""); err != nil {
			return rule{}, fmt.Errorf("agents %q: bad pattern %q", f[2], a)
		}
		r.agents = append(r.agents, a)
	}
	if f[3] != "*" {
		r.actions = map[Action]bool{}
		for _, a := range strings.Split(f[3], ",") {
			act := Action(a)
			if !act.valid() {
				return rule{}, fmt.Errorf("action %q: want %s or *", a, actionList())
			}
			r.actions[act] = true
		}
	}
	return r, nil
}

func actionList() string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

func (r *rule) matchesCaller(c Caller) bool {
	switch r.kind {
	case "*":
		return true
	case "principal":
		return c.Principal != "" && c.Principal == r.name
	default:
		return slices.Contains(c.Grants, r.name)
	}
}

func (r *rule) matchesAgent(agent string) bool {
	for _, pat := range r.agents {
		if ok, _ := path.Match(pat, agent); ok {
			return true
		}
	}
	return false
}

// Allows reports whether c may do a to agent. A nil Policy allows all.
func (p *Policy) Allows(c Caller, a Action, agent string) bool {
	if p == nil {
		return true
	}
	for i := range p.rules {
		r := &p.rules[i]
		if (r.actions == nil || r.actions[a]) && r.matchesCaller(c) && r.matchesAgent(agent) {
			return true
		}
	}
	return false
}

// Sees reports whether c may do anything to agent: whether listings (GET
// /agents, the mesh card's skills, the console's fleet) show it to c.
func (p *Policy) Sees(c Caller, agent string) bool {
	if p == nil {
		return true
	}
	for i := range p.rules {
		r := &p.rules[i]
		if r.matchesCaller(c) && r.matchesAgent(agent) {
			return true
		}
	}
	return false
}

// AllowsAny reports whether c may do a to some agent: whether a route that
// spans agents (the operator API, the audit log) admits c at all, before
// it filters what it shows.
func (p *Policy) AllowsAny(c Caller, a Action) bool {
	if p == nil {
		return true
	}
	for i := range p.rules {
		r := &p.rules[i]
		if (r.actions == nil || r.actions[a]) && r.matchesCaller(c) {
			return true
		}
	}
	return false
}

// Rules counts the policy's rules.
func (p *Policy) Rules() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}
