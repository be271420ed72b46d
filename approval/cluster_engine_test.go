//go:build linux

package approval_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// clusterBackend: two stores, each over its own ClusterClient, on a local
// three-node Redis Cluster.
func clusterBackend(t *testing.T) backend {
	addrs := testredis.StartCluster(t, 3)
	return backend{"cluster", func(t testing.TB, clk clock.Clock) (approval.Store, approval.Store, func() int64) {
		mk := func() approval.Store {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
			t.Cleanup(func() { c.Close() })
			s, err := redisstore.New(c, redisstore.Options{Prefix: "eng:", Clock: clk, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return mk(), mk(), nil
	}}
}

// TestClusterEngine: two engines over ClusterClients. A Wait on A is woken by
// a decision on B and the tool runs once; 200 concurrent approvals of one
// approval, half on each engine, run the tool exactly once.
func TestClusterEngine(t *testing.T) {
	f := newFixture(t, clusterBackend(t))

	a := request(t, f.a)
	ch := waitAsync(t, f.a, a.ID)
	if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("Decide on B = %+v", o)
	}
	if w := recv(t, ch); w.Status != approval.StatusExecuted {
		t.Fatalf("Wait on A = %+v, want executed", w)
	}
	if got := f.tool.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times, want 1", got)
	}

	a = request(t, f.a)
	const n = 200
	var wg sync.WaitGroup
	var won, already atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := f.a
			if i%2 == 1 {
				e = f.b
			}
			o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Approve, "bob"))
			switch {
			case err != nil:
				t.Error(err)
			case o.Status == approval.StatusExecuted:
				won.Add(1)
			case o.Status == approval.StatusAlreadyDecided:
				already.Add(1)
			default:
				t.Errorf("unexpected outcome %+v", o)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || already.Load() != n-1 {
		t.Fatalf("%d executed, %d already_decided; want 1 and %d", won.Load(), already.Load(), n-1)
	}
	if got := f.tool.runs.Load(); got != 2 {
		t.Fatalf("tool ran %d times in all, want 2", got)
	}
	if c := f.audit.count(a.ID, audit.EventExecute); c != 1 {
		t.Fatalf("audit has %d execute records, want 1", c)
	}
}
