package web_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

var quiet = slog.New(slog.DiscardHandler)

// server is the whole stack behind a real HTTP server: memory store, real
// engine, real agent loop, the router and the web channel.
type server struct {
	srv    *httptest.Server
	web    *web.Web
	router *channels.Router
	engine *approval.Engine
	erase  *hitltest.Tool
	clk    *clock.Fake // the engine's clock
}

type option func(*web.Config)

// withLang sets the language of the page, its frames and the cards.
func withLang(lang string) option { return func(c *web.Config) { c.Lang = lang } }

// withPageLang sets the page's language (not the browser's).
func withPageLang(lang string) option { return func(c *web.Config) { c.PageLang = lang } }

// withGreeting sets the page's greeting.
func withGreeting(g web.Greeting) option { return func(c *web.Config) { c.Greeting = g } }

func newServer(t testing.TB, opts ...option) *server {
	t.Helper()
	return newServerEffectModel(t, approval.EffectDestructive, nil, opts...)
}

// newServerEffect is newServer with erase's effect (EffectWrite: a MEDIUM
// call, whose approval may grant the conversation a window).
func newServerEffect(t testing.TB, effect approval.Effect, opts ...option) *server {
	t.Helper()
	return newServerEffectModel(t, effect, nil, opts...)
}

// newServerModel is newServer whose agent answers with m (nil: the
// scripted hitltest.Model).
func newServerModel(t testing.TB, m agent.Model, opts ...option) *server {
	t.Helper()
	return newServerEffectModel(t, approval.EffectDestructive, m, opts...)
}

// newServerEffectModel is newServer with erase's effect and the agent's
// model m (nil: the scripted hitltest.Model).
func newServerEffectModel(t testing.TB, effect approval.Effect, m agent.Model, opts ...option) *server {
	t.Helper()
	return newServerWith(t, effect, m, nil, opts...)
}

// newServerWith is newServerEffectModel under the approval policy pc
// (nil: the default one).
func newServerWith(t testing.TB, effect approval.Effect, m agent.Model, pc *approval.PolicyConfig, opts ...option) *server {
	t.Helper()
	return newServerBeside(t, effect, m, pc, nil, opts...)
}

// newServerBeside is newServerWith with more channels registered beside
// the web one (an approval's escalation may ask in their chats).
func newServerBeside(t testing.TB, effect approval.Effect, m agent.Model, pc *approval.PolicyConfig, beside []channels.Channel, opts ...option) *server {
	t.Helper()
	return newServerOn(t, memstore.New(memstore.Options{}), effect, m, pc, beside, opts...)
}

// newServerOn is newServerBeside on the approval store given.
func newServerOn(t testing.TB, store approval.Store, effect approval.Effect, m agent.Model, pc *approval.PolicyConfig, beside []channels.Channel, opts ...option) *server {
	t.Helper()
	erase := hitltest.NewTool("erase", effect)
	erase.About = "Erases the named thing for good"
	return newServerTools(t, store, erase, nil, m, pc, beside, opts...)
}

// newServerTools is newServerOn with the tool erase and more tools in the
// registry.
func newServerTools(t testing.TB, store approval.Store, erase *hitltest.Tool, more []agent.Tool, m agent.Model, pc *approval.PolicyConfig,
	beside []channels.Channel, opts ...option) *server {
	t.Helper()
	s := &server{erase: erase, clk: clock.NewFake(time.Now())}
	cfg := web.Config{AllowAnonymousLocal: true, Logger: quiet, PingInterval: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	// One language for the page, the cards and the engine's outcomes, as
	// cmd/bot configures them from approval.lang.
	// The cards are in the page's language, as cmd/bot configures both
	// from approval.lang.
	lang := cfg.Lang
	if lang == "" {
		lang = "en"
	}
	st := hitltest.New(t, hitltest.Config{Store: store, Tools: append([]agent.Tool{s.erase}, more...), Clock: s.clk, Model: m, Policy: pc, Lang: lang,
		// Other agents' calls as the server wires them (questions).
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
		}})
	cfg.Tools, cfg.Views = st.Tools, st.Presenter
	w, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st.Register(t, w)
	st.Register(t, beside...)
	st.Start(t)
	s.srv = httptest.NewServer(w.Handler())
	t.Cleanup(s.srv.Close)
	s.web, s.router, s.engine = w, st.Router, st.Engine
	return s
}

func (s *server) wsURL(query string) string {
	u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws"
	if query != "" {
		u += "?" + query
	}
	return u
}

// frame is one server frame, decoded loosely.
type frame map[string]any

func (f frame) str(k string) string { s, _ := f[k].(string); return s }
func (f frame) meta(k string) any {
	m, _ := f["metadata"].(map[string]any)
	return m[k]
}

// client is a test WebSocket client that records every frame it gets.
type client struct {
	t      testing.TB
	ws     *websocket.Conn
	frames chan frame
	unread []frame // received, not returned by expect (used by the test goroutine only)
	mu     sync.Mutex
	all    []frame
}

func (s *server) dial(t testing.TB, query string, hdr http.Header) (*client, *http.Response, error) {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial(s.wsURL(query), hdr)
	if err != nil {
		return nil, resp, err
	}
	c := &client{t: t, ws: ws, frames: make(chan frame, 256)}
	go func() {
		defer close(c.frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var f frame
			if err := json.Unmarshal(data, &f); err != nil {
				t.Errorf("server sent something that is not JSON: %s", data)
				return
			}
			c.mu.Lock()
			c.all = append(c.all, f)
			c.mu.Unlock()
			c.frames <- f
		}
	}()
	t.Cleanup(func() { ws.Close() })
	return c, resp, nil
}

func (s *server) connect(t testing.TB, query, session string) *client {
	t.Helper()
	c, _, err := s.dial(t, query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if session != "" {
		c.send(map[string]any{"type": "hello", "session_id": session})
		c.expect("hello", nil)
	}
	return c
}

func (c *client) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// expect returns the first frame, received so far or still to come, of
// type typ that pred accepts (nil: any) and that no earlier expect
// returned. Frames of other types stay available: the order in which
// concurrent frames arrive does not matter.
func (c *client) expect(typ string, pred func(frame) bool) frame {
	c.t.Helper()
	match := func(f frame) bool { return f.str("type") == typ && (pred == nil || pred(f)) }
	for i, f := range c.unread {
		if match(f) {
			c.unread = append(c.unread[:i:i], c.unread[i+1:]...)
			return f
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("socket closed while waiting for %s; got %v", typ, c.seen())
			}
			if match(f) {
				return f
			}
			c.unread = append(c.unread, f)
		case <-timeout:
			c.t.Fatalf("no %s frame; got %v", typ, c.seen())
		}
	}
}

// seen returns every frame received so far.
func (c *client) seen() []frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.all...)
}

func (c *client) message(session, text string) {
	c.t.Helper()
	c.send(map[string]any{"type": "user.message", "session_id": session, "content": text})
}

func (c *client) respond(session, step string, confirmed bool, comment string) {
	c.t.Helper()
	c.send(map[string]any{"type": "user.response", "session_id": session, "step_id": step,
		"content": map[string]any{"confirmed": confirmed, "message": comment}})
}

func withContent(sub string) func(frame) bool {
	return func(f frame) bool { return strings.Contains(f.str("content"), sub) }
}

func withStep(step string) func(frame) bool {
	return func(f frame) bool { return f.str("step_id") == step }
}

func withCode(code string) func(frame) bool {
	return func(f frame) bool { return f.str("code") == code }
}

func newPlainServer(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
