package dingtalk

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/card"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
)

// scriptedHandler answers clicks with a fixed outcome after a delay.
type scriptedHandler struct {
	delay time.Duration
	out   approval.Outcome
	err   error

	mu  sync.Mutex
	got []channels.CardAction
}

func (h *scriptedHandler) HandleMessage(context.Context, channels.Message) error { return nil }
func (h *scriptedHandler) HandleCardAction(_ context.Context, a channels.CardAction) (approval.Outcome, error) {
	h.mu.Lock()
	h.got = append(h.got, a)
	h.mu.Unlock()
	time.Sleep(h.delay)
	return h.out, h.err
}

func newUnit(t *testing.T, h channels.Handler, mod func(*Config)) (*Channel, *dingtalktest.Fake) {
	t.Helper()
	f := dingtalktest.New(t)
	cfg := Config{ClientID: "k", ClientSecret: "s", Lang: "en", CardTemplateID: "tpl.schema", APIBaseURL: f.URL(), WebhookBaseURL: f.URL(),
		ClickWait: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c, f
}

func cardRequest(user, action string) *card.CardRequest {
	r := &card.CardRequest{OutTrackId: "ap_1", UserId: user, SpaceId: "cid1", Content: "{}"}
	r.CardActionData.CardPrivateData.Params = map[string]any{"action": action, "approval_id": "ap_1", "payload_sha256": "abc"}
	return r
}

func TestClickAnswers(t *testing.T) {
	ctx := context.Background()
	// A slow decision: "processing", buttons hidden.
	slow := &scriptedHandler{delay: 300 * time.Millisecond, out: approval.Outcome{Status: approval.StatusExecuted}}
	c, _ := newUnit(t, slow, nil)
	r, err := c.in.onCardCallback(ctx, cardRequest("bob", "confirm"))
	if err != nil || r.CardData.CardParamMap["status"] != "processing" || r.CardData.CardParamMap["buttons"] != "false" {
		t.Fatalf("slow click: %+v %v", r, err)
	}
	slow.mu.Lock()
	a := slow.got[0]
	slow.mu.Unlock()
	if a.Verb != approval.Approve || a.UserID != "bob" || a.ApprovalID != "ap_1" || a.PayloadSHA256 != "abc" || a.EventID == "" || a.MessageID != "ap_1" {
		t.Fatalf("action %+v", a)
	}
	// An unauthorised clicker: only their view changes.
	c2, _ := newUnit(t, &scriptedHandler{out: approval.Outcome{Status: approval.StatusUnauthorized}}, nil)
	r, _ = c2.in.onCardCallback(ctx, cardRequest("eve", "cancel"))
	if r.CardData != nil || r.UserPrivateData == nil || r.UserPrivateData.CardParamMap["buttons"] != "false" {
		t.Fatalf("unauthorised click: %+v", r)
	}
	// A store failure: the card is left alone for everyone; the clicker is
	// told that nothing happened.
	down := approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)
	c3, _ := newUnit(t, &scriptedHandler{err: down}, nil)
	if r, _ = c3.in.onCardCallback(ctx, cardRequest("bob", "confirm")); r.CardData != nil || r.UserPrivateData == nil ||
		r.UserPrivateData.CardParamMap["status_text"] != approval.UserMessage(down) || !r.CardUpdateOptions.UpdatePrivateDataByKey {
		t.Fatalf("failed click: %+v", r)
	}
	if _, hidden := r.UserPrivateData.CardParamMap["buttons"]; hidden {
		t.Fatalf("a failed click hid the clicker's buttons: %+v", r.UserPrivateData)
	}
	// No params: nothing decided.
	h := &scriptedHandler{}
	c4, _ := newUnit(t, h, nil)
	if r, _ = c4.in.onCardCallback(ctx, &card.CardRequest{OutTrackId: "x"}); r.CardData != nil || len(h.got) != 0 {
		t.Fatalf("empty click: %+v", r)
	}
}

