package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
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
	// as unknown, and nothing is sent). It is also called for a server
	// that gains or loses a name another server lists (see Refusal).
	// Calls are serialised across servers, and never made after Close
	// returns. Hand the tools to agent.Registry.Offer(group, tools...) and
	// return the names it refused (taken by a built-in tool): the status
	// says them. May be nil.
	OnChange func(server string, tools []agent.Tool) (taken []string)
	// Clock times the backoff between connection attempts; nil: the wall clock.
	Clock clock.Clock
	// Version is the client version told to servers (clientInfo).
	Version string
	// Elicit, when set, asks a person a server's form elicitation
	// (elicitation/create) that comes while one of its tools runs, in the
	// turn that call runs for (approval.Engine.Elicit: ctx carries the
	// call's approval.Origin and ends with the call); hitlbot then
	// declares capabilities.elicitation (form only). Nil: not declared,
	// and the SDK refuses every elicitation.
	Elicit func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error)

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
	// Refused are the tools the server lists that are not offered because
	// of another server, a built-in tool or a secret (empty while down).
	Refused []Refusal
}

// Refusal is a tool a server lists that is not offered although nothing
// is wrong with it on its own:
//
//   - its full name is also a tool of a server listed before it in
//     tools.mcp.servers (server "a" with tool "b__c" and server "a__b"
//     with tool "c" both make a__b__c): the earlier server has it, as
//     long as the earlier server listed it last time it was up;
//   - a built-in tool has that name (tools.http, tools.shell);
//   - its name holds the value of one of the server's env or headers
//     variables (its name would carry the secret everywhere).
//
// The server's other tools are offered.
type Refusal struct {
	// Tool is the full name (<server>__<tool>), any secret hidden.
	Tool string
	// Reason says why; it holds no secret.
	Reason string
}

// String is "<tool> is not offered: <reason>".
func (r Refusal) String() string { return r.Tool + " is not offered: " + r.Reason }

// Reasons of a Refusal.
const (
	reasonBuiltIn = "a built-in tool has that name"
)

// reasonEarlier is the reason of a name an earlier server has.
func reasonEarlier(server string) string {
	return "MCP server " + server + ", listed before it in tools.mcp.servers, has a tool of that name"
}

// listing is what one tools/list gave: the tools that can be offered and
// those refused for a secret in their name.
type listing struct {
	tools  []agent.Tool
	secret []Refusal
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

	// running are the contexts of the tool calls in flight (Run): an
	// elicitation is asked for the one call it can belong to.
	runMu   sync.Mutex
	running map[*context.Context]struct{}

	mu       sync.Mutex
	cs       *mcp.ClientSession // nil while down
	err      string
	since    time.Time
	protocol string
	attempts int
	// listed is the server's last listing, kept while it is down so that
	// the names it had stay its own (a later server does not take them).
	listed listing
	// offered are the tools handed to OnChange: listed.tools while up,
	// less the names an earlier server has (clash); tools are those the
	// registry took, less the names a built-in tool has (taken).
	offered, tools []agent.Tool
	clash, taken   []Refusal
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
		var refused []Refusal
		if s.cs != nil {
			refused = append(append(append(refused, s.listed.secret...), s.clash...), s.taken...)
		}
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
			Refused:   refused,
		})
		s.mu.Unlock()
	}
	return out
}

// Ready is nil unless a required server is down or one of its tools is
// refused (a Refusal: a required server's tools are all expected); the
// error names each and says why.
func (m *Manager) Ready() error {
	var errs []error
	for _, st := range m.Status() {
		if st.Required && !st.Up {
			errs = append(errs, fmt.Errorf("required MCP server %s is down: %s", st.Name, st.Err))
		}
		if st.Required {
			for _, r := range st.Refused {
				errs = append(errs, fmt.Errorf("required MCP server %s: %s", st.Name, r))
			}
		}
	}
	return errors.Join(errs...)
}

// Warnings say the refused tools (Refusal) of the servers that are not
// required, one line each; the bot is ready nonetheless.
func (m *Manager) Warnings() []string {
	var out []string
	for _, st := range m.Status() {
		if !st.Required {
			for _, r := range st.Refused {
				out = append(out, fmt.Sprintf("MCP server %s: %s", st.Name, r))
			}
		}
	}
	return out
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
			s.publish(&list)
		}
	}
}

