package feishu

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

func TestConfigValidation(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.Mode = ModeWebhook
	if _, err := New(cfg, quiet); err == nil || !strings.Contains(err.Error(), "encrypt_key") {
		t.Fatalf("webhook mode without an encrypt key: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no app id":     func(c *Config) { c.AppID = "" },
		"no secret":     func(c *Config) { c.AppSecret = "" },
		"bad mode":      func(c *Config) { c.Mode = "carrier_pigeon" },
		"bad lang":      func(c *Config) { c.Lang = "fr" },
		"long callback": func(c *Config) { c.CallbackWait = 3 * time.Second },
		"negative age":  func(c *Config) { c.MaxRequestAge = -time.Minute },
	} {
		c := testConfig(fake)
		mod(&c)
		if _, err := New(c, quiet); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(testConfig(fake), nil); err != nil {
		t.Fatal(err)
	}
}

// A message → an approval card with the expected JSON; a click by the
// requester → a success toast with the executed card inside the window,
// and the card patched to executed.
func TestMessageCardClickExecutes(t *testing.T) {
	g := newRig(t)
	if err := g.ch.Ready(); err != nil {
		t.Fatalf("not ready after Start: %v", err)
	}
	a, card := g.pending(t, "oc_p2p_1", "ou_alice", "orders")
	if a.Requester != "ou_alice" || a.Channel != "feishu" || a.Cards[0].Channel != "feishu" || a.Cards[0].ChatID != "oc_p2p_1" {
		t.Fatalf("approval %+v", a)
	}
	// The card is exactly the renderer's card of the pending view, with
	// the approval's short code in its chat (the only one waiting there).
	view := cards.Pending(a, approval.DefaultOutcomeText("en"), "en")
	view.Code = approval.Codes([]*approval.Approval{a})[a.ID]
	want := cards.FeishuCard(view, "en")
	if got, w := mustJSON(t, card), mustJSON(t, want); got != w {
		t.Fatalf("card\n got %s\nwant %s", got, w)
	}
	for _, sub := range []string{`"template":"red"`, `"update_multi":true`, `"decision":"approve"`, `"payload_sha256":"` + a.PayloadSHA256 + `"`} {
		if !strings.Contains(mustJSON(t, card), sub) {
			t.Errorf("card lacks %s", sub)
		}
	}

	resp, took := g.click(t, a, "ou_alice", buttonValue(a, "approve"))
	if took > 3*time.Second {
		t.Errorf("the click was answered after %v", took)
	}
	if resp.Toast == nil || resp.Toast.Type != "success" || resp.Toast.Content != "Executed" {
		t.Fatalf("toast %+v", resp.Toast)
	}
	if resp.Card == nil || resp.Card.Type != "raw" {
		t.Fatalf("no card in the answer: %+v", resp)
	}
	answered := mustJSON(t, resp.Card.Data)
	if !strings.Contains(answered, `"template":"green"`) || strings.Contains(answered, "behaviors") || !strings.Contains(answered, "erase done (run 1)") {
		t.Errorf("answered card %s", answered)
	}
	if st := g.state(t, a.ID); st != approval.StateExecuted {
		t.Fatalf("state %s", st)
	}
	eventually(t, "the card is patched to executed", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, `"template":"green"`) && !strings.Contains(c.Content, "behaviors") {
				return true
			}
		}
		return false
	})
	if g.erase.Runs.Load() != 1 {
		t.Fatalf("runs %d", g.erase.Runs.Load())
	}
	if n := g.fake.TokenFetches(); n != 1 {
		t.Errorf("tenant token fetched %d times", n)
	}
}

// A decision slower than the callback window: the click gets the
// processing card at once, and the final card follows by a patch.
func TestSlowDecisionAnswersProcessingThenPatches(t *testing.T) {
	g := newRig(t, func(c *Config, tool *hitltest.Tool) {
		c.CallbackWait = 200 * time.Millisecond
		tool.Gate = make(chan struct{})
	})
	a, _ := g.pending(t, "oc_p2p_2", "ou_alice", "slow")
	resp, took := g.click(t, a, "ou_alice", buttonValue(a, "approve"))
	if took > time.Second {
		t.Errorf("answered after %v", took)
	}
	if resp.Toast == nil || resp.Toast.Type != "info" || resp.Card == nil {
		t.Fatalf("answer %+v", resp)
	}
	if c := mustJSON(t, resp.Card.Data); !strings.Contains(c, "Processing") || strings.Contains(c, "behaviors") {
		t.Errorf("processing card %s", c)
	}
	close(g.erase.Gate)
	eventually(t, "the card is patched to executed, twice (after the processing answer)", func() bool {
		n := 0
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, `"template":"green"`) {
				n++
			}
		}
		return n >= 2
	})
}

