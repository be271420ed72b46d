package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// The tests in this file drive the socket with a client written only from
// the seed document of the WebSocket confirmation protocol
// (shared/seeds/003, "用户确认机制详细指南"): it sends the frames the
// document shows, keyed by "event", and reads server frames by their
// "event". It builds and reads raw JSON maps; it knows no type of package
// web, no "type" field and no hello frame.

// seedClient is that client.
type seedClient struct {
	t      testing.TB
	ws     *websocket.Conn
	frames chan map[string]any
	unread []map[string]any
	all    []map[string]any // every frame taken from frames, in order
}

func dialSeed(t testing.TB, s *server) *seedClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(s.wsURL(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &seedClient{t: t, ws: ws, frames: make(chan map[string]any, 256)}
	go func() {
		defer close(c.frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Errorf("the server sent something that is not a JSON object: %s", data)
				return
			}
			if ev, _ := m["event"].(string); ev == "" {
				t.Errorf("a server frame without an event: %s", data)
			}
			c.frames <- m
		}
	}()
	t.Cleanup(func() { ws.Close() })
	return c
}

// jsNow is new Date().toISOString(), as the seed's client stamps frames.
func jsNow() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

func (c *seedClient) send(m map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(m); err != nil {
		c.t.Fatal(err)
	}
}

// message sends the seed's user.message.
func (c *seedClient) message(session, text string) {
	c.t.Helper()
	c.send(map[string]any{"event": "user.message", "session_id": session, "timestamp": jsNow(), "content": text})
}

// respond sends user.response exactly as respondToConfirmation in the seed
// builds it.
func (c *seedClient) respond(session, stepID string, confirmed bool, message string) {
	c.t.Helper()
	c.send(map[string]any{
		"session_id": session,
		"event":      "user.response",
		"step_id":    stepID,
		"timestamp":  jsNow(),
		"content":    map[string]any{"confirmed": confirmed, "message": message},
	})
}

// next returns the first frame not returned before whose event is event
// and that pred accepts (nil: any); frames of other events stay available.
func (c *seedClient) next(event string, pred func(map[string]any) bool) map[string]any {
	c.t.Helper()
	match := func(m map[string]any) bool { return m["event"] == event && (pred == nil || pred(m)) }
	for i, m := range c.unread {
		if match(m) {
			c.unread = append(c.unread[:i:i], c.unread[i+1:]...)
			return m
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("socket closed while waiting for %s; got %v", event, c.all)
			}
			c.all = append(c.all, m)
			if match(m) {
				return m
			}
			c.unread = append(c.unread, m)
		case <-timeout:
			c.t.Fatalf("no %s frame; got %v", event, c.all)
		}
	}
}

// seedStep is the seed's step_id format, confirm_{uuid}_{tool_name};
// hitlbot's id part is the approval id.
var seedStep = regexp.MustCompile(`^confirm_(.+)_([A-Za-z0-9_-]+)$`)

