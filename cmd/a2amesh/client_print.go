package main

// Output formatting of the client subcommands: compact "label  value"
// lines, one per fact, with the agent's content below.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// labelWidth aligns the values of "label  value" lines.
const labelWidth = 9

func line(w io.Writer, label, value string) {
	if value == "" {
		fmt.Fprintln(w, label)
		return
	}
	fmt.Fprintf(w, "%-*s%s\n", labelWidth, label, value)
}

// block prints label and head, then body inline when it is one line, or
// indented below when it has several.
func block(w io.Writer, label, head, body string) {
	body = strings.TrimRight(body, "\n")
	switch {
	case body == "":
		line(w, label, head)
	case !strings.Contains(body, "\n"):
		if head != "" {
			head += ": "
		}
		line(w, label, head+body)
	default:
		if head != "" {
			head += ":"
		}
		line(w, label, head)
		for _, l := range strings.Split(body, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// stateName is a state's short lower-case name, e.g. "input-required".
func stateName(s a2a.TaskState) string { return a2a.StateV03(s) }

func roleName(r a2a.Role) string {
	switch r {
	case a2a.RoleUser:
		return "user"
	case a2a.RoleAgent:
		return "agent"
	}
	return "message"
}

// partsText renders parts as text: text as is, data as compact JSON, files
// as a short description.
func partsText(parts []a2a.Part) string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, partText(p))
	}
	return strings.Join(out, "\n")
}

func partText(p a2a.Part) string {
	switch p.Kind {
	case a2a.PartText:
		return p.Text
	case a2a.PartData:
		var b bytes.Buffer
		if json.Compact(&b, p.Data) == nil {
			return b.String()
		}
		return string(p.Data)
	case a2a.PartRaw:
		return "[" + joinNonEmpty(", ", fileName(p), p.MediaType, fmt.Sprintf("%d bytes", len(p.Raw))) + "]"
	case a2a.PartURL:
		return "[" + joinNonEmpty(", ", fileName(p), p.MediaType) + "] " + p.URL
	}
	return "[unknown part]"
}

func fileName(p a2a.Part) string {
	if p.Filename != "" {
		return p.Filename
	}
	return "file"
}

func joinNonEmpty(sep string, ss ...string) string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

func artifactLabel(a *a2a.Artifact) string {
	if a.Name != "" {
		return a.Name
	}
	return a.ArtifactID
}

// printTask prints a task: ids, state with the status message, artifacts
// and, when asked, its history.
func printTask(w io.Writer, t *a2a.Task, withHistory bool) {
	line(w, "task", t.ID)
	line(w, "context", t.ContextID)
	block(w, "status", stateName(t.Status.State), statusText(t.Status))
	for i := range t.Artifacts {
		a := &t.Artifacts[i]
		block(w, "artifact", artifactLabel(a), partsText(a.Parts))
	}
	if withHistory {
		if len(t.History) == 0 {
			line(w, "history", "(none)")
		}
		for i := range t.History {
			m := &t.History[i]
			block(w, "history", roleName(m.Role), partsText(m.Parts))
		}
	}
}

func statusText(s a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	return partsText(s.Message.Parts)
}

// printMessage prints a message answer.
func printMessage(w io.Writer, m *a2a.Message) {
	if m.TaskID != "" {
		line(w, "task", m.TaskID)
	}
	if m.ContextID != "" {
		line(w, "context", m.ContextID)
	}
	block(w, "message", "", partsText(m.Parts))
}

// printSendResult prints SendMessage's answer: a task or a message.
func printSendResult(w io.Writer, res *a2a.StreamResponse) {
	switch {
	case res.Task != nil:
		printTask(w, res.Task, false)
	case res.Message != nil:
		printMessage(w, res.Message)
	}
}

// printCard prints the parts of a card a person wants to read.
func printCard(w io.Writer, c *a2a.AgentCard) {
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-14s%s\n", label+":", value)
		}
	}
	field("Name", c.Name)
	field("Description", oneLine(c.Description))
	field("Version", c.Version)
	if p := c.Provider; p != nil {
		field("Provider", joinNonEmpty(" ", p.Organization, parenthesize(p.URL)))
	}
	field("Docs", c.DocumentationURL)

	ifaces := c.SupportedInterfaces
	if len(ifaces) == 0 && c.URL != "" { // a 0.3 card
		binding := c.PreferredTransport
		if binding == "" {
			binding = a2a.BindingJSONRPC
		}
		ifaces = []a2a.AgentInterface{{URL: c.URL, ProtocolBinding: binding, ProtocolVersion: c.ProtocolVersion}}
	}
	if len(ifaces) > 0 {
		fmt.Fprintln(w, "Interfaces:")
		for _, i := range ifaces {
			binding := i.ProtocolBinding
			extra := ""
			if i.Tenant != "" {
				extra = "  (tenant " + i.Tenant + ")"
			}
			fmt.Fprintf(w, "  %-8s %-5s %s%s\n", binding, i.ProtocolVersion, i.URL, extra)
		}
	}
	field("Capabilities", capabilities(c.Capabilities))
	field("Input", strings.Join(c.DefaultInputModes, ", "))
	field("Output", strings.Join(c.DefaultOutputModes, ", "))
	if len(c.SecuritySchemes) > 0 {
		names := make([]string, 0, len(c.SecuritySchemes))
		for n := range c.SecuritySchemes {
			names = append(names, n)
		}
		slices.Sort(names)
		field("Security", strings.Join(names, ", "))
	}
	if len(c.Skills) > 0 {
		fmt.Fprintln(w, "Skills:")
		width := 0
		for _, s := range c.Skills {
			width = max(width, len(s.ID))
		}
		for _, s := range c.Skills {
			head := s.Name
			if d := oneLine(s.Description); d != "" && d != s.Name {
				head = joinNonEmpty(": ", s.Name, d)
			}
			fmt.Fprintf(w, "  %-*s  %s\n", width, s.ID, head)
			var more []string
			if len(s.Tags) > 0 {
				more = append(more, "tags: "+strings.Join(s.Tags, ", "))
			}
			if len(s.Examples) > 0 {
				ex := make([]string, len(s.Examples))
				for i, e := range s.Examples {
					ex[i] = fmt.Sprintf("%q", oneLine(e))
				}
				more = append(more, "e.g. "+strings.Join(ex, ", "))
			}
			if len(more) > 0 {
				fmt.Fprintf(w, "  %-*s  %s\n", width, "", strings.Join(more, " · "))
			}
		}
	}
}