func TestClickByOtherUserIsRefused(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_3", "ou_alice", "orders")
	resp, _ := g.click(t, a, "ou_mallory", buttonValue(a, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "warning" || !strings.Contains(resp.Toast.Content, "Who may") ||
		!strings.Contains(resp.Toast.Content, a.Approvers.DescribeIn("en")) {
		t.Fatalf("toast %+v", resp.Toast)
	}
	if resp.Card != nil {
		t.Errorf("the card changed: %+v", resp.Card)
	}
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("state %s", st)
	}
	if g.erase.Runs.Load() != 0 || len(g.calls("patch")) != 0 {
		t.Fatalf("runs %d, patches %d", g.erase.Runs.Load(), len(g.calls("patch")))
	}
}

func TestMalformedClickDecidesNothing(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_4", "ou_alice", "orders")
	for name, v := range map[string]any{
		"no hash":     map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "approve"},
		"bad verb":    map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "yolo", "payload_sha256": a.PayloadSHA256},
		"wrong kind":  map[string]any{"kind": "vote", "approval_id": string(a.ID), "decision": "approve", "payload_sha256": a.PayloadSHA256},
		"number id":   map[string]any{"kind": "approval", "approval_id": 7, "decision": "approve", "payload_sha256": a.PayloadSHA256},
		"empty value": map[string]any{},
	} {
		resp, _ := g.click(t, a, "ou_alice", v)
		if resp.Toast == nil || resp.Toast.Type != "error" || resp.Card != nil {
			t.Errorf("%s: answer %+v", name, resp)
		}
	}
	// A string value does not even reach the handler: the SDK cannot
	// decode it and acks with an error.
	e := feishutest.CardActionEvent{EventID: nextID("ev"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID, Value: "approve"}
	if code, _, _ := g.push(t, e.JSON()); code != 500 {
		t.Errorf("string value acked %d", code)
	}
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
}

// "@bot 确认" typed in a group decides the session's pending approval;
// group messages that do not mention the bot are ignored.
func TestTypedConfirmInGroup(t *testing.T) {
	g := newRig(t)
	bot := map[string]string{"@_user_1": "ou_bot"}
	g.say(t, "group", "oc_group_1", "ou_alice", "erase orders", nil) // no mention: ignored
	g.say(t, "group", "oc_group_1", "ou_alice", "@_user_1 erase orders", bot)
	var a *approval.Approval
	eventually(t, "an approval is pending in the group", func() bool {
		p, err := g.engine.Pending(context.Background(), "feishu:oc_group_1")
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) > 0
	})
	if g.model.Seen("erase orders") != 1 {
		t.Fatalf("the model saw the request %d times", g.model.Seen("erase orders"))
	}
	confirm := g.say(t, "group", "oc_group_1", "ou_alice", "@_user_1 确认", bot)
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	eventually(t, "the outcome is answered to the typed reply", func() bool { return g.replied(confirm.MessageID, "Executed") == 1 })
	eventually(t, "the card is patched", func() bool { return len(g.calls("patch")) >= 1 })
	if g.model.Seen("确认") != 0 {
		t.Fatal("the typed decision reached the model")
	}
}

func TestMentionOfSomeoneElseInGroupIgnored(t *testing.T) {
	g := newRig(t)
	g.say(t, "group", "oc_group_2", "ou_alice", "@_user_1 hello", map[string]string{"@_user_1": "ou_carol"})
	m := g.say(t, "group", "oc_group_2", "ou_alice", "@_user_1 @_user_2 hello", map[string]string{"@_user_1": "ou_bot", "@_user_2": "ou_carol"})
	eventually(t, "the mention of the bot is answered", func() bool { return g.replied(m.MessageID, "echo: @name_ou_carol hello") == 1 })
	if n := len(g.calls("reply")); n != 1 {
		t.Fatalf("%d replies", n)
	}
}

func TestDuplicateEventOneReply(t *testing.T) {
	g := newRig(t)
	e := feishutest.MessageEvent{EventID: "ev_dup", MessageID: "om_dup", ChatID: "oc_p2p_5", ChatType: "p2p", Sender: "ou_alice", Text: "hi"}
	for range 3 {
		if code, _, _ := g.push(t, e.JSON()); code != 200 {
			t.Fatalf("ack %d", code)
		}
	}
	// The same message in a re-delivery with a new event id, too.
	e.EventID = "ev_dup_2"
	g.push(t, e.JSON())
	marker := g.say(t, "p2p", "oc_p2p_5", "ou_alice", "marker", nil)
	eventually(t, "the marker is answered", func() bool { return g.replied(marker.MessageID, "echo: marker") == 1 })
	if n := g.replied("om_dup", "echo: hi"); n != 1 {
		t.Fatalf("%d replies to the duplicated message", n)
	}
	for _, c := range g.calls("reply") {
		if c.UUID == "" {
			t.Errorf("reply without uuid: %+v", c)
		}
	}
}

