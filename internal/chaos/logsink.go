package chaos

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// logSink collects one role's output across its restarts: the last
// tailMax bytes, each line stamped with the harness clock and the pid, and
// a count of its WARN and ERROR lines by message (over the whole run, not
// only the tail), with the first line of each as an example.
type logSink struct {
	mu      sync.Mutex
	t0      time.Time
	tail    bytes.Buffer
	tailMax int
	pid     int
	partial []byte
	counts  map[logKey]*LogCount
}

type logKey struct{ level, msg string }

// LogCount is how often a role logged one WARN or ERROR message.
type LogCount struct {
	Member  string
	Level   string
	Msg     string
	N       int
	Example string // the first such line, stamped
}

func newLogSink(t0 time.Time, tailMax int) *logSink {
	return &logSink{t0: t0, tailMax: tailMax, counts: map[logKey]*LogCount{}}
}

// note writes a harness line (start, kill, exit) into the tail.
func (s *logSink) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushPartial()
	s.append(fmt.Sprintf("%s ===== %s =====\n", s.stamp(), fmt.Sprintf(format, args...)))
}

// writer returns an io.Writer for the process with the given pid.
func (s *logSink) writer(pid int) *sinkWriter { return &sinkWriter{s: s, pid: pid} }

type sinkWriter struct {
	s   *logSink
	pid int
}

func (w *sinkWriter) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid != w.pid {
		s.flushPartial()
		s.pid = w.pid
	}
	data := p
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.partial = append(s.partial, data...)
			if len(s.partial) > 64<<10 { // a runaway line: cut it
				s.flushPartial()
			}
			break
		}
		line := string(append(s.partial, data[:i]...))
		s.partial = s.partial[:0]
		data = data[i+1:]
		s.line(line)
	}
	return len(p), nil
}

func (s *logSink) flushPartial() {
	if len(s.partial) > 0 {
		line := string(s.partial)
		s.partial = s.partial[:0]
		s.line(line)
	}
}

func (s *logSink) stamp() string {
	return fmt.Sprintf("+%8.3fs", time.Since(s.t0).Seconds())
}

func (s *logSink) line(line string) {
	stamped := fmt.Sprintf("%s [%d] %s\n", s.stamp(), s.pid, line)
	s.append(stamped)
	level, msg := parseLogLine(line)
	if level != "WARN" && level != "ERROR" && !strings.Contains(line, "panic") && !strings.Contains(line, "DATA RACE") {
		return
	}
	if level == "" {
		level, msg = "RAW", trunc(line, 120)
	}
	k := logKey{level, msg}
	c := s.counts[k]
	if c == nil {
		c = &LogCount{Level: level, Msg: msg, Example: strings.TrimSuffix(stamped, "\n")}
		s.counts[k] = c
	}
	c.N++
}

func (s *logSink) append(text string) {
	s.tail.WriteString(text)
	if over := s.tail.Len() - s.tailMax; over > 0 {
		s.tail.Next(over)
	}
}

// lastOf returns the last kept line written by process pid.
func (s *logSink) lastOf(pid int) string {
	tag := fmt.Sprintf("[%d] ", pid)
	lines := strings.Split(strings.TrimRight(s.Tail(), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], tag) {
			return lines[i]
		}
	}
	return ""
}

// loggedAt is the time field of the first line of pid that contains msg
// (the role's own clock: the same machine's).
func (s *logSink) loggedAt(pid int, msg string) (time.Time, bool) {
	tag := fmt.Sprintf("[%d] ", pid)
	for _, l := range strings.Split(s.Tail(), "\n") {
		if strings.Contains(l, tag) && strings.Contains(l, msg) {
			t, err := time.Parse(time.RFC3339Nano, logfmtField(l, "time="))
			return t, err == nil
		}
	}
	return time.Time{}, false
}

// Tail is the kept output.
func (s *logSink) Tail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tail.String()
}

// Counts lists the WARN and ERROR messages, most frequent first.
func (s *logSink) Counts(member string) []LogCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LogCount, 0, len(s.counts))
	for _, c := range s.counts {
		cc := *c
		cc.Member = member
		out = append(out, cc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Msg < out[j].Msg
	})
	return out
}

// Grep returns the kept lines containing any of subs (at most max).
func (s *logSink) Grep(max int, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(s.Tail(), "\n") {
		for _, sub := range subs {
			if sub != "" && strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
		if len(out) >= max {
			break
		}
	}
	return out
}

// parseLogLine reads level and msg from a slog text (logfmt) or JSON line.
func parseLogLine(line string) (level, msg string) {
	if strings.HasPrefix(line, "{") {
		level = jsonField(line, `"level":"`)
		msg = jsonField(line, `"msg":"`)
		return level, msg
	}
	level = logfmtField(line, "level=")
	msg = logfmtField(line, "msg=")
	return level, msg
}

func jsonField(line, key string) string {
	i := strings.Index(line, key)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return rest
}

func logfmtField(line, key string) string {
	i := strings.Index(line, key)
	if i < 0 || (i > 0 && line[i-1] != ' ') {
		return ""
	}
	rest := line[i+len(key):]
	if strings.HasPrefix(rest, `"`) {
		rest = rest[1:]
		for j := 0; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				j++
			case '"':
				return rest[:j]
			}
		}
		return rest
	}
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		return rest[:j]
	}
	return rest
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
