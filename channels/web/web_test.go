package web_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/words"
)

// stepRE is a step id: "confirm_" + the approval id + "_" + the tool.
var stepRE = regexp.MustCompile(`^confirm_(ap_[0-9a-f]{8}_[0-9a-f]{32})_erase$`)

func TestMessageGetsAnswer(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	if f := c.seen()[0]; f.str("user") != web.LocalUser || f.str("session_id") != "s1" {
		t.Fatalf("hello = %v", f)
	}
	c.message("s1", "hi there")
	f := c.expect("agent.message", withContent("echo: hi there"))
	if f.str("kind") != "answer" || f.str("session_id") != "s1" || f.str("timestamp") == "" {
		t.Fatalf("answer = %v", f)
	}
}

// TestConfirmFlow: a risky call → agent.user_confirm with its metadata →
// user.response confirmed → agent.tool_result and agent.confirm_resolved
// executed; the tool ran once; a second response → ALREADY_DECIDED.
func TestConfirmFlow(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	if m := stepRE.FindStringSubmatch(step); m == nil || m[1] != conf.meta("approval_id") || conf.str("event") != "agent.user_confirm" || conf.str("session_id") != "s1" || conf.str("timestamp") == "" {
		t.Fatalf("confirm = %v", conf)
	}
	args, _ := conf.meta("tool_args").(map[string]any)
	exp, err := time.Parse(time.RFC3339, conf.meta("expires_at").(string))
	if err != nil || exp.Before(time.Now().Add(4*time.Minute)) {
		t.Fatalf("expires_at %v (%v)", conf.meta("expires_at"), err)
	}
	if conf.meta("tool_name") != "erase" || conf.meta("tool_description") != "Erases the named thing for good" ||
		args["target"] != "orders" || conf.meta("requires_confirmation") != true || conf.meta("risk") != "HIGH" ||
		len(conf.meta("payload_sha256").(string)) != 64 || !strings.Contains(conf.str("content"), "erase") {
		t.Fatalf("metadata = %v", conf["metadata"])
	}
	if card, _ := conf["card"].(map[string]any); card["approval_id"] != conf.meta("approval_id") || card["final"] != false {
		t.Fatalf("card = %v", conf["card"])
	}

	c.respond("s1", step, true, "checked")
	res := c.expect("agent.tool_result", nil)
	if res.str("tool_name") != "erase" || res.str("content") != "erase done (run 1)" || res["is_error"] != false {
		t.Fatalf("tool result = %v", res)
	}
	done := c.expect("agent.confirm_resolved", withStep(step))
	if done.str("status") != "executed" || done.str("decided_by") != web.LocalUser || done.str("status_text") != "Executed" {
		t.Fatalf("resolved = %v", done)
	}
	c.expect("agent.message", withContent("summary: erase done (run 1)"))

	c.respond("s1", step, true, "")
	e := c.expect("error", withStep(step))
	if e.str("code") != web.CodeAlreadyDecided || e.str("message") == "" {
		t.Fatalf("duplicate response = %v", e)
	}
	c.respond("s1", step, false, "") // a late reject changes nothing either
	c.expect("error", withCode(web.CodeAlreadyDecided))
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestConcurrentResponses: two tabs answer the same step at once; one
// decision, one run, and the loser gets ALREADY_DECIDED.
func TestConcurrentResponses(t *testing.T) {
	s := newServer(t)
	a := s.connect(t, "", "s1")
	b := s.connect(t, "", "s1")
	a.message("s1", "erase orders")
	step := a.expect("agent.user_confirm", nil).str("step_id")
	if got := b.expect("agent.user_confirm", nil).str("step_id"); got != step {
		t.Fatalf("tab b got step %s, tab a %s", got, step)
	}
	a.respond("s1", step, true, "")
	b.respond("s1", step, true, "")
	a.expect("agent.confirm_resolved", withStep(step))
	b.expect("agent.confirm_resolved", withStep(step))
	// Either tab may have lost the race, and its error may still be on
	// its way: wait for it on both.
	lost := func() (n int) {
		for _, c := range []*client{a, b} {
			for _, f := range c.seen() {
				if f.str("type") == "error" {
					n++
					if f.str("code") != web.CodeAlreadyDecided {
						t.Errorf("error = %v", f)
					}
				}
			}
		}
		return n
	}
	waitfor.True(t, "the losing tab's already_decided error", func() bool { return lost() > 0 })
	if n := lost(); n != 1 {
		t.Fatalf("%d error frames, want 1 (the losing tab's)", n)
	}
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

func TestRejectResponse(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.respond("s1", step, false, "not today")
	if f := c.expect("agent.confirm_resolved", withStep(step)); f.str("status") != "rejected" {
		t.Fatalf("resolved = %v", f)
	}
	if s.erase.Runs.Load() != 0 {
		t.Fatal("a rejected call ran")
	}
}

func TestTypedConfirmResolvesTheStep(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.message("s1", "确认")
	if f := c.expect("agent.confirm_resolved", withStep(step)); f.str("status") != "executed" {
		t.Fatalf("resolved = %v", f)
	}
	c.respond("s1", step, true, "")
	c.expect("error", withCode(web.CodeAlreadyDecided))
	if s.erase.Runs.Load() != 1 {
		t.Fatalf("runs %d", s.erase.Runs.Load())
	}
}

func TestUnknownStep(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.respond("s1", "confirm_ap_00000000_00000000000000000000000000000000_erase", true, "")
	if e := c.expect("error", nil); e.str("code") != web.CodeInvalidStepID || e.str("step_id") == "" {
		t.Fatalf("error = %v", e)
	}
}

func TestInvalidMessages(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "")
	for _, raw := range []string{
		`{"type":"user.message","session_id":"s1","content":`, // not JSON
		`[1,2,3]`,
		`{"type":"user.shout","session_id":"s1"}`,
		`{"type":"user.message","session_id":"../alice/s1","content":"hi"}`,
		`{"type":"user.message","session_id":"` + strings.Repeat("x", 65) + `","content":"hi"}`,
		`{"type":"user.message","session_id":"s1","content":"   "}`,
		`{"type":"user.message","session_id":"s1","content":{"text":"hi"}}`,
		`{"type":"user.message","session_id":"s1","content":"hi","message_id":"no spaces allowed"}`,
		`{"type":"user.response","session_id":"s1","step_id":"x","content":{"message":"no confirmed field"}}`,
	} {
		c.sendRaw(raw)
		if e := c.expect("error", nil); e.str("code") != web.CodeInvalidMessage {
			t.Errorf("%s: error = %v", raw, e)
		}
	}
	// The socket survives bad frames.
	c.message("s1", "still here")
	c.expect("agent.message", withContent("echo: still here"))
}

func TestOversizedFrameClosesSocket(t *testing.T) {
	s := newServer(t, func(c *web.Config) { c.MaxMessageBytes = 256 })
	c := s.connect(t, "", "s1")
	c.message("s1", strings.Repeat("x", 1000))
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-c.frames:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the socket stayed open")
		}
	}
}

