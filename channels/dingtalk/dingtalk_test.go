package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/chatbot"
	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) {
	SetSDKLogger(quiet)
	testredis.Main(m)
}

// cardParams returns the cardParamMap of a recorded card call.
func cardParams(t *testing.T, c dingtalktest.Call) map[string]any {
	t.Helper()
	cd, _ := c.Body["cardData"].(map[string]any)
	m, _ := cd["cardParamMap"].(map[string]any)
	if m == nil {
		t.Fatalf("no cardParamMap in %v", c.Body)
	}
	return m
}

// ackResponse decodes the card response in a card callback's ACK.
func ackResponse(t *testing.T, ack map[string]any) map[string]any {
	t.Helper()
	if code, _ := ack["code"].(float64); code != 200 {
		t.Fatalf("ACK %v", ack)
	}
	var data struct {
		Response struct {
			CardData struct {
				CardParamMap map[string]any `json:"cardParamMap"`
			} `json:"cardData"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(ack["data"].(string)), &data); err != nil {
		t.Fatalf("ACK data %v: %v", ack["data"], err)
	}
	return data.Response.CardData.CardParamMap
}

func click(outTrack, user, action, id, sha string) map[string]any {
	content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{action},
		"params": map[string]any{"action": action, "approval_id": id, "payload_sha256": sha}}})
	return map[string]any{"outTrackId": outTrack, "userId": user, "userIdType": 1, "corpId": "dingcorp", "spaceType": "IM_GROUP",
		"spaceId": "cid1", "type": "actionCallback", "extension": "{}", "content": string(content)}
}

func TestMessageCardClickAndUpdate(t *testing.T) {
	g := newRig(t, nil)
	// The ticket request subscribed to bot messages and card callbacks.
	ack := g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid1", "alice", "erase orders", true))
	if code, _ := ack["code"].(float64); code != 200 {
		t.Fatalf("message ACK %v", ack)
	}
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	c := g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0]
	if c.Token != "fake-token" || c.Body["callbackType"] != "STREAM" || c.Body["openSpaceId"] != "dtv1.card//IM_GROUP.cid1" ||
		c.Body["cardTemplateId"] != "tpl.schema" {
		t.Fatalf("createAndDeliver %+v", c)
	}
	p := cardParams(t, c)
	id, _ := p["approval_id"].(string)
	sha, _ := p["payload_sha256"].(string)
	if c.Body["outTrackId"] != id || p["status"] != "pending" || p["buttons"] != "true" || p["requester"] != "alice" ||
		p["tool"] != "erase" || sha == "" || p["expires_at"] == "" {
		t.Fatalf("card data %v", p)
	}
	deliver, _ := c.Body["imGroupOpenDeliverModel"].(map[string]any)
	if deliver["robotCode"] != "robot-1" {
		t.Fatalf("deliver model %v", deliver)
	}

	// A click answers with the outcome, buttons hidden; the card is then updated.
	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha)))
	if resp["status"] != "executed" || resp["buttons"] != "false" || resp["result"] != "erase done (run 1)" {
		t.Fatalf("click response %v", resp)
	}
	eventually(t, "the card update", func() bool { return len(g.fake.Calls("/v1.0/card/instances")) == 1 })
	u := g.fake.Calls("/v1.0/card/instances")[0]
	if u.Method != http.MethodPut || u.Body["outTrackId"] != id || u.Token != "fake-token" {
		t.Fatalf("update %+v", u)
	}
	if up := cardParams(t, u); up["status"] != "executed" || up["buttons"] != "false" || up["final"] != "true" || up["decided_by"] != "alice" {
		t.Fatalf("update data %v", up)
	}
	// The agent's answer went through the sessionWebhook.
	eventually(t, "the summary", func() bool { return g.fake.CountText("summary: erase done (run 1)") == 1 })
	// The same click again (a redelivery): nothing runs twice.
	resp = ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha)))
	if resp["status"] != "executed" || g.erase.Runs.Load() != 1 {
		t.Fatalf("replayed click %v, runs %d", resp, g.erase.Runs.Load())
	}
	if n := len(g.fake.Calls("/v1.0/oauth2/accessToken")); n != 1 {
		t.Fatalf("token fetched %d times", n)
	}
}

func TestTypedConfirmWithoutTemplate(t *testing.T) {
	g := newRig(t, func(c *Config) { c.CardTemplateID = "" })
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid2", "alice", "erase users", true))
	eventually(t, "the markdown approval", func() bool { return g.fake.CountText("@bot 确认") == 1 })
	if n := len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")); n != 0 {
		t.Fatalf("%d cards created without a template", n)
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid2", "alice", "确认", true))
	eventually(t, "the summary", func() bool { return g.fake.CountText("summary: erase done (run 1)") == 1 })
	if g.erase.Runs.Load() != 1 || g.model.Seen("确认") != 0 {
		t.Fatalf("runs %d, model saw 确认 %d", g.erase.Runs.Load(), g.model.Seen("确认"))
	}
}

func TestDuplicateMsgIDOneReply(t *testing.T) {
	g := newRig(t, nil)
	m := g.fake.BotMessage(nextID(), "cid3", "bob", "hello", false)
	g.fake.Push(payload.BotMessageCallbackTopic, m)
	g.fake.Push(payload.BotMessageCallbackTopic, m) // a redelivery after a late ACK
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid3", "bob", "barrier", false))
	eventually(t, "the barrier", func() bool { return g.fake.CountText("echo: barrier") == 1 })
	if n := g.fake.CountText("echo: hello"); n != 1 || g.model.Seen("hello") != 1 {
		t.Fatalf("%d replies, model saw %d", n, g.model.Seen("hello"))
	}
}

// TestMessagesKeepTheirOrder: messages of one conversation reach the
// agent in the order DingTalk delivered them, although the SDK hands each
// frame over from a goroutine of its own. The session's queue holds all n
// messages: the test pushes them faster than the agent answers, and with
// the default QueueSize (16) the loop rightly refuses those beyond it
// ("too many messages are waiting").
func TestMessagesKeepTheirOrder(t *testing.T) {
	const n = 30
	g := newRigLoop(t, nil, memstore.New(memstore.Options{}), nil, func(c *agent.LoopConfig) { c.QueueSize = n })
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("m%02d", i))
		g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid-order", "bob", want[i], false))
	}
	eventually(t, "the last message's answer", func() bool { return g.model.Seen(want[n-1]) == 1 })
	if saw := g.model.Saw(); !slices.Equal(saw, want) {
		t.Fatalf("the model saw %v; want the messages in the order they were sent: %v", saw, want)
	}
}

// TestRedeliveredRequestOneRun: a message asking for a tool, delivered
// again (its ACK was late), makes one approval card and one run.
func TestRedeliveredRequestOneRun(t *testing.T) {
	g := newRig(t, nil)
	m := g.fake.BotMessage(nextID(), "cid8", "alice", "erase cache", true)
	g.fake.Push(payload.BotMessageCallbackTopic, m)
	g.fake.Push(payload.BotMessageCallbackTopic, m)
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid8", "alice", "确认", true))
	eventually(t, "the summary", func() bool { return g.fake.CountText("summary: erase done (run 1)") == 1 })
	g.fake.Push(payload.BotMessageCallbackTopic, m) // much later: still dropped
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid8", "alice", "barrier", true))
	eventually(t, "the barrier", func() bool { return g.fake.CountText("echo: barrier") == 1 })
	if g.erase.Runs.Load() != 1 || g.model.Seen("erase cache") != 1 || len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) != 1 {
		t.Fatalf("runs %d, model saw %d", g.erase.Runs.Load(), g.model.Seen("erase cache"))
	}
}

func TestSendFallsBackToRobotAPI(t *testing.T) {
	g := newRig(t, nil)
	ctx := context.Background()
	// A 1:1 chat whose sessionWebhook answers an errcode in a 200 body.
	m := g.fake.BotMessage(nextID(), "cid4", "carol", "x", false)
	m["sessionWebhook"] = g.fake.URL() + "/robot/sendBySession?session=broken"
	msg, info, _ := g.ch.in.message(mustBot(t, m))
	g.ch.chats.mu.Lock()
	g.ch.chats.chats[msg.ChatID] = info
	g.ch.chats.mu.Unlock()
	if err := g.ch.Send(ctx, channels.Target{ChatID: "cid4", UserID: "carol"}, channels.Outgoing{Kind: channels.OutAnswer, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	calls := g.fake.Calls("/v1.0/robot/oToMessages/batchSend")
	if len(calls) != 1 || calls[0].Body["msgKey"] != "sampleText" || !strings.Contains(calls[0].Body["msgParam"].(string), `"hi"`) {
		t.Fatalf("batchSend %+v", calls)
	}
	// An unknown conversation is a group; a foreign webhook host is never posted to.
	m = g.fake.BotMessage(nextID(), "cid5", "dave", "x", true)
	m["sessionWebhook"] = "https://evil.example/robot/sendBySession?session=x"
	_, info, _ = g.ch.in.message(mustBot(t, m))
	if info.webhook != "" {
		t.Fatalf("foreign webhook kept: %q", info.webhook)
	}
	if err := g.ch.Send(ctx, channels.Target{ChatID: "cid-unknown"}, channels.Outgoing{Kind: channels.OutNotice, Text: "yo"}); err != nil {
		t.Fatal(err)
	}
	if calls := g.fake.Calls("/v1.0/robot/groupMessages/send"); len(calls) != 1 || calls[0].Body["openConversationId"] != "cid-unknown" {
		t.Fatalf("groupMessages %+v", calls)
	}
}

func mustBot(t *testing.T, m map[string]any) *chatbot.BotCallbackDataModel {
	t.Helper()
	b, _ := json.Marshal(m)
	d, err := parseBotMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestHTTPMode(t *testing.T) {
	g := newRig(t, func(c *Config) { c.Mode = ModeHTTP })
	srv := httptest.NewServer(g.ch.HTTPHandler())
	defer srv.Close()
	body, _ := json.Marshal(g.fake.BotMessage(nextID(), "cid6", "erin", "hi there", false))
	post := func(ts, sign string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
		req.Header.Set("timestamp", ts)
		req.Header.Set("sign", sign)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base := time.Now()
	stamp := func(i int) string {
		return strconv.FormatInt(base.Add(time.Duration(i)*time.Millisecond).UnixMilli(), 10)
	}
	now := stamp(0)
	old := strconv.FormatInt(time.Now().Add(-61*time.Minute).UnixMilli(), 10)
	if code := post(now, Sign(now, "wrong-secret")); code != http.StatusUnauthorized {
		t.Fatalf("bad sign: %d", code)
	}
	if code := post(old, Sign(old, "app-secret")); code != http.StatusUnauthorized {
		t.Fatalf("old timestamp: %d", code)
	}
	if code := post(now, Sign(now, "app-secret")); code != http.StatusOK {
		t.Fatalf("good sign: %d", code)
	}
	eventually(t, "the echo", func() bool { return g.fake.CountText("echo: hi there") == 1 })
	if g.fake.Tickets() != 0 {
		t.Fatal("HTTP mode opened a stream")
	}
	// Card clicks would need a stream: approvals are typed in HTTP mode.
	again := stamp(1)
	if code := post(again, Sign(again, "app-secret")); code != http.StatusOK { // the same msgId: dropped
		t.Fatalf("the same message again: %d", code)
	}
	body, _ = json.Marshal(g.fake.BotMessage(nextID(), "cid6", "erin", "erase logs", false))
	erase := stamp(2)
	if code := post(erase, Sign(erase, "app-secret")); code != http.StatusOK {
		t.Fatalf("erase: %d", code)
	}
	eventually(t, "the markdown approval", func() bool { return g.fake.CountText("**确认**") == 1 })
	if n := len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")); n != 0 || g.fake.CountText("echo: hi there") != 1 {
		t.Fatalf("%d cards in HTTP mode; texts %v", n, g.fake.Texts())
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	g := newRig(t, nil)
	g.fake.Drop()
	g.fake.WaitConn(15 * time.Second) // the beta waits >= 3 s
	if n := g.fake.Tickets(); n != 2 {
		t.Fatalf("tickets %d", n)
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid7", "bob", "after", false))
	eventually(t, "the echo", func() bool { return g.fake.CountText("echo: after") == 1 })
}

func TestRefusedStart(t *testing.T) {
	f := dingtalktest.New(t)
	f.Refuse(true)
	ch, err := New(Config{ClientID: "k", ClientSecret: "s", APIBaseURL: f.URL()}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Start(context.Background(), nopHandler{}); err == nil || !strings.Contains(err.Error(), "bad client") {
		t.Fatalf("Start: %v", err)
	}
}

type nopHandler struct{}

func (nopHandler) HandleMessage(context.Context, channels.Message) error { return nil }
func (nopHandler) HandleCardAction(context.Context, channels.CardAction) (approval.Outcome, error) {
	return approval.Outcome{Status: approval.StatusExecuted}, nil
}

func TestLeaseFailover(t *testing.T) {
	rdb, prefix := testredis.Start(t)
	ctx := context.Background()
	key := prefix + "lease"
	a, b := NewRedisLease(rdb, key, 300*time.Millisecond), NewRedisLease(rdb, key, 300*time.Millisecond)
	if ok, err := a.Acquire(ctx); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	if ok, err := b.Acquire(ctx); ok || err != nil {
		t.Fatalf("b took a held lease: %v %v", ok, err)
	}
	if ok, _ := a.Renew(ctx); !ok {
		t.Fatal("a could not renew")
	}
	_ = b.Release(ctx) // not b's: nothing happens
	if ok, _ := a.Renew(ctx); !ok {
		t.Fatal("b released a's lease")
	}
	// a dies (stops renewing): b takes over after the TTL.
	eventually(t, "b takes the lease", func() bool { ok, _ := b.Acquire(ctx); return ok })
	if ok, _ := a.Renew(ctx); ok {
		t.Fatal("a renewed a lease it lost")
	}

	// Two channels on one lease key: one stream at a time, fail-over on Close.
	f := dingtalktest.New(t)
	mk := func() *Channel {
		ttl := 600 * time.Millisecond
		ch, err := New(Config{ClientID: "k", ClientSecret: "s", APIBaseURL: f.URL(), LeaseTTL: ttl, Lease: NewRedisLease(rdb, prefix+"stream", ttl)}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Start(ctx, nopHandler{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ch.Close(ctx) })
		return ch
	}
	c1 := mk()
	f.WaitConn(5 * time.Second)
	c2 := mk()
	time.Sleep(time.Second)
	if !c1.Owner() || c2.Owner() || f.Tickets() != 1 || c2.Ready() != nil {
		t.Fatalf("owners %v %v, tickets %d, ready %v", c1.Owner(), c2.Owner(), f.Tickets(), c2.Ready())
	}
	if err := c1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.WaitConn(5 * time.Second)
	eventually(t, "c2 owns the stream", c2.Owner)
}

// cutLease is a lease whose Redis becomes unreachable when cut.
type cutLease struct {
	Lease
	mu  sync.Mutex
	cut bool
}

func (l *cutLease) down() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.cut }

func (l *cutLease) Acquire(ctx context.Context) (bool, error) {
	if l.down() {
		return false, errors.New("redis unreachable")
	}
	return l.Lease.Acquire(ctx)
}

func (l *cutLease) Renew(ctx context.Context) (bool, error) {
	if l.down() {
		return false, errors.New("redis unreachable")
	}
	return l.Lease.Renew(ctx)
}

// TestLeaseFailoverWhenOwnerCutOff: the owner loses Redis (as if dead to
// the others); once its lease's TTL ends another replica connects, and the
// cut-off owner has dropped its stream by then.
func TestLeaseFailoverWhenOwnerCutOff(t *testing.T) {
	rdb, prefix := testredis.Start(t)
	ctx := context.Background()
	f := dingtalktest.New(t)
	ttl := 600 * time.Millisecond
	mk := func() (*Channel, *cutLease) {
		l := &cutLease{Lease: NewRedisLease(rdb, prefix+"stream", ttl)}
		ch, err := New(Config{ClientID: "k", ClientSecret: "s", APIBaseURL: f.URL(), LeaseTTL: ttl, Lease: l}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Start(ctx, nopHandler{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ch.Close(ctx) })
		return ch, l
	}
	c1, l1 := mk()
	f.WaitConn(5 * time.Second)
	c2, _ := mk()
	l1.mu.Lock()
	l1.cut = true
	l1.mu.Unlock()
	eventually(t, "c1 lets go", func() bool { return !c1.Owner() })
	if c2.Owner() {
		t.Fatal("both replicas held the stream")
	}
	f.WaitConn(5 * time.Second)
	eventually(t, "c2 owns the stream", c2.Owner)
	if c1.Owner() || f.Tickets() != 2 {
		t.Fatalf("c1 %v, tickets %d", c1.Owner(), f.Tickets())
	}
	if c1.Ready() == nil {
		t.Fatal("the cut-off replica reports ready")
	}
}

// TestLateTypedReplyAnswered: a 确认 typed after the approval was decided
// is answered in the chat with how the approval ended; nothing runs again
// and the model does not read it.
func TestLateTypedReplyAnswered(t *testing.T) {
	g := newRig(t, func(c *Config) { c.CardTemplateID = "" })
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid-late", "alice", "erase users", true))
	eventually(t, "the markdown approval", func() bool { return g.fake.CountText("@bot 确认") == 1 })
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid-late", "alice", "确认", true))
	eventually(t, "the summary", func() bool { return g.fake.CountText("summary: erase done (run 1)") == 1 })
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid-late", "alice", "确认", true))
	eventually(t, "the late reply is answered", func() bool {
		return g.fake.CountText("This approval has already been decided: Executed") == 1
	})
	if g.erase.Runs.Load() != 1 || g.model.Seen("确认") != 0 {
		t.Fatalf("runs %d, the model saw 确认 %d times", g.erase.Runs.Load(), g.model.Seen("确认"))
	}
}
