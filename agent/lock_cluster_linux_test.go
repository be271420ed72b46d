package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// The locker runs on Redis Cluster: sessions whose keys live on different
// nodes are locked, renewed, excluded and released.
func TestRedisLockerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testredis.StartCluster(t, 3)})
	t.Cleanup(func() { _ = cc.Close() })
	var logs logBuf
	a := newLocker(t, cc, "hitl:", agent.RedisLockerConfig{TTL: 300 * time.Millisecond, Logger: logs.logger()})
	b := newLocker(t, cc, "hitl:", agent.RedisLockerConfig{})
	ctx := context.Background()
	nodes := map[string]bool{}
	for i := range 12 {
		s := fmt.Sprintf("feishu:oc_%d", i)
		slot, err := cc.ClusterKeySlot(ctx, "hitl:turnlock:"+s).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes[fmt.Sprint(slot*3/16384)] = true // the third of the slots, as redis-cli spreads them
		unlock := lockWithin(t, a, s)
		if i == 0 {
			assertHeld(t, b, s, time.Second) // renewed past its TTL
		} else {
			assertHeld(t, b, s, 50*time.Millisecond)
		}
		unlock()
		lockWithin(t, b, s)()
	}
	if len(nodes) < 2 {
		t.Fatalf("the sessions' keys fell in %d third(s) of the slots; pick others", len(nodes))
	}
	if s := logs.String(); s != "" {
		t.Fatalf("the locker logged: %s", s)
	}
}