func TestTokens(t *testing.T) {
	s := newServer(t, func(c *web.Config) {
		c.AllowAnonymousLocal = false
		c.Tokens = map[string]web.TokenUser{"tok-alice": {User: "alice", Tenant: "acme"}, "tok-bob": {User: "bob", Tenant: "acme"}}
	})
	for _, q := range []string{"", "token=wrong"} {
		_, resp, err := s.dial(t, q, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("query %q: err %v, resp %v; want 401", q, err, resp)
		}
	}
	c := s.connect(t, "token=tok-alice", "s1")
	if u := c.seen()[0].str("user"); u != "alice" {
		t.Fatalf("user %q", u)
	}
	hc, _, err := s.dial(t, "", http.Header{"Authorization": {"Bearer tok-bob"}})
	if err != nil {
		t.Fatal(err)
	}
	hc.send(map[string]any{"type": "hello", "session_id": "s1"})
	if u := hc.expect("hello", nil).str("user"); u != "bob" {
		t.Fatalf("user %q", u)
	}
}

func TestAnonymousNeedsOptIn(t *testing.T) {
	s := newServer(t, func(c *web.Config) { c.AllowAnonymousLocal = false })
	if _, resp, err := s.dial(t, "", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous socket admitted: %v", err)
	}
}

