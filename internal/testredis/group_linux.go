//go:build linux

package testredis

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// group is the redis-server processes of one Sentinel or Cluster
// deployment: each started on a port of its own, each with a log that the
// test prints when it fails, all killed when the test ends (and, through
// Pdeathsig, if the test binary dies).
type group struct {
	t   testing.TB
	bin string

	mu   sync.Mutex
	logs []namedLog
}

type namedLog struct {
	name string
	log  *strings.Builder
}

// proc is one process of a group.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and is reaped
}

// kill kills the process and waits until it is reaped; killing a dead one
// does nothing.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func newGroup(t testing.TB, bin string) *group {
	g := &group{t: t, bin: bin}
	t.Cleanup(func() {
		if t.Failed() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, l := range g.logs {
				t.Logf("%s log:\n%s", l.name, l.log.String())
			}
		}
	})
	return g
}

// errNotOurs says that a started server exited before it answered, or that
// another server answers on its port: most likely another process took the
// port between its choice and the start.
var errNotOurs = errors.New("testredis: the port was taken by someone else")

// start starts a server named name on a free port, with the arguments
// args(port) gives, and returns its address and process once it answers
// and ours(client) says the server answering is the one started. A start
// that loses the race for its port is tried again on another port, up to
// startAttempts times.
func (g *group) start(name string, args func(port int) []string, ours ownership) (string, *proc) {
	g.t.Helper()
	var err error
	for range startAttempts {
		var (
			addr string
			p    *proc
		)
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		addr, p, err = g.try(name, port, args, ours)
		if err == nil {
			return addr, p
		}
		if !errors.Is(err, errNotOurs) {
			break
		}
		g.t.Logf("testredis: %s: %v; trying another port", name, err)
	}
	g.t.Fatalf("testredis: start %s: %v", name, err)
	return "", nil
}

// try starts the server on port, as start does, once.
func (g *group) try(name string, port int, args func(port int) []string, ours ownership) (string, *proc, error) {
	log := &strings.Builder{}
	g.mu.Lock()
	g.logs = append(g.logs, namedLog{fmt.Sprintf("%s (port %d)", name, port), log})
	g.mu.Unlock()
	cmd := exec.Command(g.bin, args(port)...)
	w := lockedWriter{&g.mu, log}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	g.t.Cleanup(p.kill)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	backoff := 2 * time.Millisecond
	for {
		select {
		case <-p.done:
			return "", nil, fmt.Errorf("%w: %s on %s exited before answering", errNotOurs, name, addr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		mine, perr := ours(ctx, c)
		cancel()
		if perr == nil && mine {
			return addr, p, nil
		}
		if perr == nil {
			p.kill()
			return "", nil, fmt.Errorf("%w: another server answers on %s", errNotOurs, addr)
		}
		if time.Now().After(deadline) {
			p.kill()
			return "", nil, fmt.Errorf("%s on %s did not answer within %v: %v", name, addr, readyTimeout, perr)
		}
		select {
		case <-p.done:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// ownership tells whether the server that answers on c is the one a start
// started. An error means no server answered yet.
type ownership func(context.Context, *redis.Client) (bool, error)

// dirIs is the ownership of a server whose working directory (CONFIG GET
// dir) is dir.
func dirIs(dir string) ownership {
	return func(ctx context.Context, c *redis.Client) (bool, error) {
		got, err := c.ConfigGet(ctx, "dir").Result()
		return err == nil && got["dir"] == dir, err
	}
}

// configFileIs is the ownership of a server (a Sentinel, which has no
// CONFIG GET) started from the configuration file conf (INFO server's
// config_file).
func configFileIs(conf string) ownership {
	return func(ctx context.Context, c *redis.Client) (bool, error) {
		info, err := c.Info(ctx, "server").Result()
		return err == nil && strings.Contains(info, "config_file:"+conf+"\r\n"), err
	}
}
