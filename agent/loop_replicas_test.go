package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// overlapModel answers "re: <the last message>" and records how many of
// its calls run at once. Its first two calls each wait (up to peerWait)
// for another call to run beside them: two turns that can overlap then
// surely do, and turns that cannot merely wait.
type overlapModel struct {
	peerWait time.Duration

	active, maxActive, calls atomic.Int64
	met                      chan struct{}
	once                     sync.Once
	mu                       sync.Mutex
	at                       []time.Time // when each call began
}

func newOverlapModel(peerWait time.Duration) *overlapModel {
	return &overlapModel{peerWait: peerWait, met: make(chan struct{})}
}

func (m *overlapModel) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	m.mu.Lock()
	m.at = append(m.at, time.Now())
	m.mu.Unlock()
	n := m.active.Add(1)
	defer m.active.Add(-1)
	for {
		old := m.maxActive.Load()
		if n <= old || m.maxActive.CompareAndSwap(old, n) {
			break
		}
	}
	if n > 1 {
		m.once.Do(func() { close(m.met) })
	}
	if m.calls.Add(1) <= 2 {
		select {
		case <-m.met:
		case <-time.After(m.peerWait):
		}
	}
	last := req.Messages[len(req.Messages)-1]
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "re: " + last.Content}}, nil
}

// replica is one bot process: a loop on the shared Redis history, with
// its own locker (nil: no lock, as before).
func replica(t *testing.T, model agent.Model, hist agent.History, locker agent.SessionLocker, mod ...func(*agent.LoopConfig)) *harness {
	t.Helper()
	return newHarness(t, model, append([]func(*agent.LoopConfig){func(c *agent.LoopConfig) {
		c.History = hist
		if locker != nil {
			c.Locker = locker
		}
	}}, mod...)...)
}

// Two replicas get messages of one conversation at the same moment (as
// Feishu and DingTalk deliver a chat's messages to any replica). With the
// session lock their turns never overlap and every exchange is kept, in
// each replica's order. Without it (the subtest "no lock") the first turns
// of the two replicas run at once: each loaded the history before the
// other saved, so the later Save drops the other's exchange — the problem
// the lock solves.
func TestReplicasSerialiseASession(t *testing.T) {
	const perReplica = 4
	for _, locked := range []bool{true, false} {
		name := "lock"
		if !locked {
			name = "no lock"
		}
		t.Run(name, func(t *testing.T) {
			c, prefix := testredis.Start(t)
			hist := agent.NewRedisHistory(c, prefix, time.Hour)
			model := newOverlapModel(time.Second)
			var la, lb agent.SessionLocker
			if locked {
				la = newLocker(t, c, prefix, agent.RedisLockerConfig{})
				lb = newLocker(t, c, prefix, agent.RedisLockerConfig{})
			}
			a, b := replica(t, model, hist, la), replica(t, model, hist, lb)

			var chs []<-chan agent.TurnResult
			for i := range perReplica {
				chs = append(chs, a.submit(t, "feishu:oc_1", fmt.Sprint("a", i)), b.submit(t, "feishu:oc_1", fmt.Sprint("b", i)))
			}
			for _, ch := range chs {
				if r := result(t, ch); r.Err != nil {
					t.Fatalf("turn failed: %+v", r)
				}
			}
			conv, err := hist.Load(context.Background(), "feishu:oc_1")
			if err != nil {
				t.Fatal(err)
			}
			if !locked {
				if model.maxActive.Load() < 2 || len(conv.Messages) >= 4*perReplica {
					t.Fatalf("without the lock the turns did not overlap (%d at once) or lost nothing (%d messages)", model.maxActive.Load(), len(conv.Messages))
				}
				return
			}
			if n := model.maxActive.Load(); n != 1 {
				t.Fatalf("%d model calls of the session ran at once", n)
			}
			if len(conv.Messages) != 4*perReplica {
				t.Fatalf("history has %d messages, want %d: %+v", len(conv.Messages), 4*perReplica, conv.Messages)
			}
			next := map[byte]int{}
			for i := 0; i < len(conv.Messages); i += 2 {
				u, r := conv.Messages[i], conv.Messages[i+1]
				if u.Role != agent.RoleUser || r.Role != agent.RoleAssistant || r.Content != "re: "+u.Content {
					t.Fatalf("exchange %d is broken: %+v, %+v", i/2, u, r)
				}
				if want := fmt.Sprint(string(u.Content[0]), next[u.Content[0]]); u.Content != want {
					t.Fatalf("replica %c's messages out of order: got %s, want %s", u.Content[0], u.Content, want)
				}
				next[u.Content[0]]++
			}
		})
	}
}