func TestRateLimitedReplyRetried(t *testing.T) {
	g := newRig(t)
	g.fake.Throttle("reply", 2, "0.05")
	m := g.say(t, "p2p", "oc_p2p_6", "ou_alice", "hello there", nil)
	eventually(t, "the reply goes through after the rate limit", func() bool { return g.replied(m.MessageID, "echo: hello there") == 1 })
	var throttled, uuids []string
	for _, c := range g.fake.Calls() {
		if c.Op == "reply" && c.MessageID == m.MessageID {
			uuids = append(uuids, c.UUID)
			if c.Answered == 429 {
				throttled = append(throttled, c.UUID)
			}
		}
	}
	if len(throttled) != 2 || len(uuids) != 3 || uuids[0] != uuids[2] {
		t.Fatalf("calls: throttled %v, uuids %v", throttled, uuids)
	}
}

func TestRateLimitGivesUp(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.MaxRetries = 2
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	fake.Throttle("create", 10, "0")
	err = ch.Send(context.Background(), channels.Target{ChatID: "oc_1"}, channels.Outgoing{Kind: channels.OutNotice, Text: `say "hi"` + "\n"})
	var ae *APIError
	if err == nil || !asAPIError(err, &ae) || !ae.Throttled() {
		t.Fatalf("err %v", err)
	}
	if n := len(fake.Calls()); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
}

func asAPIError(err error, target **APIError) bool {
	for err != nil {
		if ae, ok := err.(*APIError); ok {
			*target = ae
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func TestSendBuildsJSONContent(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	ch, err := New(testConfig(fake), quiet)
	if err != nil {
		t.Fatal(err)
	}
	text := "quote \" backslash \\ newline\n<at user_id=\"all\"></at>"
	if err := ch.Send(context.Background(), channels.Target{ChatID: "oc_1", ReplyTo: "om_1", ThreadID: "omt_1"}, channels.Outgoing{Kind: channels.OutAnswer, Text: text}); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0].Op != "reply" || calls[0].MessageID != "om_1" || !calls[0].InThread || calls[0].MsgType != "text" {
		t.Fatalf("calls %+v", calls)
	}
	var c struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(calls[0].Content), &c); err != nil || c.Text != text {
		t.Fatalf("content %q: %v", calls[0].Content, err)
	}
	// A permanent API error is returned at once, not retried.
	err = ch.SettleApproval(context.Background(), approval.CardRef{Channel: Name, MessageID: ""}, cards.View{})
	if err == nil {
		t.Fatal("settle without a message id")
	}
}

// The long connection dropped by the server: the SDK reconnects, Ready
// reports it, and events flow again.
func TestLongConnectionReconnects(t *testing.T) {
	g := newRig(t)
	g.say(t, "p2p", "oc_p2p_7", "ou_alice", "before", nil)
	g.fake.Drop()
	eventually(t, "a second connection", func() bool { return g.fake.Connects() >= 2 && g.fake.Connected() })
	eventually(t, "ready again", func() bool { return g.ch.Ready() == nil })
	m := g.say(t, "p2p", "oc_p2p_7", "ou_alice", "after", nil)
	eventually(t, "answered after the reconnect", func() bool { return g.replied(m.MessageID, "echo: after") == 1 })
}

// A silently dropped connection (half-open: no pongs, no close) is
// detected by the SDK's read deadline (2 × ping interval + 5 s) and
// replaced.
func TestHalfOpenConnectionRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 8 s")
	}
	fake := feishutest.New()
	defer fake.Close()
	fake.ClientConfig.PingInterval = 1
	cfg := testConfig(fake)
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	fake.Silence()
	eventually(t, "a new connection after the silent drop", func() bool { return fake.Connects() >= 2 && fake.Connected() })
	e := feishutest.MessageEvent{EventID: "ev_h", MessageID: "om_h", ChatID: "oc_h", ChatType: "p2p", Sender: "ou_alice", Text: "still there?"}
	eventually(t, "ready", func() bool { return ch.Ready() == nil })
	if r, err := fake.Push(e.JSON(), 5*time.Second); err != nil || r.StatusCode != 200 {
		t.Fatalf("push: %+v %v", r, err)
	}
	if got := h.messages(); len(got) != 1 || got[0].Text != "still there?" || got[0].EventID != "ev_h" || got[0].UserID != "ou_alice" {
		t.Fatalf("messages %+v", got)
	}
}

