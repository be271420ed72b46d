//go:build linux

package approval_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// sentinelPrefix is the key prefix of the Sentinel tests; their Redis is
// their own. The store publishes outcomes on prefix + "outcomes".
const (
	sentinelPrefix  = "sen:"
	sentinelChannel = sentinelPrefix + "outcomes"
)

// sentinelConfig is the configuration store.redis.addrs (the Sentinels)
// plus store.redis.master_name.
func sentinelConfig(s *testredis.Sentinel) redisstore.ClientConfig {
	return redisstore.ClientConfig{Addrs: s.Addrs, MasterName: s.MasterName}
}

// sentinelStore builds a store as the bot does for cfg: one client of its
// own, from redisstore.NewClient.
func sentinelStore(t testing.TB, cfg redisstore.ClientConfig, clk clock.Clock) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	c, err := redisstore.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := redisstore.New(c, redisstore.Options{Prefix: sentinelPrefix, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// sentinelBackend: two stores, each over its own failover client, on a
// master and its replica watched by one Sentinel.
func sentinelBackend(t *testing.T) backend {
	cfg := sentinelConfig(testredis.StartSentinel(t, 1))
	return backend{"sentinel", func(t testing.TB, clk clock.Clock) (approval.Store, approval.Store, func() int64) {
		a, _ := sentinelStore(t, cfg, clk)
		b, _ := sentinelStore(t, cfg, clk)
		return a, b, nil
	}}
}

// TestSentinelEngine: two engines whose stores reach Redis through the
// Sentinel. A Wait on A is woken by a decision on B and the tool runs once;
// 50 concurrent approvals of one approval, half on each engine, run the
// tool exactly once.
func TestSentinelEngine(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sentinelBackend(t))
	twoReplicasExactlyOnce(t, f, f.b, 50)
}

// replicas are engines of one bot deployment (one tool, one audit, one
// chat) over Sentinel stores, on the real clock.
type replicas struct {
	t     *testing.T
	cfg   redisstore.ClientConfig
	tool  *counterTool
	audit *recorder
	notes *notifier
}

// reads counts the store reads of records that have returned.
type reads struct {
	approval.Store
	n *atomic.Int64
}

func (s reads) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	defer s.n.Add(1)
	return s.Store.Get(ctx, id)
}

// start builds and starts an engine on a client of its own. poll is its
// PollInterval: time.Hour leaves pub/sub as the only way a Wait learns of
// a decision made elsewhere. It returns the engine, its client and the
// number of record reads its store has made.
func (r *replicas) start(poll time.Duration) (*approval.Engine, redis.UniversalClient, *atomic.Int64) {
	t := r.t
	t.Helper()
	s, c := sentinelStore(t, r.cfg, clock.Real{})
	n := &atomic.Int64{}
	e, err := approval.NewEngine(approval.EngineConfig{Store: reads{s, n}, Notifier: r.notes, Dispatcher: r.tool, Audit: r.audit,
		PollInterval: poll, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return e, c, n
}

// waiting starts a Wait on e and returns once it is registered; the
// channel gets its outcome, cancel ends it (its context error is not
// reported).
func waiting(t *testing.T, e *approval.Engine, id approval.ID) (<-chan approval.Outcome, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(chan approval.Outcome, 1)
	go func() {
		o, err := e.Wait(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("Wait(%s): %v", id, err)
			}
			return
		}
		ch <- o
	}()
	waitfor.True(t, "the Wait on "+string(id)+" to register", func() bool { return e.Waiting(id) })
	return ch, cancel
}

// replicated makes sure the replica has every write made so far through c,
// so that the failover that follows cannot lose them. Redis replication is
// asynchronous: without this, the approval could still be only on the old
// master when the replica is promoted, and the test would fail now and then
// with "missing". WAIT counts the replicas that acknowledged the writes of
// its own connection, and a pooled client gives no guarantee that it runs
// on the connection of the approval's writes; so a fence key is written and
// waited for on one connection (a pipeline): the replication stream is
// ordered, so a replica that acknowledged the fence has all that came
// before it on the master.
func replicated(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	var wait *redis.Cmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, sentinelPrefix+"fence", time.Now().UnixNano(), time.Minute)
		wait = p.Do(ctx, "WAIT", 1, 1000)
		return nil
	}); err != nil {
		t.Fatalf("fence + WAIT: %v", err)
	}
	if n, err := wait.Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 1000 = %d, %v; want the replica's acknowledgement", n, err)
	}
}

// subscribers returns how many clients of the data node at addr are
// subscribed to the stores' outcome channel.
func subscribers(t *testing.T, s *testredis.Sentinel, addr string) int64 {
	t.Helper()
	got, err := s.Node(addr).PubSubNumSub(context.Background(), sentinelChannel).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB on %s: %v", addr, err)
	}
	return got[sentinelChannel]
}

// TestSentinelMasterCrash: the master dies and the Sentinel promotes the
// replica. An approval requested before is decided after, through a new
// client; the tool runs once. The Wait of the replica that requested it
// is woken by pub/sub (it polls only hourly): its subscription connection
// broke with the master, and go-redis redials it every 100 ms, asking the
// Sentinel for the master each time, so it resubscribes on the new master
// as soon as the Sentinel names it.
func TestSentinelMasterCrash(t *testing.T) {
	t.Parallel()
	s := testredis.StartSentinel(t, 1)
	r := &replicas{t: t, cfg: sentinelConfig(s), tool: &counterTool{}, audit: &recorder{}, notes: &notifier{}}
	a, ac, _ := r.start(time.Hour)
	x := request(t, a)
	wa, _ := waiting(t, a, x.ID)
	replicated(t, ac)

	old := s.Master()
	start := time.Now()
	s.Kill(old)
	now := s.Failover()
	t.Logf("master %s killed; %s promoted after %v", old, now, time.Since(start))

	waitfor.True(t, "A's subscription to move to the new master", func() bool { return subscribers(t, s, now) == 1 })
	c, _, _ := r.start(time.Hour)
	if o := decide(t, c, x.ID, decision(x, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("Decide after the failover = %+v, want executed", o)
	}
	if o := recv(t, wa); o.Status != approval.StatusExecuted {
		t.Fatalf("Wait on A = %+v, want executed", o)
	}
	if got := r.tool.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times, want 1", got)
	}
	if n := r.audit.count(x.ID, audit.EventExecute); n != 1 {
		t.Fatalf("audit has %d execute records, want 1", n)
	}
}

