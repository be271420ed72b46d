// Package testredis gives tests a real Redis.
//
// Two helpers cover the two kinds of test:
//
//   - Start(t) returns a go-redis client and a unique key prefix ("t<16 hex>:").
//     When HITLBOT_TEST_REDIS is set (a redis://, rediss:// or unix:// URL, or
//     host:port) the client talks to that server. Otherwise one throwaway
//     redis-server is started on a free 127.0.0.1 port the first time a test of
//     the package needs it, and every test of that test binary shares it.
//     Tests are isolated by the prefix, never by FLUSHDB or SELECT: put it in
//     front of every key and every pub/sub channel name, and do not run
//     FLUSHDB, FLUSHALL or commands that scan the whole keyspace, so that
//     parallel tests and packages (go test runs packages in parallel against
//     the one HITLBOT_TEST_REDIS) never collide. When the test ends, the keys
//     under its prefix are deleted (best effort) and the client is closed.
//
//   - StartServer(t) starts a redis-server of the test's own, on its own port,
//     for fault tests: Stop kills it mid-flow, Restart brings it back on the
//     same address, empty. It always needs the redis-server binary, also when
//     HITLBOT_TEST_REDIS is set.
//
// When neither a server address nor the redis-server binary is available, both
// fail the test (t.Fatalf) with "redis-server not found: install Debian's
// redis-server or set HITLBOT_TEST_REDIS": tests of the Redis store must never
// skip silently in CI.
//
// # Lifetime of the servers
//
// A package whose tests use Start may call Main from its TestMain:
//
//	func TestMain(m *testing.M) { testredis.Main(m) }
//
// Main runs the tests, then stops the shared server and removes its
// temporary directory before the binary exits. Main is optional: every
// redis-server this package starts runs under a small sh wrapper that holds
// the read end of a pipe whose only write end is held by the test binary.
// When the test binary exits for any reason (end of tests, os.Exit, a panic,
// a -timeout, SIGKILL) the kernel closes that write end, and the wrapper kills
// redis-server and removes its directory. So nothing leaks without Main
// either; Main just stops the server at a well-defined moment (before goleak
// checks, for instance). The only package-level state is the shared server
// itself, created once (sync.Once) per test binary.
//
// Readiness is detected by polling the server (with a short backoff and an
// overall deadline, never a fixed sleep), and the server answering must be
// the one this package started: its CONFIG GET dir must be our temporary
// directory, so a port taken by someone else between the choice of the port
// and the start is detected and another port is tried. The server's log is
// kept in memory and written to the test log when the server fails to start
// or the test fails.
package testredis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
)

// EnvVar names the environment variable that points the tests at an existing
// Redis: a redis:// (or rediss://, unix://) URL, or host:port.
const EnvVar = "HITLBOT_TEST_REDIS"

// notFound is the message of every failure caused by a missing redis-server.
const notFound = "redis-server not found: install Debian's redis-server or set " + EnvVar

const (
	// readyTimeout bounds the wait for a started redis-server to answer.
	readyTimeout = 15 * time.Second
	// pingTimeout bounds the wait for the server of HITLBOT_TEST_REDIS to answer.
	pingTimeout = 5 * time.Second
	// stopTimeout bounds the wait for the wrapper to exit once told to stop.
	stopTimeout = 10 * time.Second
	// startAttempts is how many ports are tried when a start loses a race
	// for its port.
	startAttempts = 5
)

// Start returns a client of a Redis for this test and a key prefix unique to
// this call. See the package documentation for where the server comes from.
// The client is closed and the keys under the prefix are deleted when the test
// ends.
func Start(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	var (
		opt  *redis.Options
		proc *process
	)
	if v := strings.TrimSpace(os.Getenv(EnvVar)); v != "" {
		o, err := parseAddr(v)
		if err != nil {
			t.Fatalf("testredis: %s=%q: %v", EnvVar, v, err)
		}
		opt = o
	} else {
		p, err := sharedServer()
		if err != nil {
			t.Fatalf("testredis: %v", err)
		}
		proc = p
		opt = &redis.Options{Addr: p.addr}
	}

	if err := pingUntil(opt, pingTimeout); err != nil {
		if proc != nil {
			t.Logf("redis-server log:\n%s", proc.log.tail(8<<10))
		}
		t.Fatalf("testredis: Redis at %s does not answer PING: %v", opt.Addr, err)
	}
	client := redis.NewClient(opt)
	prefix := newPrefix()
	t.Cleanup(func() {
		if t.Failed() && proc != nil {
			t.Logf("shared redis-server log (tail):\n%s", proc.log.tail(4<<10))
		}
		deletePrefix(client, prefix)
		_ = client.Close()
	})
	return client, prefix
}

