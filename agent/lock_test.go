package agent_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/testredis"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// logBuf collects a logger's output for assertions.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// waitFor polls cond until it holds (waitfor.True).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, what, cond)
}

func newLocker(t *testing.T, c redis.UniversalClient, prefix string, cfg agent.RedisLockerConfig) *agent.RedisLocker {
	t.Helper()
	cfg.Client, cfg.Prefix = c, prefix
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.MaxPoll == 0 {
		cfg.MaxPoll = 20 * time.Millisecond
	}
	l, err := agent.NewRedisLocker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// lockWithin takes the lock, failing the test when it cannot within 10s.
func lockWithin(t *testing.T, l agent.SessionLocker, s string) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlock, err := l.Lock(ctx, approval.SessionKey(s))
	if err != nil {
		t.Fatalf("Lock(%s): %v", s, err)
	}
	return unlock
}

// assertHeld fails the test unless the lock of s stays held by someone
// else for d (a Lock bounded by d gives up with DeadlineExceeded).
func assertHeld(t *testing.T, l agent.SessionLocker, s string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	unlock, err := l.Lock(ctx, approval.SessionKey(s))
	if err == nil {
		unlock()
		t.Fatalf("the lock of %s was free", s)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(%s) = %v, want DeadlineExceeded", s, err)
	}
}

// Lockers (replicas) sharing one Redis let one holder at a time into a
// session's critical section; other sessions are not blocked.
func TestRedisLockerMutualExclusion(t *testing.T) {
	c, prefix := testredis.Start(t)
	lockers := []agent.SessionLocker{
		newLocker(t, c, prefix, agent.RedisLockerConfig{}),
		newLocker(t, c, prefix, agent.RedisLockerConfig{}),
		newLocker(t, c, prefix, agent.RedisLockerConfig{}),
	}
	var inside, overlaps, entries atomic.Int64
	var wg sync.WaitGroup
	for _, l := range lockers {
		for range 3 {
			wg.Go(func() {
				for range 10 {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					unlock, err := l.Lock(ctx, "s1")
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					entries.Add(1)
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					unlock()
				}
			})
		}
	}
	// Meanwhile another session's lock is free.
	unlock := lockWithin(t, lockers[0], "s2")
	unlock()
	wg.Wait()
	if overlaps.Load() != 0 || entries.Load() != 90 {
		t.Fatalf("%d overlapping holders in %d entries", overlaps.Load(), entries.Load())
	}
	// Unlock twice is harmless, and the lock is free afterwards.
	unlock = lockWithin(t, lockers[1], "s1")
	unlock()
	unlock()
	lockWithin(t, lockers[2], "s1")()
}

// A held lock is renewed: its TTL is set again and again, by the
// holder's token, while another locker finds it taken, until unlock
// deletes it. What is checked is that renewals happen (the key's PTTL
// rises three times, read in Redis), not how soon: a renewal that comes
// late on a loaded machine delays the test, never fails it, unless it
// is later than the whole TTL (2 s, renewed every 500 ms), which is the
// lock's documented way of being lost.
func TestRedisLockerRenewalKeepsLock(t *testing.T) {
	c, prefix := testredis.Start(t)
	var logs logBuf
	const ttl = 2 * time.Second
	holder := newLocker(t, c, prefix, agent.RedisLockerConfig{TTL: ttl, RenewEvery: ttl / 4, Logger: logs.logger()})
	other := newLocker(t, c, prefix, agent.RedisLockerConfig{})
	unlock := lockWithin(t, holder, "s1")
	key := prefix + "turnlock:s1"
	ctx := context.Background()
	token, err := c.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	renewals := 0
	last := time.Duration(-1)
	waitfor.Within(t, 30*time.Second, "three renewals of the held lock", func() bool {
		if got, err := c.Get(ctx, key).Result(); err != nil || got != token {
			t.Fatalf("the held lock's key is %q (%v), want the holder's token", got, err)
		}
		pttl, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if last >= 0 && pttl > last {
			renewals++
		}
		last = pttl
		return renewals >= 3
	})
	assertHeld(t, other, "s1", 100*time.Millisecond)
	unlock()
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("the key after unlock: %d, %v; want it deleted", n, err)
	}
	lockWithin(t, other, "s1")()
	if s := logs.String(); s != "" {
		t.Fatalf("the holder logged: %s", s)
	}
}

