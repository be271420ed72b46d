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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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
// that directory is set (to look at the layout).
func screenshot(t *testing.T, page *cdp, name string) {
	t.Helper()
	dir := os.Getenv("HITLBOT_E2E_SCREENSHOTS")
	if dir == "" {
		return
	}
	var shot struct {
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(page.call("Page.captureScreenshot", map[string]any{"format": "png"}), &shot); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/"+name+".png", shot.Data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestE2EPage(t *testing.T) {
	bin := findChromium()
	if bin == "" && os.Getenv("CI") != "" {
		// CI must test the page, not pass without it.
		t.Fatal("no Chromium installed (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome) and CI is set: scripts/e2e.sh installs Debian's chromium when run as root")
	}
	if bin == "" {
		t.Skip("no Chromium installed (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome): run scripts/e2e.sh as root to install Debian's chromium")
	}
	s := newServer(t)
	page := launch(t, bin)
	page.call("Page.navigate", map[string]any{"url": s.srv.URL + "/?session=e2e"})
	page.until("the socket to connect", `document.getElementById('status').classList.contains('online') && !document.getElementById('input').disabled`)

	typeMessage := func(text string) {
		t.Helper()
		page.eval(fmt.Sprintf(`(() => { const i = document.getElementById('input'); i.value = %q; document.getElementById('send').click(); return true })()`, text))
	}
	dialogFor := func(target string) {
		t.Helper()
		page.until("the confirmation dialog", `!document.getElementById('overlay').hidden && document.getElementById('dlg-args').textContent.includes('`+target+`')`)
	}

	// 1. A message gets an answer.
	typeMessage("hello browser")
	page.until("the answer", `document.getElementById('log').innerText.includes('echo: hello browser')`)

	// 2. A risky call: the dialog shows tool, description, arguments, risk,
	// a countdown; the input is disabled; 确认执行 runs it once.
	typeMessage("erase orders")
	dialogFor("orders")
	got := page.eval(`JSON.stringify({
		tool: document.getElementById('dlg-tool').textContent,
		desc: document.getElementById('dlg-desc').textContent,
		risk: document.getElementById('dlg-risk').textContent,
		args: document.getElementById('dlg-args').textContent,
		countdown: document.getElementById('dlg-countdown').textContent,
		inputDisabled: document.getElementById('input').disabled,
		pending: document.querySelectorAll('#pending li').length,
		approve: document.getElementById('dlg-approve').textContent,
		reject: document.getElementById('dlg-reject').textContent,
	})`).(string)
	var d struct {
		Tool, Desc, Risk, Args, Countdown, Approve, Reject string
		InputDisabled                                      bool
		Pending                                            int
	}
	if err := json.Unmarshal([]byte(got), &d); err != nil {
		t.Fatal(err)
	}
	if d.Tool != "erase" || d.Desc != "Erases the named thing for good" || d.Risk != "HIGH" || !strings.Contains(d.Args, `"target": "orders"`) ||
		!regexp.MustCompile(`^[0-9]+:[0-9]{2}$`).MatchString(d.Countdown) || !d.InputDisabled || d.Pending != 1 || d.Approve != "确认执行" || d.Reject != "取消操作" {
		t.Fatalf("dialog = %+v", d)
	}
	screenshot(t, page, "dialog")
	page.eval(`document.getElementById('dlg-comment').value = 'looks right'; document.getElementById('dlg-approve').click(); true`)
	if v, _ := page.eval(`document.getElementById('dlg-approve').disabled`).(bool); !v && s.erase.Runs.Load() == 0 {
		t.Error("the buttons were not disabled after the click")
	}
	page.until("the result", `document.getElementById('log').innerText.includes('erase done (run 1)') && document.getElementById('overlay').hidden && !document.getElementById('input').disabled`)
	page.until("the summary", `document.getElementById('log').innerText.includes('summary: erase done (run 1)')`)
	screenshot(t, page, "result")

	// 3. Escape declines.
	typeMessage("erase logs")
	dialogFor("logs")
	page.key("Escape", "Escape", 27, "")
	page.until("the refusal", `document.getElementById('log').innerText.includes('Declined') && document.getElementById('overlay').hidden`)

	// 4. A reload while a confirmation waits: it comes back. The call is
	// HIGH, so the focus is on 取消 and Enter never approves it: it declines.
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
	page.until("the refusal by Enter", `document.getElementById('log').innerText.includes('Declined') && document.getElementById('overlay').hidden`)
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("Enter on a HIGH dialog ran the tool (%d runs)", n)
	}

	// 5. Approving a HIGH call takes a click.
	typeMessage("erase cache")
	dialogFor("cache")
	page.eval(`document.getElementById('dlg-approve').click(); true`)
	page.until("the second result", `document.getElementById('log').innerText.includes('erase done (run 2)') && document.getElementById('overlay').hidden`)

	t.Logf("page log:\n%v", page.eval(`document.getElementById('log').innerText`))
	if n := s.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
}