// A turn that waits for a person's approval keeps the session's lock: a
// message of the conversation on another replica is handled after it,
// and sees its whole exchange (without the lock it would run meanwhile,
// and the first turn's final Save would drop it).
func TestApprovalWaitKeepsTheSessionAcrossReplicas(t *testing.T) {
	c, prefix := testredis.Start(t)
	hist := agent.NewRedisHistory(c, prefix, time.Hour)
	var reqs requests
	model := eraseOnRequest(&reqs)
	a := replica(t, model, hist, newLocker(t, c, prefix, agent.RedisLockerConfig{}))
	b := replica(t, model, hist, newLocker(t, c, prefix, agent.RedisLockerConfig{}))

	cha := a.submit(t, "s1", "erase x")
	ap := a.nextApproval(t)
	chb := b.submit(t, "s1", "hello")
	select {
	case r := <-chb:
		t.Fatalf("the other replica ran a turn while the approval was awaited: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	a.decide(t, ap, approval.Approve)
	if r := result(t, cha); len(r.Actions) != 1 || r.Actions[0].Status != "executed" {
		t.Fatalf("first turn = %+v", r)
	}
	if r := result(t, chb); r.Text != "ok" {
		t.Fatalf("second turn = %+v", r)
	}
	conv, _ := hist.Load(context.Background(), "s1")
	var got []string
	for _, m := range conv.Messages {
		got = append(got, string(m.Role)+":"+m.Content)
	}
	want := []string{"user:erase x", "assistant:", "tool:erase done (run 1)", "assistant:after: erase done (run 1)", "user:hello", "assistant:ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history = %q, want %q", got, want)
	}
}

// Waiting for another replica's turn holds no worker: with one worker,
// other sessions are answered meanwhile.
func TestLockWaitHoldsNoWorker(t *testing.T) {
	c, prefix := testredis.Start(t)
	other := newLocker(t, c, prefix, agent.RedisLockerConfig{})
	unlockOther := lockWithin(t, other, "s-busy") // another replica's turn
	h := replica(t, newOverlapModel(0), agent.NewRedisHistory(c, prefix, time.Hour),
		newLocker(t, c, prefix, agent.RedisLockerConfig{}), func(c *agent.LoopConfig) { c.Workers = 1 })
	busy := h.submit(t, "s-busy", "wait")
	for i := range 3 {
		if r := result(t, h.submit(t, fmt.Sprint("s-free-", i), "hi")); r.Text != "re: hi" {
			t.Fatalf("free session answered %+v", r)
		}
	}
	select {
	case r := <-busy:
		t.Fatalf("a turn ran while another replica held its session: %+v", r)
	default:
	}
	unlockOther()
	if r := result(t, busy); r.Text != "re: wait" {
		t.Fatalf("busy session answered %+v", r)
	}
}

// A replica that died mid-turn (it can neither renew nor release its
// lock) holds the session up for the lock's TTL only.
func TestDeadReplicaFreesTheSession(t *testing.T) {
	c, prefix := testredis.Start(t)
	const ttl = 300 * time.Millisecond
	o := c.(*redis.Client).Options()
	deadClient := redis.NewClient(&redis.Options{Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig})
	before := time.Now()
	unlockDead := lockWithin(t, newLocker(t, deadClient, prefix, agent.RedisLockerConfig{TTL: ttl}), "s1")
	_ = deadClient.Close()
	defer unlockDead()

	model := newOverlapModel(0)
	h := replica(t, model, agent.NewRedisHistory(c, prefix, time.Hour), newLocker(t, c, prefix, agent.RedisLockerConfig{}))
	if r := result(t, h.submit(t, "s1", "hi")); r.Text != "re: hi" {
		t.Fatalf("turn after the dead replica = %+v", r)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.at) != 1 || model.at[0].Sub(before) < ttl-50*time.Millisecond {
		t.Fatalf("the model was called %v after the dead replica took the lock (TTL %v)", model.at[0].Sub(before), ttl)
	}
}

// When the lock's Redis is unreachable the turn fails, as when the
// history cannot be loaded: the sender is told, nothing else happens.
func TestLockUnavailableFailsTheTurn(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer down.Close()
	model := newOverlapModel(0)
	h := replica(t, model, agent.NewMemoryHistory(), newLocker(t, down, "x:", agent.RedisLockerConfig{}))
	r := result(t, h.submit(t, "s1", "hi"))
	if r.Err == nil || !strings.Contains(r.Text, "temporarily unavailable") {
		t.Fatalf("result = %+v", r)
	}
	if model.calls.Load() != 0 {
		t.Fatal("the model was called without the lock")
	}
	h.speak.mu.Lock()
	defer h.speak.mu.Unlock()
	if len(h.speak.said) != 1 || h.speak.said[0].Kind != agent.SayNotice || !h.speak.said[0].IsError {
		t.Fatalf("said %+v", h.speak.said)
	}
}

// trackLocker wraps a SessionLocker and knows which sessions it holds.
type trackLocker struct {
	inner agent.SessionLocker
	mu    sync.Mutex
	held  map[approval.SessionKey]int
	locks int
}

func (l *trackLocker) Lock(ctx context.Context, s approval.SessionKey) (func(), error) {
	unlock, err := l.inner.Lock(ctx, s)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.held[s]++
	l.locks++
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.held[s]--
			l.mu.Unlock()
			unlock()
		})
	}, nil
}