// TestSentinelSwitchover: SENTINEL FAILOVER while the master is alive (a
// planned switchover, or a master cut off from the Sentinels). An approval
// requested before is decided after, through a new client; the tool runs
// once. (A new client, because a client from before the switch sends its
// commands to the old master, still a master, until it has handled the
// Sentinel's +switch-master: writes in that moment are lost.)
//
// What happens to the subscriptions, as this test asserts it (go-redis
// v9.23, Redis 7.0): on +switch-master a failover client closes its pooled
// command connections to the old master, but not its pub/sub connection
// (since v9 it comes from a pool of its own, which go-redis's onFailover
// does not filter), so that stays on the old master, alive and still a
// master. Outcomes published on the new master in the meantime do not
// reach the replicas that subscribed before the switch, and are lost for
// them: a Wait there learns of a decision only through its poll of the
// record (PollInterval, 5 s by default), or a new Wait reads the record.
// The Sentinel demotes the old master some 10 s after the switch (Redis
// waits 8 s, then for its next INFO of it), which disconnects its pub/sub
// clients (CLIENT KILL); go-redis resubscribes through the Sentinel, on
// the new master, and pub/sub wakes waiters again (checked unless -short,
// as it takes that long). Had the old master stayed unreachable for the Sentinels but not
// for the bot, the subscriptions would have stayed on it, and waiters would
// have depended on their poll, for as long as that lasted.
func TestSentinelSwitchover(t *testing.T) {
	t.Parallel()
	s := testredis.StartSentinel(t, 3)
	r := &replicas{t: t, cfg: sentinelConfig(s), tool: &counterTool{}, audit: &recorder{}, notes: &notifier{}}
	a, ac, _ := r.start(time.Hour)                  // pub/sub only
	b, _, bReads := r.start(100 * time.Millisecond) // pub/sub and poll
	x := request(t, a)
	wa, stopA := waiting(t, a, x.ID)
	wb, _ := waiting(t, b, x.ID)
	// B's Wait read the record once (x was requested on A), before the
	// failover: an error there would end the Wait.
	waitfor.True(t, "B's Wait to read the record", func() bool { return bReads.Load() > 0 })
	replicated(t, ac)

	old := s.Master()
	start := time.Now()
	now := s.Failover()
	switched := time.Now()
	t.Logf("SENTINEL FAILOVER: %s promoted after %v", now, switched.Sub(start))
	c, _, _ := r.start(time.Hour)

	// The subscriptions of A and B are still on the old master; C, started
	// after the switch, subscribed on the new one.
	if n := subscribers(t, s, old); n != 2 {
		t.Errorf("%d subscribers on the old master, want A and B: if go-redis now moves subscriptions on +switch-master, update this test and the doc of redisstore.Store.Subscribe", n)
	}
	if n := subscribers(t, s, now); n != 1 {
		t.Errorf("%d subscribers on the new master, want C's alone", n)
	}

	if o := decide(t, c, x.ID, decision(x, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("Decide after the failover = %+v, want executed", o)
	}
	if o := recv(t, wb); o.Status != approval.StatusExecuted {
		t.Fatalf("Wait on B (polls every 100 ms) = %+v, want executed", o)
	}
	// The outcome was published on the new master, where A does not
	// listen: A's Wait, which never polls, is still blocked.
	select {
	case o := <-wa:
		t.Errorf("Wait on A (pub/sub only) got %+v: the subscription followed the switch; update this test's doc", o)
	case <-time.After(300 * time.Millisecond):
	}
	if got := r.tool.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times, want 1", got)
	}
	// A Wait that begins now reads the record.
	stopA()
	if o, err := a.Wait(context.Background(), x.ID); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("a new Wait on A = %+v, %v; want executed from the record", o, err)
	}

	if testing.Short() {
		t.Log("-short: not waiting (some 10 s) for the Sentinel to demote the old master and the subscriptions to come back")
		return
	}
	s.WaitDemoted(old)
	waitfor.True(t, "A, B and C subscribed on the new master", func() bool { return subscribers(t, s, now) == 3 })
	t.Logf("old master demoted and subscriptions back on the new master %v after the switch", time.Since(switched))
	y := request(t, c)
	wy, _ := waiting(t, a, y.ID)
	if o := decide(t, b, y.ID, decision(y, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("Decide on B = %+v, want executed", o)
	}
	if o := recv(t, wy); o.Status != approval.StatusExecuted {
		t.Fatalf("Wait on A (pub/sub only) after the demotion = %+v, want executed", o)
	}
	if got := r.tool.runs.Load(); got != 2 {
		t.Fatalf("tool ran %d times in all, want 2", got)
	}
	for _, ap := range []*approval.Approval{x, y} {
		if n := r.audit.count(ap.ID, audit.EventExecute); n != 1 {
			t.Fatalf("audit has %d execute records for %s, want 1", n, ap.ID)
		}
	}
}
