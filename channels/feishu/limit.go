package feishu

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Feishu allows 5 messages per second to one chat (shared by every bot in
// a group) and 5 patches per second to one message. The limiters below
// keep this process under those rates, so bursts (a tool result, a
// summary and a settled card at once) queue briefly instead of drawing
// 429s; other replicas and bots still can, and do() retries those.
const (
	perKeyRate  = 5
	perKeyBurst = 5
	maxLimiters = 4096
)

type keyLimiter struct {
	mu   sync.Mutex
	byID map[string]*limiterEntry
}

type limiterEntry struct {
	l    *rate.Limiter
	used time.Time
}

// wait blocks until a call for key may go, or ctx ends.
func (k *keyLimiter) wait(ctx context.Context, key string) error {
	if key == "" {
		return nil
	}
	now := time.Now()
	k.mu.Lock()
	if k.byID == nil {
		k.byID = map[string]*limiterEntry{}
	}
	e, ok := k.byID[key]
	if !ok {
		if len(k.byID) >= maxLimiters {
			for id, old := range k.byID {
				if now.Sub(old.used) > 10*time.Second {
					delete(k.byID, id)
				}
			}
		}
		e = &limiterEntry{l: rate.NewLimiter(perKeyRate, perKeyBurst)}
		k.byID[key] = e
	}
	e.used = now
	k.mu.Unlock()
	return e.l.Wait(ctx)
}
