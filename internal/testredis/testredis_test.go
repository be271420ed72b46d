package testredis

import (
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

var prefixRE = regexp.MustCompile(`^t[0-9a-f]{16}:$`)

func TestStart(t *testing.T) {
	t.Parallel()
	c1, p1 := Start(t)
	c2, p2 := Start(t)
	for _, p := range []string{p1, p2} {
		if !prefixRE.MatchString(p) {
			t.Errorf("prefix %q does not match %v", p, prefixRE)
		}
	}
	if p1 == p2 {
		t.Fatalf("two calls got the same prefix %q", p1)
	}
	if err := c1.Set(ctx(t), p1+"k", "one", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := c2.Set(ctx(t), p2+"k", "two", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c2.Get(ctx(t), p1+"k").Result(); err != nil || got != "one" {
		t.Errorf("GET %sk = %q, %v; want \"one\"", p1, got, err)
	}
}

func TestStartDeletesKeysOfEndedTest(t *testing.T) {
	t.Parallel()
	var prefix string
	t.Run("writer", func(t *testing.T) {
		c, p := Start(t)
		prefix = p
		for _, k := range []string{"a", "b", "{tag}:c"} {
			if err := c.Set(ctx(t), p+k, "v", time.Hour).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
		}
	})
	c, _ := Start(t)
	n, err := c.Exists(ctx(t), prefix+"a", prefix+"b", prefix+"{tag}:c").Result()
	if err != nil {
		t.Fatalf("EXISTS: %v", err)
	}
	if n != 0 {
		t.Errorf("%d keys under %q survived the end of their test", n, prefix)
	}
}

// TestSharedServer exercises the local server even when HITLBOT_TEST_REDIS is
// set (as scripts/test.sh does).
func TestSharedServer(t *testing.T) {
	t.Parallel()
	p1, err := sharedServer()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := sharedServer()
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Fatalf("sharedServer started two servers: %s and %s", p1.addr, p2.addr)
	}
	c := redis.NewClient(&redis.Options{Addr: p1.addr})
	defer c.Close()
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING shared server: %v", err)
	}
	if got, err := c.ConfigGet(ctx(t), "save").Result(); err != nil || got["save"] != "" {
		t.Errorf("CONFIG GET save = %v, %v; want empty (no snapshots)", got, err)
	}
	if got, err := c.ConfigGet(ctx(t), "bind").Result(); err != nil || got["bind"] != "127.0.0.1" {
		t.Errorf("CONFIG GET bind = %v, %v; want 127.0.0.1", got, err)
	}
}

func TestServerStopRestart(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	c := s.Client()
	if err := c.Set(ctx(t), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on a fresh server: %v", err)
	}

	s.Stop()
	// A client that does not retry, so that the test does not wait for
	// go-redis's dial retries.
	quick := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1})
	defer quick.Close()
	if err := quick.Ping(ctx(t)).Err(); err == nil {
		t.Fatal("PING after Stop succeeded")
	}
	if conn, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", s.Addr())
	}
	s.Stop() // idempotent

	addr := s.Addr()
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("Addr after Restart = %s, want %s", s.Addr(), addr)
	}
	// The old client reconnects by itself.
	if err := c.Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if n, err := c.Exists(ctx(t), "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k after Restart = %d, %v; want 0 (empty server)", n, err)
	}
	s.Restart() // restarting a running server works too
	if err := s.Client().Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("PING after second Restart: %v", err)
	}
}

func TestServersAreDedicated(t *testing.T) {
	t.Parallel()
	a, b := StartServer(t), StartServer(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers on one address %s", a.Addr())
	}
	a.Stop()
	if err := b.Client().Ping(ctx(t)).Err(); err != nil {
		t.Fatalf("stopping one server broke the other: %v", err)
	}
}

// TestLifeline checks the guarantee that makes Main optional: once the test
// binary's end of the pipe is closed (as the kernel does when it exits), the
// wrapper kills redis-server and removes its directory.
func TestLifeline(t *testing.T) {
	t.Parallel()
	bin, err := findServer()
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	p, err := startFresh(bin, log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.tail(4096))
	}
	t.Cleanup(p.stop)
	if _, err := os.Stat(p.dir); err != nil {
		t.Fatalf("server dir: %v", err)
	}
	p.lifeline.Close() // only the pipe: no signal, no Wait
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("wrapper still running 10s after its lifeline closed")
	}
	if conn, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections", p.addr)
	}
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server dir %s not removed: %v", p.dir, err)
	}
	if !strings.Contains(log.tail(1<<20), "Ready to accept connections") {
		t.Errorf("server log not captured:\n%s", log.tail(4096))
	}
}

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		addr    string
		db      int
		wantErr bool
	}{
		{in: "127.0.0.1:6380", addr: "127.0.0.1:6380"},
		{in: "localhost:6379", addr: "localhost:6379"},
		{in: "redis://127.0.0.1:6390/3", addr: "127.0.0.1:6390", db: 3},
		{in: "redis://:secret@example.test:7000", addr: "example.test:7000"},
		{in: "127.0.0.1", wantErr: true},
		{in: "http://127.0.0.1:6379", wantErr: true},
	} {
		opt, err := parseAddr(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("parseAddr(%q) = %+v, want an error", tc.in, opt)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseAddr(%q): %v", tc.in, err)
			continue
		}
		if opt.Addr != tc.addr || opt.DB != tc.db {
			t.Errorf("parseAddr(%q) = addr %q db %d, want %q db %d", tc.in, opt.Addr, opt.DB, tc.addr, tc.db)
		}
	}
}

func TestNotFoundMessage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findServer()
	if err == nil || err.Error() != "redis-server not found: install Debian's redis-server or set HITLBOT_TEST_REDIS" {
		t.Errorf("findServer with an empty PATH: %v", err)
	}
}

func TestLogBufferBounded(t *testing.T) {
	t.Parallel()
	var b logBuffer
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for i := 0; i < 3000; i++ {
		b.Write(line)
	}
	if n := len(b.tail(1 << 30)); n > 1<<20+len(line)+64 {
		t.Errorf("log holds %d bytes after 3 MB of output", n)
	}
	if got := b.tail(10); !strings.HasSuffix(got, "xxx\n") || len(got) > 20 {
		t.Errorf("tail(10) = %q", got)
	}
}
