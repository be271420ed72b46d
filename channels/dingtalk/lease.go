package dingtalk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lease decides which replica owns the stream connection. Acquire takes it
// when free (true when held, by an earlier call too); Renew extends a held
// lease (false when it was lost); Release gives it up if still held.
type Lease interface {
	Acquire(ctx context.Context) (bool, error)
	Renew(ctx context.Context) (bool, error)
	Release(ctx context.Context) error
}

// LocalLease is the lease of a lone replica (the memory store): always
// held.
type LocalLease struct{}

// Acquire always succeeds.
func (LocalLease) Acquire(context.Context) (bool, error) { return true, nil }

// Renew always succeeds.
func (LocalLease) Renew(context.Context) (bool, error) { return true, nil }

// Release does nothing.
func (LocalLease) Release(context.Context) error { return nil }

// RedisLease is a lease in Redis: SET key token NX PX ttl to take it, a
// compare-and-pexpire to renew it, a compare-and-delete to release it. A
// replica that dies stops renewing and another takes the key once its TTL
// ends.
type RedisLease struct {
	rdb   redis.UniversalClient
	key   string
	token string
	ttl   time.Duration
	err   error // a TTL that is not positive
}

// ErrLeaseTTL is the error of every call of a RedisLease made with a TTL
// that is not positive: Redis would keep such a key for ever (or refuse
// it), so a dead owner would keep the stream for ever. Channel.Start
// returns it.
var ErrLeaseTTL = errors.New("dingtalk: the stream lease needs a positive TTL (lease_ttl)")

// NewRedisLease returns a lease on key held for ttl at a time, with a
// random token of its own. A ttl that is not positive is refused: every
// call of the lease then fails with ErrLeaseTTL, and Channel.Start with
// it.
func NewRedisLease(rdb redis.UniversalClient, key string, ttl time.Duration) *RedisLease {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	l := &RedisLease{rdb: rdb, key: key, token: hex.EncodeToString(b), ttl: ttl}
	if ttl <= 0 {
		l.err = fmt.Errorf("%w: got %s", ErrLeaseTTL, ttl)
	}
	return l
}

var (
	renewScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	dropScript  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
)

// Acquire takes the lease if free, or renews it if this replica holds it.
func (l *RedisLease) Acquire(ctx context.Context) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	ok, err := l.rdb.SetNX(ctx, l.key, l.token, l.ttl).Result()
	if err != nil || ok {
		return ok, err
	}
	return l.Renew(ctx)
}

// Renew extends the lease if this replica still holds it.
func (l *RedisLease) Renew(ctx context.Context) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	n, err := renewScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Int()
	return n == 1, err
}

// Release deletes the lease if this replica holds it.
func (l *RedisLease) Release(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	return dropScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
}
