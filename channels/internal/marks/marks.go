// Package marks remembers, for a while, the signed requests a channel has
// accepted, so that a captured request sent again is refused (the
// replay guard of Feishu's webhook and DingTalk's HTTP mode).
//
// The shared store (approval.Store) implements Store, so that every
// replica refuses a request any of them accepted; Local is the store of
// one process, for a single node or before the shared store is given.
package marks

import (
	"context"
	"sync"
	"time"
)

// Store is where accepted requests are marked. approval.Store implements
// it.
type Store interface {
	// Seen marks key for ttl; it reports true the first time.
	Seen(ctx context.Context, key string, ttl time.Duration) (first bool, err error)
	// Forget removes the mark of key, so the same request is accepted
	// again (its sender retrying a request the bot failed).
	Forget(ctx context.Context, key string) error
}

// Local is a Store of one process: keys with an expiry, pruned as they
// pile up. The zero value is not usable; call NewLocal.
type Local struct {
	now func() time.Time

	mu      sync.Mutex
	m       map[string]time.Time
	pruneAt int
}

var _ Store = (*Local)(nil)

// minPrune is the number of marks below which Local never prunes.
const minPrune = 1024

// NewLocal returns an empty Local whose expiries are read from now.
func NewLocal(now func() time.Time) *Local {
	return &Local{now: now, m: map[string]time.Time{}, pruneAt: minPrune}
}

// Seen implements Store.
func (l *Local) Seen(_ context.Context, key string, ttl time.Duration) (bool, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if exp, ok := l.m[key]; ok && now.Before(exp) {
		return false, nil
	}
	l.m[key] = now.Add(ttl)
	if len(l.m) >= l.pruneAt {
		for k, exp := range l.m {
			if !now.Before(exp) {
				delete(l.m, k)
			}
		}
		l.pruneAt = max(minPrune, 2*len(l.m))
	}
	return true, nil
}

// Forget implements Store.
func (l *Local) Forget(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
	return nil
}
