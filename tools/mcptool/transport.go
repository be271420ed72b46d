package mcptool

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/internal/clip"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateAfter is how long a stdio server may take to exit once its
// stdin is closed before it is sent SIGTERM.
const terminateAfter = 5 * time.Second

// attempt is what one connection attempt holds besides its transport.
type attempt struct {
	// started tells the attempt that Connect has returned (the process
	// runs, ran, or never started): call it once Connect returns,
	// whatever it returned.
	started func()
	// cleanup releases what the attempt holds; call it when connecting
	// fails.
	cleanup func()
	// stderr waits until a stdio server's stderr is closed (the process
	// ended: call it after cleanup or after closing the session) and
	// returns its last lines, scrubbed and clipped; "" for none.
	stderr func() string
}

// Bounds of the stderr a failure shows: its last lines, at most so long.
const (
	stderrLines = 5
	stderrRunes = 600
)

// transport builds the transport of one connection attempt.
func (s *server) transport() (mcp.Transport, attempt, error) {
	none := attempt{started: func() {}, cleanup: func() {}, stderr: func() string { return "" }}
	if s.opts.transport != nil {
		t, err := s.opts.transport(s.cfg)
		return t, none, err
	}
	if s.cfg.URL != "" {
		hc := &http.Client{Transport: headerTransport{headers: s.headers(), base: http.DefaultTransport}}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, none, nil
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = s.childEnv()
	// A pipe of our own, not cmd.StderrPipe: Wait closes that one as
	// soon as the process ends, and the SDK waits for a server that
	// failed the handshake at once, so what it wrote last (its reason)
	// was lost when the logger below had not read it yet. This one ends
	// when the process has ended and our copy of its write end is closed
	// (started).
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, none, err
	}
	cmd.Stderr = pw
	done := make(chan struct{})
	tail := &lastLines{max: stderrLines}
	s.wg.Go(func() {
		defer close(done)
		s.logStderr(pr, tail)
		_ = pr.Close()
	})
	var once sync.Once
	started := func() { once.Do(func() { _ = pw.Close() }) }
	// Called when Connect fails: the logger ends with the process (or at
	// once, when it never started).
	cleanup := func() {
		started()
		<-done
	}
	said := func() string {
		<-done
		return clip.Runes(s.scrub.Hide(strings.Join(tail.get(), " | ")), stderrRunes)
	}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, attempt{started: started, cleanup: cleanup, stderr: said}, nil
}

// lastLines keeps the last max lines written to it.
type lastLines struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s = strings.TrimSpace(s); s == "" {
		return
	}
	l.lines = append(l.lines, s)
	if len(l.lines) > l.max {
		l.lines = l.lines[len(l.lines)-l.max:]
	}
}

func (l *lastLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// childEnv is the whole environment of a stdio server: PATH, HOME and the
// variables the config names, with the bot's values.
func (s *server) childEnv() []string {
	var env []string
	for _, n := range append([]string{"PATH", "HOME"}, s.cfg.Env...) {
		if v := s.getenv(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// headers are the HTTP headers with their values from the environment.
func (s *server) headers() http.Header {
	h := http.Header{}
	for name, env := range s.cfg.Headers {
		if v := s.getenv(env); v != "" {
			h.Set(name, v)
		}
	}
	return h
}

// logStderr logs a stdio server's stderr line by line (it never reaches
// the model), scrubbed of the server's secrets.
func (s *server) logStderr(r io.Reader, tail *lastLines) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		s.log.Debug("mcp server stderr", "line", s.scrub.Hide(sc.Text()))
		tail.add(sc.Text())
	}
	// A line longer than the buffer ends the scan: the rest is read and
	// dropped, so that the server never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		r.Header[k] = append([]string(nil), vs...)
	}
	return t.base.RoundTrip(r)
}

var _ http.RoundTripper = headerTransport{}

// discard is a logger that drops everything.
var discard = slog.New(slog.DiscardHandler)