func TestWebhookMode(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.Mode, cfg.EncryptKey, cfg.VerificationToken = ModeWebhook, "ekey", "vtoken"
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ch.WebhookHandler())
	defer srv.Close()
	// Before Start: refused.
	if resp, _, err := feishutest.PostWebhook(srv.URL, "ekey", []byte(`{}`), false); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("before start: %v %v", resp, err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	if err := ch.Ready(); err != nil {
		t.Fatal(err)
	}
	ev := feishutest.MessageEvent{EventID: "ev_w1", MessageID: "om_w1", ChatID: "oc_w", ChatType: "p2p", Sender: "ou_alice", Text: "via webhook"}

	// A forged signature is refused and nothing is handled.
	resp, body, err := feishutest.PostWebhook(srv.URL, "ekey", ev.JSON(), true)
	if err != nil || resp.StatusCode != 401 || !strings.Contains(string(body), "signature") {
		t.Fatalf("forged: %v %s %v", resp.Status, body, err)
	}
	// So is a plaintext body.
	pr, err := http.Post(srv.URL, "application/json", strings.NewReader(string(ev.JSON())))
	if err != nil || pr.StatusCode != 400 {
		t.Fatalf("plaintext: %v %v", pr, err)
	}
	pr.Body.Close()
	if n := len(h.messages()); n != 0 {
		t.Fatalf("%d messages handled from forged requests", n)
	}
	// The real thing.
	resp, body, err = feishutest.PostWebhook(srv.URL, "ekey", ev.JSON(), false)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("signed: %v %s %v", resp.Status, body, err)
	}
	if got := h.messages(); len(got) != 1 || got[0].Text != "via webhook" {
		t.Fatalf("messages %+v", got)
	}
	// The url_verification challenge.
	resp, body, err = feishutest.PostWebhook(srv.URL, "ekey", []byte(`{"challenge":"ch-123","token":"vtoken","type":"url_verification"}`), false)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), "ch-123") {
		t.Fatalf("challenge: %v %s %v", resp.Status, body, err)
	}
	// A card click over HTTP: the handler's answer is the body.
	click := feishutest.CardActionEvent{EventID: "ev_wc", Operator: "ou_alice", MessageID: "om_card", ChatID: "oc_w",
		Value: map[string]any{"kind": "approval", "approval_id": "ap_0123abcd_00112233445566778899aabbccddeeff", "decision": "reject", "payload_sha256": strings.Repeat("a", 64)}}
	resp, body, err = feishutest.PostWebhook(srv.URL, "ekey", click.JSON(), false)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"toast"`) {
		t.Fatalf("click: %v %s %v", resp.Status, body, err)
	}
	if got := h.actions(); len(got) != 1 || got[0].Verb != approval.Reject || got[0].UserID != "ou_alice" || got[0].MessageID != "om_card" || got[0].EventID != "ev_wc" {
		t.Fatalf("actions %+v", got)
	}
}

func TestMessageFields(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	ch, err := New(testConfig(fake), quiet)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	created := time.UnixMilli(1_700_000_000_123)
	e := feishutest.MessageEvent{EventID: "ev_f", MessageID: "om_f", ChatID: "oc_g", ChatType: "group", Sender: "ou_bob",
		Text: "@_user_1  确认 ", Mentions: map[string]string{"@_user_1": "ou_bot"}, ThreadID: "omt_9", CreatedAt: created}
	if r, err := fake.Push(e.JSON(), 5*time.Second); err != nil || r.StatusCode != 200 {
		t.Fatalf("push: %+v %v", r, err)
	}
	got := h.messages()
	want := channels.Message{Channel: "feishu", ChatID: "oc_g", ChatType: "group", ThreadID: "omt_9", UserID: "ou_bob",
		MessageID: "om_f", EventID: "ev_f", Text: "确认", CreatedAt: created}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestLateTypedReplyAnswered: a "@bot 确认" typed after the approval was
// decided is answered in the chat, as a reply to it, with how the
// approval ended; nothing runs again and the model does not read it.
func TestLateTypedReplyAnswered(t *testing.T) {
	g := newRig(t)
	bot := map[string]string{"@_user_1": "ou_bot"}
	g.say(t, "group", "oc_group_late", "ou_alice", "@_user_1 erase orders", bot)
	var a *approval.Approval
	eventually(t, "an approval is pending in the group", func() bool {
		p, err := g.engine.Pending(context.Background(), "feishu:oc_group_late")
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) > 0
	})
	g.say(t, "group", "oc_group_late", "ou_alice", "@_user_1 确认", bot)
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	late := g.say(t, "group", "oc_group_late", "ou_alice", "@_user_1 确认", bot)
	eventually(t, "the late reply is answered", func() bool {
		return g.replied(late.MessageID, "This approval has already been decided: Executed") == 1
	})
	if g.erase.Runs.Load() != 1 || g.model.Seen("确认") != 0 {
		t.Fatalf("runs %d, the model saw 确认 %d times", g.erase.Runs.Load(), g.model.Seen("确认"))
	}
}
