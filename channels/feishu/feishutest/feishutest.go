// Package feishutest is a local fake of Feishu for tests: the OpenAPI
// routes the channel uses (tenant token, bot info, message create / reply
// / patch, with injectable rate limits; an interactive message's card is
// checked as Feishu checks forms, CheckCard), the long connection
// (bootstrap and websocket frames, with acks read back) and helpers that
// build event payloads (card clicks with form values, as a form submit
// sends them) and post signed, encrypted webhook requests. Point the
// real SDK at it with lark.WithOpenBaseUrl(s.URL) and
// larkws.WithDomain(s.URL).
package feishutest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/hitlbot/hitlbot/third_party/larkws"

	"github.com/hitlbot/hitlbot/channels/feishu/feishuwire"
)

// Token is the first tenant_access_token the fake issues and expects.
const Token = "t-fake"

// Call is one OpenAPI call the fake received.
type Call struct {
	Op        string // "create", "reply" or "patch"
	MessageID string // the message replied to or patched
	// Sent is the id of the message a successful create or reply made
	// (what the fake answered as its message_id), e.g. to click its card.
	Sent      string
	ReceiveID string // create: the chat, or the person (ReceiveIDType open_id)
	// ReceiveIDType is a create's receive_id_type: chat_id, or open_id for
	// a message to one person in their 1:1 chat with the bot.
	ReceiveIDType string
	MsgType       string
	Content       string // the message content (a JSON string, as sent)
	UUID          string
	InThread      bool
	Answered      int       // the HTTP status answered
	Code          int       // the Feishu code answered (0: success)
	At            time.Time // when the fake received it
	// Deduplicated marks a create or reply whose uuid an earlier message
	// in the last UUIDWindow carried: Feishu sent nothing and answered
	// with that message (Sent). Such calls are not in Calls, which are
	// the calls that did something; Deduplicated returns them.
	Deduplicated bool
	// Mentions are the people a text message mentions, as Feishu reads its
	// content: each <at user_id="…"></at> element of the text (doc
	// server-docs/im-v1/message/create, text content: "<at
	// user_id=\"ou_xxx\">name</at>", or user_id "all"). A card's
	// markdown form <at id=…> is no mention in a text message, nor is an
	// element whose id is no open_id, union_id or "all".
	Mentions []string
}

// Server is the fake. Its parts each own their state: the tenant token
// endpoint (tokenIssuer: RequireSecret, RotateToken, TokenFetches), the long
// connection that pushes events and reads their acks (longConn: Push, Drop,
// Silence, Connected, Connects, RefuseBootstrap, ClientConfig), and the
// Server itself, the message API (create, reply, patch; Calls, Refused,
// Deduplicated, Throttle, RefuseChat) with CardKit's card entities
// (cardkit.go) and the rules' clock.
type Server struct {
	URL       string
	BotOpenID string

	*tokenIssuer
	*longConn

	srv *httptest.Server

	mu          sync.Mutex
	calls       []Call
	throttle    map[string]int  // op → 429 answers still to give
	outOf       map[string]bool // chats the bot is not in (RefuseChat)
	resetHeader string
	nextID      int
	kit         cardkit // CardKit card entities (cardkit.go)

	now       func() time.Time       // the rules' clock (SetClock); nil: the wall clock
	byUUID    map[string]sentMessage // uuid → the first message it sent (UUIDWindow)
	chatOf    map[string]string      // message id → its chat (bot messages, pushed events)
	chatRate  window                 // accepted sends per chat (ChatQPS)
	patchRate window                 // accepted patches per message (MessagePatchQPS)
	deduped   []Call
}

// tokenIssuer is the tenant token endpoint, and the check of the token
// every other call carries.
type tokenIssuer struct {
	mu      sync.Mutex
	tokens  int    // token requests
	current string // the token accepted now
	secret  string // the only app_secret the token endpoint accepts ("": any)
}

// longConn is the long connection's side of the fake: the bootstrap
// endpoint, the websocket, the events pushed on it and their acks.
type longConn struct {
	// ClientConfig is sent with every bootstrap answer (all four fields
	// matter: the SDK takes missing ones as 0).
	ClientConfig larkws.ClientConfig

	url      string                // the fake's base URL, for the endpoint it gives
	learn    func(id, chat string) // Server.LearnMessage: a pushed message's chat
	upgrader websocket.Upgrader

	mu         sync.Mutex
	bootstraps int
	refuse     int // a bootstrap code to answer with instead of an endpoint
	conn       *wsConn
	connects   int
	acks       map[string]chan larkws.Response
	seq        atomic.Uint64
}

