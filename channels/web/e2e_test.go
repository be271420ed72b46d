//go:build e2e && unix

// The web page in a real headless Chromium, driven through the DevTools
// protocol over a plain WebSocket (no extra modules). Run it with
//
//	scripts/e2e.sh            (installs Debian's chromium when missing, as root)
//	go test -tags e2e -run E2E ./channels/web/
//
// It skips, saying why, when no Chromium is installed, except under CI
// (CI set), where a missing browser fails it.
package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/words"
)

// findChromium returns the browser binary, or "" if none is installed.
func findChromium() string {
	if p := os.Getenv("HITLBOT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// cdp is a minimal DevTools protocol client for one page.
type cdp struct {
	t    *testing.T
	ws   *websocket.Conn
	next atomic.Int64
	mu   sync.Mutex
	wait map[int64]chan cdpReply
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *cdp) readLoop() {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.wait {
				close(ch)
				delete(c.wait, id)
			}
			c.mu.Unlock()
			return
		}
		var m struct {
			ID int64 `json:"id"`
			cdpReply
		}
		if json.Unmarshal(data, &m) != nil || m.ID == 0 {
			continue // an event
		}
		c.mu.Lock()
		ch := c.wait[m.ID]
		delete(c.wait, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

func (c *cdp) call(method string, params any) json.RawMessage {
	c.t.Helper()
	id := c.next.Add(1)
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	c.wait[id] = ch
	c.mu.Unlock()
	if err := c.ws.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			c.t.Fatalf("%s: DevTools connection closed", method)
		}
		if r.Error != nil {
			c.t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no answer", method)
	}
	return nil
}

// eval evaluates a JavaScript expression in the page and returns its value.
func (c *cdp) eval(expr string) any {
	c.t.Helper()
	v, err := c.try(expr)
	if err != "" {
		c.t.Fatalf("%s: %s", expr, err)
	}
	return v
}

// try evaluates an expression and returns its value or the exception.
func (c *cdp) try(expr string) (any, string) {
	c.t.Helper()
	raw := c.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		return nil, r.ExceptionDetails.Text + " " + r.ExceptionDetails.Exception.Description
	}
	return r.Result.Value, ""
}

// until polls a boolean expression until it is true (an exception, as
// while the page is loading, counts as false).
func (c *cdp) until(what, expr string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, exc := c.try(expr)
		if ok, _ := v.(bool); ok {
			return
		}
		if time.Now().After(deadline) {
			log, _ := c.try(`document.getElementById('log').innerText`)
			c.t.Fatalf("timed out waiting for %s (%s; last exception %q); page log: %v", what, expr, exc, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cdp) key(key, code string, vk int, text string) {
	c.t.Helper()
	down := map[string]any{"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
	if text != "" {
		down["text"] = text
	}
	c.call("Input.dispatchKeyEvent", down)
	c.call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk})
}

// launch starts headless Chromium and connects to its first page.
func launch(t *testing.T, bin string) *cdp {
	t.Helper()
	profile, err := os.MkdirTemp("", "hitlbot-e2e-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
		"--user-data-dir="+profile, "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--disable-dev-shm-usage", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers are killed with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var browserURL string
	t.Cleanup(func() {
		// Ask the browser to quit, then end its process group, then remove
		// the profile (Chromium's helpers may still be writing to it).
		if browserURL != "" {
			if bws, _, err := websocket.DefaultDialer.Dial(browserURL, nil); err == nil {
				_ = bws.WriteJSON(map[string]any{"id": 1, "method": "Browser.close"})
				bws.Close()
			}
		}
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	found := make(chan string, 1)
	var tail strings.Builder
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
			if tail.Len() < 4000 {
				tail.WriteString(sc.Text() + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case browserURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("Chromium printed no DevTools address; stderr:\n%s", tail.String())
	}
	// ws://127.0.0.1:PORT/devtools/browser/ID → the page list on the same port.
	hostport := strings.TrimPrefix(browserURL, "ws://")
	hostport = hostport[:strings.IndexByte(hostport, '/')]
	var pageURL string
	for deadline := time.Now().Add(10 * time.Second); pageURL == "" && time.Now().Before(deadline); {
		resp, err := http.Get("http://" + hostport + "/json/list")
		if err == nil {
			var targets []struct {
				Type                 string `json:"type"`
				WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, tg := range targets {
				if tg.Type == "page" && tg.WebSocketDebuggerURL != "" {
					pageURL = tg.WebSocketDebuggerURL
					break
				}
			}
		}
		if pageURL == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if pageURL == "" {
		t.Fatal("Chromium lists no page target")
	}
	ws, _, err := websocket.DefaultDialer.Dial(pageURL, nil)
	if err != nil {
		t.Fatalf("connecting to the page: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &cdp{t: t, ws: ws, wait: map[int64]chan cdpReply{}}
	go c.readLoop()
	c.call("Page.enable", map[string]any{})
	c.call("Runtime.enable", map[string]any{})
	return c
}

// screenshot saves the page as $HITLBOT_E2E_SCREENSHOTS/<name>.png when
// that directory is set (scripts/e2e.sh sets it to artifacts/e2e at the
// top of the repository, which git ignores).
func screenshot(t *testing.T, page *cdp, name string) {
	t.Helper()
	dir := os.Getenv("HITLBOT_E2E_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(page.call("Page.captureScreenshot", map[string]any{"format": "png"}), &shot); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), shot.Data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// e2eSizes are the widths the page is tried at: a laptop, and a phone
// (390×844).
var e2eSizes = []struct {
	name          string
	width, height int
	mobile        bool
}{
	{"desktop", 1280, 860, false},
	{"phone", 390, 844, true},
}

// e2eGreeting is the greeting of the test page (cmd/bot builds the real
// one from the catalogue, the same as bot chat's).
var e2eGreeting = web.Greeting{Text: "hitlbot test page: it erases things.", Examples: []web.Example{
	{Request: "erase orders", What: "asks first"}, {Request: "hello", What: "echoes"}, {Request: "erase logs", What: "asks first"},
}}

func TestE2EPage(t *testing.T) {
	bin := findChromium()
	if bin == "" && os.Getenv("CI") != "" {
		// CI must test the page, not pass without it.
		t.Fatal("no Chromium installed (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome) and CI is set: scripts/e2e.sh installs Debian's chromium when run as root")
	}
	if bin == "" {
		t.Skip("no Chromium installed (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome): run scripts/e2e.sh as root to install Debian's chromium")
	}
	page := launch(t, bin)
	parent := t
	for _, lang := range []string{"en", "zh"} {
		for _, size := range e2eSizes {
			t.Run(lang+"_"+size.name, func(t *testing.T) {
				page.t = t
				defer func() { page.t = parent }()
				page.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": size.width, "height": size.height,
					"deviceScaleFactor": 1, "mobile": size.mobile})
				e2ePage(t, page, lang, lang+"_"+size.name, size.mobile)
			})
		}
	}
}

// e2ePage drives one page in one language at one size through the
// dialog: a message, an approval by click, a refusal by Escape, a reload
// that brings the confirmation back, Enter on a HIGH dialog, and checks
// the layout, the words and one bubble per result on the way.
func e2ePage(t *testing.T, page *cdp, lang, shot string, phone bool) {
	s := newServer(t, withLang(lang), withPageLang(lang), withGreeting(e2eGreeting))
	outcome := approval.DefaultOutcomeText(lang)
	W := func(k words.Key) string { return words.In(lang, k) }
	page.call("Page.navigate", map[string]any{"url": s.srv.URL + "/?session=e2e_" + shot})
	page.until("the socket to connect", `document.getElementById('status').classList.contains('online') && !document.getElementById('input').disabled`)

	typeMessage := func(text string) {
		t.Helper()
		page.eval(fmt.Sprintf(`(() => { const i = document.getElementById('input'); i.value = %q; document.getElementById('send').click(); return true })()`, text))
	}
	dialogFor := func(target string) {
		t.Helper()
		page.until("the confirmation dialog", `!document.getElementById('overlay').hidden && document.getElementById('dlg-args').textContent.includes('`+target+`')`)
	}
	// visible counts the bubbles of the log whose visible text holds s.
	visible := func(s string) int {
		t.Helper()
		n, _ := page.eval(fmt.Sprintf(`Array.from(document.querySelectorAll('#log > li')).filter((li) => li.innerText.includes(%q)).length`, s)).(float64)
		return int(n)
	}

	// 0. The page greets, in its language, with the examples as buttons;
	// its own words are the language's; the layout fits the width.
	page.until("the greeting", `document.querySelectorAll('#log .greeting button.example').length === 3`)
	got := page.eval(`JSON.stringify({
		lang: document.documentElement.lang,
		send: document.getElementById('send').textContent,
		status: document.getElementById('status').textContent,
		chat: document.getElementById('chat').getBoundingClientRect().width,
		side: getComputedStyle(document.getElementById('side')).display,
		toggle: getComputedStyle(document.getElementById('side-toggle')).display,
		overflow: document.documentElement.scrollWidth > window.innerWidth,
	})`).(string)
	var l struct {
		Lang, Send, Status, Side, Toggle string
		Chat                             float64
		Overflow                         bool
	}
	if err := json.Unmarshal([]byte(got), &l); err != nil {
		t.Fatal(err)
	}
	if l.Lang != lang || l.Send != W(words.WebPageSend) || l.Status != W(words.WebPageOnline) || l.Overflow {
		t.Fatalf("page = %+v", l)
	}
	if phone && (l.Side != "none" || l.Toggle == "none" || l.Chat < 380) || !phone && (l.Side == "none" || l.Chat < 900) {
		t.Fatalf("layout at this width = %+v", l)
	}
	if phone {
		// The side panel opens from the header, and closes again.
		page.eval(`document.getElementById('side-toggle').click(); true`)
		page.until("the side panel", `getComputedStyle(document.getElementById('side')).display !== 'none' && document.getElementById('side-toggle').getAttribute('aria-expanded') === 'true'`)
		page.eval(`document.getElementById('side-toggle').click(); true`)
		page.until("the side panel to close", `getComputedStyle(document.getElementById('side')).display === 'none'`)
	}
	screenshot(t, page, shot+"_greeting")

	// 1. A message gets an answer; an example button fills the input.
	page.eval(`document.querySelectorAll('#log .greeting button.example')[1].click(); true`)
	if v, _ := page.eval(`document.getElementById('input').value`).(string); v != "hello" {
		t.Fatalf("the example put %q in the input", v)
	}
	typeMessage("hello browser")
	page.until("the answer", `document.getElementById('log').innerText.includes('echo: hello browser')`)

	// 2. A risky call: the dialog says first what will happen, then the
	// risk and why, what the tool does, who asked and until when; the
	// input is disabled; the focus is on 取消 (HIGH); 确认执行 runs it once.
	typeMessage("erase orders")
	dialogFor("orders")
	got = page.eval(`JSON.stringify({
		what: document.getElementById('dlg-what').textContent,
		whatTop: document.getElementById('dlg-what').getBoundingClientRect().top,
		detailsTop: document.getElementById('dlg-details').getBoundingClientRect().top,
		risk: document.getElementById('dlg-risk').textContent,
		desc: document.getElementById('dlg-desc').textContent,
		requested: document.getElementById('dlg-requested').textContent,
		countdown: document.getElementById('dlg-countdown').textContent,
		inputDisabled: document.getElementById('input').disabled,
		pending: document.querySelectorAll('#pending li').length,
		approve: document.getElementById('dlg-approve').textContent,
		reject: document.getElementById('dlg-reject').textContent,
		focus: document.activeElement && document.activeElement.id,
		dialogWidth: document.getElementById('dialog').getBoundingClientRect().width,
		viewport: window.innerWidth,
		modal: document.getElementById('dialog').getAttribute('aria-modal'),
	})`).(string)
	var d struct {
		What, Risk, Desc, Requested, Countdown, Approve, Reject, Focus, Modal string
		WhatTop, DetailsTop, DialogWidth, Viewport                            float64
		InputDisabled                                                         bool
		Pending                                                               int
	}
	if err := json.Unmarshal([]byte(got), &d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.What, `erase {"target":"orders"}`) || d.WhatTop > d.DetailsTop || !strings.HasPrefix(d.Risk, W(words.CardRiskHigh)) ||
		d.Desc != "Erases the named thing for good" || !strings.Contains(d.Requested, web.LocalUser) ||
		!regexp.MustCompile(`^[0-9]+:[0-9]{2}$`).MatchString(d.Countdown) || !strings.Contains(d.Requested, d.Countdown) ||
		!d.InputDisabled || d.Pending != 1 || d.Approve != W(words.WebPageApprove) || d.Reject != W(words.WebPageReject) ||
		d.Focus != "dlg-reject" || d.Modal != "true" {
		t.Fatalf("dialog = %+v", d)
	}
	if phone && d.DialogWidth < d.Viewport-1 {
		t.Fatalf("at phone width the dialog is %v px of %v", d.DialogWidth, d.Viewport)
	}
	// The focus stays in the dialog: Tab from its last control goes to
	// its first, Shift+Tab back.
	page.eval(`document.getElementById('dlg-approve').focus(); true`)
	page.key("Tab", "Tab", 9, "")
	if in, _ := page.eval(`document.getElementById('dialog').contains(document.activeElement)`).(bool); !in {
		t.Fatal("Tab left the dialog")
	}
	page.call("Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9, "modifiers": 8})
	page.call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": "Tab", "code": "Tab", "windowsVirtualKeyCode": 9, "modifiers": 8})
	if id, _ := page.eval(`document.activeElement && document.activeElement.id`).(string); id != "dlg-approve" {
		t.Fatalf("Shift+Tab from the first control went to %q, want dlg-approve", id)
	}
	// Enter on 确认执行 of a HIGH dialog does not approve.
	page.key("Enter", "Enter", 13, "\r")
	if v, _ := page.eval(`document.getElementById('dlg-approve').disabled || document.getElementById('overlay').hidden`).(bool); v || s.erase.Runs.Load() != 0 {
		t.Fatal("Enter on the focused 确认执行 of a HIGH dialog approved it")
	}
	screenshot(t, page, shot+"_dialog")
	page.eval(`document.getElementById('dlg-comment').value = 'looks right'; document.getElementById('dlg-approve').click(); true`)
	if v, _ := page.eval(`document.getElementById('dlg-approve').disabled`).(bool); !v && s.erase.Runs.Load() == 0 {
		t.Error("the buttons were not disabled after the click")
	}
	page.until("the answer", `document.getElementById('log').innerText.includes('summary: erase done (run 1)') && document.getElementById('overlay').hidden && !document.getElementById('input').disabled`)
	page.until("the outcome", `document.getElementById('log').innerText.includes(`+quoteJS(outcome[approval.StatusExecuted])+`)`)
	// One bubble per result: the answer says it; the tool's own result
	// is a closed disclosure in the outcome's bubble.
	if n := visible("erase done (run 1)"); n != 1 {
		t.Fatalf("the result is visible in %d bubbles, want 1; log:\n%v", n, page.eval(`document.getElementById('log').innerText`))
	}
	if n, _ := page.eval(`document.querySelectorAll('#log details.result').length`).(float64); n != 1 {
		t.Fatalf("%v result disclosures, want 1", n)
	}
	screenshot(t, page, shot+"_result")

	// 3. Escape declines.
	typeMessage("erase logs")
	dialogFor("logs")
	page.key("Escape", "Escape", 27, "")
	page.until("the refusal", `document.getElementById('log').innerText.includes(`+quoteJS(outcome[approval.StatusRejected])+`) && document.getElementById('overlay').hidden`)

	// 4. A reload while a confirmation waits: it comes back. The call is
	// HIGH, so the focus is on 取消 and Enter declines it.
	typeMessage("erase cache")
	dialogFor("cache")
	page.call("Page.reload", map[string]any{})
	page.until("the reconnect", `document.getElementById('status').classList.contains('online')`)
	dialogFor("cache")
	if id, _ := page.eval(`document.activeElement && document.activeElement.id`).(string); id != "dlg-reject" {
		t.Fatalf("a HIGH dialog opened with the focus on %q, want dlg-reject", id)
	}
	page.key("Enter", "Enter", 13, "\r")
	// (The reload emptied the log: this refusal is the only one in it.)
	page.until("the refusal by Enter", `document.getElementById('log').innerText.includes(`+quoteJS(outcome[approval.StatusRejected])+`) && document.getElementById('overlay').hidden`)
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("Enter on a HIGH dialog ran the tool (%d runs)", n)
	}

	// 5. Approving a HIGH call takes a click.
	typeMessage("erase cache")
	dialogFor("cache")
	page.eval(`document.getElementById('dlg-approve').click(); true`)
	page.until("the second answer", `document.getElementById('log').innerText.includes('summary: erase done (run 2)') && document.getElementById('overlay').hidden`)
	if n := visible("erase done (run 2)"); n != 1 {
		t.Fatalf("the second result is visible in %d bubbles, want 1", n)
	}

	t.Logf("page log:\n%v", page.eval(`document.getElementById('log').innerText`))
	if n := s.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
}

// quoteJS quotes s as a JavaScript string literal.
func quoteJS(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestE2EQuorumProgress: HIGH needs 2 people of the chat. The page's
// approve counts: the dialog stays open, says AWAITING_QUORUM, and shows
// the progress line under who asked; the comment typed is kept. The
// approve of a second person (through the engine, as a card would) ends
// the dialog.
func TestE2EQuorumProgress(t *testing.T) {
	bin := findChromium()
	if bin == "" && os.Getenv("CI") != "" {
		t.Fatal("no Chromium installed and CI is set: scripts/e2e.sh installs Debian's chromium when run as root")
	}
	if bin == "" {
		t.Skip("no Chromium installed: run scripts/e2e.sh as root to install Debian's chromium")
	}
	page := launch(t, bin)
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			page.t = t
			pc := approval.DefaultPolicyConfig()
			pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat, Quorum: 2}}
			s := newServerWith(t, approval.EffectDestructive, nil, &pc, withLang(lang), withPageLang(lang), withGreeting(e2eGreeting))
			page.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 860, "deviceScaleFactor": 1, "mobile": false})
			page.call("Page.navigate", map[string]any{"url": s.srv.URL + "/?session=e2e_quorum_" + lang})
			page.until("the socket to connect", `document.getElementById('status').classList.contains('online') && !document.getElementById('input').disabled`)
			page.eval(`(() => { const i = document.getElementById('input'); i.value = 'erase orders'; document.getElementById('send').click(); return true })()`)
			page.until("the confirmation dialog", `!document.getElementById('overlay').hidden && document.getElementById('dlg-progress').hidden`)
			page.eval(`document.getElementById('dlg-comment').value = 'ok from me'; document.getElementById('dlg-approve').click(); true`)
			progress := words.In(lang, words.QuorumProgress, 1, 2, web.LocalUser)
			page.until("the progress in the dialog", `!document.getElementById('overlay').hidden && !document.getElementById('dlg-progress').hidden && document.getElementById('dlg-progress').textContent === `+quoteJS(progress)+` && !document.getElementById('dlg-error').hidden`)
			if v, _ := page.eval(`document.getElementById('dlg-comment').value`).(string); v != "ok from me" {
				t.Fatalf("the comment became %q after the progress", v)
			}
			screenshot(t, page, lang+"_desktop_quorum")
			ids := s.engine
			pending, err := ids.Pending(context.Background(), approval.SessionKey("web:"+web.LocalUser+"/e2e_quorum_"+lang))
			if err != nil || pending == nil {
				t.Fatalf("pending: %v, %v", pending, err)
			}
			o, err := s.engine.Decide(context.Background(), pending.ID, approval.Decision{Verb: approval.Approve, Actor: "bob", Source: approval.SourceAPI,
				PayloadSHA256: pending.PayloadSHA256, Channel: pending.Channel, ChatID: pending.ChatID})
			if err != nil || o.Status != approval.StatusExecuted {
				t.Fatalf("the second approve = %+v, %v", o, err)
			}
			page.until("the dialog to close", `document.getElementById('overlay').hidden && document.getElementById('log').innerText.includes('erase done (run 1)')`)
		})
	}
}
