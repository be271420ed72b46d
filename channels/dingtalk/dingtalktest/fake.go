// Package dingtalktest is a local fake DingTalk for tests: the Stream
// gateway (ticket, websocket frames and their ACKs), the oauth2 token, the
// card APIs (createAndDeliver, PUT update, AI card streaming), robot send
// and the sessionWebhook. Point the channel's APIBaseURL and
// WebhookBaseURL (and so the SDK's WithOpenApiHost) at URL().
//
// The fake is as strict as DingTalk: it keeps the platform's documented
// rules (rules.go, aicard.go; each cited) and answers a breach in the
// platform's shape, never more kindly. A breach it cannot refuse (a card
// callback answered late, a card updated while its callback is handled)
// is recorded, and fails the test at its end unless taken
// (TakeViolations).
package dingtalktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Fake is a local DingTalk. It fails the test on a malformed request body.
// Its parts each own their state: the Stream gateway (gateway: the ticket,
// the websocket, the callbacks pushed and their ACKs, timed against
// CallbackDeadline; Push, WaitConn, Drop, Tickets, Refuse,
// SetCallbackClock, BotMessage), the breaches it could not refuse
// (breaches: Violations, TakeViolations), and the Fake itself, the OpenAPI
// (token, cards and AI card streams, robot sends, the sessionWebhook) with
// its rules (rules.go, aicard.go), and what each card shows and the
// clicks it sends (click.go: CardView, Click).
type Fake struct {
	*gateway
	*breaches
	cards *cardState // what each card shows (click.go)

	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	calls   []Call
	secret  string          // the only appSecret the token endpoint accepts ("": any)
	ai      aiCards         // cards by outTrackId, AI card streams (aicard.go)
	tracks  map[string]bool // the outTrackIds of every card created (one card each)
	outOf   map[string]bool // the groups the robot is not in (LeaveGroup)
	unknown map[string]bool // ids that are no staff (UnknownStaff)
	flow    map[string]int  // batchSend throttles left per id (FlowControl)
	thr     throttle        // OpenAPI calls refused for a rate limit (Throttle)

	refusals []string // OpenAPI calls refused, deliveries failed (Refusals)
	reqSeq   int
	carrier  int
	sendSeq  int
}

// gateway is the Stream gateway of the fake: the ticket request, the
// websocket, the callbacks pushed on it and their ACKs, a card callback's
// answer timed against CallbackDeadline.
type gateway struct {
	t        testing.TB
	url      func() string // the fake's base URL (the messages' sessionWebhook)
	breaches *breaches
	cards    *cardState // what each card shows; a callback's answer changes it

	mu       sync.Mutex
	tickets  int
	refuse   bool
	conn     *websocket.Conn
	wmu      sync.Mutex // writes to conn
	conns    chan struct{}
	acks     map[string]chan map[string]any
	nextMsg  int
	inflight map[string]int // outTrackId → card callbacks being handled
	cbNow    func() time.Time
}

// breaches are the breaches of the rules the fake could not refuse, in
// the order they happened.
type breaches struct {
	mu   sync.Mutex
	list []string
}

func (b *breaches) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = append(b.list, s)
}

// Call is one HTTP call the fake received.
type Call struct {
	Method, Path, Token string
	Body                map[string]any
	// Refused: the fake answered the call with an error.
	Refused bool
	// Missed are the batchSend userIds nothing was sent to (invalid or
	// flow-controlled).
	Missed []string
}