type wsConn struct {
	c      *websocket.Conn
	wmu    sync.Mutex
	silent atomic.Bool
}

// New starts a fake; Close it when done.
func New() *Server {
	s := &Server{
		BotOpenID:   "ou_bot",
		tokenIssuer: &tokenIssuer{current: Token},
		longConn: &longConn{ClientConfig: larkws.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 1, PingInterval: 120},
			acks: map[string]chan larkws.Response{}},
		throttle:  map[string]int{},
		byUUID:    map[string]sentMessage{},
		chatOf:    map[string]string{},
		chatRate:  window{},
		patchRate: window{},
	}
	s.longConn.learn = s.LearnMessage
	mux := http.NewServeMux()
	mux.HandleFunc("POST /open-apis/auth/v3/tenant_access_token/internal", s.tokenIssuer.token)
	mux.HandleFunc("GET /open-apis/bot/v3/info", s.tokenIssuer.authed(s.botInfo))
	mux.HandleFunc("POST /open-apis/im/v1/messages", s.tokenIssuer.authed(s.create))
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reply", s.tokenIssuer.authed(s.reply))
	mux.HandleFunc("PATCH /open-apis/im/v1/messages/{id}", s.tokenIssuer.authed(s.patch))
	s.routeCardKit(mux)
	mux.HandleFunc("POST /callback/ws/endpoint", s.longConn.bootstrap)
	mux.HandleFunc("GET /ws", s.longConn.ws)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	s.longConn.url = s.URL
	return s
}

// Close stops the fake and its connections.
func (s *Server) Close() {
	if wc := s.longConn.take(0); wc != nil {
		_ = wc.c.Close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// RequireSecret makes the token endpoint accept only this app_secret and
// answer any other as Feishu does (code 10014, "app secret invalid").
// Until it is called, any secret gets a token.
func (s *tokenIssuer) RequireSecret(secret string) {
	s.mu.Lock()
	s.secret = secret
	s.mu.Unlock()
}

func (s *tokenIssuer) token(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req)
	s.mu.Lock()
	s.tokens++
	tok, want := s.current, s.secret
	s.mu.Unlock()
	if want != "" && req.AppSecret != want {
		writeJSON(w, 200, map[string]any{"code": 10014, "msg": "app secret invalid"})
		return
	}
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": 7200})
}

func (s *tokenIssuer) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		tok := s.current
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+tok {
			writeJSON(w, 400, map[string]any{"code": 99991663, "msg": "Invalid access token"})
			return
		}
		h(w, r)
	}
}

func (s *Server) botInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "ok", "bot": map[string]any{"open_id": s.BotOpenID, "app_name": "hitlbot"}})
}

// RotateToken makes the fake refuse the tokens it issued so far (HTTP 400,
// code 99991663) and issue a new one, as when a cached token went stale.
func (s *tokenIssuer) RotateToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = fmt.Sprintf("%s-%d", Token, s.tokens+1)
}

// Throttle makes the next n calls of op ("create", "reply", "patch")
// answer HTTP 429 / 99991400 with x-ogw-ratelimit-reset: reset.
func (s *Server) Throttle(op string, n int, reset string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle[op] = n
	s.resetHeader = reset
}

type msgBody struct {
	ReceiveID     string `json:"receive_id"`
	MsgType       string `json:"msg_type"`
	Content       string `json:"content"`
	UUID          string `json:"uuid"`
	ReplyInThread bool   `json:"reply_in_thread"`
}

