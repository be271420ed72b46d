package feishu

import (
	"bytes"
	"context"
	"crypto/aes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// noErrorLines fails t for every ERROR line.
func noErrorLines(t *testing.T, lb *logBuf) {
	t.Helper()
	for _, l := range lb.lines(t) {
		if l["level"] == "ERROR" {
			t.Errorf("an ERROR line: %v", l)
		}
	}
}

func post(t *testing.T, url string, q feishutest.Request) (int, string) {
	t.Helper()
	resp, body, err := q.Post(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// signed is a genuine request for payload, as Feishu signs it at time at.
func signed(payload []byte, at time.Time) feishutest.Request {
	return feishutest.Sign(payload, webhookKey, webhookKey, at)
}

// Issue 12, item 1: a captured, signed and encrypted 确认 posted again
// decides nothing. Within max_request_age the (timestamp, nonce,
// signature) was seen before; after approval.dedup_ttl (when the router no
// longer remembers the event) the timestamp is too old. Both are 401, and
// the requester's newer approval stays pending.
func TestWebhookReplayedConfirmationIsRefused(t *testing.T) {
	clk := clock.NewFake(time.Now())
	store := memstore.New(memstore.Options{Clock: clk})
	g := newRigWith(t, rigOptions{webhook: true, store: store, now: clk.Now})

	first, _ := g.pending(t, "oc_replay_1", "ou_alice", "first")
	yes := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_yes"), ChatID: "oc_replay_1", ChatType: "p2p",
		Sender: "ou_alice", Text: "确认"}
	captured := signed(yes.JSON(), clk.Now())
	if code, body := post(t, g.srv.URL, captured); code != http.StatusOK {
		t.Fatalf("the genuine confirmation answered %d %s", code, body)
	}
	eventually(t, "the first approval runs", func() bool { return g.state(t, first.ID) == approval.StateExecuted })

	// The same request again at once (a proxy retrying, an attacker).
	if code, _ := post(t, g.srv.URL, captured); code != http.StatusUnauthorized {
		t.Errorf("the same request again within max_request_age answered %d, want 401", code)
	}

	second, _ := g.pending(t, "oc_replay_1", "ou_alice", "second")
	clk.Advance(25 * time.Hour) // past approval.dedup_ttl: the router forgot the event
	if code, _ := post(t, g.srv.URL, captured); code != http.StatusUnauthorized {
		t.Errorf("the captured confirmation posted after the dedup TTL answered %d, want 401", code)
	}
	// A refused request reaches nothing: no decision can be on its way.
	if st := g.state(t, second.ID); st != approval.StatePending {
		t.Fatalf("the newer approval is %s after the replay", st)
	}
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// A request whose signed timestamp is 2 h old or 2 h ahead is refused
// (401) and reaches no one, a message as well as a card click; one inside
// the bound is served.
func TestWebhookStaleOrFutureRequestIsRefused(t *testing.T) {
	g := newRigWith(t, rigOptions{webhook: true})
	now := time.Now()
	msg := func(text string) []byte {
		return feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_ts"), ChatID: "oc_ts_1", ChatType: "p2p",
			Sender: "ou_alice", Text: text}.JSON()
	}
	for _, c := range []struct {
		text string
		at   time.Time
		want int
	}{
		{"two hours old", now.Add(-2 * time.Hour), http.StatusUnauthorized},
		{"two hours ahead", now.Add(2 * time.Hour), http.StatusUnauthorized},
		{"an hour and a second old", now.Add(-time.Hour - 2*time.Second), http.StatusUnauthorized},
		{"fifty minutes old", now.Add(-50 * time.Minute), http.StatusOK},
	} {
		if code, body := post(t, g.srv.URL, signed(msg(c.text), c.at)); code != c.want {
			t.Errorf("%s: answered %d %s, want %d", c.text, code, body, c.want)
		}
	}
	marker := g.say(t, "p2p", "oc_ts_1", "ou_alice", "marker", nil)
	eventually(t, "the marker is answered", func() bool { return g.replied(marker.MessageID, "echo: marker") == 1 })
	for text, want := range map[string]int{"two hours old": 0, "two hours ahead": 0, "an hour and a second old": 0, "fifty minutes old": 1} {
		if n := g.model.Seen(text); n != want {
			t.Errorf("%q reached the agent %d times, want %d", text, n, want)
		}
	}

	ap, _ := g.pending(t, "oc_ts_2", "ou_alice", "orders")
	click := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: ap.Cards[0].MessageID,
		ChatID: ap.ChatID, Value: buttonValue(ap, "approve")}
	for _, at := range []time.Time{now.Add(-2 * time.Hour), now.Add(2 * time.Hour)} {
		if code, body := post(t, g.srv.URL, signed(click.JSON(), at)); code != http.StatusUnauthorized {
			t.Errorf("a click signed at %v answered %d %s, want 401", at.Sub(now).Round(time.Minute), code, body)
		}
	}
	if st := g.state(t, ap.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("after stale clicks: state %s, runs %d", st, g.erase.Runs.Load())
	}
}

// A card callback over HTTP posted again with the same headers is 401;
// the genuine one is answered with the outcome.
func TestWebhookReplayedClickIsRefused(t *testing.T) {
	g := newRigWith(t, rigOptions{webhook: true})
	ap, _ := g.pending(t, "oc_clickreplay_1", "ou_alice", "orders")
	click := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: ap.Cards[0].MessageID,
		ChatID: ap.ChatID, Value: buttonValue(ap, "approve")}
	captured := signed(click.JSON(), time.Now())
	if code, body := post(t, g.srv.URL, captured); code != http.StatusOK || !strings.Contains(body, `"success"`) {
		t.Fatalf("the genuine click answered %d %s", code, body)
	}
	if code, body := post(t, g.srv.URL, captured); code != http.StatusUnauthorized {
		t.Fatalf("the same click request again answered %d %s, want 401", code, body)
	}
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// The marks are kept in the shared store: a request replica A accepted is
// refused by replica B.
func TestWebhookReplayOnAnotherReplicaIsRefused(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	opts := rigOptions{fake: fake, store: redisStore(t), tool: hitltest.NewTool("erase", approval.EffectDestructive), webhook: true}
	a := newRigWith(t, opts)
	b := newRigWith(t, opts)
	ev := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_rep"), ChatID: "oc_rep_1", ChatType: "p2p",
		Sender: "ou_alice", Text: "hello replicas"}
	captured := signed(ev.JSON(), time.Now())
	if code, body := post(t, a.srv.URL, captured); code != http.StatusOK {
		t.Fatalf("replica A answered %d %s", code, body)
	}
	if code, body := post(t, b.srv.URL, captured); code != http.StatusUnauthorized {
		t.Fatalf("replica B answered the replay %d %s, want 401", code, body)
	}
}

