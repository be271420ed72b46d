//go:build linux

package testredis

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestGroupStartLosesItsPort: a server whose port is taken between its
// choice and its start (here, on purpose, by a listener that is no Redis,
// then by another Redis) is started again on another port, and the address
// returned is that of the server started, not of the one that took the
// port.
func TestGroupStartLosesItsPort(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())

	g := newGroup(t, bin)
	other, _ := g.start("other", func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", t.TempDir()}
	}, func(ctx context.Context, c *redis.Client) (bool, error) { return true, c.Ping(ctx).Err() })
	_, otherPort, _ := net.SplitHostPort(other)

	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", d}
	}
	for _, port := range []string{takenPort, otherPort} {
		n, _ := strconv.Atoi(port)
		if addr, _, err := g.try("node", n, args, dirIs(d)); !errors.Is(err, errNotOurs) {
			t.Fatalf("try on the taken port %s = %s, %v; want errNotOurs", port, addr, err)
		}
	}
	got, _ := g.start("node", args, dirIs(d))
	if _, p, _ := net.SplitHostPort(got); p == takenPort || p == otherPort {
		t.Fatalf("start returned %s, a port someone else holds", got)
	}
	c := redis.NewClient(&redis.Options{Addr: got})
	defer c.Close()
	if mine, err := dirIs(d)(context.Background(), c); !mine {
		t.Fatalf("the server on %s is not the one started (%v)", got, err)
	}
}

// TestFreePortNeverTwice: freePort does not return a port twice in one
// process, even when the kernel offers the same port again.
func TestFreePortNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("freePort returned %d twice", p)
		}
		seen[p] = true
	}
}