func (s *Server) record(w http.ResponseWriter, r *http.Request, op string) (Call, bool) {
	var b msgBody
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &b); err != nil {
		writeJSON(w, 400, map[string]any{"code": 230001, "msg": "bad body: " + err.Error()})
		return Call{}, false
	}
	c := Call{Op: op, MessageID: r.PathValue("id"), ReceiveID: b.ReceiveID, MsgType: b.MsgType, Content: b.Content, UUID: b.UUID, InThread: b.ReplyInThread, Answered: 200}
	if op == "patch" {
		c.MsgType = "interactive"
	}
	if op == "create" {
		c.ReceiveIDType = r.URL.Query().Get("receive_id_type")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked()
	c.At = now
	refuse := func(status, code int, msg string) (Call, bool) {
		c.Answered, c.Code = status, code
		s.calls = append(s.calls, c)
		writeJSON(w, status, map[string]any{"code": code, "msg": msg})
		return c, false
	}
	if c.ReceiveIDType == "open_id" && !strings.HasPrefix(b.ReceiveID, "ou_") {
		return refuse(400, 99992361, "open_id cross app or invalid")
	}
	if op == "create" && s.outOf[b.ReceiveID] {
		return refuse(400, NotInChatCode, "Bot/User can NOT be out of the chat.")
	}
	if s.throttle[op] > 0 {
		s.throttle[op]--
		w.Header().Set("x-ogw-ratelimit-reset", s.resetHeader)
		return refuse(429, 99991400, "request trigger frequency limit")
	}
	// The chat a create or reply lands in (for ChatQPS): the receiver's,
	// or the chat of the message answered (known when the fake sent it
	// or pushed its event; else the message stands for its chat).
	chat := b.ReceiveID
	switch {
	case c.ReceiveIDType == "open_id":
		chat = P2PChat(b.ReceiveID)
	case op == "reply":
		if chat = s.chatOf[c.MessageID]; chat == "" {
			chat = "message:" + c.MessageID
		}
	}
	switch op {
	case "patch":
		// doc server-docs/im-v1/message-card/patch: 5 QPS per message.
		if !s.patchRate.allow(c.MessageID, MessagePatchQPS, now) {
			return refuse(400, FrequencyLimitCode, FrequencyLimitMsg)
		}
	default:
		// doc server-docs/im-v1/message/create: 5 QPS per chat, shared by
		// every bot in it.
		if !s.chatRate.allow(chat, ChatQPS, now) {
			return refuse(400, FrequencyLimitCode, FrequencyLimitMsg)
		}
	}
	if op != "patch" && b.UUID != "" {
		// doc server-docs/im-v1/message/create, uuid: one message per uuid
		// within an hour; a repeat answers with the first.
		if first, ok := s.byUUID[b.UUID]; ok && now.Sub(first.at) < UUIDWindow {
			c.Sent, c.Deduplicated, c.ReceiveID = first.id, true, first.chat
			s.deduped = append(s.deduped, c)
			return c, true
		}
	}
	if op != "patch" && !json.Valid([]byte(b.Content)) {
		return refuse(400, 230001, "content is not JSON")
	}
	if c.MsgType == "interactive" {
		// doc feishu-cards/card-json-v2-structure: body ≤ 30 KB, ≤ 200
		// components; Feishu answers 230099 (card content refused).
		if err := CheckCardLimits(raw, b.Content); err != nil {
			return refuse(400, CardRefusedCode, "Failed to create card content, ext="+err.Error())
		}
	}
	if c.MsgType == "interactive" && op != "patch" {
		if err := s.sendEntityLocked(b.Content); err != nil {
			return refuse(400, CardRefusedCode, "card refused: "+err.Error())
		}
	}
	if c.MsgType == "interactive" {
		if err := CheckCard(b.Content); err != nil {
			return refuse(400, CardRefusedCode, "card refused: "+err.Error())
		}
	}
	if c.MsgType == "text" {
		c.Mentions = textMentions(b.Content)
	}
	if op != "patch" {
		s.nextID++
		c.Sent = fmt.Sprintf("om_bot_%d", s.nextID)
		s.chatOf[c.Sent] = chat
		if b.UUID != "" {
			s.byUUID[b.UUID] = sentMessage{id: c.Sent, chat: chat, at: now}
		}
	}
	s.calls = append(s.calls, c)
	return c, true
}

// textAt is a mention element of a text message's text (see
// Call.Mentions).
var textAt = regexp.MustCompile(`<at user_id="(o[un]_[A-Za-z0-9]+|all)">[^<]*</at>`)

// textMentions returns the ids a text message's content mentions.
func textMentions(content string) []string {
	var t struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(content), &t) != nil {
		return nil
	}
	var out []string
	for _, m := range textAt.FindAllStringSubmatch(t.Text, -1) {
		out = append(out, m[1])
	}
	return out
}

// Deduplicated returns the creates and replies Feishu answered with an
// earlier message of the same uuid, sending nothing (UUIDWindow).
func (s *Server) Deduplicated() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.deduped...)
}