func str(v any) string { s, _ := v.(string); return s }

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// approvalOf returns the approval a step names (hitlbot's step id is
// "confirm_" + approval id + "_" + tool).
func approvalOf(t testing.TB, s *server, stepID string) *approval.Approval {
	t.Helper()
	m := stepRE.FindStringSubmatch(stepID)
	if m == nil {
		m = regexp.MustCompile(`^confirm_(ap_[0-9a-f]{8}_[0-9a-f]{32})_batch$`).FindStringSubmatch(stepID)
	}
	if m == nil {
		t.Fatalf("step id %q does not name an approval", stepID)
	}
	a, err := s.engine.Get(context.Background(), approval.ID(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkConfirm checks what the seed promises of agent.user_confirm.
func checkConfirm(t *testing.T, f map[string]any, session, tool string) string {
	t.Helper()
	step := str(f["step_id"])
	if m := seedStep.FindStringSubmatch(step); m == nil || m[2] != tool {
		t.Fatalf("step_id %q is not confirm_{id}_%s", step, tool)
	}
	if f["session_id"] != session {
		t.Fatalf("session_id %v, want %s", f["session_id"], session)
	}
	if _, err := time.Parse(time.RFC3339, str(f["timestamp"])); err != nil {
		t.Fatalf("timestamp %v: %v", f["timestamp"], err)
	}
	if c := str(f["content"]); !strings.Contains(c, tool) {
		t.Fatalf("content %q does not name the tool", c)
	}
	md := obj(f["metadata"])
	if md["tool_name"] != tool || str(md["tool_description"]) == "" || md["requires_confirmation"] != true || md["tool_args"] == nil {
		t.Fatalf("metadata %v", md)
	}
	return step
}

// TestSeedClientConfirms: user.message → agent.user_confirm with the
// seed's fields → user.response confirmed:true → the tool runs once and
// agent.tool_result names the step; a repeated response is refused with
// the seed's error shape and runs nothing.
func TestSeedClientConfirms(t *testing.T) {
	s := newServer(t)
	c := dialSeed(t, s)
	const sess = "sess_abc123"
	c.message(sess, "erase orders")
	conf := c.next("agent.user_confirm", nil)
	step := checkConfirm(t, conf, sess, "erase")
	md := obj(conf["metadata"])
	if md["tool_description"] != "Erases the named thing for good" || obj(md["tool_args"])["target"] != "orders" {
		t.Fatalf("metadata %v", md)
	}
	if s.erase.Runs.Load() != 0 {
		t.Fatal("ran before the answer")
	}

	c.respond(sess, step, true, "确认删除文件")
	res := c.next("agent.tool_result", nil)
	if res["session_id"] != sess || res["step_id"] != step || res["content"] != "erase done (run 1)" {
		t.Fatalf("agent.tool_result %v", res)
	}
	if md := obj(res["metadata"]); md["tool_name"] != "erase" || obj(md["tool_args"])["target"] != "orders" {
		t.Fatalf("agent.tool_result metadata %v", res["metadata"])
	}
	c.next("agent.message", func(m map[string]any) bool { return m["content"] == "summary: erase done (run 1)" })

	// 重复响应: the same answer again.
	c.respond(sess, step, true, "确认删除文件")
	e := c.next("error", nil)
	if e["error"] != web.CodeAlreadyDecided || str(e["message"]) == "" || e["step_id"] != step {
		t.Fatalf("error %v", e)
	}
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if a := approvalOf(t, s, step); a.State != approval.StateExecuted || a.DecidedBy != web.LocalUser || a.Comment != "确认删除文件" {
		t.Fatalf("approval %+v", a)
	}
}

// TestSeedClientRejects: confirmed:false with a message is a rejection
// with that message as its reason; nothing runs, no tool result, and the
// chat goes on.
func TestSeedClientRejects(t *testing.T) {
	s := newServer(t)
	c := dialSeed(t, s)
	const sess = "sess_abc123"
	c.message(sess, "erase orders")
	step := checkConfirm(t, c.next("agent.user_confirm", nil), sess, "erase")
	c.respond(sess, step, false, "用户取消：不是今天")
	waitfor.True(t, "the rejection", func() bool { return approvalOf(t, s, step).State.Terminal() })
	if a := approvalOf(t, s, step); a.State != approval.StateRejected || a.Comment != "用户取消：不是今天" || a.DecidedBy != web.LocalUser {
		t.Fatalf("approval %+v", a)
	}
	c.next("agent.message", func(m map[string]any) bool { return strings.Contains(str(m["content"]), "Not run: declined by") })
	c.message(sess, "still there?")
	c.next("agent.message", func(m map[string]any) bool { return m["content"] == "echo: still there?" })
	for _, f := range c.all {
		if f["event"] == "agent.tool_result" {
			t.Fatalf("a tool result after a rejection: %v", f)
		}
	}
	if n := s.erase.Runs.Load(); n != 0 {
		t.Fatalf("a rejected call ran %d times", n)
	}
}

// TestSeedClientUnknownStep: "Step ID 不匹配" — an answer to a step that
// does not exist gets {"error":"INVALID_STEP_ID","message":…}.
func TestSeedClientUnknownStep(t *testing.T) {
	s := newServer(t)
	c := dialSeed(t, s)
	c.respond("sess_abc123", "confirm_abc123_delete_file", true, "确认执行")
	if e := c.next("error", nil); e["error"] != web.CodeInvalidStepID || str(e["message"]) == "" {
		t.Fatalf("error %v", e)
	}
}

// TestSeedClientBatch follows the seed's BatchConfirmationManager: it
// collects several confirmations and answers each with its own
// user.response, sent back to back; each is decided on its own. The
// confirmations here are two sessions' approvals and one batch approval
// (several calls in one step, tool "batch"), whose every result names the
// step.
func TestSeedClientBatch(t *testing.T) {
	s := newServer(t)
	c := dialSeed(t, s)
	c.message("sess_a", "erase orders")
	c.message("sess_b", "erase users")
	c.message("sess_c", "erase-both logs cache")
	stepA := checkConfirm(t, c.next("agent.user_confirm", func(m map[string]any) bool { return m["session_id"] == "sess_a" }), "sess_a", "erase")
	stepB := checkConfirm(t, c.next("agent.user_confirm", func(m map[string]any) bool { return m["session_id"] == "sess_b" }), "sess_b", "erase")
	confC := c.next("agent.user_confirm", func(m map[string]any) bool { return m["session_id"] == "sess_c" })
	stepC := checkConfirm(t, confC, "sess_c", "batch")
	if args, _ := obj(confC["metadata"])["tool_args"].([]any); len(args) != 2 {
		t.Fatalf("batch tool_args %v", obj(confC["metadata"])["tool_args"])
	}

	c.respond("sess_a", stepA, true, "批量确认")
	c.respond("sess_b", stepB, false, "批量取消")
	c.respond("sess_c", stepC, true, "批量确认")

	resA := c.next("agent.tool_result", func(m map[string]any) bool { return m["step_id"] == stepA })
	if resA["content"] == "" || resA["session_id"] != "sess_a" {
		t.Fatalf("result %v", resA)
	}
	targets := map[string]bool{}
	for range 2 {
		r := c.next("agent.tool_result", func(m map[string]any) bool { return m["step_id"] == stepC })
		targets[str(obj(obj(r["metadata"])["tool_args"])["target"])] = true
	}
	if !targets["logs"] || !targets["cache"] {
		t.Fatalf("batch results for %v", targets)
	}
	waitfor.True(t, "the rejection of sess_b", func() bool { return approvalOf(t, s, stepB).State.Terminal() })
	if a := approvalOf(t, s, stepB); a.State != approval.StateRejected || a.Comment != "批量取消" {
		t.Fatalf("sess_b approval %+v", a)
	}
	if n := s.erase.Runs.Load(); n != 3 {
		t.Fatalf("the tool ran %d times, want 3 (orders, logs, cache)", n)
	}
	for _, f := range c.all {
		if f["event"] == "agent.tool_result" && f["session_id"] == "sess_b" {
			t.Fatalf("a result in the rejected session: %v", f)
		}
	}
}

// TestStepOutlivesTheProcess: the step id names the approval, so an answer
// to a step this process never showed (before a restart, on another
// replica) decides the session's pending approval.
func TestStepOutlivesTheProcess(t *testing.T) {
	s := newServer(t)
	c := dialSeed(t, s)
	c.message("sess_r", "erase orders")
	step := checkConfirm(t, c.next("agent.user_confirm", nil), "sess_r", "erase")
	web.ForgetSteps(s.web)
	c.respond("sess_r", step, true, "")
	if r := c.next("agent.tool_result", nil); r["step_id"] != step {
		t.Fatalf("result %v", r)
	}
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("runs %d", n)
	}
	// Another session's answer to that step is still refused.
	c.respond("sess_other", step, true, "")
	if e := c.next("error", nil); e["error"] != web.CodeInvalidStepID {
		t.Fatalf("error %v", e)
	}
}

// TestServerFramesCarryEvent: every server frame carries the seed's
// "event" next to "type", with the same value.
func TestServerFramesCarryEvent(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.respond("s1", step, true, "")
	c.expect("agent.confirm_resolved", withStep(step))
	c.expect("agent.tool_result", nil)
	c.expect("agent.message", withContent("summary:"))
	c.respond("s1", step, true, "")
	c.expect("error", withStep(step))
	kinds := map[string]bool{}
	for _, f := range c.seen() {
		kinds[f.str("type")] = true
		if f.str("event") != f.str("type") {
			t.Errorf("frame %v: event %q, type %q", f, f.str("event"), f.str("type"))
		}
	}
	if len(kinds) != 6 {
		t.Fatalf("frame kinds seen: %v", kinds)
	}
}

// TestTypeAndEventMustAgree: a frame naming two kinds is refused.
func TestTypeAndEventMustAgree(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.sendRaw(`{"type":"user.message","event":"user.response","session_id":"s1","content":"hi"}`)
	if e := c.expect("error", nil); e.str("code") != web.CodeInvalidMessage {
		t.Fatalf("error %v", e)
	}
	c.sendRaw(`{"type":"user.message","event":"user.message","session_id":"s1","content":"both agree"}`)
	c.expect("agent.message", withContent("echo: both agree"))
}

// TestInvalidUTF8Refused: a frame that is not valid UTF-8 is refused with
// a clear error before it is decoded: a response in it decides nothing,
// a message in it reaches nobody; the step can still be answered.
func TestInvalidUTF8Refused(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.sendRaw(`{"type":"user.response","session_id":"s1","step_id":"` + step + `","content":{"confirmed":true,"message":"ok ` + "\xff\xfe" + `"}}`)
	e := c.expect("error", nil)
	if e.str("code") != web.CodeInvalidMessage || !strings.Contains(e.str("message"), "UTF-8") {
		t.Fatalf("error %v", e)
	}
	c.sendRaw(`{"type":"user.message","session_id":"s1","content":"` + "\xc3\x28" + ` hi"}`)
	if e := c.expect("error", nil); e.str("code") != web.CodeInvalidMessage {
		t.Fatalf("error %v", e)
	}
	// Frames are handled in order: by the hello's answer both were.
	c.send(map[string]any{"type": "hello", "session_id": "s1"})
	c.expect("hello", nil)
	if st := web.StepState(s.web, step); st != "open" {
		t.Fatalf("step %s after a refused frame", st)
	}
	if a := approvalOf(t, s, step); a.State != approval.StatePending || s.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", a.State, s.erase.Runs.Load())
	}
	for _, f := range c.seen() {
		if strings.Contains(f.str("content"), "hi") && f.str("type") == "agent.message" {
			t.Fatalf("the refused message reached the agent: %v", f)
		}
	}
	c.respond("s1", step, true, "ok")
	c.expect("agent.tool_result", nil)
}

// TestSocketWrongMethod: /ws answers GET only; another method gets 405
// with "Allow: GET", before any authentication.
func TestSocketWrongMethod(t *testing.T) {
	s := newServer(t, func(c *web.Config) { c.AllowAnonymousLocal = false })
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions} {
		req, err := http.NewRequest(m, s.srv.URL+"/ws", strings.NewReader(`{"type":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
			t.Errorf("%s /ws: %d, Allow %q; want 405, Allow GET", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	// The page keeps answering GET and HEAD, and refuses the rest.
	resp, err := http.Post(s.srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	resp, err = http.Head(s.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD /: %d", resp.StatusCode)
	}
}
