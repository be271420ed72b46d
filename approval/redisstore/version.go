package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// MinVersion is the oldest Redis the store works with: its
// de-duplication marks and the agent's session lock are set with SET NX
// GET (a re-sent SET finds its own nonce), which Redis 7.0 was the first
// to accept.
const MinVersion = "7.0"

// CheckVersion asks the server it reaches through c for its version
// (INFO server) and refuses one older than MinVersion, with an error that
// names it: on an older server every inbound message would fail on a
// syntax error instead. `bot serve` calls it before it builds the store,
// `bot doctor` as one of its checks.
func CheckVersion(ctx context.Context, c redis.UniversalClient) error {
	const op = "redisstore.CheckVersion"
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return approval.E(op, errkind.Unavailable, "", fmt.Errorf("INFO server: %w", err))
	}
	v := infoField(info, "redis_version")
	if v == "" {
		return approval.E(op, errkind.Invalid, "", fmt.Errorf("INFO server names no redis_version"))
	}
	if !atLeast(v, MinVersion) {
		return approval.E(op, errkind.Invalid, "", fmt.Errorf("Redis %s is too old: hitlbot needs %s or later (SET with NX and GET)", v, MinVersion))
	}
	return nil
}

// infoField is the value of key in an INFO reply ("key:value" lines), or "".
func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}

// atLeast reports whether the dotted version v is min or later, by its
// numeric parts (a part that is not a number counts as 0).
func atLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := range max(len(a), len(b)) {
		x, y := part(a, i), part(b, i)
		if x != y {
			return x > y
		}
	}
	return true
}

func part(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, _ := strconv.Atoi(parts[i])
	return n
}