func parenthesize(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func capabilities(c a2a.AgentCapabilities) string {
	var out []string
	on := func(b *bool, name string) {
		if b != nil && *b {
			out = append(out, name)
		}
	}
	on(c.Streaming, "streaming")
	on(c.PushNotifications, "push notifications")
	on(c.ExtendedAgentCard, "extended card")
	on(c.StateTransitionHistory, "state history")
	for _, e := range c.Extensions {
		name := "extension " + e.URI
		if e.Required {
			name += " (required)"
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// writeJSON writes v as JSON (indented, or on one line) and a newline.
func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// writeIndented writes a JSON document indented, as served otherwise.
func writeIndented(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		b.Reset()
		b.Write(raw)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// streamPrinter prints stream events as they arrive. Artifact chunks with
// append=true continue the artifact's line, so streamed text reads as text.
type streamPrinter struct {
	w      io.Writer
	json   bool
	taskID string

	contextID string
	header    bool // task and context lines printed
	sawTask   bool
	state     a2a.TaskState
	finished  bool // a final state or a message answer arrived

	open   string // artifact whose line is still open
	lastNL bool   // the open line already ends in a newline
}

func (p *streamPrinter) event(r *a2a.StreamResponse) error {
	if p.json {
		p.track(r)
		return writeJSON(p.w, r, false)
	}
	switch {
	case r.Task != nil:
		t := r.Task
		p.track(r)
		p.printHeader()
		p.closeLine()
		block(p.w, "status", stateName(t.Status.State), statusText(t.Status))
		for i := range t.Artifacts {
			a := &t.Artifacts[i]
			block(p.w, "artifact", artifactLabel(a), partsText(a.Parts))
		}
	case r.StatusUpdate != nil:
		p.track(r)
		p.printHeader()
		p.closeLine()
		block(p.w, "status", stateName(r.StatusUpdate.Status.State), statusText(r.StatusUpdate.Status))
	case r.ArtifactUpdate != nil:
		u := r.ArtifactUpdate
		p.track(r)
		p.printHeader()
		text := partsText(u.Artifact.Parts)
		if !(u.Append && p.open == u.Artifact.ArtifactID) {
			p.closeLine()
			fmt.Fprintf(p.w, "%-*s%s: ", labelWidth, "artifact", artifactLabel(&u.Artifact))
			p.open, p.lastNL = u.Artifact.ArtifactID, false
		}
		if text != "" {
			io.WriteString(p.w, text)
			p.lastNL = strings.HasSuffix(text, "\n")
		}
		if u.LastChunk {
			p.closeLine()
		}
	case r.Message != nil:
		p.track(r)
		p.closeLine()
		label := "message"
		if r.Message.Role == a2a.RoleUser {
			label = "user"
		}
		block(p.w, label, "", partsText(r.Message.Parts))
	}
	return nil
}

// track follows ids and state, and whether the stream has reached its end.
func (p *streamPrinter) track(r *a2a.StreamResponse) {
	var taskID, contextID string
	var st *a2a.TaskStatus
	switch {
	case r.Task != nil:
		taskID, contextID, st = r.Task.ID, r.Task.ContextID, &r.Task.Status
	case r.StatusUpdate != nil:
		taskID, contextID, st = r.StatusUpdate.TaskID, r.StatusUpdate.ContextID, &r.StatusUpdate.Status
	case r.ArtifactUpdate != nil:
		taskID, contextID = r.ArtifactUpdate.TaskID, r.ArtifactUpdate.ContextID
	case r.Message != nil:
		if !p.sawTask {
			p.finished = true // the agent answered with a message: no task
		}
		return
	}
	p.sawTask = true
	if taskID != "" {
		p.taskID = taskID
	}
	if contextID != "" {
		p.contextID = contextID
	}
	if st != nil {
		p.state = st.State
		if st.State.Final() {
			p.finished = true
		}
	}
}

func (p *streamPrinter) printHeader() {
	if p.header {
		return
	}
	p.header = true
	if p.taskID != "" {
		line(p.w, "task", p.taskID)
	}
	if p.contextID != "" {
		line(p.w, "context", p.contextID)
	}
}

// closeLine ends an open artifact line.
func (p *streamPrinter) closeLine() {
	if p.open != "" && !p.lastNL {
		fmt.Fprintln(p.w)
	}
	p.open, p.lastNL = "", false
}

// end finishes the output when the stream ends.
func (p *streamPrinter) end() {
	if !p.json {
		p.closeLine()
	}
}

// task returns what the stream told of its task, for hints; nil if none.
func (p *streamPrinter) task() *a2a.Task {
	if p.taskID == "" {
		return nil
	}
	return &a2a.Task{ID: p.taskID, ContextID: p.contextID, Status: a2a.TaskStatus{State: p.state}}
}