// TestOtherUserCannotSeeOrAnswer: bob in a session with the same id sees
// nothing of alice's and cannot answer her step.
func TestOtherUserCannotSeeOrAnswer(t *testing.T) {
	s := newServer(t, func(c *web.Config) {
		c.AllowAnonymousLocal = false
		c.Tokens = map[string]web.TokenUser{"tok-alice": {User: "alice"}, "tok-bob": {User: "bob"}}
	})
	alice := s.connect(t, "token=tok-alice", "s1")
	bob := s.connect(t, "token=tok-bob", "s1")
	alice.message("s1", "erase orders")
	conf := alice.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	bob.respond("s1", step, true, "")
	if e := bob.expect("error", nil); e.str("code") != web.CodeInvalidStepID {
		t.Fatalf("bob's response: %v", e)
	}
	bob.message("s1", "hello")
	bob.expect("agent.message", withContent("echo: hello"))
	for _, f := range bob.seen() {
		if f.str("type") == "agent.user_confirm" || strings.Contains(f.str("content"), "orders") {
			t.Fatalf("bob saw alice's frame %v", f)
		}
	}
	a, err := s.engine.Get(context.Background(), approval.ID(conf.meta("approval_id").(string)))
	if err != nil || a.State != approval.StatePending || s.erase.Runs.Load() != 0 {
		t.Fatalf("state %v, err %v, runs %d", a.State, err, s.erase.Runs.Load())
	}
	alice.respond("s1", step, true, "")
	alice.expect("agent.confirm_resolved", withStep(step))
}

// TestReconnectResendsPending: the pending confirmation comes back on a
// new socket, under the same step id, and can be answered there.
func TestReconnectResendsPending(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.ws.Close()

	c2 := s.connect(t, "", "s1")
	if got := c2.expect("agent.user_confirm", nil).str("step_id"); got != step {
		t.Fatalf("re-sent step %s, want %s", got, step)
	}
	c2.respond("s1", step, true, "")
	if f := c2.expect("agent.confirm_resolved", withStep(step)); f.str("status") != "executed" {
		t.Fatalf("resolved = %v", f)
	}
	// Once decided it is not re-sent any more.
	c3 := s.connect(t, "", "s1")
	c3.message("s1", "anything pending?")
	c3.expect("agent.message", withContent("echo: anything pending?"))
	for _, f := range c3.seen() {
		if f.str("type") == "agent.user_confirm" {
			t.Fatalf("a decided confirmation was re-sent: %v", f)
		}
	}
}

// TestMessagesKeptWhileAway: what is said while no socket watches the
// session is delivered when one joins.
func TestMessagesKeptWhileAway(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.ws.Close()
	for deadline := time.Now().Add(10 * time.Second); web.Watchers(s.web, "local/s1") > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the server did not notice the closed socket")
		}
		time.Sleep(time.Millisecond)
	}
	// Decided elsewhere (a typed reply on another channel, the API…).
	a, _ := s.engine.Pending(context.Background(), "web:local/s1")
	if _, err := s.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: web.LocalUser,
		Source: approval.SourceAPI, PayloadSHA256: a.PayloadSHA256}); err != nil {
		t.Fatal(err)
	}
	c2 := s.connect(t, "", "s1")
	c2.expect("agent.confirm_resolved", withStep(step))
	c2.expect("agent.message", withContent("summary: erase done (run 1)"))
}

