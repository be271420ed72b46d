package agent

import (
	"context"
	"log/slog"
	"sync"
)

// LogWith is l.With(attrs...) whose attributes are handed to l's handler
// (WithAttrs, which a JSON or text handler formats at once) only when a
// record is logged through it: a turn, a message or a click builds such
// a logger every time, and logs nothing with it unless something goes
// wrong. What it logs is what l.With would have logged, attributes in the
// same order. Give the attributes as l.With would make them (slog.Any of
// the value: slog.String for a string, slog.Any for another type).
func LogWith(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	if len(attrs) == 0 {
		return l
	}
	return slog.New(&lazyAttrs{inner: l.Handler(), attrs: attrs})
}

// lazyAttrs is the handler of LogWith.
type lazyAttrs struct {
	inner slog.Handler
	attrs []slog.Attr
	once  sync.Once
	with  slog.Handler // inner.WithAttrs(attrs), once needed
}

func (h *lazyAttrs) handler() slog.Handler {
	h.once.Do(func() { h.with = h.inner.WithAttrs(h.attrs) })
	return h.with
}

func (h *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.handler().Handle(ctx, r)
}

func (h *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.handler().WithAttrs(attrs)
}

func (h *lazyAttrs) WithGroup(name string) slog.Handler {
	return h.handler().WithGroup(name)
}
