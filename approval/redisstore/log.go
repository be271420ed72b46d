package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SetLogger routes go-redis's own log lines (a failed dial, a Sentinel
// switchover, a pool in trouble) to l as records of component "redis":
// Info for what only reports a change (a Sentinel's new master), Warn for
// the rest. Without it go-redis writes plain text lines to stderr, which
// breaks a log of JSON lines. The logger is process-global: call it once
// at start-up, before any client is made. A nil l changes nothing.
func SetLogger(l *slog.Logger) {
	if l == nil {
		return
	}
	redis.SetLogger(redisLog{l.With("component", "redis")})
}

// redisLog implements go-redis's internal Logging interface.
type redisLog struct{ l *slog.Logger }

// infoPrefixes start the go-redis lines that report a change, not a fault.
var infoPrefixes = []string{
	"sentinel: selected addr",
	"sentinel: new master",
	"sentinel: discovered new sentinel",
	"pubsub: reconnecting to new endpoint",
}

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	level := slog.LevelWarn
	for _, p := range infoPrefixes {
		if strings.HasPrefix(msg, p) {
			level = slog.LevelInfo
			break
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	r.l.Log(ctx, level, msg)
}
