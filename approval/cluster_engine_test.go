//go:build linux

package approval_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
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
	twoReplicasExactlyOnce(t, f, f.a, 200)
}
