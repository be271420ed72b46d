package approval_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

func init() {
	backends = append(backends, backend{"redis", newRedisPair})
}

// counter is a go-redis hook that counts round trips: one per command
// sent alone, one per pipeline.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// newRedisPair returns two stores with clients of their own on one Redis,
// as two replicas have.
func newRedisPair(t testing.TB, clk clock.Clock) (approval.Store, approval.Store, func() int64) {
	t.Helper()
	c1, prefix := testredis.Start(t)
	addr := c1.(*redis.Client).Options().Addr
	var cnt counter
	mk := func() approval.Store {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128})
		c.AddHook(&cnt)
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Clock: clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return mk(), mk(), cnt.n.Load
}

// TestRedisDown: with the server gone, a decision returns an error and
// nothing runs; a request fails cleanly; after a restart it all works again.
func TestRedisDown(t *testing.T) {
	srv := testredis.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200e6,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tool := &counterTool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := approval.NewEngine(approval.EngineConfig{Store: s, Dispatcher: tool, Audit: &recorder{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := request(t, e)
	srv.Stop()
	if _, err := e.Decide(ctx, a.ID, decision(a, approval.Approve, "bob")); approval.KindOf(err) != errkind.Unavailable {
		t.Fatalf("Decide with Redis down = %v, want errkind.Unavailable", err)
	}
	if _, err := e.Request(ctx, approval.Request{Session: "test:down", Requester: "alice", Calls: a.Calls}); approval.KindOf(err) != errkind.Unavailable {
		t.Fatalf("Request with Redis down = %v, want errkind.Unavailable", err)
	}
	if tool.runs.Load() != 0 {
		t.Fatal("a tool ran while Redis was down")
	}
	srv.Restart() // empty: the old approval is gone, new ones work
	for i := 0; ; i++ {
		_, err := e.Request(ctx, approval.Request{Session: "test:back", Requester: "alice", Calls: a.Calls})
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatalf("Request after Redis came back: %v", err)
		}
		srv.Client().Ping(ctx) // give the pool a moment, without sleeping blind
	}
	if o, err := e.Decide(ctx, a.ID, decision(a, approval.Approve, "bob")); err != nil || o.Status != approval.StatusMissing {
		t.Fatalf("Decide of a lost approval = %+v, %v; want missing", o, err)
	}
}