func TestOneToOneCardAndMarkdownSettle(t *testing.T) {
	ctx := context.Background()
	c, f := newUnit(t, &scriptedHandler{}, nil)
	d := mustBot(t, f.BotMessage("m1", "cidP", "frank", "hi", false))
	if err := c.in.deliver(ctx, d, ""); err != nil {
		t.Fatal(err)
	}
	v := cards.View{ApprovalID: "ap_1", Title: "Approval needed", Tool: "erase", PayloadSHA256: "abc", Requester: "frank"}
	ref, err := c.ShowApproval(ctx, channels.Target{ChatID: "cidP", UserID: "frank"}, v)
	if err != nil || ref.MessageID != "ap_1" {
		t.Fatalf("ShowApproval %+v %v", ref, err)
	}
	calls := f.Calls("/v1.0/card/instances/createAndDeliver")
	if len(calls) != 1 || calls[0].Body["openSpaceId"] != "dtv1.card//IM_ROBOT.frank" || calls[0].Body["imRobotOpenDeliverModel"] == nil {
		t.Fatalf("1:1 card %+v", calls)
	}

	// Without a template: a markdown message; expiry posts the final state.
	c.cfg.CardTemplateID = ""
	ref, err = c.ShowApproval(ctx, channels.Target{ChatID: "cidP", UserID: "frank"}, v)
	if err != nil || ref.MessageID != "md:p:ap_1" || f.CountText("**确认**") != 1 {
		t.Fatalf("markdown approval %+v %v %v", ref, err, f.Texts())
	}
	v.Final, v.Status, v.StatusText = true, approval.StatusExecuted, "Executed"
	if err := c.SettleApproval(ctx, ref, v); err != nil || len(f.Texts()) != 1 {
		t.Fatalf("settle of a typed decision posted: %v %v", err, f.Texts())
	}
	v.Status, v.StatusText = approval.StatusExpired, "The approval expired"
	if err := c.SettleApproval(ctx, ref, v); err != nil || f.CountText("The approval expired") != 1 {
		t.Fatalf("settle of an expiry: %v %v", err, f.Texts())
	}
}

func TestAccessTokenCached(t *testing.T) {
	ctx := context.Background()
	c, f := newUnit(t, &scriptedHandler{}, nil)
	now := time.Now()
	var mu sync.Mutex
	c.api.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tok, err := c.api.accessToken(ctx); err != nil || tok != "fake-token" {
				t.Errorf("token %q %v", tok, err)
			}
		}()
	}
	wg.Wait()
	if n := len(f.Calls("/v1.0/oauth2/accessToken")); n != 1 {
		t.Fatalf("%d token requests", n)
	}
	body := f.Calls("/v1.0/oauth2/accessToken")[0].Body
	if body["appKey"] != "k" || body["appSecret"] != "s" {
		t.Fatalf("token request %v", body)
	}
	mu.Lock()
	now = now.Add(7200*time.Second - 4*time.Minute) // within 5 min of expiry
	mu.Unlock()
	if _, err := c.api.accessToken(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("/v1.0/oauth2/accessToken")); n != 2 {
		t.Fatalf("%d token requests after expiry", n)
	}
}

