package mcptool

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateAfter is how long a stdio server may take to exit once its
// stdin is closed before it is sent SIGTERM.
const terminateAfter = 5 * time.Second

// transport builds the transport of one connection attempt, and a
// function to call when connecting fails (it releases what the attempt
// holds).
func (s *server) transport() (mcp.Transport, func(), error) {
	if s.opts.transport != nil {
		t, err := s.opts.transport(s.cfg)
		return t, func() {}, err
	}
	if s.cfg.URL != "" {
		hc := &http.Client{Transport: headerTransport{headers: s.headers(), base: http.DefaultTransport}}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, func() {}, nil
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = s.childEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	s.wg.Go(func() {
		defer close(done)
		s.logStderr(stderr)
	})
	// Wait closes the pipe; when the command never started, close it here
	// so that the logger above ends. Called when Connect fails.
	cleanup := func() {
		if cmd.Process == nil {
			_ = stderr.Close()
		}
		<-done
	}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, cleanup, nil
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
func (s *server) logStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		s.log.Debug("mcp server stderr", "line", s.scrub.Hide(sc.Text()))
	}
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
