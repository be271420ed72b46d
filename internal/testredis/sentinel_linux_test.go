//go:build linux

package testredis

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStartSentinel: the deployment is what StartSentinel says (the first
// node master, the second its replica in sync), a go-redis failover client
// finds the master through the Sentinel, and Failover promotes the replica.
func TestStartSentinel(t *testing.T) {
	t.Parallel()
	s := StartSentinel(t, 1)
	if len(s.Addrs) != 1 || s.MasterName != SentinelMaster || len(s.Nodes) != 2 {
		t.Fatalf("StartSentinel(t, 1) = %+v", s)
	}
	old, replica := s.Nodes[0], s.Nodes[1]
	if got := s.Master(); got != old {
		t.Fatalf("Master() = %s, want the first node %s", got, old)
	}
	if r := s.role(ctx(t), replica); r != "slave" {
		t.Fatalf("ROLE of %s = %q, want slave", replica, r)
	}

	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.Addrs})
	defer c.Close()
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the Sentinel: %v", err)
	}
	if n, err := c.Do(ctx(t), "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 5000 = %d, %v; want 1 replica", n, err)
	}
	if got, err := s.Node(replica).Get(ctx(t), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k on the replica = %q, %v", got, err)
	}

	if got := s.Failover(); got != replica {
		t.Fatalf("Failover() = %s, want the replica %s", got, replica)
	}
	if got := s.Master(); got != replica {
		t.Fatalf("Master() after Failover = %s, want %s", got, replica)
	}
	if r := s.role(ctx(t), old); r != "master" {
		t.Fatalf("ROLE of the old master right after Failover = %q: want master still (Sentinel demotes it seconds later)", r)
	}
	// A client made now asks the Sentinel and reaches the new master. (c
	// too, once it has handled the Sentinel's +switch-master; until then
	// its writes go to the old master, still a master, and are lost.)
	c2 := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.Addrs})
	defer c2.Close()
	if got, err := c2.Get(ctx(t), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET k through the Sentinel after the failover = %q, %v", got, err)
	}
	if err := c2.Set(ctx(t), "k2", "v2", 0).Err(); err != nil {
		t.Fatalf("SET through the Sentinel after the failover: %v", err)
	}
	if got, err := s.Node(replica).Get(ctx(t), "k2").Result(); err != nil || got != "v2" {
		t.Fatalf("GET k2 on the new master = %q, %v", got, err)
	}
}

// TestInSync: WaitInSync's reading of INFO replication.
func TestInSync(t *testing.T) {
	const head = "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n"
	for _, tt := range []struct {
		name, info string
		want       bool
	}{
		{"online at the offset", head + "slave0:ip=127.0.0.1,port=6380,state=online,offset=1234,lag=0\r\nmaster_repl_offset:1234\r\n", true},
		{"online behind", head + "slave0:ip=127.0.0.1,port=6380,state=online,offset=1200,lag=1\r\nmaster_repl_offset:1234\r\n", false},
		{"still syncing", head + "slave0:ip=127.0.0.1,port=6380,state=wait_bgsave,offset=0,lag=0\r\nmaster_repl_offset:0\r\n", false},
		{"no replica", "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:1234\r\n", false},
		{"a replica", "# Replication\r\nrole:slave\r\nconnected_slaves:1\r\nslave0:state=online,offset=5\r\nmaster_repl_offset:5\r\n", false},
	} {
		if got := inSync(tt.info, 1); got != tt.want {
			t.Errorf("%s: inSync = %v, want %v", tt.name, got, tt.want)
		}
	}
}