func TestVerifySign(t *testing.T) {
	c, _ := newUnit(t, &scriptedHandler{}, nil)
	now := time.Now()
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	if !c.in.verify(ts, Sign(ts, "s"), now) || c.in.verify(ts, Sign(ts, "x"), now) || c.in.verify("abc", Sign("abc", "s"), now) ||
		c.in.verify(ts, "", now) || c.in.verify(ts, Sign(ts, "s"), now.Add(2*time.Hour)) {
		t.Fatal("verify")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{ClientID: "k", ClientSecret: "s", Mode: "webhook"},
		{ClientID: "k", ClientSecret: "s", Lang: "fr"},
		{ClientID: "k", ClientSecret: "s", APIBaseURL: "ftp://x"},
		{ClientID: "k", ClientSecret: "s", WebhookBaseURL: "::"},
	} {
		if _, err := New(cfg, nil); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// FuzzCallbackParsing feeds card callback contents and HTTP-mode bodies:
// nothing panics and a click is accepted only with string action and id.
func FuzzCallbackParsing(f *testing.F) {
	f.Add([]byte(`{"cardPrivateData":{"actionIds":["confirm"],"params":{"action":"confirm","approval_id":"ap_1","payload_sha256":"ab"}}}`))
	f.Add([]byte(`{"cardPrivateData":{"params":{"action":1,"approval_id":null}}}`))
	f.Add([]byte(`{"cardPrivateData":{"actionIds":["resolve_retry"],"params":{"action":"resolve","resolution":"retry","approval_id":"ap_1","payload_sha256":"ab"}}}`))
	f.Add([]byte(`{"cardPrivateData":{"params":{"action":"resolve","resolution":7,"approval_id":"ap_1"}}}`))
	f.Add([]byte(`{"cardPrivateData":{"actionIds":["approve_once"],"params":{"action":"confirm","approval_id":"ap_1","payload_sha256":"ab","grant":"once"}}}`))
	f.Add([]byte(`{"cardPrivateData":{"actionIds":["answer"],"params":{"action":"answer","approval_id":"ap_1","payload_sha256":"ab","answer_1":"2","answer_2":"1,3"}}}`))
	f.Add([]byte(`{"cardPrivateData":{"params":{"action":"answer","approval_id":"ap_1","payload_sha256":"ab","answer_1":2}}}`))
	f.Add([]byte(`{"conversationId":"c","conversationType":"2","msgId":"m","text":{"content":" hi"},"createAt":-1,"sessionWebhook":"http://[::1"}`))
	f.Add([]byte(`{"conversationId":"c","msgtype":"picture","sessionWebhookExpiredTime":1,"sessionWebhook":"https://oapi.dingtalk.com/x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var data card.PrivateCardActionData
		if json.Unmarshal(b, &data) == nil {
			p, ok := parseClick(data.CardPrivateData.Params)
			if ok && (p.action == "" || p.approvalID == "") {
				t.Fatalf("accepted %+v", p)
			}
			if r, _ := data.CardPrivateData.Params["resolution"].(string); ok && p.resolution != strings.TrimSpace(r) {
				t.Fatalf("resolution %q read as %q", r, p.resolution)
			}
			// An answer's inputs are strings, as DingTalk sends every
			// value: any other is no click; the edit holds what was typed.
			if ok && strings.EqualFold(p.action, answerAction) {
				for n := range p.answers {
					raw, present := data.CardPrivateData.Params["answer_"+strconv.Itoa(n+1)]
					if s, isText := raw.(string); present && (!isText || s != p.answers[n]) {
						t.Fatalf("answer_%d %v read as %q", n+1, raw, p.answers[n])
					}
				}
				if edits, typed := answerEdits(p); typed && !json.Valid(edits["#1"]) {
					t.Fatalf("edits %s", edits["#1"])
				}
			}
		}
		hook, _ := url.Parse("https://oapi.dingtalk.com")
		chats := &chatBook{cfg: Config{RobotCode: "r"}, hook: hook, now: time.Now, chats: map[string]chatInfo{}}
		in := &intake{cfg: Config{RobotCode: "r"}, now: time.Now, log: quiet, chats: chats}
		if d, err := parseBotMessage(b); err == nil {
			m, info, ok := in.message(d)
			if ok && (m.Text == "" || m.ChatID == "" || (info.webhook != "" && !chats.webhookAllowed(info.webhook))) {
				t.Fatalf("message %+v %+v", m, info)
			}
		}
	})
}

// TestFailedClickInTheConfiguredLanguage: the sentence a clicker sees when
// the decision could not be taken is in the channel's language.
func TestFailedClickInTheConfiguredLanguage(t *testing.T) {
	down := approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)
	for _, lang := range []string{"en", "zh"} {
		c, _ := newUnit(t, &scriptedHandler{err: down}, func(cfg *Config) { cfg.Lang = lang })
		r, _ := c.in.onCardCallback(context.Background(), cardRequest("bob", "confirm"))
		if r == nil || r.UserPrivateData == nil || r.UserPrivateData.CardParamMap["status_text"] != approval.UserMessageIn(down, lang) {
			t.Fatalf("%s: %+v", lang, r)
		}
	}
	if approval.UserMessageIn(down, "zh") == approval.UserMessageIn(down, "en") {
		t.Fatal("the two languages say the same")
	}
}

// TestDefaultLanguageIsChinese: a DingTalk channel whose lang is not set
// speaks Chinese (its teams are Chinese); a set one wins.
func TestDefaultLanguageIsChinese(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{{"", "zh"}, {"en", "en"}, {"zh-CN", "zh"}} {
		c, err := New(Config{ClientID: "k", ClientSecret: "s", Lang: tc.lang}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if c.cfg.Lang != tc.want {
			t.Errorf("lang %q: the channel speaks %q, want %q", tc.lang, c.cfg.Lang, tc.want)
		}
	}
}