func (l *trackLocker) holds(s approval.SessionKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[s] > 0
}

// trackHistory counts the saves (unlocked) and loads (unlockedLoads) made
// without the session's lock.
type trackHistory struct {
	agent.History
	l             *trackLocker
	unlocked      atomic.Int64
	unlockedLoads atomic.Int64
}

func (h *trackHistory) Load(ctx context.Context, s approval.SessionKey) (agent.Conversation, error) {
	if !h.l.holds(s) {
		h.unlockedLoads.Add(1)
	}
	return h.History.Load(ctx, s)
}

func (h *trackHistory) Save(ctx context.Context, s approval.SessionKey, c agent.Conversation) error {
	if !h.l.holds(s) {
		h.unlocked.Add(1)
	}
	return h.History.Save(ctx, s, c)
}

// Every save and every load of a session's history holds its lock: in a
// turn, before and after an approval wait, and in the resumption of a turn
// that stopped waiting (which no longer glances at the history first).
func TestHistoryIsOnlyTouchedUnderTheLock(t *testing.T) {
	c, prefix := testredis.Start(t)
	locker := &trackLocker{inner: newLocker(t, c, prefix, agent.RedisLockerConfig{}), held: map[approval.SessionKey]int{}}
	hist := &trackHistory{History: agent.NewRedisHistory(c, prefix, time.Hour), l: locker}
	h := replica(t, eraseOnRequest(nil), hist, locker, func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })

	if r := result(t, h.submit(t, "s1", "erase x")); r.Actions[0].Status != "pending" {
		t.Fatalf("turn that ran out of time = %+v", r)
	}
	a := h.nextApproval(t)
	h.decide(t, a, approval.Approve) // the outcome resumes the turn
	h.nextResumed(t)
	result(t, h.submit(t, "s1", "what happened?"))
	if n := hist.unlocked.Load(); n != 0 {
		t.Fatalf("%d saves of the history without the session's lock", n)
	}
	if n := hist.unlockedLoads.Load(); n != 0 {
		t.Fatalf("%d loads of the history without the session's lock", n)
	}
	locker.mu.Lock()
	defer locker.mu.Unlock()
	if locker.locks != 3 || locker.held["s1"] != 0 {
		t.Fatalf("%d locks taken (want 3: two turns and the resumed one), %d still held", locker.locks, locker.held["s1"])
	}
}