// Refused returns the calls the fake refused with code (e.g.
// FrequencyLimitCode, CardRefusedCode).
func (s *Server) Refused(code int) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Code == code {
			out = append(out, c)
		}
	}
	return out
}

// NotInChatCode is Feishu's answer to a message sent to a chat the bot is
// not in (or that does not exist).
const NotInChatCode = 230002

// RefuseChat makes every message sent to chat fail as Feishu fails one to
// a chat the bot is not in (400, code NotInChatCode).
func (s *Server) RefuseChat(chat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outOf == nil {
		s.outOf = map[string]bool{}
	}
	s.outOf[chat] = true
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	kind := r.URL.Query().Get("receive_id_type")
	if kind != "chat_id" && kind != "open_id" {
		writeJSON(w, 400, map[string]any{"code": 99992402, "msg": "receive_id_type must be chat_id or open_id here"})
		return
	}
	c, ok := s.record(w, r, "create")
	if !ok {
		return
	}
	chat := c.ReceiveID
	if kind == "open_id" && !c.Deduplicated {
		chat = P2PChat(c.ReceiveID) // the bot's 1:1 chat with that person
	}
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"message_id": c.Sent, "chat_id": chat, "msg_type": c.MsgType}})
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	c, ok := s.record(w, r, "reply")
	if !ok {
		return
	}
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"message_id": c.Sent}})
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.record(w, r, "patch"); !ok {
		return
	}
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
}

// P2PChat is the chat id the fake gives the bot's 1:1 chat with the
// person of openID (a message created with receive_id_type open_id lands
// there).
func P2PChat(openID string) string { return "oc_p2p_" + strings.TrimPrefix(openID, "ou_") }

// Calls returns the OpenAPI calls received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// TokenFetches counts tenant token requests.
func (s *tokenIssuer) TokenFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens
}

// RefuseBootstrap makes the bootstrap answer code (non-zero) from now on.
func (s *longConn) RefuseBootstrap(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = code
}

// Connects counts websocket connections accepted; Bootstraps counts
// bootstrap requests.
func (s *longConn) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

func (s *longConn) bootstrap(w http.ResponseWriter, r *http.Request) {
	var req larkws.BootstrapRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	s.bootstraps++
	cc := s.ClientConfig
	s.mu.Unlock()
	s.mu.Lock()
	refuse := s.refuse
	s.mu.Unlock()
	if refuse != 0 || req.AppID == "" || req.AppSecret == "" {
		if refuse == 0 {
			refuse = 1000040344
		}
		writeJSON(w, 200, map[string]any{"code": refuse, "msg": "refused"})
		return
	}
	u := "ws" + strings.TrimPrefix(s.url, "http") + "/ws?device_id=dev1&service_id=7"
	writeJSON(w, 200, larkws.EndpointResp{Code: 0, Data: &larkws.Endpoint{Url: u, ClientConfig: &cc}})
}

func (s *longConn) ws(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	wc := &wsConn{c: c}
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.c.Close()
	}
	s.conn = wc
	s.connects++
	s.mu.Unlock()
	go s.readLoop(wc)
}

func (s *longConn) readLoop(wc *wsConn) {
	defer wc.c.Close()
	for {
		_, data, err := wc.c.ReadMessage()
		if err != nil {
			return
		}
		if wc.silent.Load() {
			continue // a half-open connection: nothing comes back
		}
		var f larkws.Frame
		if f.Unmarshal(data) != nil {
			continue
		}
		hs := larkws.Headers(f.Headers)
		if f.Method == int32(larkws.FrameTypeControl) {
			if hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing) {
				pong := larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: f.Service,
					Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypePong)}}}
				_ = s.write(wc, &pong)
			}
			continue
		}
		var resp larkws.Response
		_ = json.Unmarshal(f.Payload, &resp)
		s.mu.Lock()
		ch := s.acks[hs.GetString(larkws.HeaderMessageID)]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- resp:
			default:
			}
		}
	}
}

func (s *longConn) write(wc *wsConn, f *larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	wc.wmu.Lock()
	defer wc.wmu.Unlock()
	_ = wc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return wc.c.WriteMessage(websocket.BinaryMessage, b)
}

// ErrNotConnected is returned by Push when no client is connected.
var ErrNotConnected = errors.New("feishutest: no long connection")

