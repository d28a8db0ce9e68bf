// Package lazylog gives a logger whose With attributes cost only when a
// line is written. The stdlib's text and JSON handlers format a With's
// attributes at once; a request or task logger gets three or four of them
// on every call, and on the hot path almost never writes a line.
package lazylog

import (
	"context"
	"log/slog"
)

// New returns a logger writing what l writes, whose WithAttrs (With)
// only note the attributes; the handler of l gets them when a record is
// handled, or when a group is opened. l itself is returned when it is
// lazy already.
func New(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*handler); ok {
		return l
	}
	return slog.New(&handler{inner: l.Handler()})
}

type handler struct {
	inner slog.Handler
	attrs []slog.Attr // not yet given to inner
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.resolved().Handle(ctx, r)
}

func (h *handler) resolved() slog.Handler {
	if len(h.attrs) == 0 {
		return h.inner
	}
	return h.inner.WithAttrs(h.attrs)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	all := make([]slog.Attr, 0, len(h.attrs)+len(attrs))
	all = append(append(all, h.attrs...), attrs...)
	return &handler{inner: h.inner, attrs: all}
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &handler{inner: h.resolved().WithGroup(name)}
}