// connect opens a session and lists its tools within StartTimeout.
func (s *server) connect(ctx context.Context, onListChanged func(context.Context, *mcp.ToolListChangedRequest)) (*mcp.ClientSession, listing, error) {
	t, at, err := s.transport()
	if err != nil {
		return nil, listing{}, err
	}
	// withStderr adds what a stdio server said on stderr before it
	// failed: its own reason ("None of the specified directories are
	// accessible") beside the SDK's ("client is closing: EOF").
	withStderr := func(err error) error {
		if said := at.stderr(); said != "" {
			return fmt.Errorf("%w; the server's stderr: %s", err, said)
		}
		return err
	}
	co := &mcp.ClientOptions{ToolListChangedHandler: onListChanged}
	if s.opts.Elicit != nil {
		// Form mode only: the SDK declares capabilities.elicitation.form
		// for a handler (URL mode must be declared apart, and is not).
		co.ElicitationHandler = s.elicit
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "hitlbot", Version: s.opts.Version}, co)
	sctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	cs, err := client.Connect(sctx, t, nil)
	at.started()
	if err != nil {
		at.cleanup()
		where := s.cfg.URL
		if where == "" {
			where = s.cfg.Command
		}
		if sctx.Err() != nil && ctx.Err() == nil {
			return nil, listing{}, withStderr(fmt.Errorf("connecting to %s: no answer within start_timeout %s: %w", where, s.cfg.startTimeout(), err))
		}
		if msg := err.Error(); strings.Contains(msg, "Unauthorized") || strings.Contains(msg, "Forbidden") {
			return nil, listing{}, fmt.Errorf("connecting to %s: %w (check the values of the headers' environment variables: %s)", where, err, strings.Join(headerEnvNames(s.cfg), ", "))
		}
		return nil, listing{}, withStderr(fmt.Errorf("connecting to %s: %w", where, err))
	}
	list, _, err := s.list(sctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, listing{}, withStderr(fmt.Errorf("listing tools: %w", err))
	}
	return cs, list, nil
}

// list lists the server's tools (every page) and makes the offered ones;
// the infos describe every listed tool, offered or not. Each definition
// has the server's secrets hidden before anything else reads it
// (hideSecrets), and a tool whose name holds one is refused.
func (s *server) list(ctx context.Context, cs *mcp.ClientSession) (listing, []ToolInfo, error) {
	var (
		l     listing
		infos []ToolInfo
		seen  = map[string]bool{}
	)
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return listing{}, nil, err
		}
		name := s.cfg.Name + Sep + s.scrub.Hide(mt.Name)
		if s.nameHoldsSecret(mt.Name) {
			l.secret = append(l.secret, Refusal{Tool: name, Reason: errSecretName})
			infos = append(infos, ToolInfo{Name: name, Skipped: errSecretName})
			s.log.Warn("mcp server: tool not offered", "tool", name, "why", errSecretName)
			continue
		}
		var (
			t       *tool
			skipped string
		)
		hidden, err := s.hideSecrets(mt)
		if err != nil {
			skipped = "its definition: " + err.Error()
		} else if t, skipped = newTool(s, hidden); skipped == "" && seen[t.name] {
			skipped = "the server listed it twice"
		}
		info := ToolInfo{Name: name, Skipped: skipped}
		if hidden != nil {
			info.Description = describe(hidden)
			info.Effect, info.Source = effectOf(s.cfg.Name, s.cfg.Trusted, hidden.Annotations)
		}
		infos = append(infos, info)
		if skipped != "" {
			s.log.Warn("mcp server: tool not offered", "tool", name, "why", skipped)
			continue
		}
		seen[t.name] = true
		l.tools = append(l.tools, t)
	}
	sort.Slice(l.tools, func(i, j int) bool { return l.tools[i].Name() < l.tools[j].Name() })
	return l, infos, nil
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

