package web

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// conn is one socket of one user.
type conn struct {
	w      *Web
	ws     *websocket.Conn
	h      channels.Handler
	user   approval.UserID
	tenant string
	out    chan []byte
	done   chan struct{}
	once   sync.Once
	joined map[string]bool // chat ids this socket watches; guarded by w.mu
}

// close ends the socket; the read loop then detaches it. It never takes w.mu.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

// enqueue queues a frame without blocking; a socket too slow to keep up
// is closed (the page reconnects and gets what is pending again).
func (c *conn) enqueue(frame []byte) {
	select {
	case <-c.done:
		return
	default:
	}
	select {
	case c.out <- frame:
	default:
		c.w.log.Warn("socket too slow; closing it", "user_id", c.user)
		c.close()
	}
}

func (c *conn) writeLoop() {
	defer c.w.wg.Done()
	ping := time.NewTicker(c.w.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case f := <-c.out:
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				c.close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				c.close()
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *conn) readLoop() {
	defer c.w.wg.Done()
	defer c.detach()
	defer c.close()
	wait := 2 * c.w.cfg.PingInterval
	c.ws.SetReadLimit(c.w.cfg.MaxMessageBytes)
	_ = c.ws.SetReadDeadline(time.Now().Add(wait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(wait)) })
	for {
		kind, data, err := c.ws.ReadMessage()
		if err != nil {
			if websocket.IsUnexpectedCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
				c.w.log.Debug("socket closed", "user_id", c.user, "err", err)
			}
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(wait))
		if kind != websocket.TextMessage {
			c.fail(CodeInvalidMessage, "frames must be JSON text", "", "")
			continue
		}
		c.handle(data)
	}
}

// detach forgets the socket in every chat it watched.
func (c *conn) detach() {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.conns, c)
	for id := range c.joined {
		if ch := w.chats[id]; ch != nil {
			delete(ch.conns, c)
		}
	}
}

func (c *conn) fail(code, msg, sid, stepID string) {
	c.enqueue(mustJSON(errorFrame{Type: typeError, Event: typeError, Code: code, Error: code, Message: msg,
		SessionID: sid, StepID: stepID, Timestamp: c.w.now()}))
}

func (c *conn) log() *slog.Logger { return c.w.log.With("user_id", c.user) }

// handle takes one frame. A frame that is not valid UTF-8 is refused
// before it is decoded (decoding would turn the bad bytes into U+FFFD and
// a decision or a message would go on with text nobody wrote).
func (c *conn) handle(data []byte) {
	if !utf8.Valid(data) {
		c.fail(CodeInvalidMessage, c.w.words().badUTF8, "", "")
		return
	}
	var f inFrame
	if err := json.Unmarshal(data, &f); err != nil {
		c.fail(CodeInvalidMessage, "the frame is not a JSON object: "+err.Error(), "", "")
		return
	}
	kind, ok := f.kind()
	if !ok {
		c.fail(CodeInvalidMessage, c.w.words().typeEventDiffer, f.SessionID, "")
		return
	}
	switch kind {
	case typeHello, typeUserMessage, typeUserResponse:
	default:
		c.fail(CodeInvalidMessage, "unknown frame type (type or event) "+quote(kind), f.SessionID, "")
		return
	}
	if !validID.MatchString(f.SessionID) {
		c.fail(CodeInvalidMessage, "session_id must be 1 to 64 characters of A-Z a-z 0-9 _ -", "", "")
		return
	}
	switch kind {
	case typeHello:
		c.join(f.SessionID, true)
	case typeUserMessage:
		c.message(f)
	case typeUserResponse:
		c.respond(f)
	}
}

// join makes the socket watch a session; the first time (or on hello) it
// delivers what was kept for the session and re-sends the pending
// confirmation.
func (c *conn) join(sid string, hello bool) {
	w := c.w
	id := chatID(c.user, sid)
	w.mu.Lock()
	first := !c.joined[id]
	c.joined[id] = true
	ch := w.chatLocked(id, c.user, sid)
	ch.conns[c] = struct{}{}
	if hello {
		c.enqueue(mustJSON(helloFrame{Type: typeHello, Event: typeHello, SessionID: sid, User: c.user, Timestamp: w.now()}))
	}
	if first {
		for _, k := range fresh(ch.backlog, w.clk.Now()) {
			c.enqueue(k.frame)
		}
		ch.backlog = nil
	}
	w.mu.Unlock()
	if hello || first {
		c.resendPending(id, sid)
	}
}