// Main runs the tests of a package, stops the redis-server shared by its
// tests, and exits with the tests' status. Call it from TestMain; it is
// optional (see the package documentation).
func Main(m *testing.M) {
	code := m.Run()
	stopShared()
	os.Exit(code)
}

// Server is a redis-server dedicated to one test, for fault tests. Its methods
// are safe for concurrent use; Restart must be called from the test's
// goroutine because it fails the test when the server cannot start.
type Server struct {
	t    testing.TB
	bin  string
	addr string
	log  *logBuffer

	mu   sync.Mutex
	proc *process // nil while stopped
}

// StartServer starts a redis-server for this test alone, on a free 127.0.0.1
// port, and stops it when the test ends. It needs the redis-server binary even
// when HITLBOT_TEST_REDIS is set.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := findServer()
	if err != nil {
		t.Fatalf("testredis: %v (StartServer needs the binary even when %s is set)", err, EnvVar)
	}
	log := &logBuffer{}
	p, err := startFresh(bin, log)
	if err != nil {
		t.Logf("redis-server log:\n%s", log.tail(16<<10))
		t.Fatalf("testredis: %v", err)
	}
	s := &Server{t: t, bin: bin, addr: p.addr, log: log, proc: p}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("redis-server %s log:\n%s", s.addr, log.tail(16<<10))
		}
	})
	return s
}

// Addr returns the server's host:port. It does not change across Restart.
func (s *Server) Addr() string { return s.addr }

// Client returns a new client of the server; it is closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server (SIGKILL: no shutdown, no save) and returns once it
// is gone. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
}

// Restart stops the server if it runs, then starts a new, empty one on the
// same address and returns once it answers. It fails the test if the server
// cannot start.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	_, port, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(port)
	var err error
	for attempt := 0; attempt < startAttempts; attempt++ {
		var p *process
		p, err = launch(s.bin, n, s.log)
		if err == nil {
			err = p.waitReady(readyTimeout)
			if err == nil {
				s.proc = p
				return
			}
			p.stop()
		}
		if !errors.Is(err, errLostPort) {
			break
		}
	}
	s.t.Logf("redis-server log:\n%s", s.log.tail(16<<10))
	s.t.Fatalf("testredis: restart on %s: %v", s.addr, err)
}

// shared is the redis-server shared by the tests of one test binary.
var shared struct {
	once sync.Once
	mu   sync.Mutex
	proc *process
	err  error
}

func sharedServer() (*process, error) {
	shared.once.Do(func() {
		bin, err := findServer()
		if err != nil {
			shared.err = err
			return
		}
		log := &logBuffer{}
		p, err := startFresh(bin, log)
		if err != nil {
			shared.err = fmt.Errorf("%w\nredis-server log:\n%s", err, log.tail(16<<10))
			return
		}
		shared.mu.Lock()
		shared.proc = p
		shared.mu.Unlock()
	})
	if shared.err != nil {
		return nil, shared.err
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.proc == nil {
		return nil, errors.New("the shared redis-server was stopped by Main; Start called after the tests ended")
	}
	return shared.proc, nil
}

func stopShared() {
	shared.mu.Lock()
	p := shared.proc
	shared.proc = nil
	shared.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

func findServer() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New(notFound)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		return "", errors.New("testredis: sh not found on PATH (it supervises redis-server)")
	}
	return bin, nil
}

// parseAddr reads the value of HITLBOT_TEST_REDIS.
func parseAddr(v string) (*redis.Options, error) {
	if strings.Contains(v, "://") {
		return redis.ParseURL(v)
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return nil, fmt.Errorf("want a redis:// URL or host:port: %v", err)
	}
	return &redis.Options{Addr: v}, nil
}

func newPrefix() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "t" + hex.EncodeToString(b[:]) + ":"
}

