package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/redact"
)

// Backoff between connection attempts: it starts at minBackoff, doubles
// after every failed attempt up to maxBackoff, and each wait is drawn
// between half and all of it (jitter, so that restarted servers are not
// hit by every replica at once). A session that was up resets it.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Options are what Start and Probe need besides the configs.
type Options struct {
	// Logger receives connection events and the servers' stderr; nil: none.
	Logger *slog.Logger
	// Getenv reads the environment variables the configs name; nil: os.Getenv.
	Getenv func(string) string
	// OnChange is called whenever the tools a server offers change: with
	// the new tool objects when it comes up and when its list changes
	// (tools/list_changed), and with nil when its session ends (its tools
	// leave the registry while it is down; a call to one of them then fails
	// as unknown, and nothing is sent). Calls are serialised across
	// servers, and never made after Close returns. Hand the tools to
	// agent.Registry.SetGroup(server, tools...). May be nil.
	OnChange func(server string, tools []agent.Tool)
	// Clock times the backoff between connection attempts; nil: the wall clock.
	Clock clock.Clock
	// Version is the client version told to servers (clientInfo).
	Version string

	// transport, when set (tests), replaces the transport a config names.
	transport func(ServerConfig) (mcp.Transport, error)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = discard
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

// ServerStatus is one server's state, for /readyz, /metrics and the logs.
type ServerStatus struct {
	// Name is the server's name.
	Name string
	// Transport is "stdio" or "http".
	Transport string
	// Up reports a live session whose tools are offered.
	Up bool
	// Err says why the server is down ("" when up); it holds no secret.
	Err string
	// Tools is how many tools it offers now.
	Tools int
	// Required is the config's required.
	Required bool
	// Since is when Up last changed (or the first attempt ended).
	Since time.Time
	// Protocol is the MCP revision negotiated ("2025-11-25"), "" when down.
	Protocol string
	// Calls counts the tool calls sent to the server since Start; Errors
	// those that failed (a transport error, a timeout or isError).
	Calls, Errors uint64
}

// Manager keeps one session per configured MCP server, reconnecting with
// backoff, and offers their tools.
type Manager struct {
	servers  []*server
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	changeMu sync.Mutex // serialises OnChange
	closed   bool       // under changeMu
	once     sync.Once
}

// server is one configured server and its current session.
type server struct {
	cfg    ServerConfig
	opts   Options
	m      *Manager // nil for Probe
	log    *slog.Logger
	getenv func(string) string
	scrub  redact.Values
	wg     *sync.WaitGroup

	calls, errors atomic.Uint64

	mu       sync.Mutex
	cs       *mcp.ClientSession // nil while down
	err      string
	since    time.Time
	protocol string
	tools    []agent.Tool
	attempts int
}

func newServer(c ServerConfig, opts Options, m *Manager, wg *sync.WaitGroup) *server {
	return &server{
		cfg:    c,
		opts:   opts,
		m:      m,
		log:    opts.Logger.With("mcp_server", c.Name),
		getenv: opts.Getenv,
		scrub:  redact.NewValues(secretsOf(c, opts.Getenv)...),
		wg:     wg,
		err:    "not connected yet",
	}
}

// Start connects to every server in parallel and returns once each is up
// or has failed its first attempt (bounded by its StartTimeout), or ctx
// is done. It never fails: a server that is down is retried in the
// background, with backoff, until Close. ctx bounds only the wait.
func Start(ctx context.Context, servers []ServerConfig, opts Options) *Manager {
	opts = opts.withDefaults()
	m := &Manager{}
	root, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	firsts := make([]chan struct{}, len(servers))
	for i, c := range servers {
		s := newServer(c, opts, m, &m.wg)
		m.servers = append(m.servers, s)
		firsts[i] = make(chan struct{})
		first := firsts[i]
		m.wg.Go(func() { s.loop(root, sync.OnceFunc(func() { close(first) })) })
	}
	for _, f := range firsts {
		select {
		case <-f:
		case <-ctx.Done():
			return m
		}
	}
	return m
}

// Tools returns every tool offered now, sorted by name.
func (m *Manager) Tools() []agent.Tool {
	var out []agent.Tool
	for _, s := range m.servers {
		s.mu.Lock()
		out = append(out, s.tools...)
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Status returns every server's state, in config order.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		s.mu.Lock()
		out = append(out, ServerStatus{
			Name:      s.cfg.Name,
			Transport: s.cfg.Transport(),
			Up:        s.cs != nil,
			Err:       s.err,
			Tools:     len(s.tools),
			Required:  s.cfg.Required,
			Since:     s.since,
			Protocol:  s.protocol,
			Calls:     s.calls.Load(),
			Errors:    s.errors.Load(),
		})
		s.mu.Unlock()
	}
	return out
}

// Ready is nil unless a required server is down; the error names each
// and says why.
func (m *Manager) Ready() error {
	var errs []error
	for _, st := range m.Status() {
		if st.Required && !st.Up {
			errs = append(errs, fmt.Errorf("required MCP server %s is down: %s", st.Name, st.Err))
		}
	}
	return errors.Join(errs...)
}

// Close ends every session, stops the stdio servers (stdin closed, then
// SIGTERM after 5s) and waits for the background work to end. OnChange
// is not called after it returns.
func (m *Manager) Close() error {
	m.once.Do(func() {
		m.cancel()
		m.wg.Wait()
		m.changeMu.Lock()
		m.closed = true
		m.changeMu.Unlock()
	})
	return nil
}

// loop keeps a session to the server until ctx is done.
func (s *server) loop(ctx context.Context, firstDone func()) {
	backoff := minBackoff
	for {
		wasUp := s.serve(ctx, firstDone)
		firstDone()
		if ctx.Err() != nil {
			return
		}
		if wasUp {
			backoff = minBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Info("mcp server: retrying", "in", wait.Round(time.Millisecond).String())
		t := s.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// serve makes one connection, offers its tools and serves list changes
// until the session ends or ctx is done. It reports whether the session
// came up.
func (s *server) serve(ctx context.Context, up func()) bool {
	refresh := make(chan struct{}, 1)
	cs, list, err := s.connect(ctx, func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case refresh <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.setDown(err, false)
		return false
	}
	s.setUp(cs, list)
	up()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			_ = cs.Close()
			<-ended
			s.setDown(errors.New("closed"), true)
			return true
		case err := <-ended:
			_ = cs.Close()
			reason := "the session ended"
			if err != nil {
				reason += ": " + err.Error()
			}
			s.setDown(errors.New(reason), true)
			return true
		case <-refresh:
			lctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
			list, _, err := s.list(lctx, cs)
			cancel()
			if err != nil {
				// What the server offers now is unknown: withdraw its tools
				// and start over rather than keep definitions that may be stale.
				s.log.Warn("mcp server: listing tools after list_changed failed; reconnecting", "err", s.scrub.Hide(err.Error()))
				_ = cs.Close()
				continue
			}
			s.publish(list)
		}
	}
}

// connect opens a session and lists its tools within StartTimeout.
func (s *server) connect(ctx context.Context, onListChanged func(context.Context, *mcp.ToolListChangedRequest)) (*mcp.ClientSession, []agent.Tool, error) {
	t, cleanup, err := s.transport()
	if err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "hitlbot", Version: s.opts.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: onListChanged,
	})
	sctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	cs, err := client.Connect(sctx, t, nil)
	if err != nil {
		cleanup()
		where := s.cfg.URL
		if where == "" {
			where = s.cfg.Command
		}
		if sctx.Err() != nil && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("connecting to %s: no answer within start_timeout %s: %w", where, s.cfg.startTimeout(), err)
		}
		if msg := err.Error(); strings.Contains(msg, "Unauthorized") || strings.Contains(msg, "Forbidden") {
			return nil, nil, fmt.Errorf("connecting to %s: %w (check the values of the headers' environment variables: %s)", where, err, strings.Join(headerEnvNames(s.cfg), ", "))
		}
		return nil, nil, fmt.Errorf("connecting to %s: %w", where, err)
	}
	list, _, err := s.list(sctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, fmt.Errorf("listing tools: %w", err)
	}
	return cs, list, nil
}