// resendPending re-sends agent.user_confirm for the session's pending
// approval, reusing the step this process showed for it when there is one.
func (c *conn) resendPending(id, sid string) {
	ctx, cancel := context.WithTimeout(c.w.ctx, handleTimeout)
	defer cancel()
	v, err := c.w.cfg.Views.PendingView(ctx, channels.Target{Channel: Name, ChatID: id, UserID: c.user})
	if err != nil {
		c.log().Warn("looking up the pending confirmation failed", "chat_id", id, "err", err)
		return
	}
	if v == nil {
		return
	}
	w := c.w
	w.mu.Lock()
	st := w.steps[stepIDOf(*v)]
	if st == nil || st.chatID != id || st.state == stepResolved {
		w.mu.Unlock()
		ns, err := w.newStep(id, c.user, sid, *v)
		if err != nil {
			c.log().Error("rendering the pending confirmation failed", "approval_id", v.ApprovalID, "err", err)
			return
		}
		w.mu.Lock()
		st = w.adoptStepLocked(ns)
	}
	c.enqueue(st.frame)
	w.mu.Unlock()
}

// recoverStep returns the step stepID names when this process does not
// know it (shown before a restart, or by another replica) but it is the
// session's pending approval: the step id names its approval. Else nil.
func (c *conn) recoverStep(sid, stepID string) *step {
	apID, ok := approvalOfStep(stepID)
	if !ok {
		return nil
	}
	id := chatID(c.user, sid)
	ctx, cancel := context.WithTimeout(c.w.ctx, handleTimeout)
	defer cancel()
	v, err := c.w.cfg.Views.PendingView(ctx, channels.Target{Channel: Name, ChatID: id, UserID: c.user})
	if err != nil {
		c.log().Warn("looking up the pending confirmation failed", "chat_id", id, "err", err)
		return nil
	}
	if v == nil || v.ApprovalID != apID || stepIDOf(*v) != stepID {
		return nil
	}
	ns, err := c.w.newStep(id, c.user, sid, *v)
	if err != nil {
		c.log().Error("rendering the pending confirmation failed", "approval_id", v.ApprovalID, "err", err)
		return nil
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return c.w.adoptStepLocked(ns)
}

// message hands a chat message to the router.
func (c *conn) message(f inFrame) {
	var text string
	if err := json.Unmarshal(f.Content, &text); err != nil || strings.TrimSpace(text) == "" {
		c.fail(CodeInvalidMessage, "user.message needs a non-empty string content", f.SessionID, "")
		return
	}
	msgID := "wm_" + rand.Text()
	if f.MessageID != "" {
		if !validID.MatchString(f.MessageID) {
			c.fail(CodeInvalidMessage, "message_id must be 1 to 64 characters of A-Z a-z 0-9 _ -", f.SessionID, "")
			return
		}
		msgID = chatID(c.user, f.SessionID) + "/" + f.MessageID
	}
	c.join(f.SessionID, false)
	ctx, cancel := context.WithTimeout(c.w.ctx, handleTimeout)
	defer cancel()
	err := c.h.HandleMessage(ctx, channels.Message{Channel: Name, ChatID: chatID(c.user, f.SessionID), ChatType: "p2p",
		UserID: c.user, UserName: string(c.user), MessageID: msgID, Text: text, CreatedAt: c.w.clk.Now()})
	if err != nil {
		c.log().Error("handling a message failed", "chat_id", chatID(c.user, f.SessionID), "msg_id", msgID, "err", err)
		c.fail(CodeUnavailable, c.w.words().unavailable, f.SessionID, "")
	}
}

// respond answers a confirmation. The step moves to "deciding" at once, so
// a second answer (another tab, a double click) gets ALREADY_DECIDED; the
// decision itself runs in the background (it runs the tool).
func (c *conn) respond(f inFrame) {
	w, sid := c.w, f.SessionID
	var rc responseContent
	if err := json.Unmarshal(f.Content, &rc); err == nil && rc.Resolution != "" {
		c.respondResolve(f, rc)
		return
	}
	if err := json.Unmarshal(f.Content, &rc); err != nil || rc.Confirmed == nil {
		c.fail(CodeInvalidMessage, `user.response needs content {"confirmed": true|false, "message": "…"}`, sid, f.StepID)
		return
	}
	grant, gerr := approval.ParseGrantChoice(rc.Grant)
	if gerr != nil || (grant != approval.GrantUnset && !*rc.Confirmed) {
		c.fail(CodeInvalidMessage, `user.response: grant must be "once", "session" or "always", with confirmed true`, sid, f.StepID)
		return
	}
	calls, ok := responseCalls(rc)
	if !ok {
		c.fail(CodeInvalidMessage, callsMalformed, sid, f.StepID)
		return
	}
	if !responseEdits(rc) {
		c.fail(CodeInvalidMessage, editsMalformed, sid, f.StepID)
		return
	}
	if w.stepOf(f.StepID) == nil {
		c.recoverStep(sid, f.StepID)
	}
	w.mu.Lock()
	st := w.steps[f.StepID]
	if st == nil || st.chatID != chatID(c.user, sid) {
		w.mu.Unlock()
		c.fail(CodeInvalidStepID, w.words().invalidStep, sid, f.StepID)
		return
	}
	switch st.state {
	case stepDeciding:
		w.mu.Unlock()
		c.fail(CodeAlreadyDecided, w.words().alreadyDecided, sid, st.id)
		return
	case stepResolved:
		status := st.status
		w.mu.Unlock()
		if status == approval.StatusExpired {
			c.fail(CodeExpired, w.words().expired, sid, st.id)
		} else {
			c.fail(CodeAlreadyDecided, w.words().alreadyDecided, sid, st.id)
		}
		return
	}
	if w.closed {
		w.mu.Unlock()
		c.fail(CodeUnavailable, w.words().unavailable, sid, st.id)
		return
	}
	st.state = stepDeciding
	w.wg.Add(1)
	w.mu.Unlock()
	verb := approval.Reject
	if *rc.Confirmed {
		verb = approval.Approve
	}
	go func() {
		defer w.wg.Done()
		c.decide(st, verb, rc.Message, grant, calls, rc.Edits)
	}()
}

func (c *conn) decide(st *step, verb approval.Verb, comment string, grant approval.GrantChoice, calls map[string]approval.Verb, edits map[string]json.RawMessage) {
	w := c.w
	log := c.log().With("chat_id", st.chatID, "approval_id", st.approvalID, "msg_id", st.id)
	ctx, cancel := context.WithTimeout(w.ctx, handleTimeout)
	defer cancel()
	o, err := c.h.HandleCardAction(ctx, channels.CardAction{Channel: Name, ChatID: st.chatID, MessageID: st.id, UserID: c.user,
		ApprovalID: st.approvalID, Verb: verb, PayloadSHA256: st.hash, Comment: comment, Grant: grant, Calls: calls, Edits: edits})
	w.mu.Lock()
	defer w.mu.Unlock()
	reopen := func() {
		if st.state == stepDeciding {
			st.state = stepOpen
		}
	}
	if err != nil && approval.KindOf(err) == errkind.Invalid {
		// calls did not name every call of the confirmation once, or
		// the edited arguments were refused (the cause is the user's
		// own input: schema or the tool's refusal).
		reopen()
		msg := callsMalformed
		if edits != nil {
			msg = editRefusal(err, w.cfg.Lang)
		}
		c.fail(CodeInvalidMessage, msg, st.sessionID, st.id)
		return
	}
	if err != nil {
		log.Error("deciding a confirmation failed; nothing was run", "err", err)
		reopen()
		c.fail(CodeUnavailable, approval.UserMessageIn(err, w.cfg.Lang), st.sessionID, st.id)
		return
	}
	log.Info("confirmation answered", "status", o.Status)
	switch {
	case o.Status.Final():
		// Settle normally resolved the step already; this covers a card
		// reference that was not recorded in time.
		text := o.Content
		if t := w.words().status(o.Status); t != "" {
			text = t
		}
		w.resolveLocked(st, o.Status, text, o.DecidedBy, "")
		switch o.Status {
		case approval.StatusExpired:
			c.fail(CodeExpired, w.words().expired, st.sessionID, st.id)
		case approval.StatusSuperseded, approval.StatusCancelled:
			c.fail(CodeAlreadyDecided, w.words().alreadyDecided, st.sessionID, st.id)
		}
	case o.Status == approval.StatusAlreadyDecided:
		reopen()
		c.fail(CodeAlreadyDecided, w.words().alreadyDecided, st.sessionID, st.id)
	case o.Status == approval.StatusUnauthorized:
		reopen()
		c.fail(CodeUnauthorized, o.Content, st.sessionID, st.id)
	case o.Status == approval.StatusAwaitingQuorum:
		reopen()
		c.fail(CodeAwaitingQuorum, o.Content, st.sessionID, st.id)
	default: // missing, tampered: this step cannot be answered
		st.state, st.status, st.resolvedAt = stepResolved, o.Status, w.clk.Now()
		c.fail(CodeInvalidStepID, w.words().invalidStep, st.sessionID, st.id)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// webWords are the channel's own sentences in one language.
type webWords struct {
	invalidStep, alreadyDecided, expired, unavailable string
	badUTF8, typeEventDiffer                          string
	lang                                              string
}

func (ww webWords) status(st approval.Status) string {
	return approval.DefaultOutcomeText(ww.lang)[st]
}

// words returns the channel's sentences in its language, from the
// catalogue of package words.
func (w *Web) words() webWords {
	l := words.Of(w.cfg.Lang)
	return webWords{
		invalidStep:     words.Text(l, words.WebInvalidStep),
		alreadyDecided:  words.Text(l, words.WebAlreadyDecided),
		expired:         words.Text(l, words.WebExpired),
		unavailable:     words.Text(l, words.WebUnavailable),
		badUTF8:         words.Text(l, words.WebBadUTF8),
		typeEventDiffer: words.Text(l, words.WebTypeEventDiffer),
		lang:            string(l),
	}
}