// deletePrefix removes the keys under prefix, best effort. The prefix holds
// only hex digits, 't' and ':', none of which is special in a MATCH pattern.
func deletePrefix(c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

// pingUntil PINGs the server of opt until it answers or d has passed. Each
// attempt is a single dial, so the error returned is the last real one
// (connection refused, wrong password...), not a context deadline.
func pingUntil(opt *redis.Options, d time.Duration) error {
	probeOpt := *opt
	probeOpt.MaxRetries = -1
	probeOpt.DialerRetries = 1
	probeOpt.DialTimeout = time.Second
	probe := redis.NewClient(&probeOpt)
	defer probe.Close()
	deadline := time.Now().Add(d)
	backoff := 5 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := probe.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().Add(backoff).After(deadline) {
			return err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// wrapper supervises one redis-server: $1 is the server's directory, the rest
// is its command line. It keeps the read end of the pipe on its standard input
// as fd 3 for a watcher that kills the server as soon as that pipe reaches end
// of file, that is when the test binary closes it (Stop) or exits. Then it
// waits for the server, removes the directory and exits with its status.
const wrapper = `dir=$1; shift
exec 3<&0 0</dev/null
"$@" 3<&- &
server=$!
(read -r _ <&3; kill -9 "$server" 2>/dev/null) &
watch=$!
exec 3<&-
wait "$server"
status=$?
kill "$watch" 2>/dev/null
rm -rf "$dir"
exit "$status"
`

// process is one running redis-server and its wrapper.
type process struct {
	addr     string
	dir      string // as created
	realDir  string // as the server reports it (symlinks resolved)
	cmd      *exec.Cmd
	lifeline io.WriteCloser // closing it kills the server
	log      *logBuffer
	done     chan struct{} // closed once the wrapper has exited
	stopOnce sync.Once
}

// errLostPort reports that a server could not have the port it was given
// (another process took it first); a retry with another port may work.
var errLostPort = errors.New("redis-server could not listen on its port")

// startFresh starts a server on a free port, trying other ports if it loses
// the race for one.
func startFresh(bin string, log *logBuffer) (*process, error) {
	var err error
	for attempt := 0; attempt < startAttempts; attempt++ {
		var port int
		port, err = freePort()
		if err != nil {
			return nil, err
		}
		var p *process
		p, err = launch(bin, port, log)
		if err != nil {
			return nil, err
		}
		if err = p.waitReady(readyTimeout); err == nil {
			return p, nil
		}
		p.stop()
		if !errors.Is(err, errLostPort) {
			return nil, err
		}
	}
	return nil, err
}

// handedOut holds the ports freePort has returned in this process. The
// kernel may give a port that was just closed to the next bind to port 0,
// so two servers started one after the other could otherwise be told the
// same port (it happened: a Sentinel test's master and replica).
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// freePort returns a 127.0.0.1 port that is free now and that it has not
// returned before in this process. Another process may still take it
// before the server binds it: the starts detect that and try again.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("testredis: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("testredis: find a free port: the kernel gave only ports already handed out")
}

func launch(bin string, port int, log *logBuffer) (*process, error) {
	dir, err := os.MkdirTemp("", "hitlbot-testredis-")
	if err != nil {
		return nil, fmt.Errorf("testredis: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		realDir = dir
	}
	args := []string{"-c", wrapper, "testredis", dir, bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", dir,
	}
	cmd := exec.Command("sh", args...)
	cmd.Stdout = log
	cmd.Stderr = log
	lifeline, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testredis: %w", err)
	}
	fmt.Fprintf(log, "--- testredis: starting %s on 127.0.0.1:%d in %s\n", bin, port, dir)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testredis: start %s: %w", bin, err)
	}
	p := &process{
		addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:      dir,
		realDir:  realDir,
		cmd:      cmd,
		lifeline: lifeline,
		log:      log,
		done:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls the server until it answers as the server we started, the
// server exits, or d has passed.
func (p *process) waitReady(d time.Duration) error {
	c := redis.NewClient(&redis.Options{
		Addr:            p.addr,
		DialTimeout:     time.Second,
		MaxRetries:      -1,
		Protocol:        2,
		DisableIdentity: true,
	})
	defer c.Close()
	deadline := time.Now().Add(d)
	backoff := 2 * time.Millisecond
	var lastErr error
	for {
		select {
		case <-p.done:
			// Our server is gone: most likely the port was taken.
			return fmt.Errorf("%w: redis-server on %s exited before answering", errLostPort, p.addr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := c.ConfigGet(ctx, "dir").Result()
		cancel()
		if err == nil {
			if got["dir"] == p.realDir || got["dir"] == p.dir {
				return nil
			}
			return fmt.Errorf("%w: %s is answered by another Redis (dir %q)", errLostPort, p.addr, got["dir"])
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("testredis: redis-server on %s did not answer within %v: %v", p.addr, d, lastErr)
		}
		select {
		case <-p.done:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// stop kills the server and waits for its wrapper to exit. It is idempotent.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		_ = p.lifeline.Close()
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
			// The wrapper did not react: kill it. Its server may survive,
			// but this does not happen short of a broken sh.
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		_ = os.RemoveAll(p.dir)
	})
}

// logBuffer collects a server's output for the test log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep memory bounded for long-running benchmarks.
	if b.buf.Len() > 1<<20 {
		keep := append([]byte("[... log truncated ...]\n"), b.buf.Bytes()[b.buf.Len()-(256<<10):]...)
		b.buf.Reset()
		b.buf.Write(keep)
	}
	return b.buf.Write(p)
}

// tail returns at most the last n bytes of the log.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "[...]\n" + s[len(s)-n:]
	}
	return s
}
