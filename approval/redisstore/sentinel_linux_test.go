//go:build linux

package redisstore_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// TestSentinel runs the conformance suite through the client the bot
// builds for store.redis.addrs (the Sentinels) plus master_name: a go-redis
// failover client that asks the Sentinel for the master. It first checks
// that this client really talks to the master the Sentinel names, not to
// the replica (where every write would fail with READONLY).
func TestSentinel(t *testing.T) {
	t.Parallel()
	s := testredis.StartSentinel(t, 1)
	c, err := redisstore.NewClient(redisstore.ClientConfig{Addrs: s.Addrs, MasterName: s.MasterName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, ok := c.(*redis.Client); !ok {
		t.Fatalf("NewClient with master_name = %T, want the failover *redis.Client", c)
	}
	ctx := context.Background()
	info, err := c.Info(ctx, "server", "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(s.Master())
	if !strings.Contains(info, "tcp_port:"+port+"\r\n") || !strings.Contains(info, "role:master\r\n") {
		t.Fatalf("the client does not talk to the master %s:\n%s", s.Master(), info)
	}

	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (approval.Store, func(time.Duration)) {
			st, err := redisstore.New(c, redisstore.Options{Prefix: randomPrefix()})
			if err != nil {
				t.Fatal(err)
			}
			return st, time.Sleep
		},
	})
}