func (s *server) setUp(cs *mcp.ClientSession, l listing) {
	s.mu.Lock()
	s.cs, s.err, s.since = cs, "", s.opts.Clock.Now()
	if r := cs.InitializeResult(); r != nil {
		s.protocol = r.ProtocolVersion
	}
	s.mu.Unlock()
	s.log.Info("mcp server up", "protocol", s.protocol, "tools", len(l.tools))
	s.publish(&l)
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

// publish records the server's new listing (nil: it went down, its
// tools leave; its names stay its own) and shares the names out.
func (s *server) publish(l *listing) {
	if s.m == nil {
		return
	}
	s.m.changeMu.Lock()
	defer s.m.changeMu.Unlock()
	if l != nil {
		s.mu.Lock()
		s.listed = *l
		s.mu.Unlock()
	}
	s.m.share(s)
}

// share gives every name to one server: the first in config order that
// listed it (while up, or the last time it was up), so which server has
// a name does not depend on which came up first. Each up server offers
// its listed tools less the names an earlier server has. OnChange is told
// for changed (always) and for every other server whose offer changed, in
// an order that lets a name go before another server takes it (the
// registry keeps a name with whoever holds it): first the servers that
// lose names (with what they keep, when they also gain some), then
// changed, then the servers that gain names. Called under changeMu.
func (m *Manager) share(changed *server) {
	type update struct {
		s            *server
		offer, kept  []agent.Tool
		loses, gains bool
	}
	var ups []update
	holder := map[string]string{} // full name -> server
	for _, s := range m.servers {
		s.mu.Lock()
		up := s.cs != nil
		listed := s.listed.tools
		old := s.offered
		s.mu.Unlock()
		var (
			offer []agent.Tool
			clash []Refusal
		)
		for _, t := range listed {
			if h, ok := holder[t.Name()]; ok {
				clash = append(clash, Refusal{Tool: t.Name(), Reason: reasonEarlier(h)})
				continue
			}
			offer = append(offer, t)
		}
		for _, t := range listed {
			if _, ok := holder[t.Name()]; !ok {
				holder[t.Name()] = s.cfg.Name
			}
		}
		if !up {
			offer, clash = nil, nil
		}
		s.mu.Lock()
		s.clash = clash
		s.mu.Unlock()
		if s != changed && sameTools(offer, old) {
			continue
		}
		if len(clash) > 0 {
			s.log.Warn("mcp server: tools not offered: an earlier server has their names", "refused", clash)
		}
		u := update{s: s, offer: offer}
		if s != changed {
			u.kept = intersect(old, offer)
			u.loses, u.gains = len(u.kept) < len(old), len(u.kept) < len(offer)
		}
		ups = append(ups, u)
	}
	for _, u := range ups {
		switch {
		case u.s == changed || !u.loses:
		case u.gains:
			m.offer(u.s, u.kept)
		default:
			m.offer(u.s, u.offer)
		}
	}
	for _, u := range ups {
		if u.s == changed {
			m.offer(u.s, u.offer)
		}
	}
	for _, u := range ups {
		if u.s != changed && u.gains {
			m.offer(u.s, u.offer)
		}
	}
}

// offer hands s's tools to OnChange and records what the registry took.
func (m *Manager) offer(s *server, tools []agent.Tool) {
	s.mu.Lock()
	s.offered, s.tools, s.taken = tools, tools, nil
	s.mu.Unlock()
	if s.opts.OnChange == nil || m.closed {
		return
	}
	taken := s.opts.OnChange(s.cfg.Name, tools)
	if len(taken) == 0 {
		return
	}
	var refused []Refusal
	for _, n := range taken {
		refused = append(refused, Refusal{Tool: n, Reason: reasonBuiltIn})
	}
	s.log.Warn("mcp server: tools not offered: a built-in tool has their names", "refused", refused)
	s.mu.Lock()
	s.taken = refused
	s.tools = without(tools, taken)
	s.mu.Unlock()
}

// intersect is the tools of a that are also in b (the same objects).
func intersect(a, b []agent.Tool) []agent.Tool {
	var out []agent.Tool
	for _, t := range a {
		if slices.Contains(b, t) {
			out = append(out, t)
		}
	}
	return out
}

// without is tools less the named ones.
func without(tools []agent.Tool, names []string) []agent.Tool {
	var out []agent.Tool
	for _, t := range tools {
		if !slices.Contains(names, t.Name()) {
			out = append(out, t)
		}
	}
	return out
}

// sameTools reports whether a and b hold the same tool objects.
func sameTools(a, b []agent.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
