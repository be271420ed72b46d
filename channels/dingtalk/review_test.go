package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

var errStoreDown = approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)

// ackCard decodes the public and private card data of a card callback's ACK.
func ackCard(t *testing.T, ack map[string]any) (public, private map[string]any) {
	t.Helper()
	if code, _ := ack["code"].(float64); code != 200 {
		t.Fatalf("ACK %v", ack)
	}
	var data struct {
		Response struct {
			CardData *struct {
				CardParamMap map[string]any `json:"cardParamMap"`
			} `json:"cardData"`
			UserPrivateData *struct {
				CardParamMap map[string]any `json:"cardParamMap"`
			} `json:"userPrivateData"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(ack["data"].(string)), &data); err != nil {
		t.Fatalf("ACK data %v: %v", ack["data"], err)
	}
	if data.Response.CardData != nil {
		public = data.Response.CardData.CardParamMap
	}
	if data.Response.UserPrivateData != nil {
		private = data.Response.UserPrivateData.CardParamMap
	}
	return public, private
}

// httpPost posts body to h with the HTTP-mode headers and returns the status.
func httpPost(t *testing.T, url string, body []byte, ts, sign string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("timestamp", ts)
	req.Header.Set("sign", sign)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Item 1: a captured (timestamp, sign) pair cannot carry another body.
func TestHTTPSignReplayRefused(t *testing.T) {
	g := newRig(t, func(c *Config) { c.Mode = ModeHTTP })
	srv := httptest.NewServer(g.ch.HTTPHandler())
	defer srv.Close()
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	sign := Sign(ts, "app-secret")
	genuine, _ := json.Marshal(g.fake.BotMessage(nextID(), "cid20", "erin", "hello", false))
	if code := httpPost(t, srv.URL, genuine, ts, sign); code != http.StatusOK {
		t.Fatalf("genuine request: %d", code)
	}
	// The same headers with a forged body (another sender, another msgId).
	forged, _ := json.Marshal(g.fake.BotMessage(nextID(), "cid20", "boss", "forged order", false))
	if code := httpPost(t, srv.URL, forged, ts, sign); code != http.StatusUnauthorized {
		t.Fatalf("replayed sign with a forged body: %d, want 401", code)
	}
	// A request with its own fresh sign still works.
	ts2 := strconv.FormatInt(time.Now().UnixMilli()+1, 10)
	barrier, _ := json.Marshal(g.fake.BotMessage(nextID(), "cid20", "erin", "barrier", false))
	if code := httpPost(t, srv.URL, barrier, ts2, Sign(ts2, "app-secret")); code != http.StatusOK {
		t.Fatalf("fresh request: %d", code)
	}
	// Both accepted messages are answered (in either order: each request
	// is acknowledged before its message is handled); the forged one was
	// refused before anything was queued.
	eventually(t, "the answers", func() bool { return g.fake.CountText("echo: barrier") == 1 && g.fake.CountText("echo: hello") == 1 })
	if g.model.Seen("forged order") != 0 {
		t.Fatalf("model saw the forged text %d times; texts %v", g.model.Seen("forged order"), g.fake.Texts())
	}
}

// Item 1: replicas sharing a store refuse a pair any of them accepted; a
// store that cannot answer refuses the request.
func TestHTTPSignReplayAcrossReplicas(t *testing.T) {
	f := dingtalktest.New(t)
	shared := memstore.New(memstore.Options{})
	replica := func(m Marks) *httptest.Server {
		ch, err := New(Config{ClientID: "k", ClientSecret: "s", Mode: ModeHTTP, APIBaseURL: f.URL(), WebhookBaseURL: f.URL(), Marks: m}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Start(context.Background(), nopHandler{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ch.Close(context.Background()) })
		srv := httptest.NewServer(ch.HTTPHandler())
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := replica(shared), replica(shared)
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	body, _ := json.Marshal(f.BotMessage(nextID(), "cid21", "erin", "hi", false))
	if code := httpPost(t, a.URL, body, ts, Sign(ts, "s")); code != http.StatusOK {
		t.Fatalf("replica a: %d", code)
	}
	body, _ = json.Marshal(f.BotMessage(nextID(), "cid21", "boss", "确认", false))
	if code := httpPost(t, b.URL, body, ts, Sign(ts, "s")); code != http.StatusUnauthorized {
		t.Fatalf("replica b took a pair replica a accepted: %d", code)
	}
	down := replica(failingMarks{})
	if code := httpPost(t, down.URL, body, ts, Sign(ts, "s")); code != http.StatusServiceUnavailable {
		t.Fatalf("store down: %d, want 503", code)
	}
}

type failingMarks struct{}

func (failingMarks) Seen(context.Context, string, time.Duration) (bool, error) {
	return false, errStoreDown
}

// recordingMarks records the TTLs asked for.
type recordingMarks struct {
	mu   sync.Mutex
	ttls []time.Duration
}

func (r *recordingMarks) Seen(_ context.Context, _ string, ttl time.Duration) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ttls = append(r.ttls, ttl)
	return true, nil
}

// Item 1: a pair is remembered for as long as it could verify, a
// timestamp in the future included.
func TestSignMarkLastsWhileThePairVerifies(t *testing.T) {
	m := &recordingMarks{}
	c, err := New(Config{ClientID: "k", ClientSecret: "s", Mode: ModeHTTP, Marks: m}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, at := range []time.Time{now, now.Add(-30 * time.Minute), now.Add(30 * time.Minute)} {
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		if !c.in.verify(ts, Sign(ts, "s"), now) {
			t.Fatal("verify")
		}
		if _, err := c.in.freshSign(context.Background(), ts, Sign(ts, "s"), now); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []time.Duration{time.Hour, 30 * time.Minute, 90 * time.Minute} {
		if got := m.ttls[i]; got < want || got > want+2*time.Second {
			t.Errorf("mark %d lasts %s, want about %s", i, got, want)
		}
	}
}

// claimFails makes the next n claims fail as if Redis were down.
type claimFails struct {
	approval.Store
	n atomic.Int32
}

func (s *claimFails) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	if s.n.Add(-1) >= 0 {
		return approval.ClaimResult{}, errStoreDown
	}
	return s.Store.Claim(ctx, id, req)
}

// Items 2 and 3: a click that the store refused tells the clicker (alone)
// and leaves the buttons; the same click tried again is decided, not
// taken for a duplicate.
func TestFailedClickCanBeRetried(t *testing.T) {
	store := &claimFails{Store: memstore.New(memstore.Options{})}
	g := newRigStore(t, nil, store)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid22", "alice", "erase orders", true))
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	p := cardParams(t, g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0])
	id, sha := p["approval_id"].(string), p["payload_sha256"].(string)

	store.n.Store(1)
	pub, priv := ackCard(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha)))
	if pub != nil || priv["status_text"] != approval.UserMessage(errStoreDown) || priv["buttons"] != nil {
		t.Fatalf("failed click: public %v, private %v", pub, priv)
	}
	if g.erase.Runs.Load() != 0 {
		t.Fatal("a failed click ran the tool")
	}
	pub, _ = ackCard(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha)))
	if pub["status"] != "executed" || pub["buttons"] != "false" || g.erase.Runs.Load() != 1 {
		t.Fatalf("retried click: %v, runs %d", pub, g.erase.Runs.Load())
	}
}

// Item 6: click answers use the configured outcome words, and a click
// that decided nothing changes the card for the clicker alone.
func TestClickAnswersOutcomeTextAndPrivacy(t *testing.T) {
	ctx := context.Background()
	text := approval.OutcomeText{approval.StatusExecuted: "Done as asked", approval.StatusMissing: "No such thing here"}
	withText := func(c *Config) { c.Text = text }
	c, _ := newUnit(t, &scriptedHandler{out: approval.Outcome{Status: approval.StatusExecuted}}, withText)
	r, _ := c.in.onCardCallback(ctx, cardRequest("bob", "confirm"))
	if r.CardData == nil || r.CardData.CardParamMap["status_text"] != "Done as asked" || r.CardData.CardParamMap["buttons"] != "false" {
		t.Fatalf("executed click: %+v", r)
	}
	for st, hides := range map[approval.Status]bool{approval.StatusMissing: true, approval.StatusUnauthorized: true,
		approval.StatusTampered: true, approval.StatusAlreadyDecided: false} {
		c, _ := newUnit(t, &scriptedHandler{out: approval.Outcome{Status: st}}, withText)
		r, _ := c.in.onCardCallback(ctx, cardRequest("eve", "confirm"))
		if r.CardData != nil || r.UserPrivateData == nil || !r.CardUpdateOptions.UpdatePrivateDataByKey {
			t.Fatalf("%s click changed the card for everyone: %+v", st, r)
		}
		priv := r.UserPrivateData.CardParamMap
		want := approval.DefaultOutcomeText("en").Text(st)
		if st == approval.StatusMissing {
			want = "No such thing here"
		}
		if priv["status_text"] != want {
			t.Errorf("%s click: private status_text %q, want %q", st, priv["status_text"], want)
		}
		if _, hidden := priv["buttons"]; hidden != hides || (hides && priv["buttons"] != "false") {
			t.Errorf("%s click: private data %v", st, priv)
		}
	}
}

// byUser answers clicks per user, after a delay.
type byUser struct {
	delay time.Duration
	out   map[string]clickResult
}

func (h byUser) HandleMessage(context.Context, channels.Message) error { return nil }
func (h byUser) HandleCardAction(_ context.Context, a channels.CardAction) (approval.Outcome, error) {
	time.Sleep(h.delay)
	r := h.out[string(a.UserID)]
	return r.o, r.err
}

// Items 2, 3 and 6: a click answered "processing" (buttons hidden for
// everyone) that then decides nothing puts the card back to pending and
// tells the clicker why; one that decided leaves the update to Settle.
func TestSlowClickThatDecidedNothingRestoresTheButtons(t *testing.T) {
	ctx := context.Background()
	h := byUser{delay: 200 * time.Millisecond, out: map[string]clickResult{
		"alice": {o: approval.Outcome{Status: approval.StatusExecuted}},
		"bob":   {err: errStoreDown},
		"eve":   {o: approval.Outcome{Status: approval.StatusUnauthorized}},
	}}
	c, f := newUnit(t, h, nil)
	for _, u := range []string{"alice", "bob", "eve"} {
		r, err := c.in.onCardCallback(ctx, cardRequest(u, "confirm"))
		if err != nil || r.CardData == nil || r.CardData.CardParamMap["status"] != cards.DingTalkStatusProcessing {
			t.Fatalf("%s: %+v %v", u, r, err)
		}
	}
	if err := c.Close(ctx); err != nil { // waits for the decisions and their follow-ups
		t.Fatal(err)
	}
	calls := f.Calls("/v1.0/card/instances")
	if len(calls) != 2 {
		t.Fatalf("%d card updates, want 2 (bob, eve): %+v", len(calls), calls)
	}
	got := map[string]map[string]any{}
	for _, call := range calls {
		if call.Method != http.MethodPut || call.Body["outTrackId"] != "ap_1" {
			t.Fatalf("update %+v", call)
		}
		if p := cardParams(t, call); p["status"] != "pending" || p["buttons"] != "true" || p["final"] != "false" {
			t.Fatalf("restored card data %v", p)
		}
		priv, _ := call.Body["privateData"].(map[string]any)
		for u, v := range priv {
			got[u], _ = v.(map[string]any)["cardParamMap"].(map[string]any)
		}
	}
	if got["bob"]["status_text"] != approval.UserMessage(errStoreDown) || got["bob"]["buttons"] != nil {
		t.Errorf("bob's private data %v", got["bob"])
	}
	if got["eve"]["buttons"] != "false" || got["eve"]["status_text"] == "" || got["alice"] != nil {
		t.Errorf("private data %v", got)
	}
}

// blockingHandler blocks HandleMessage until released.
type blockingHandler struct {
	entered chan string
	release chan struct{}
}

func (h *blockingHandler) HandleMessage(_ context.Context, m channels.Message) error {
	h.entered <- m.Text
	<-h.release
	return nil
}
func (h *blockingHandler) HandleCardAction(context.Context, channels.CardAction) (approval.Outcome, error) {
	return approval.Outcome{}, nil
}

// Item 4: a bot message is ACKed while the router still handles it, and
// Close waits for that.
func TestBotMessageAckedBeforeTheRouterReturns(t *testing.T) {
	h := &blockingHandler{entered: make(chan string, 1), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	c, f := newUnit(t, h, nil)
	t.Cleanup(release)          // before newUnit's Close, which waits for the router
	f.WaitConn(5 * time.Second) // Start returns before the stream connects
	acked := make(chan map[string]any, 1)
	go func() {
		acked <- f.Push(payload.BotMessageCallbackTopic, f.BotMessage(nextID(), "cid23", "bob", "slow", false))
	}()
	select {
	case ack := <-acked:
		if code, _ := ack["code"].(float64); code != 200 {
			t.Fatalf("ACK %v", ack)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ACK waited for the router")
	}
	select {
	case text := <-h.entered:
		if text != "slow" {
			t.Fatalf("router got %q", text)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message never reached the router")
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the router was still handling a message", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// Item 5: the stream's owner is not ready while its connection is down,
// and is again once it reconnected.
func TestOwnerNotReadyWhileStreamDown(t *testing.T) {
	c, f := newUnit(t, nopHandler{}, func(c *Config) { c.LeaseTTL = 150 * time.Millisecond })
	f.WaitConn(5 * time.Second)
	if !c.Owner() || c.Ready() != nil {
		t.Fatalf("owner %v, ready %v", c.Owner(), c.Ready())
	}
	f.Refuse(true)
	f.Drop()
	eventually(t, "not ready", func() bool { return c.Ready() != nil })
	if !c.Owner() {
		t.Fatal("the owner gave up the lease")
	}
	f.Refuse(false)
	f.WaitConn(10 * time.Second)
	eventually(t, "ready again", func() bool { return c.Ready() == nil })
}

// Item 5: a lease TTL that is not positive is refused, never a key
// without expiry.
func TestLeaseTTLMustBePositive(t *testing.T) {
	rdb, prefix := testredis.Start(t)
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, -time.Second} {
		l := NewRedisLease(rdb, prefix+"zero", ttl)
		if ok, err := l.Acquire(ctx); ok || !errors.Is(err, ErrLeaseTTL) {
			t.Fatalf("Acquire with TTL %s: %v %v", ttl, ok, err)
		}
		if ok, err := l.Renew(ctx); ok || !errors.Is(err, ErrLeaseTTL) {
			t.Fatalf("Renew with TTL %s: %v %v", ttl, ok, err)
		}
	}
	if n, _ := rdb.Exists(ctx, prefix+"zero").Result(); n != 0 {
		t.Fatal("a lease key was written")
	}
	f := dingtalktest.New(t)
	ch, err := New(Config{ClientID: "k", ClientSecret: "s", APIBaseURL: f.URL(), Lease: NewRedisLease(rdb, prefix+"stream", 0)}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Start(ctx, nopHandler{}); !errors.Is(err, ErrLeaseTTL) {
		t.Fatalf("Start with a zero lease TTL: %v", err)
	}
	if f.Tickets() != 0 {
		t.Fatal("connected without a lease")
	}
	if _, err := New(Config{ClientID: "k", ClientSecret: "s", LeaseTTL: -time.Second}, quiet); err == nil {
		t.Fatal("New accepted a negative lease_ttl")
	}
}

// Item 7: a markdown approval in a 1:1 chat, settled by a process that
// never saw the chat (a restart), goes to the 1:1 robot API.
func TestMarkdownSettleKeepsChatType(t *testing.T) {
	ctx := context.Background()
	noTemplate := func(c *Config) { c.CardTemplateID = "" }
	first, f := newUnit(t, &scriptedHandler{}, noTemplate)
	if err := first.in.deliver(ctx, mustBot(t, f.BotMessage(nextID(), "cidP", "frank", "hi", false)), ""); err != nil {
		t.Fatal(err)
	}
	if err := first.in.deliver(ctx, mustBot(t, f.BotMessage(nextID(), "cidG", "gina", "hi", true)), ""); err != nil {
		t.Fatal(err)
	}
	show := func(chat, user, id string) approval.CardRef {
		v := cards.View{ApprovalID: approval.ID(id), Title: "Approval needed", Tool: "erase", PayloadSHA256: "abc", Requester: approval.UserID(user)}
		ref, err := first.ShowApproval(ctx, channels.Target{ChatID: chat, UserID: approval.UserID(user)}, v)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	direct, group := show("cidP", "frank", "ap_1"), show("cidG", "gina", "ap_2")

	// A new process (nothing remembered) settles both as expired.
	restarted, err := New(first.cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref      approval.CardRef
		id, user string
	}{{direct, "ap_1", "frank"}, {group, "ap_2", "gina"}} {
		v := cards.View{ApprovalID: approval.ID(c.id), Final: true,
			Status: approval.StatusExpired, StatusText: "The approval expired", Requester: approval.UserID(c.user)}
		if err := restarted.SettleApproval(ctx, c.ref, v); err != nil {
			t.Fatal(err)
		}
	}
	oto := f.Calls("/v1.0/robot/oToMessages/batchSend")
	if len(oto) != 1 || oto[0].Body["userIds"].([]any)[0] != "frank" {
		t.Fatalf("1:1 settle went %+v; group sends %+v", oto, f.Calls("/v1.0/robot/groupMessages/send"))
	}
	grp := f.Calls("/v1.0/robot/groupMessages/send")
	if len(grp) != 1 || grp[0].Body["openConversationId"] != "cidG" {
		t.Fatalf("group settle went %+v", grp)
	}
	// An older ref without the kind: a group, unless this process saw the chat.
	if err := restarted.SettleApproval(ctx, approval.CardRef{Channel: Name, ChatID: "cidX", MessageID: "md:ap_3"},
		cards.View{ApprovalID: "ap_3", Final: true, Status: approval.StatusExpired, Requester: "x"}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("/v1.0/robot/groupMessages/send")); n != 2 {
		t.Fatalf("legacy ref: %d group sends", n)
	}
	if direct.MessageID != "md:p:ap_1" || group.MessageID != "md:g:ap_2" {
		t.Fatalf("refs %+v %+v", direct, group)
	}
}

func (failingMarks) Forget(context.Context, string) error { return nil }

func (r *recordingMarks) Forget(context.Context, string) error { return nil }

// A request answered 503 "not handled" (the channel not started, or
// closing) leaves no mark of its (timestamp, sign): DingTalk delivers it
// again with the same headers, and that redelivery is let in, not refused
// 401 as a replay (as channels/feishu's webhook forgets a failed request).
func TestHTTPNotHandledMayBeRedelivered(t *testing.T) {
	f := dingtalktest.New(t)
	ch, err := New(Config{ClientID: "k", ClientSecret: "s", Mode: ModeHTTP, APIBaseURL: f.URL(), WebhookBaseURL: f.URL(),
		Marks: memstore.New(memstore.Options{})}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ch.HTTPHandler())
	defer srv.Close()
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	body, _ := json.Marshal(f.BotMessage(nextID(), "cid22", "erin", "hi", false))
	if code := httpPost(t, srv.URL, body, ts, Sign(ts, "s")); code != http.StatusServiceUnavailable {
		t.Fatalf("before Start: %d, want 503", code)
	}
	if err := ch.Start(context.Background(), nopHandler{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close(context.Background()) })
	if code := httpPost(t, srv.URL, body, ts, Sign(ts, "s")); code != http.StatusOK {
		t.Fatalf("the redelivery of a request answered 503: %d, want 200", code)
	}
	if code := httpPost(t, srv.URL, body, ts, Sign(ts, "s")); code != http.StatusUnauthorized {
		t.Fatalf("a replay of a handled request: %d, want 401", code)
	}
}