// Push sends an event (its full v2 JSON: schema, header, event) as a data
// frame on the long connection and waits up to wait for the client's ack,
// which it returns (StatusCode 200 or 500; Data the callback's answer).
//
// The client may report itself connected a moment before the fake has
// registered the connection, so Push waits (within wait) for one.
func (s *longConn) Push(payload []byte, wait time.Duration) (larkws.Response, error) {
	deadline := time.Now().Add(wait)
	var wc *wsConn
	for {
		s.mu.Lock()
		wc = s.conn
		s.mu.Unlock()
		if wc != nil {
			break
		}
		if time.Now().After(deadline) {
			return larkws.Response{}, ErrNotConnected
		}
		time.Sleep(5 * time.Millisecond)
	}
	learnChat(payload, s.learn)
	n := s.seq.Add(1)
	id := "frame_" + strconv.FormatUint(n, 10)
	ch := make(chan larkws.Response, 1)
	s.mu.Lock()
	s.acks[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.acks, id)
		s.mu.Unlock()
	}()
	f := larkws.Frame{SeqID: n, LogID: n, Service: 7, Method: int32(larkws.FrameTypeData), Payload: payload,
		Headers: []larkws.Header{
			{Key: larkws.HeaderType, Value: string(larkws.MessageTypeEvent)},
			{Key: larkws.HeaderMessageID, Value: id},
			{Key: larkws.HeaderTraceID, Value: "trace_" + id},
			{Key: larkws.HeaderSum, Value: "1"},
			{Key: larkws.HeaderSeq, Value: "0"},
		}}
	if err := s.write(wc, &f); err != nil {
		return larkws.Response{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-time.After(wait):
		return larkws.Response{}, fmt.Errorf("feishutest: no ack within %v", wait)
	}
}

// learnChat remembers the chat of a pushed message event's message, so a
// reply to it counts towards that chat's rate (ChatQPS).
func learnChat(payload []byte, learn func(id, chat string)) {
	var ev struct {
		Event struct {
			Message struct {
				MessageID string `json:"message_id"`
				ChatID    string `json:"chat_id"`
			} `json:"message"`
		} `json:"event"`
	}
	if json.Unmarshal(payload, &ev) != nil || ev.Event.Message.MessageID == "" {
		return
	}
	learn(ev.Event.Message.MessageID, ev.Event.Message.ChatID)
}

// LearnMessage tells the fake that message id (one a person sent, e.g. in
// a webhook event) is in chat, so replies to it count towards chat's rate.
func (s *Server) LearnMessage(id, chat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatOf[id] = chat
}

// Drop closes the current long connection from the server side. The SDK
// reports a connection ready once it has read the upgrade answer, which
// can be a moment before this server has registered the connection: Drop
// waits for one (up to 5 s) rather than drop nothing.
func (s *longConn) Drop() {
	if wc := s.take(5 * time.Second); wc != nil {
		_ = wc.c.Close()
	}
}

// Silence makes the current connection half-open: it stays up but the
// fake answers nothing on it any more (no pongs), as after a NAT or a
// laptop sleep dropped it silently. New connections behave normally. Like
// Drop, it waits for a connection to be registered.
func (s *longConn) Silence() {
	if wc := s.take(5 * time.Second); wc != nil {
		wc.silent.Store(true)
	}
}

