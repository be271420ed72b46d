package feishu

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// warnEvery is how often one reason of refused webhook requests is
// logged: a flood of malformed or forged posts costs a line per reason
// per warnEvery, not a line per request.
const warnEvery = 30 * time.Second

// limitedLog logs at most one line per reason per warnEvery; the next
// line of a reason says how many were left out since the last one.
// Reasons are a small fixed set (the constants of webhook.go), so the map
// stays small.
type limitedLog struct {
	now func() time.Time

	mu     sync.Mutex
	reason map[string]*limitedEntry
}

type limitedEntry struct {
	logged     time.Time
	suppressed int
}

func newLimitedLog(now func() time.Time) *limitedLog {
	return &limitedLog{now: now, reason: map[string]*limitedEntry{}}
}

// log writes msg with attrs and "reason" at level, unless reason was
// logged less than warnEvery ago: then it only counts it.
func (l *limitedLog) log(ctx context.Context, logger *slog.Logger, level slog.Level, reason, msg string, attrs ...any) {
	now := l.now()
	l.mu.Lock()
	e, ok := l.reason[reason]
	if ok && now.Sub(e.logged) < warnEvery && now.Sub(e.logged) > -warnEvery {
		e.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := 0
	if ok {
		suppressed = e.suppressed
	} else {
		e = &limitedEntry{}
		l.reason[reason] = e
	}
	e.logged, e.suppressed = now, 0
	l.mu.Unlock()
	attrs = append(attrs, "reason", reason)
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed, "suppressed_over", warnEvery.String())
	}
	logger.Log(ctx, level, msg, attrs...)
}