// url_verification (saving the request URL in the console) still works:
// encrypted, with or without the signature headers; a wrong token is 401.
func TestWebhookChallenge(t *testing.T) {
	g := newRigWith(t, rigOptions{webhook: true})
	ch := []byte(`{"challenge":"ch-123","token":"vtoken","type":"url_verification"}`)
	unsigned := feishutest.Request{Body: feishutest.Encrypt(ch, webhookKey)}
	for name, q := range map[string]feishutest.Request{"unsigned": unsigned, "signed": signed(ch, time.Now())} {
		code, body := post(t, g.srv.URL, q)
		if code != http.StatusOK || !strings.Contains(body, `"challenge":"ch-123"`) {
			t.Errorf("%s challenge answered %d %s", name, code, body)
		}
	}
	bad := feishutest.Request{Body: feishutest.Encrypt([]byte(`{"challenge":"ch-1","token":"nope","type":"url_verification"}`), webhookKey)}
	if code, body := post(t, g.srv.URL, bad); code != http.StatusUnauthorized || strings.Contains(body, "ch-1") {
		t.Errorf("a challenge with the wrong token answered %d %s", code, body)
	}
}

// Issue 12, items 7 and 11: malformed, unsigned or oversized requests get
// a 4xx, never a 5xx, and no ERROR line; the WARN lines are rate-limited
// per reason, with the count of the ones left out.
func TestWebhookMalformedRequests(t *testing.T) {
	clk := clock.NewFake(time.Now())
	lb, logger := newLogBuf()
	g := newRigWith(t, rigOptions{webhook: true, now: clk.Now, log: logger})
	now := clk.Now()
	event := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_bad"), ChatID: "oc_bad_1", ChatType: "p2p",
		Sender: "ou_alice", Text: "should never arrive"}.JSON()
	enc := func(raw []byte) []byte {
		b, _ := json.Marshal(map[string]string{"encrypt": base64.StdEncoding.EncodeToString(raw)})
		return b
	}
	// sign signs an arbitrary body with the right key.
	sign := func(body []byte) feishutest.Request {
		ts := strconv.FormatInt(now.Unix(), 10)
		nonce := nextID("n")
		return feishutest.Request{Body: body, Timestamp: ts, Nonce: nonce, Signature: larkevent.Signature(ts, nonce, webhookKey, string(body))}
	}
	good := func() feishutest.Request { return signed(event, now) }
	cases := []struct {
		name string
		req  func() feishutest.Request
		want int
	}{
		{"empty body", func() feishutest.Request { return sign(nil) }, 400},
		{"bad JSON", func() feishutest.Request { return sign([]byte(`{"encrypt":`)) }, 400},
		{"JSON not an object", func() feishutest.Request { return sign([]byte(`["encrypt"]`)) }, 400},
		{"no encrypt field", func() feishutest.Request { return sign(event) }, 400},
		{"encrypt not a string", func() feishutest.Request { return sign([]byte(`{"encrypt":12}`)) }, 400},
		{"bad base64", func() feishutest.Request { return sign([]byte(`{"encrypt":"!!not base64!!"}`)) }, 400},
		{"shorter than a block", func() feishutest.Request { return sign(enc(make([]byte, 10))) }, 400},
		{"only the IV", func() feishutest.Request { return sign(enc(make([]byte, aes.BlockSize))) }, 400},
		{"not whole blocks", func() feishutest.Request { return sign(enc(make([]byte, aes.BlockSize+20))) }, 400},
		{"invalid UTF-8 body", func() feishutest.Request { return sign([]byte("{\"encrypt\":\"\xff\xfe\"}")) }, 400},
		{"decrypts to no JSON", func() feishutest.Request { return sign(feishutest.Encrypt([]byte("not json at all {"), webhookKey)) }, 400},
		{"decrypts to invalid UTF-8", func() feishutest.Request {
			return sign(feishutest.Encrypt(bytes.Replace(event, []byte("should never arrive"), []byte("should \xff arrive"), 1), webhookKey))
		}, 400},
		{"event fields of the wrong type", func() feishutest.Request {
			return sign(feishutest.Encrypt([]byte(`{"schema":"2.0","header":{"event_id":"e1","event_type":"im.message.receive_v1"},"event":{"message":"a string"}}`), webhookKey))
		}, 400},
		{"click value not an object", func() feishutest.Request {
			return sign(feishutest.Encrypt(feishutest.CardActionEvent{EventID: nextID("ev"), Operator: "ou_alice", MessageID: "om", ChatID: "oc", Value: "approve"}.JSON(), webhookKey))
		}, 400},
		{"no signature", func() feishutest.Request { q := good(); q.Signature = ""; return q }, 401},
		{"no signature headers", func() feishutest.Request { q := good(); q.Signature, q.Nonce, q.Timestamp = "", "", ""; return q }, 401},
		{"wrong signature", func() feishutest.Request { return feishutest.Sign(event, webhookKey, "not-the-key", now) }, 401},
		{"no timestamp", func() feishutest.Request { q := good(); q.Timestamp = ""; return q }, 401},
		{"timestamp not a number", func() feishutest.Request {
			q := sign(feishutest.Encrypt(event, webhookKey))
			q.Timestamp = "soon"
			q.Signature = larkevent.Signature(q.Timestamp, q.Nonce, webhookKey, string(q.Body))
			return q
		}, 401},
		{"oversized body", func() feishutest.Request { return sign(bytes.Repeat([]byte("a"), maxWebhookBody+1)) }, http.StatusRequestEntityTooLarge},
	}
	const repeat = 3
	for _, c := range cases {
		for range repeat {
			if code, body := post(t, g.srv.URL, c.req()); code != c.want {
				t.Errorf("%s: answered %d %s, want %d", c.name, code, strings.TrimSpace(body), c.want)
			}
		}
	}
	// Unknown event types are acked, so Feishu does not retry them.
	if code, body := post(t, g.srv.URL, sign(feishutest.Encrypt([]byte(`{"schema":"2.0","header":{"event_id":"e2","event_type":"im.chat.disbanded_v1"},"event":{}}`), webhookKey))); code != 200 {
		t.Errorf("an unknown event type answered %d %s", code, body)
	}
	marker := g.say(t, "p2p", "oc_bad_1", "ou_alice", "marker", nil)
	eventually(t, "the marker is answered", func() bool { return g.replied(marker.MessageID, "echo: marker") == 1 })
	if n := g.model.Seen("should never arrive") + g.model.Seen("should \ufffd arrive"); n != 0 {
		t.Fatalf("a malformed request reached the agent %d times", n)
	}
	noErrorLines(t, lb)

	warned := func() map[string][]map[string]any {
		by := map[string][]map[string]any{}
		for _, l := range lb.lines(t) {
			if l["level"] == "WARN" && l["reason"] != nil {
				by[l["reason"].(string)] = append(by[l["reason"].(string)], l)
			}
		}
		return by
	}
	before := warned()
	if len(before) < 5 {
		t.Fatalf("refusals logged under %d reasons: %v", len(before), before)
	}
	for reason, ls := range before {
		if len(ls) != 1 {
			t.Errorf("reason %q logged %d times within the window, want once", reason, len(ls))
		}
	}
	// After the window the next refusal is logged, with the count of the
	// ones left out.
	clk.Advance(warnEvery + time.Second)
	if code, _ := post(t, g.srv.URL, feishutest.Sign(event, webhookKey, "not-the-key", clk.Now())); code != 401 {
		t.Fatalf("wrong signature answered %d", code)
	}
	after := warned()
	var found bool
	for reason, ls := range after {
		if len(ls) == len(before[reason])+1 {
			last := ls[len(ls)-1]
			if s, _ := last["suppressed"].(float64); s < repeat-1 {
				t.Errorf("reason %q: suppressed %v, want at least %d", reason, last["suppressed"], repeat-1)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no new WARN line after the window: %v", after)
	}
}

// A wrong method is 405 with Allow: POST.
func TestWebhookWrongMethod(t *testing.T) {
	g := newRigWith(t, rigOptions{webhook: true})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead} {
		req, _ := http.NewRequest(m, g.srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s answered %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// A store that cannot tell whether a request was seen refuses it with 503
// (a fault of the bot: Feishu retries), it does not assume freshness.
func TestWebhookStoreDownRefuses(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.BotOpenID = "ou_bot"
	cfg.Mode, cfg.EncryptKey = ModeWebhook, webhookKey
	cfg.Marks = downMarks{}
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	ev := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om"), ChatID: "oc", ChatType: "p2p", Sender: "ou_a", Text: "x"}
	rec := serveOnce(ch, signed(ev.JSON(), time.Now()))
	if rec.Code != http.StatusServiceUnavailable || len(h.messages()) != 0 {
		t.Fatalf("store down: answered %d, %d messages delivered", rec.Code, len(h.messages()))
	}
}

type downMarks struct{}

func (downMarks) Seen(context.Context, string, time.Duration) (bool, error) {
	return false, context.DeadlineExceeded
}

// serveOnce runs one request through the channel's WebhookHandler.
func serveOnce(ch *Channel, q feishutest.Request) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/webhook/feishu", bytes.NewReader(q.Body))
	if q.Timestamp != "" {
		req.Header.Set(larkevent.EventRequestTimestamp, q.Timestamp)
	}
	if q.Nonce != "" {
		req.Header.Set(larkevent.EventRequestNonce, q.Nonce)
	}
	if q.Signature != "" {
		req.Header.Set(larkevent.EventSignature, q.Signature)
	}
	rec := httptest.NewRecorder()
	ch.WebhookHandler().ServeHTTP(rec, req)
	return rec
}

// failOnce refuses its first message, as a router not yet bound does.
type failOnce struct {
	recorder
	failed bool
}

func (f *failOnce) HandleMessage(ctx context.Context, m channels.Message) error {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return errors.New("not bound yet")
	}
	return f.recorder.HandleMessage(ctx, m)
}

// A request the bot failed (500, so Feishu delivers it again) is not
// marked as seen: the same request sent again is served, once.
func TestWebhookFailedRequestMayBeRetried(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.BotOpenID = "ou_bot"
	cfg.Mode, cfg.EncryptKey = ModeWebhook, webhookKey
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	h := &failOnce{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	ev := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om"), ChatID: "oc", ChatType: "p2p", Sender: "ou_a", Text: "x"}
	q := signed(ev.JSON(), time.Now())
	for i, want := range []int{http.StatusInternalServerError, http.StatusOK, http.StatusUnauthorized} {
		if rec := serveOnce(ch, q); rec.Code != want {
			t.Fatalf("attempt %d: answered %d %s, want %d", i+1, rec.Code, rec.Body, want)
		}
	}
	if n := len(h.messages()); n != 1 {
		t.Fatalf("%d messages delivered", n)
	}
}

func (downMarks) Forget(context.Context, string) error { return nil }
