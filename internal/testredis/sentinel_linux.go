//go:build linux

package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// SentinelMaster is the name the Sentinels of StartSentinel monitor.
const SentinelMaster = "hitlbot"

// Sentinel timings: short, so that a failover takes a few seconds.
const (
	sentinelDownAfter = 1000 * time.Millisecond // down-after-milliseconds
	sentinelFailover  = 3000 * time.Millisecond // failover-timeout
	// sentinelWait bounds every wait for the Sentinel deployment (start,
	// failover, demotion).
	sentinelWait = 30 * time.Second
)

// Sentinel is a master, one replica and one or three Sentinels watching
// them, all on 127.0.0.1, started by StartSentinel.
type Sentinel struct {
	// Addrs are the Sentinels' host:port addresses: store.redis.addrs.
	Addrs []string
	// MasterName is the name the Sentinels monitor: store.redis.master_name.
	MasterName string
	// Nodes are the two data nodes, the first master at the start.
	Nodes []string

	t         testing.TB
	sentinels []*redis.SentinelClient
	nodes     map[string]*redis.Client
	procs     map[string]*proc // the data nodes' processes
}

// StartSentinel starts a Redis master, one replica (redis-server
// --replicaof) and n Sentinels (redis-server <conf> --sentinel; n is 1 or
// 3, the quorum 1 or 2) on free 127.0.0.1 ports in t.TempDir(), with
// down-after-milliseconds 1000 and failover-timeout 3000. It returns once
// the replica is in sync and every Sentinel reports the master, sees the
// replica as healthy and (for 3) knows the other Sentinels. The servers are
// killed when the test ends (and, through Pdeathsig, if the test binary
// dies). Without the redis-server binary the test is skipped: Sentinel
// tests need it even when HITLBOT_TEST_REDIS is set.
func StartSentinel(t testing.TB, n int) *Sentinel {
	t.Helper()
	if n != 1 && n != 3 {
		t.Fatalf("testredis: StartSentinel(%d): want 1 or 3 Sentinels", n)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: the Sentinel tests start their own master, replica and Sentinels from Debian's redis-server binary")
	}
	dir := t.TempDir()
	g := newGroup(t, bin)
	mkdir := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return r
		}
		return d
	}
	s := &Sentinel{t: t, MasterName: SentinelMaster, nodes: map[string]*redis.Client{}, procs: map[string]*proc{}}
	node := func(name string, extra ...string) string {
		d := mkdir(name)
		a, p := g.start(name, func(port int) []string {
			return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", d,
				// Full syncs start at once (Redis 7 waits 5 s for more replicas).
				"--repl-diskless-sync-delay", "0"}, extra...)
		}, dirIs(d))
		s.procs[a] = p
		return a
	}

	master := node("master")
	_, mport, _ := net.SplitHostPort(master)
	replica := node("replica", "--replicaof", "127.0.0.1", mport)
	s.Nodes = []string{master, replica}
	ctx := context.Background()
	for _, a := range s.Nodes {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		s.nodes[a] = c
	}
	waitfor.Within(t, sentinelWait, "the replica in sync with the master", func() bool {
		info, err := s.nodes[replica].Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})

	quorum := 1
	if n == 3 {
		quorum = 2
	}
	for i := range n {
		name := "sentinel" + strconv.Itoa(i)
		d := mkdir(name)
		// Sentinel rewrites its configuration file (it records the
		// replicas, the other Sentinels, the epochs): it must be writable.
		conf := filepath.Join(d, "sentinel.conf")
		a, _ := g.start(name, func(port int) []string {
			text := fmt.Sprintf(`port %d
bind 127.0.0.1
daemonize no
dir %s
sentinel monitor %s 127.0.0.1 %s %d
sentinel down-after-milliseconds %[3]s %[6]d
sentinel failover-timeout %[3]s %[7]d
sentinel parallel-syncs %[3]s 1
`, port, d, SentinelMaster, mport, quorum, sentinelDownAfter.Milliseconds(), sentinelFailover.Milliseconds())
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{conf, "--sentinel"}
		}, configFileIs(conf))
		s.Addrs = append(s.Addrs, a)
		c := redis.NewSentinelClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		s.sentinels = append(s.sentinels, c)
	}
	for i, c := range s.sentinels {
		waitfor.Within(t, sentinelWait, "Sentinel "+s.Addrs[i]+" reports the master, a healthy replica and the other Sentinels", func() bool {
			got, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
			if err != nil || net.JoinHostPort(got[0], got[1]) != master {
				return false
			}
			if !s.replicaOK(ctx, c, replica) {
				return false
			}
			others, err := c.Sentinels(ctx, SentinelMaster).Result()
			return err == nil && len(others) == n-1
		})
	}
	return s
}