// New starts a fake DingTalk, closed when the test ends.
func New(t testing.TB) *Fake {
	b, cs := &breaches{}, &cardState{}
	f := &Fake{t: t, breaches: b, cards: cs}
	f.gateway = &gateway{t: t, url: f.URL, breaches: b, cards: cs, acks: map[string]chan map[string]any{}, conns: make(chan struct{}, 16), inflight: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1.0/gateway/connections/open", f.gateway.open)
	mux.HandleFunc("GET /connect", f.gateway.serveWS)
	mux.HandleFunc("POST /v1.0/oauth2/accessToken", func(w http.ResponseWriter, r *http.Request) {
		c := f.record(r)
		f.mu.Lock()
		want := f.secret
		f.mu.Unlock()
		if want != "" && c.Body["appSecret"] != want {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"code":"invalidClientSecret","message":"the appSecret is not valid"}`)
			return
		}
		io.WriteString(w, `{"accessToken":"fake-token","expireIn":7200}`)
	})
	mux.HandleFunc("POST /v1.0/card/instances/createAndDeliver", func(w http.ResponseWriter, r *http.Request) {
		c, i := f.recordAt(r)
		results, ok := f.cardCreated(w, c)
		if !ok {
			f.refused(i)
			return
		}
		b, _ := json.Marshal(map[string]any{"success": true, "result": map[string]any{"outTrackId": c.Body["outTrackId"], "deliverResults": results}})
		_, _ = w.Write(b)
	})
	mux.HandleFunc("PUT /v1.0/card/instances", func(w http.ResponseWriter, r *http.Request) {
		c, i := f.recordAt(r)
		if !f.cardUpdated(w, c) {
			f.refused(i)
			return
		}
		io.WriteString(w, `{"success":true,"result":true}`)
	})
	mux.HandleFunc("PUT /v1.0/card/streaming", f.cardStreaming)
	mux.HandleFunc("POST /v1.0/robot/groupMessages/send", func(w http.ResponseWriter, r *http.Request) {
		c, i := f.recordAt(r)
		cid, _ := c.Body["openConversationId"].(string)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.outOf[cid] {
			f.apiErrorLocked(w, http.StatusBadRequest, "robot.notInGroup", "the robot is not in the group "+cid)
			f.calls[i].Refused = true
			return
		}
		f.sendSeq++
		fmt.Fprintf(w, `{"processQueryKey":"q-%d"}`, f.sendSeq)
	})
	mux.HandleFunc("POST /v1.0/robot/oToMessages/batchSend", f.batchSend)
	mux.HandleFunc("POST /robot/sendBySession", func(w http.ResponseWriter, r *http.Request) {
		_, i := f.recordAt(r)
		if r.URL.Query().Get("session") == "broken" {
			f.refused(i)
			io.WriteString(w, `{"errcode":300001,"errmsg":"session expired"}`)
			return
		}
		io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`)
	})
	f.srv = httptest.NewServer(f.throttling(mux))
	t.Cleanup(func() {
		f.gateway.Drop()
		v := f.Violations()
		f.srv.Close()
		for _, s := range v {
			t.Errorf("fake DingTalk: a platform rule was broken: %s", s)
		}
	})
	return f
}

func (f *Fake) record(r *http.Request) Call {
	c, _ := f.recordAt(r)
	return c
}

// recordAt records the call and returns it with its index in f.calls.
func (f *Fake) recordAt(r *http.Request) (Call, int) {
	b, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Token: r.Header.Get("x-acs-dingtalk-access-token")}
	if err := json.Unmarshal(b, &c.Body); err != nil {
		f.t.Errorf("fake: %s %s: body %q: %v", r.Method, r.URL.Path, b, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return c, len(f.calls) - 1
}

// refused marks the call i refused.
func (f *Fake) refused(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[i].Refused = true
}

// batchSend is POST /v1.0/robot/oToMessages/batchSend: at most
// MaxBatchUsers userIds; the answer lists those nothing was sent to
// (rules.go).
func (f *Fake) batchSend(w http.ResponseWriter, r *http.Request) {
	c, i := f.recordAt(r)
	raw, _ := c.Body["userIds"].([]any)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case len(raw) == 0:
		f.apiErrorLocked(w, http.StatusBadRequest, "param.userIdsEmpty", "userIds is empty")
		f.calls[i].Refused = true
		return
	case len(raw) > MaxBatchUsers:
		f.apiErrorLocked(w, http.StatusBadRequest, "param.userIdsTooMany", fmt.Sprintf("userIds holds %d ids, at most %d", len(raw), MaxBatchUsers))
		f.calls[i].Refused = true
		return
	}
	invalid, throttled := []string{}, []string{}
	for _, v := range raw {
		id, _ := v.(string)
		switch {
		case !f.staffLocked(id):
			invalid = append(invalid, id)
		case f.flow[id] > 0:
			f.flow[id]--
			throttled = append(throttled, id)
		}
	}
	f.calls[i].Missed = append(append([]string(nil), invalid...), throttled...)
	f.sendSeq++
	b, _ := json.Marshal(map[string]any{"processQueryKey": fmt.Sprintf("q-%d", f.sendSeq),
		"invalidStaffIdList": invalid, "flowControlledStaffIdList": throttled})
	_, _ = w.Write(b)
}