func TestExpiredStep(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	deadline := time.Now().Add(10 * time.Second)
	for s.clk.Timers() < 2 && time.Now().Before(deadline) { // the turn waits on the approval
		time.Sleep(time.Millisecond)
	}
	s.clk.Advance(6 * time.Minute)
	if f := c.expect("agent.confirm_resolved", withStep(step)); f.str("status") != "expired" {
		t.Fatalf("resolved = %v", f)
	}
	c.respond("s1", step, true, "")
	if e := c.expect("error", withStep(step)); e.str("code") != web.CodeExpired {
		t.Fatalf("error = %v", e)
	}
	if s.erase.Runs.Load() != 0 {
		t.Fatal("an expired call ran")
	}
}

func TestOriginMustBeSameHost(t *testing.T) {
	s := newServer(t)
	_, resp, err := s.dial(t, "", http.Header{"Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin socket: err %v", err)
	}
	c, _, err := s.dial(t, "", http.Header{"Origin": {s.srv.URL}})
	if err != nil {
		t.Fatalf("same-origin socket refused: %v", err)
	}
	c.send(map[string]any{"type": "hello", "session_id": "s1"})
	c.expect("hello", nil)
}

func TestPageIsServed(t *testing.T) {
	s := newServer(t)
	for path, want := range map[string]string{"/": "Run it", "/app.js": "user.response", "/style.css": "#dialog"} {
		resp, err := http.Get(s.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d, body without %q", path, resp.StatusCode, want)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
	for _, asset := range []string{"index.html", "app.js", "style.css"} {
		resp, err := http.Get(s.srv.URL + "/" + asset)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, ext := range []string{"http://", "https://", "//cdn"} {
			if strings.Contains(string(body), "src=\""+ext) || strings.Contains(string(body), "href=\""+ext) {
				t.Errorf("%s loads an external resource", asset)
			}
		}
	}
}

// TestPageInLanguage: the page is rendered in the configured language,
// its own words (for app.js) and greeting in data attributes, escaped;
// nothing of another language is left in it.
func TestPageInLanguage(t *testing.T) {
	g := web.Greeting{Text: "hello <b>there</b>", Examples: []web.Example{{Request: "/sql SELECT 1", What: "a \"read\""}}}
	for _, tc := range []struct {
		lang      string
		want, not []string
	}{
		{"en", []string{`<html lang="en">`, "Run it", "Cancel it", "What will happen", "Waiting for confirmation", `aria-live="polite"`, `role="dialog"`},
			[]string{"确认执行", "取消操作", "待确认", "将要执行"}},
		{"zh", []string{`<html lang="zh">`, "确认执行", "取消操作", "将要执行", "待确认", "说明"},
			[]string{"Run it", "Cancel it", "What will happen"}},
	} {
		s := newServer(t, withLang(tc.lang), withGreeting(g))
		resp, err := http.Get(s.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(body)
		for _, w := range tc.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the page lacks %q", tc.lang, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(page, w) {
				t.Errorf("%s: the page holds %q", tc.lang, w)
			}
		}
		if strings.Contains(page, "<b>there") || !strings.Contains(page, "there") || !strings.Contains(page, "&#34;text&#34;") {
			t.Errorf("%s: the greeting is not escaped in the page", tc.lang)
		}
		if strings.Contains(page, "{{") {
			t.Errorf("%s: the template was not filled in", tc.lang)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: Content-Type %q", tc.lang, ct)
		}
	}
}

func TestNotStartedIs503(t *testing.T) {
	w, err := web.New(web.Config{AllowAnonymousLocal: true, Views: hitltest.Views(t)})
	if err != nil {
		t.Fatal(err)
	}
	if w.Ready() == nil {
		t.Fatal("ready before Start")
	}
	srv := newPlainServer(t, w.Handler())
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv, "http")+"/ws", nil)
	if err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("socket before Start: %v", err)
	}
	if _, err := web.New(web.Config{Lang: "fr", Views: hitltest.Views(t)}); err == nil {
		t.Fatal("an unknown language was accepted")
	}
	if _, err := web.New(web.Config{Tokens: map[string]web.TokenUser{"t": {}}, Views: hitltest.Views(t)}); err == nil {
		t.Fatal("a token without a user was accepted")
	}
	// The views are given when the chat is made, never found later.
	if _, err := web.New(web.Config{AllowAnonymousLocal: true}); err == nil || !strings.Contains(err.Error(), "Views") {
		t.Fatalf("a chat without views: %v", err)
	}
}