// replicaOK reports whether Sentinel c lists addr as a replica of the
// master that it could promote: flags exactly "slave" (not down, not
// disconnected) and its link to the master up.
func (s *Sentinel) replicaOK(ctx context.Context, c *redis.SentinelClient, addr string) bool {
	reps, err := c.Replicas(ctx, SentinelMaster).Result()
	if err != nil {
		return false
	}
	for _, r := range reps {
		if net.JoinHostPort(r["ip"], r["port"]) == addr && r["flags"] == "slave" && r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// WaitInSync waits until the master (as the first Sentinel reports it) has
// every other data node connected as an online replica whose acknowledged
// replication offset equals the master's own: a write made then reaches the
// replica at once, and a WAIT is answered by its next acknowledgement, not
// after a full synchronisation or a reconnection.
func (s *Sentinel) WaitInSync() {
	s.t.Helper()
	ctx := context.Background()
	master := s.Master()
	c := s.Node(master)
	waitfor.Within(s.t, sentinelWait, "the replicas of "+master+" online at its replication offset", func() bool {
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && inSync(info, len(s.Nodes)-1)
	})
}

// inSync reports whether INFO replication of a master lists n replicas,
// each online with the master's replication offset.
func inSync(info string, n int) bool {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if fields["role"] != "master" || fields["connected_slaves"] != strconv.Itoa(n) || fields["master_repl_offset"] == "" {
		return false
	}
	for i := range n {
		// slave0:ip=127.0.0.1,port=6380,state=online,offset=1234,lag=0
		kv := map[string]string{}
		for _, f := range strings.Split(fields["slave"+strconv.Itoa(i)], ",") {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		if kv["state"] != "online" || kv["offset"] != fields["master_repl_offset"] {
			return false
		}
	}
	return true
}

// Master returns the master's address as the first Sentinel reports it.
func (s *Sentinel) Master() string {
	s.t.Helper()
	got, err := s.sentinels[0].GetMasterAddrByName(context.Background(), SentinelMaster).Result()
	if err != nil {
		s.t.Fatalf("testredis: SENTINEL GET-MASTER-ADDR-BY-NAME: %v", err)
	}
	return net.JoinHostPort(got[0], got[1])
}

// Node returns a client of the data node at addr (one of Nodes), for
// inspecting it (ROLE, INFO); it retries nothing.
func (s *Sentinel) Node(addr string) *redis.Client {
	s.t.Helper()
	c, ok := s.nodes[addr]
	if !ok {
		s.t.Fatalf("testredis: %s is not a data node of this Sentinel deployment (%v)", addr, s.Nodes)
	}
	return c
}

// Kill kills the data node at addr (SIGKILL: a crash) and returns once
// it is gone. The Sentinels notice after down-after-milliseconds; Failover
// then promotes the other node.
func (s *Sentinel) Kill(addr string) {
	s.t.Helper()
	p, ok := s.procs[addr]
	if !ok {
		s.t.Fatalf("testredis: %s is not a data node of this Sentinel deployment (%v)", addr, s.Nodes)
	}
	p.kill()
}

// Failover forces a failover (SENTINEL FAILOVER on the first Sentinel) and
// returns the new master's address once every Sentinel reports it and it
// answers ROLE as a master. The old master is not yet a replica then:
// Sentinel demotes it some seconds later (see WaitDemoted).
func (s *Sentinel) Failover() string {
	s.t.Helper()
	ctx := context.Background()
	old := s.Master()
	var err error
	for i := 0; ; i++ {
		err = s.sentinels[0].Failover(ctx, SentinelMaster).Err()
		// NOGOODSLAVE: the Sentinel has not yet judged the replica fit
		// (a fresh INFO); INPROG: another failover is running.
		if err == nil || i == 50 || !(strings.HasPrefix(err.Error(), "NOGOODSLAVE") || strings.HasPrefix(err.Error(), "INPROG")) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("testredis: SENTINEL FAILOVER %s: %v", SentinelMaster, err)
	}
	var now string
	waitfor.Within(s.t, sentinelWait, "every Sentinel to report a new master after SENTINEL FAILOVER", func() bool {
		for _, c := range s.sentinels {
			got, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
			if err != nil {
				return false
			}
			a := net.JoinHostPort(got[0], got[1])
			if a == old || (now != "" && a != now) {
				return false
			}
			now = a
		}
		return s.role(ctx, now) == "master"
	})
	return now
}

// WaitDemoted waits until the data node at addr (an old master) runs as a
// replica of the current master with its link up. Sentinel reconfigures a
// surviving old master only after it has seen it claim the master role for
// a while (8 s in Redis 7, plus its INFO period), so this takes 10 to 20 s.
func (s *Sentinel) WaitDemoted(addr string) {
	s.t.Helper()
	ctx := context.Background()
	master := s.Master()
	c := s.Node(addr)
	waitfor.Within(s.t, sentinelWait, addr+" to replicate from the new master "+master, func() bool {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return false
		}
		host, port, _ := net.SplitHostPort(master)
		return strings.Contains(info, "role:slave") && strings.Contains(info, "master_host:"+host+"\r\n") &&
			strings.Contains(info, "master_port:"+port+"\r\n") && strings.Contains(info, "master_link_status:up")
	})
}

// role returns what ROLE's first element is on the data node at addr
// ("master", "slave"), or "" when it does not answer.
func (s *Sentinel) role(ctx context.Context, addr string) string {
	c, ok := s.nodes[addr]
	if !ok {
		return ""
	}
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	r, _ := v[0].(string)
	return r
}
