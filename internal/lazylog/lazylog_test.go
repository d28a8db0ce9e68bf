package lazylog

import (
	"bytes"
	"log/slog"
	"testing"
)

// A lazy logger writes exactly what the logger it wraps writes.
func TestSameOutput(t *testing.T) {
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, opts) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, opts) },
	} {
		want.Reset()
		got.Reset()
		for i, l := range []*slog.Logger{slog.New(h(&want)), New(slog.New(h(&got)))} {
			l = New(l.With("a", 1))
			l.Info("one", "x", "y")
			l = l.With("b", "two words", "c", true).With()
			l.Debug("hidden", "d", 4)
			l.Warn("two")
			g := l.WithGroup("g").With("e", 5)
			g.Error("three", "f", 6)
			l.With(slog.Group("h", "i", 7)).Info("four")
			_ = i
		}
		if got.String() != want.String() {
			t.Errorf("got:\n%s\nwant:\n%s", got.String(), want.String())
		}
	}
}

func BenchmarkWith(b *testing.B) {
	base := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	run := func(b *testing.B, l *slog.Logger) {
		b.ReportAllocs()
		for b.Loop() {
			l2 := l.With("method", "SendMessage").With("agent", "echo").With("task_id", "2b6c5f9e-4a51-4d0b-9a52-0c1d2e3f4a5b", "context_id", "1b6c5f9e-4a51-4d0b-9a52-0c1d2e3f4a5b")
			l2.Debug("call served")
		}
	}
	b.Run("text", func(b *testing.B) { run(b, base) })
	b.Run("lazy", func(b *testing.B) { run(b, New(base)) })
}
