//go:build linux

package testredis

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// StartCluster starts a Redis Cluster of n masters (no replicas) on free
// 127.0.0.1 ports (redis-server --cluster-enabled yes), creates it with
// redis-cli --cluster create (or, without redis-cli, the same commands sent
// from Go), and returns the addresses once every node reports
// cluster_state:ok. The servers are killed
// when the test ends (and, through Pdeathsig, if the test binary dies).
func StartCluster(t testing.TB, n int) []string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found: install Debian's redis-server (the cluster test needs the binary)")
	}
	dir := t.TempDir()
	g := newGroup(t, bin)
	addrs := make([]string, n)
	buses := make([]int, n)
	for i := range n {
		d := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		var bus int
		addrs[i], _ = g.start("cluster node "+strconv.Itoa(i), func(port int) []string {
			bus = mustFreePort(t)
			return []string{"--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(bus),
				"--bind", "127.0.0.1", "--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(d, "nodes.conf"),
				"--cluster-node-timeout", "5000",
				"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", d}
		}, dirIs(d))
		buses[i] = bus
	}
	ctx := context.Background()
	clients := make([]*redis.Client, n)
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		// As an operator would: redis-cli assigns the slots and has the
		// nodes meet (it reads each node's bus port from CLUSTER NODES).
		out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
		}
	} else {
		meet(t, ctx, clients, addrs, buses)
	}
	clusterWait(t, 30*time.Second, "cluster_state:ok on every node", func() bool {
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				return false
			}
		}
		return true
	})
	return addrs
}

// meet does what redis-cli --cluster create does, where redis-cli is
// missing: each node takes an equal range of slots, and every node meets
// the first one.
func meet(t testing.TB, ctx context.Context, clients []*redis.Client, addrs []string, buses []int) {
	t.Helper()
	n := len(clients)
	per := 16384 / n
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == n-1 {
			hi = 16383
		}
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("ADDSLOTSRANGE on %s: %v", addrs[i], err)
		}
		if i > 0 {
			// The bus port is not port+10000, so MEET must name it.
			host, port, _ := net.SplitHostPort(addrs[i])
			if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port, buses[i]).Err(); err != nil {
				t.Fatalf("CLUSTER MEET %s: %v", addrs[i], err)
			}
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func mustFreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clusterWait polls cond until it holds or d has passed (waitfor.Within).
func clusterWait(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Within(t, d, what, cond)
}
