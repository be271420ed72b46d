package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
)

// SessionLocker serialises the turns of a session across processes (the
// replicas that share one history). Within a process the Loop's
// per-session queue keeps a session's messages in order; a SessionLocker
// extends that to several replicas: the Loop takes a session's lock around
// each turn and around each late update of its history (the places that
// Load and Save it), before it takes a worker, so that waiting for another
// replica occupies no worker.
//
// Lock blocks until the session's lock is held, ctx ends (it then returns
// ctx.Err()), or the lock cannot be taken because its store fails (another
// error). ctx bounds only the wait: once taken, the lock is held until
// unlock is called, however long that takes (a turn may wait minutes for a
// person's approval); implementations keep it alive while it is held and
// let it free itself when its holder dies. unlock may be called more than
// once; the calls after the first do nothing.
//
// A lock can be lost while held: its holder stalled for longer than the
// lock lives, or the store forgot it. The implementation logs that as an
// error naming the session; the holder is not told and its turn goes on,
// because a model call or a tool run cannot be fenced. The other replica's
// turn may then overlap it, and the later Save of the two wins.
type SessionLocker interface {
	Lock(ctx context.Context, s approval.SessionKey) (unlock func(), err error)
}

// RedisLockerConfig configures a RedisLocker.
type RedisLockerConfig struct {
	// Client is the Redis the replicas share: a single server, Sentinel or
	// Cluster (every command touches one key). Required.
	Client redis.UniversalClient
	// Prefix starts every key (store.redis.prefix); a session's lock is the
	// key <Prefix>turnlock:<session>, holding its holder's random token.
	Prefix string
	// TTL is how long a lock outlives its holder's last renewal: a replica
	// that dies mid-turn blocks the session's other replicas at most this
	// long. Default 30s.
	TTL time.Duration
	// RenewEvery is how often a held lock's TTL is renewed. It should be
	// well below TTL (a renewal may fail once and be retried). Default TTL/3.
	RenewEvery time.Duration
	// MaxPoll caps the pause between two attempts to take a lock that
	// another holder has (the pause starts at 10ms and doubles, with
	// jitter). Default 500ms.
	MaxPoll time.Duration
	// Logger receives lost locks (errors) and failed renewals and releases
	// (warnings). Default slog.Default().
	Logger *slog.Logger
}

// RedisLocker is a SessionLocker in Redis: SET key token NX PX ttl GET
// takes a session's lock (GET: a SET sent again after a lost reply finds
// its own token and has it, rather than wait a TTL for itself), a
// compare-and-pexpire script renews it every RenewEvery while held, and a
// compare-and-delete script releases it, so a holder never deletes or
// extends a lock that has passed to someone else. A waiter polls with a
// bounded exponential backoff until it gets the lock or its ctx ends. It
// is safe for concurrent use.
//
// Each uncontended Lock costs two round trips (the SET and the release),
// plus one renewal per RenewEvery that the lock is held.
type RedisLocker struct {
	client  redis.UniversalClient
	prefix  string
	ttl     time.Duration
	renew   time.Duration
	maxPoll time.Duration
	log     *slog.Logger
}

// minPoll is the first pause of a waiter.
const minPoll = 10 * time.Millisecond

// releaseTimeout bounds the release of a lock (which may come after the
// turn's context ended).
const releaseTimeout = 5 * time.Second