// list lists the server's tools (every page) and makes the offered ones;
// the infos describe every listed tool, offered or not.
func (s *server) list(ctx context.Context, cs *mcp.ClientSession) ([]agent.Tool, []ToolInfo, error) {
	var (
		tools []agent.Tool
		infos []ToolInfo
		seen  = map[string]bool{}
	)
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		t, skipped := newTool(s, mt)
		if skipped == "" && seen[t.name] {
			skipped = "the server listed it twice"
		}
		info := ToolInfo{Name: s.cfg.Name + Sep + mt.Name, Description: describe(mt), Skipped: skipped}
		info.Effect, info.Source = effectOf(s.cfg.Name, s.cfg.Trusted, mt.Annotations)
		infos = append(infos, info)
		if skipped != "" {
			s.log.Warn("mcp server: tool not offered", "tool", mt.Name, "why", skipped)
			continue
		}
		seen[t.name] = true
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name() < tools[j].Name() })
	return tools, infos, nil
}

// session returns the live session, or nil while the server is down.
func (s *server) session() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// downReason says why the server is down.
func (s *server) downReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *server) setUp(cs *mcp.ClientSession, tools []agent.Tool) {
	s.mu.Lock()
	s.cs, s.err, s.since = cs, "", s.opts.Clock.Now()
	if r := cs.InitializeResult(); r != nil {
		s.protocol = r.ProtocolVersion
	}
	s.mu.Unlock()
	s.log.Info("mcp server up", "protocol", s.protocol, "tools", len(tools))
	s.publish(tools)
}