// TestLateTypedReplyAnswered: a 确认 typed after the step was decided in
// its dialog is answered on the page with how the approval ended, as an
// error line; nothing runs again and the assistant does not read it.
func TestLateTypedReplyAnswered(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.respond("s1", step, true, "")
	c.expect("agent.message", withContent("summary: erase done (run 1)"))
	c.message("s1", "确认")
	f := c.expect("agent.message", withContent("This approval has already been decided: Executed"))
	if f.str("kind") != "notice" || f["is_error"] != true {
		t.Fatalf("the late 确认 was answered %v", f)
	}
	c.message("s1", "hello")
	c.expect("agent.message", withContent("echo: hello"))
	for _, f := range c.seen() {
		if strings.Contains(f.str("content"), "echo: 确认") {
			t.Fatalf("the assistant read the late 确认: %v", f)
		}
	}
	if s.erase.Runs.Load() != 1 {
		t.Fatalf("runs %d", s.erase.Runs.Load())
	}
}

// TestPageFollowsTheBrowser: with no page language configured the page is
// in the browser's language (Accept-Language), in Lang when the browser
// names none of the catalogue's, and a configured page language wins.
func TestPageFollowsTheBrowser(t *testing.T) {
	for _, tc := range []struct {
		name, lang, pageLang, accept, want string
	}{
		{"zh browser", "en", "", "zh-CN,zh;q=0.9,en;q=0.8", `<html lang="zh">`},
		{"en browser", "zh", "", "en-US,en;q=0.9", `<html lang="en">`},
		{"weights", "en", "", "en;q=0.5, zh-TW;q=0.8", `<html lang="zh">`},
		{"other language", "zh", "", "fr-FR", `<html lang="zh">`},
		{"none sent", "en", "", "", `<html lang="en">`},
		{"configured wins", "en", "en", "zh-CN", `<html lang="en">`},
		{"configured zh", "en", "zh", "en-US", `<html lang="zh">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, withLang(tc.lang), func(c *web.Config) { c.PageLang = tc.pageLang })
			req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/", nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Language", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), tc.want) {
				t.Errorf("Accept-Language %q: the page lacks %q", tc.accept, tc.want)
			}
			if tc.pageLang == "" && resp.Header.Get("Vary") != "Accept-Language" {
				t.Errorf("Vary %q, want Accept-Language", resp.Header.Get("Vary"))
			}
		})
	}
}

// TestFaviconAndApproversLink: the icon is served (at /favicon.svg, which
// the page links, and at /favicon.ico, which browsers ask for), and the
// page offers the approvers' page and explains the payload hash, in each
// language.
func TestFaviconAndApproversLink(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		s := newServer(t, withLang(lang))
		for _, p := range []string{"/favicon.svg", "/favicon.ico"} {
			resp, err := http.Get(s.srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "image/svg+xml") || !strings.Contains(string(body), "<svg") {
				t.Errorf("%s: %d %q", p, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
		resp, err := http.Get(s.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(body)
		l := words.Of(lang)
		for _, want := range []string{`href="favicon.svg"`, `href="?session=ops"`, html.EscapeString(words.Text(l, words.WebPageApprovers)),
			html.EscapeString(words.Text(l, words.WebPageHashHint))} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the page lacks %q", lang, want)
			}
		}
	}
}