var (
	// renewLockScript extends the lock if it is still ours: 1, else 0.
	renewLockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) else return 0 end`)
	// releaseLockScript deletes the lock if it is still ours: 1, else 0.
	releaseLockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)
)

// NewRedisLocker checks cfg and returns a locker.
func NewRedisLocker(cfg RedisLockerConfig) (*RedisLocker, error) {
	if cfg.Client == nil {
		return nil, errors.New("agent.NewRedisLocker: Client is required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 30 * time.Second
	}
	if cfg.RenewEvery <= 0 {
		cfg.RenewEvery = cfg.TTL / 3
	}
	if cfg.MaxPoll <= 0 {
		cfg.MaxPoll = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &RedisLocker{client: cfg.Client, prefix: cfg.Prefix + "turnlock:", ttl: cfg.TTL, renew: cfg.RenewEvery,
		maxPoll: max(cfg.MaxPoll, minPoll), log: cfg.Logger}, nil
}

// Lock takes the session's lock, waiting while another holder has it.
func (l *RedisLocker) Lock(ctx context.Context, s approval.SessionKey) (func(), error) {
	key := l.prefix + string(s)
	token := lockToken()
	pause := minPoll
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// GET: what the key held. Nothing, or this very token (go-redis
		// sent the SET again after its first reply was lost with its
		// connection, and the first run took it), means the lock is ours.
		old, err := l.client.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", Get: true, TTL: l.ttl}).Result()
		ok := err == nil && old == token
		if errors.Is(err, redis.Nil) {
			ok, err = true, nil
		}
		if err != nil {
			// The SET may have been applied and its reply lost: give back
			// what may be ours rather than block the session for a TTL.
			l.release(key, token)
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, fmt.Errorf("agent: taking the lock of session %s: %w", s, err)
		}
		if ok {
			return l.hold(s, key, token), nil
		}
		t := time.NewTimer(pause/2 + mrand.N(pause/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, l.maxPoll)
	}
}

// hold renews the lock until unlock is called, and returns unlock.
func (l *RedisLocker) hold(s approval.SessionKey, key, token string) func() {
	hctx, stop := context.WithCancel(context.Background())
	var (
		lostMu sync.Mutex
		lost   bool
	)
	markLost := func() {
		lostMu.Lock()
		defer lostMu.Unlock()
		if !lost {
			lost = true
			l.log.Error("session lock lost: another replica may run a turn of this session at the same time; this turn goes on",
				"session", s, "ttl", l.ttl)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.renew)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(hctx, l.ttl)
			n, err := renewLockScript.Run(rctx, l.client, []string{key}, token, l.ttl.Milliseconds()).Int()
			cancel()
			switch {
			case hctx.Err() != nil:
				return
			case err != nil:
				l.log.Warn("renewing the session lock failed; retrying", "session", s, "err", err)
			case n == 0:
				markLost()
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stop()
			<-done
			if !l.release(key, token) {
				markLost()
			}
		})
	}
}

// release deletes the lock if it still holds token. It reports false when
// the lock was someone else's (or gone); a failure to reach Redis is
// logged and reported as true (the lock frees itself within its TTL).
func (l *RedisLocker) release(key, token string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	n, err := releaseLockScript.Run(ctx, l.client, []string{key}, token).Int()
	if err != nil {
		l.log.Warn("releasing the session lock failed; it frees itself within its TTL", "key", key, "ttl", l.ttl, "err", err)
		return true
	}
	return n == 1
}

func lockToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MemoryLocker is a SessionLocker in process memory: for several loops in
// one process that share a MemoryHistory the way replicas share a
// RedisHistory (tests, `bot bench`). Its locks never expire.
type MemoryLocker struct {
	mu   sync.Mutex
	held map[approval.SessionKey]chan struct{} // closed when the lock is given back
}

// NewMemoryLocker returns a MemoryLocker with no lock held.
func NewMemoryLocker() *MemoryLocker {
	return &MemoryLocker{held: map[approval.SessionKey]chan struct{}{}}
}

// Lock takes the session's lock, waiting while another holder has it.
func (m *MemoryLocker) Lock(ctx context.Context, s approval.SessionKey) (func(), error) {
	for {
		m.mu.Lock()
		freed, busy := m.held[s]
		if !busy {
			freed = make(chan struct{})
			m.held[s] = freed
			m.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					m.mu.Lock()
					delete(m.held, s)
					m.mu.Unlock()
					close(freed)
				})
			}, nil
		}
		m.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var (
	_ SessionLocker = (*RedisLocker)(nil)
	_ SessionLocker = (*MemoryLocker)(nil)
)