// A holder that stalled past its TTL loses the lock to another; it logs
// the loss naming the session, and its unlock does not delete the new
// holder's lock.
func TestRedisLockerLostLock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		renew time.Duration
	}{
		// The renewal comes after the TTL and finds another token (or none).
		{"renewal finds it gone", 400 * time.Millisecond},
		// No renewal before the unlock: the release finds another token.
		{"release finds it gone", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, prefix := testredis.Start(t)
			var logs logBuf
			stalled := newLocker(t, c, prefix, agent.RedisLockerConfig{TTL: 200 * time.Millisecond, RenewEvery: tc.renew, Logger: logs.logger()})
			next := newLocker(t, c, prefix, agent.RedisLockerConfig{TTL: 10 * time.Second})
			third := newLocker(t, c, prefix, agent.RedisLockerConfig{})

			unlockStalled := lockWithin(t, stalled, "web:lost")
			unlockNext := lockWithin(t, next, "web:lost") // once the stalled holder's TTL has passed
			lost := func() bool { return strings.Contains(logs.String(), "session lock lost") }
			if tc.renew < time.Hour {
				waitFor(t, "the stalled holder's renewal to notice", lost)
			}
			unlockStalled()
			if !lost() {
				t.Fatal("the lost lock was not logged")
			}
			if s := logs.String(); strings.Count(s, "session lock lost") != 1 || !strings.Contains(s, "level=ERROR") || !strings.Contains(s, "session=web:lost") {
				t.Fatalf("log = %s", s)
			}
			assertHeld(t, third, "web:lost", 300*time.Millisecond) // the stalled unlock left next's lock alone
			unlockNext()
			lockWithin(t, third, "web:lost")()
		})
	}
}

// A holder that died (it can neither renew nor release) blocks the
// session for its TTL only.
func TestRedisLockerDeadHolderFreesAfterTTL(t *testing.T) {
	c, prefix := testredis.Start(t)
	const ttl = 300 * time.Millisecond
	o := c.(*redis.Client).Options()
	deadClient := redis.NewClient(&redis.Options{Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig})
	dead := newLocker(t, deadClient, prefix, agent.RedisLockerConfig{TTL: ttl})
	live := newLocker(t, c, prefix, agent.RedisLockerConfig{})
	before := time.Now()
	unlockDead := lockWithin(t, dead, "s1")
	_ = deadClient.Close() // the replica is gone
	defer unlockDead()     // its release fails; it must not matter
	unlock := lockWithin(t, live, "s1")
	defer unlock()
	// The key expires TTL after it was set, which is after before: the
	// live locker cannot have had it sooner (a margin for Redis's clock).
	if waited := time.Since(before); waited < ttl-50*time.Millisecond {
		t.Fatalf("the dead holder's lock was taken after %v, before its TTL %v", waited, ttl)
	}
}

// When Redis cannot be reached, Lock fails at once with the error (it does
// not wait for ctx).
func TestRedisLockerUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer c.Close()
	l := newLocker(t, c, "x:", agent.RedisLockerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := l.Lock(ctx, "s1")
	if err == nil || ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on an unreachable Redis = %v (ctx %v)", err, ctx.Err())
	}
}

// resendOnce is a go-redis hook that, once armed, sends the next SET
// twice, as go-redis does when the first reply is lost with its
// connection: the first run happened, the caller hears the second's.
type resendOnce struct{ armed atomic.Bool }

func (r *resendOnce) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *resendOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "set" && r.armed.CompareAndSwap(true, false) {
			_ = next(ctx, cmd) // it ran; its reply is lost
		}
		return next(ctx, cmd)
	}
}
func (r *resendOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A SET that takes the lock and is sent again (its reply lost) finds the
// lock its own: Lock returns at once rather than wait a TTL for itself.
func TestRedisLockerLostReply(t *testing.T) {
	c, prefix := testredis.Start(t)
	o := c.(*redis.Client).Options()
	rc := redis.NewClient(&redis.Options{Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig})
	defer rc.Close()
	h := &resendOnce{}
	rc.AddHook(h)
	l := newLocker(t, rc, prefix, agent.RedisLockerConfig{TTL: time.Hour})
	h.armed.Store(true)
	unlock := lockWithin(t, l, "s1")
	if h.armed.Load() {
		t.Fatal("no SET was sent twice")
	}
	unlock()
	// Released: another takes it.
	lockWithin(t, newLocker(t, c, prefix, agent.RedisLockerConfig{}), "s1")()
}