// take removes the current connection from the server's view and returns
// it, waiting up to wait for one to be registered; nil if none came.
func (s *longConn) take(wait time.Duration) *wsConn {
	deadline := time.Now().Add(wait)
	for {
		s.mu.Lock()
		wc := s.conn
		s.conn = nil
		s.mu.Unlock()
		if wc != nil || !time.Now().Before(deadline) {
			return wc
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Connected reports whether a long connection is up.
func (s *longConn) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// MessageEvent is an im.message.receive_v1 event.
type MessageEvent struct {
	EventID   string
	MessageID string
	ChatID    string
	ChatType  string // "p2p" or "group"
	Sender    string // open_id
	Text      string // the raw text, with @_user_N placeholders
	// Mentions maps a placeholder ("@_user_1") to an open_id.
	Mentions  map[string]string
	ThreadID  string
	CreatedAt time.Time // default now
}

// JSON is the full v2 event payload.
func (e MessageEvent) JSON() []byte {
	created := e.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	content, _ := json.Marshal(map[string]string{"text": e.Text})
	var mentions []map[string]any
	for key, id := range e.Mentions {
		mentions = append(mentions, map[string]any{"key": key, "id": map[string]any{"open_id": id, "union_id": "on_" + id}, "name": "name_" + id, "tenant_key": "tk"})
	}
	ms := strconv.FormatInt(created.UnixMilli(), 10)
	msg := map[string]any{"message_id": e.MessageID, "create_time": ms, "chat_id": e.ChatID, "chat_type": e.ChatType,
		"message_type": "text", "content": string(content), "mentions": mentions}
	if e.ThreadID != "" {
		msg["thread_id"] = e.ThreadID
	}
	b, _ := json.Marshal(map[string]any{
		"schema": "2.0",
		"header": map[string]any{"event_id": e.EventID, "event_type": "im.message.receive_v1", "create_time": ms, "token": "vtoken", "app_id": "cli_x", "tenant_key": "tk"},
		"event": map[string]any{
			"sender":  map[string]any{"sender_id": map[string]any{"open_id": e.Sender, "union_id": "on_" + e.Sender}, "sender_type": "user", "tenant_key": "tk"},
			"message": msg,
		},
	})
	return b
}

// CardActionEvent is a card.action.trigger callback.
type CardActionEvent struct {
	EventID   string
	Operator  string // open_id
	MessageID string // of the card
	ChatID    string
	// Value is action.value (an object for a well-formed button).
	Value any
	// FormValue, when not nil, makes the click a form submit, as Feishu
	// sends one: action.form_value holds it (each input's text under the
	// input's name, a string, "" for an input left empty), action.name
	// the pressed button's name (Name, default "submit") and
	// action.timezone the clicker's zone.
	FormValue map[string]any
	// Name is the pressed button's name in a form submit.
	Name string
}

// JSON is the full v2 callback payload.
func (e CardActionEvent) JSON() []byte {
	action := map[string]any{"value": e.Value, "tag": "button"}
	if e.FormValue != nil {
		name := e.Name
		if name == "" {
			name = "submit"
		}
		action["form_value"], action["name"], action["timezone"] = e.FormValue, name, "Asia/Shanghai"
	}
	b, _ := json.Marshal(map[string]any{
		"schema": "2.0",
		"header": map[string]any{"event_id": e.EventID, "event_type": "card.action.trigger", "create_time": strconv.FormatInt(time.Now().UnixMilli(), 10), "token": "vtoken", "app_id": "cli_x", "tenant_key": "tk"},
		"event": map[string]any{
			"operator": map[string]any{"tenant_key": "tk", "open_id": e.Operator},
			"token":    "c-delay-token",
			"action":   action,
			"host":     "im_message",
			"context":  map[string]any{"open_message_id": e.MessageID, "open_chat_id": e.ChatID},
		},
	})
	return b
}

// Encrypt encrypts a payload as Feishu does (AES-256-CBC, key
// sha256(encryptKey), a random IV prepended, PKCS#7) and returns the
// webhook body {"encrypt":"…"}: feishuwire.Encrypt.
func Encrypt(payload []byte, encryptKey string) []byte {
	return feishuwire.Encrypt(payload, encryptKey)
}

// Request is a webhook request as Feishu sends it: the body and the
// three X-Lark-* headers (feishuwire.Request). Keep one to post it again
// (a replay).
type Request feishuwire.Request

// Sign builds the request Feishu would send for payload at time at:
// encrypted with encryptKey and signed with signKey (the same key for a
// genuine request; another one forges the signature): feishuwire.Sign.
func Sign(payload []byte, encryptKey, signKey string, at time.Time) Request {
	return Request(feishuwire.Sign(payload, encryptKey, signKey, at))
}

// Post posts the request to url and returns the response and its body.
func (q Request) Post(url string) (*http.Response, []byte, error) {
	req, err := feishuwire.Request(q).HTTPRequest(context.Background(), url)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out, nil
}

// PostWebhook posts payload to url as Feishu does: encrypted with
// encryptKey and signed, timestamped now; forge spoils the signature.
func PostWebhook(url, encryptKey string, payload []byte, forge bool) (*http.Response, []byte, error) {
	signKey := encryptKey
	if forge {
		signKey = "not-the-key"
	}
	return Sign(payload, encryptKey, signKey, time.Now()).Post(url)
}