// setDown records why the server is down; wasUp withdraws its tools.
func (s *server) setDown(err error, wasUp bool) {
	reason := s.scrub.Hide(err.Error())
	s.mu.Lock()
	first := s.attempts == 0
	s.attempts++
	s.cs, s.err, s.protocol = nil, reason, ""
	if wasUp || first {
		s.since = s.opts.Clock.Now()
	}
	s.mu.Unlock()
	if wasUp || first {
		s.log.Warn("mcp server down", "err", reason)
	} else {
		s.log.Debug("mcp server still down", "err", reason)
	}
	if wasUp {
		s.publish(nil)
	}
}

// publish makes tools the server's offer and tells OnChange.
func (s *server) publish(tools []agent.Tool) {
	if s.m == nil {
		return
	}
	s.m.changeMu.Lock()
	defer s.m.changeMu.Unlock()
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	if s.opts.OnChange != nil && !s.m.closed {
		s.opts.OnChange(s.cfg.Name, tools)
	}
}

// ToolInfo describes one tool a server lists, for `bot check -probe`.
type ToolInfo struct {
	// Name is the full name the model would see (fs__read_file).
	Name string
	// Effect is the effect derived from the annotations (and trust).
	Effect approval.Effect
	// Source says where Effect came from.
	Source approval.Words
	// Description is what the model would read.
	Description string
	// Skipped says why the tool is not offered, or "".
	Skipped string
}

// Probe connects once to c's server, lists its tools and closes: for
// `bot check -probe`. The error says why it could not.
func Probe(ctx context.Context, c ServerConfig, opts Options) ([]ToolInfo, error) {
	opts = opts.withDefaults()
	var wg sync.WaitGroup
	s := newServer(c, opts, nil, &wg)
	defer wg.Wait()
	cs, _, err := s.connect(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %s", c.Name, s.scrub.Hide(err.Error()))
	}
	defer cs.Close()
	lctx, cancel := context.WithTimeout(ctx, c.startTimeout())
	defer cancel()
	_, infos, err := s.list(lctx, cs)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: listing tools: %s", c.Name, s.scrub.Hide(err.Error()))
	}
	return infos, nil
}

// headerEnvNames are the names of the variables c's headers come from, sorted.
func headerEnvNames(c ServerConfig) []string {
	var out []string
	for _, n := range c.Headers {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) == 0 {
		out = []string{"none configured"}
	}
	return out
}