// open is POST /v1.0/gateway/connections/open: a ticket and the
// websocket's endpoint, or 401 while Refuse is on.
func (f *gateway) open(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.tickets++
	n, refuse := f.tickets, f.refuse
	f.mu.Unlock()
	if refuse {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"code":"InvalidAuthentication","message":"bad client"}`)
		return
	}
	fmt.Fprintf(w, `{"endpoint":"ws://%s/connect","ticket":"ticket-%d"}`, r.Host, n)
}

func (f *gateway) serveWS(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.conn = conn
	f.mu.Unlock()
	f.conns <- struct{}{}
	for { // keep reading: ACKs, and gorilla answers pings only while reading
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var ack map[string]any
		if json.Unmarshal(data, &ack) != nil {
			continue
		}
		h, _ := ack["headers"].(map[string]any)
		id, _ := h["messageId"].(string)
		f.mu.Lock()
		ch := f.acks[id]
		f.mu.Unlock()
		if ch != nil {
			ch <- ack
		}
	}
}

// WaitConn waits for a new websocket connection.
func (f *gateway) WaitConn(d time.Duration) {
	f.t.Helper()
	select {
	case <-f.conns:
	case <-time.After(d):
		f.t.Fatalf("fake: no stream connection within %v", d)
	}
}

// Push writes a CALLBACK frame of topic with data and returns its ACK.
func (f *gateway) Push(topic string, data any) map[string]any {
	f.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		f.t.Fatal(err)
	}
	var track, user string
	if topic == cardCallbackTopic {
		var d struct {
			OutTrackID string `json:"outTrackId"`
			UserID     string `json:"userId"`
		}
		_ = json.Unmarshal(b, &d)
		track, user = d.OutTrackID, d.UserID
	}
	f.mu.Lock()
	f.nextMsg++
	id := fmt.Sprintf("frame-%d", f.nextMsg)
	ch := make(chan map[string]any, 1)
	f.acks[id] = ch
	conn := f.conn
	var start time.Time
	if topic == cardCallbackTopic {
		f.inflight[track]++
		start = f.cbClockLocked()
	}
	f.mu.Unlock()
	if conn == nil {
		f.t.Fatal("fake: Push before any stream connection")
	}
	frame := map[string]any{"specVersion": "1.0", "type": "CALLBACK", "data": string(b),
		"headers": map[string]string{"topic": topic, "messageId": id, "contentType": "application/json",
			"time": fmt.Sprint(time.Now().UnixMilli())}}
	f.wmu.Lock()
	err = conn.WriteJSON(frame)
	f.wmu.Unlock()
	if err != nil {
		f.t.Fatalf("fake: push: %v", err)
	}
	select {
	case ack := <-ch:
		if topic == cardCallbackTopic {
			f.callbackAnswered(track, user, start, ack)
		}
		return ack
	case <-time.After(10 * time.Second):
		f.t.Fatalf("fake: no ACK for %s", id)
	}
	return nil
}

// cardCallbackTopic is the topic of card callbacks
// (payload.CardInstanceCallbackTopic).
const cardCallbackTopic = "/v1.0/card/instances/callback"

// Drop closes the stream connection from the server side.
func (f *gateway) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.Close()
	}
}

// Calls returns the recorded calls to path.
func (f *Fake) Calls(path string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// Delivery is how an interactive card was delivered (createAndDeliver).
type Delivery struct {
	OutTrackID  string
	OpenSpaceID string
	// Recipients are imGroupOpenDeliverModel.recipients: the only people
	// of the group who see the card (部分人可见); nil: everyone there.
	Recipients []string
	// SupportForward is the space model's supportForward (false when
	// absent).
	SupportForward bool
	// Params is the card's cardParamMap; Body the whole request.
	Params map[string]any
	Body   map[string]any
}

// deliveryOf reads the delivery of a createAndDeliver call; recipients,
// when present, must be a non-empty array of user ids (strings).
func deliveryOf(c Call) (Delivery, error) {
	d := Delivery{Body: c.Body}
	d.OutTrackID, _ = c.Body["outTrackId"].(string)
	d.OpenSpaceID, _ = c.Body["openSpaceId"].(string)
	data, _ := c.Body["cardData"].(map[string]any)
	d.Params, _ = data["cardParamMap"].(map[string]any)
	for _, k := range []string{"imGroupOpenSpaceModel", "imRobotOpenSpaceModel"} {
		if m, ok := c.Body[k].(map[string]any); ok {
			d.SupportForward, _ = m["supportForward"].(bool)
		}
	}
	deliver, _ := c.Body["imGroupOpenDeliverModel"].(map[string]any)
	raw, present := deliver["recipients"]
	if !present {
		return d, nil
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return d, fmt.Errorf("imGroupOpenDeliverModel.recipients is not a non-empty array: %v", raw)
	}
	for _, r := range list {
		s, ok := r.(string)
		if !ok || s == "" {
			return d, fmt.Errorf("imGroupOpenDeliverModel.recipients holds %v, not a user id", r)
		}
		d.Recipients = append(d.Recipients, s)
	}
	return d, nil
}

// Deliveries returns the cards asked for (createAndDeliver calls, refused
// ones included), in order, with their recipients.
func (f *Fake) Deliveries() []Delivery {
	var out []Delivery
	for _, c := range f.Calls("/v1.0/card/instances/createAndDeliver") {
		if d, err := deliveryOf(c); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// DirectTexts returns the msgParam of every message the robot's 1:1 send
// (oToMessages/batchSend) delivered to user.
func (f *Fake) DirectTexts(user string) []string {
	var out []string
	for _, c := range f.Calls("/v1.0/robot/oToMessages/batchSend") {
		if c.Refused || slices.Contains(c.Missed, user) {
			continue // nothing reached user
		}
		ids, _ := c.Body["userIds"].([]any)
		for _, id := range ids {
			if id == user {
				out = append(out, fmt.Sprint(c.Body["msgParam"]))
			}
		}
	}
	return out
}

// Texts returns the text of every message posted to the sessionWebhook
// or the robot send APIs that reached someone.
func (f *Fake) Texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if ids, _ := c.Body["userIds"].([]any); c.Refused || (len(ids) > 0 && len(c.Missed) == len(ids)) {
			continue
		}
		switch c.Path {
		case "/robot/sendBySession":
			if t, ok := c.Body["text"].(map[string]any); ok {
				out = append(out, fmt.Sprint(t["content"]))
			}
			if m, ok := c.Body["markdown"].(map[string]any); ok {
				out = append(out, fmt.Sprint(m["text"]))
			}
		case "/v1.0/robot/groupMessages/send", "/v1.0/robot/oToMessages/batchSend":
			out = append(out, fmt.Sprint(c.Body["msgParam"]))
		}
	}
	return out
}

// Mentions returns, for each text message posted to the sessionWebhook
// that reached its chat, the people it mentions as DingTalk shows them:
// the ids of "at":{"atUserIds":[…]} that the text also names as
// "@<id>" (the robot's reply through sessionWebhook: add at.atUserIds
// and @<staffId> in the text). The robot send APIs' sampleText takes
// content only (msgParam {"content"}): they mention nobody.
func (f *Fake) Mentions() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, c := range f.calls {
		if c.Refused || c.Path != "/robot/sendBySession" {
			continue
		}
		t, _ := c.Body["text"].(map[string]any)
		content, _ := t["content"].(string)
		at, _ := c.Body["at"].(map[string]any)
		ids, _ := at["atUserIds"].([]any)
		var got []string
		for _, id := range ids {
			if s, ok := id.(string); ok && strings.Contains(content, "@"+s) {
				got = append(got, s)
			}
		}
		out = append(out, got)
	}
	return out
}

// CountText counts the sent texts containing sub.
func (f *Fake) CountText(sub string) int {
	n := 0
	for _, s := range f.Texts() {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// Tickets counts the ticket requests (one per connect or reconnect).
func (f *gateway) Tickets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tickets
}

// BotMessage builds a bot callback from user in conversation cid.
func (f *gateway) BotMessage(msgID, cid, user, text string, group bool) map[string]any {
	now := time.Now().UnixMilli()
	ct := "1"
	if group {
		ct = "2"
	}
	return map[string]any{"conversationId": cid, "conversationType": ct, "msgId": msgID, "createAt": now,
		"senderNick": user, "senderStaffId": user, "senderId": "$:enc:" + user, "isInAtList": group, "robotCode": "robot-1",
		"sessionWebhook": f.url() + "/robot/sendBySession?session=" + cid, "sessionWebhookExpiredTime": now + 90*60*1000,
		"msgtype": "text", "text": map[string]string{"content": " " + text}}
}

// ExternalMessage builds a bot callback from a member from outside the
// organisation: no senderStaffId, only the encrypted senderId
// ("$:LWCP_v1:$" + id; stream SDK chatbot payload).
func (f *gateway) ExternalMessage(msgID, cid, id, text string, group bool) map[string]any {
	m := f.BotMessage(msgID, cid, id, text, group)
	m["senderStaffId"], m["senderId"] = "", "$:LWCP_v1:$"+id
	return m
}

// URL is the fake's base URL.
func (f *Fake) URL() string { return f.srv.URL }

// RequireSecret makes the oauth2 token endpoint accept only this appSecret
// and answer any other with HTTP 400. Until it is called, any secret gets
// a token.
func (f *Fake) RequireSecret(secret string) {
	f.mu.Lock()
	f.secret = secret
	f.mu.Unlock()
}

// Refuse makes the ticket request answer 401 (a refused start).
func (f *gateway) Refuse(on bool) {
	f.mu.Lock()
	f.refuse = on
	f.mu.Unlock()
}
