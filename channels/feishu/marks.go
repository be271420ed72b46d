package feishu

import (
	"context"
	"sync"
	"time"
)

// Marks is where webhook mode remembers the requests it accepted (their
// timestamp, nonce and signature). approval.Store implements it.
type Marks interface {
	// Seen marks key for ttl; it reports true the first time.
	Seen(ctx context.Context, key string, ttl time.Duration) (first bool, err error)
}

// UseStore makes webhook mode remember every request it accepted in s,
// the store the replicas share (approval.Store), so a captured request is
// refused by every replica, not only by the one that saw it first. Call
// before Start. Without it the requests are remembered in this process
// only.
func (c *Channel) UseStore(s Marks) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != nil {
		c.marks = s
	}
}

func (c *Channel) store() Marks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marks
}

// localMarks is the store of marks of one process (the default of
// UseStore): keys with an expiry, pruned as they pile up.
type localMarks struct {
	now func() time.Time

	mu      sync.Mutex
	m       map[string]time.Time
	pruneAt int
}

const minMarksPrune = 1024

func newLocalMarks(now func() time.Time) *localMarks {
	return &localMarks{now: now, m: map[string]time.Time{}, pruneAt: minMarksPrune}
}

// Seen implements Marks.
func (l *localMarks) Seen(_ context.Context, key string, ttl time.Duration) (bool, error) {
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
		l.pruneAt = max(minMarksPrune, 2*len(l.m))
	}
	return true, nil
}

// Forget removes the mark of key, so that the same request sent again
// (Feishu retrying a request the bot failed) is accepted.
func (l *localMarks) Forget(_ context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
	return nil
}
