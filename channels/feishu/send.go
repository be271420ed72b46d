package feishu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clip"
)

// Feishu codes the channel acts on.
const (
	codeRateLimited = 99991400 // request trigger frequency limit (app-level; HTTP 429)
	// codeFrequencyLimit is the per-chat (5 QPS) and per-message PATCH (5
	// QPS) limit: HTTP 400, "This operation triggers the frequency limit."
	// (doc server-docs/im-v1/message/create, …/message-card/patch).
	codeFrequencyLimit = 230020
)

// APIError is a Feishu API call that answered with a non-zero code (or a
// non-2xx status).
type APIError struct {
	Op     string // what was attempted ("reply", "create", "patch", ...)
	Status int    // HTTP status
	Code   int    // Feishu code
	Msg    string
	LogID  string // Feishu's log id (x-tt-logid), for support tickets
}

func (e *APIError) Error() string {
	return fmt.Sprintf("feishu %s: HTTP %d, code %d: %s (log_id %s)", e.Op, e.Status, e.Code, e.Msg, e.LogID)
}

// Throttled reports whether Feishu refused the call for one of its rate
// limits: the app's (HTTP 429, code 99991400) or a chat's or a message's
// (HTTP 400, code 230020).
func (e *APIError) Throttled() bool {
	return e.Status == http.StatusTooManyRequests || e.Code == codeRateLimited || e.Code == codeFrequencyLimit
}

// do runs one API call, retrying (at most MaxRetries times) a throttled
// call after x-ogw-ratelimit-reset seconds (or an exponential backoff), a
// 5xx answer and a transport error, each wait bounded by MaxRetryWait and
// ctx. Other API errors are returned at once. call returns the raw answer,
// the Feishu code and message read from the body, and a transport error.
// Every answer is counted (Config.Metrics); a call given up on is logged
// at WARN and counted as a delivery failure, never dropped silently.
func (o *openAPI) do(ctx context.Context, op string, call func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error)) error {
	for attempt := 0; ; attempt++ {
		resp, code, msg, err := call(ctx, o.tokenOptions()...)
		reset := "" // x-ogw-ratelimit-reset of a throttled answer
		switch {
		case err != nil:
			o.metrics.Request(Name, op, "transport")
			err = fmt.Errorf("feishu %s: %w", op, err)
		case resp != nil && (resp.StatusCode < 200 || resp.StatusCode > 299 || code != 0):
			o.metrics.Request(Name, op, answerCode(resp.StatusCode, code))
			ae := &APIError{Op: op, Status: resp.StatusCode, Code: code, Msg: msg, LogID: resp.LogId()}
			err = ae
			switch {
			case staleToken(code) && attempt < o.cfg.MaxRetries:
				// The SDK's process-global cache can keep a token Feishu
				// no longer accepts (and its own retry re-reads it): get a
				// fresh one and pass it explicitly from now on.
				if terr := o.refreshToken(ctx); terr != nil {
					return o.gaveUp(op, errors.Join(err, terr))
				}
				o.log.Warn("feishu refused the cached tenant token; using a fresh one", "op", op, "code", code)
				continue
			case ae.Throttled():
				o.metrics.Throttled(Name, op)
				reset = resp.Header.Get("x-ogw-ratelimit-reset")
			case resp.StatusCode >= 500:
			default:
				// A permanent refusal: permissions, bad ids, a card Feishu
				// rejects.
				return o.gaveUp(op, err)
			}
		case code != 0:
			o.metrics.Request(Name, op, strconv.Itoa(code))
			return o.gaveUp(op, &APIError{Op: op, Code: code, Msg: msg})
		default:
			o.metrics.Request(Name, op, "0")
			return nil
		}
		if attempt >= o.cfg.MaxRetries {
			return o.gaveUp(op, err)
		}
		wait := retryWait(reset, attempt, o.cfg.MaxRetryWait)
		o.log.Warn("feishu API call failed; retrying", "op", op, "err", err, "in", wait, "attempt", attempt+1)
		o.metrics.Retried(Name, op)
		select {
		case <-ctx.Done():
			return o.gaveUp(op, errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
	}
}

// gaveUp logs and counts a call given up on, and returns err. A CardKit
// streaming card's end (200850, 200860) is not one: the answer goes on in
// a new card (stream.go).
func (o *openAPI) gaveUp(op string, err error) error {
	if ae := (*APIError)(nil); errors.As(err, &ae) && (ae.Code == codeStreamingClosed || ae.Code == codeStreamCardFull) {
		return err
	}
	o.log.Warn("feishu refused a call for good; what it carried was not delivered", "op", op, "err", err)
	o.metrics.DeliveryFailed(Name, op)
	return err
}

// answerCode is the code label of an API answer: Feishu's code, or the
// HTTP status when the body had none.
func answerCode(status, code int) string {
	if code != 0 {
		return strconv.Itoa(code)
	}
	return "http_" + strconv.Itoa(status)
}

// Retry waits: the first backoff, and the margin added to Feishu's reset
// time so the retry lands after the window has turned.
const (
	firstBackoff = 300 * time.Millisecond
	resetMargin  = 50 * time.Millisecond
)

// retryWait is how long to wait after failed attempt (0 for the first
// call) before the next one. reset is the x-ogw-ratelimit-reset header of
// a throttled answer ("" otherwise): a number of seconds ≥ 0 is honoured,
// plus resetMargin, even when shorter than the backoff; anything else
// (absent, not a number, negative, NaN, infinite) falls back to the
// exponential backoff 300 ms × 2^attempt. The wait is at most max.
func retryWait(reset string, attempt int, max time.Duration) time.Duration {
	if s, err := strconv.ParseFloat(strings.TrimSpace(reset), 64); err == nil && s >= 0 && !math.IsInf(s, 0) {
		// Compare as floats: a huge reset must not overflow a Duration.
		if s*float64(time.Second) >= float64(max-resetMargin) {
			return max
		}
		return min(time.Duration(s*float64(time.Second))+resetMargin, max)
	}
	wait := firstBackoff
	for range attempt {
		if wait >= max {
			break
		}
		wait *= 2
	}
	return min(wait, max)
}

// staleToken reports the codes of an invalid or expired access token.
func staleToken(code int) bool { return code == 99991663 || code == 99991664 || code == 99991671 }

// tokenOptions passes the fresh tenant token, while there is one.
func (o *openAPI) tokenOptions() []larkcore.RequestOptionFunc {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.token == "" || time.Now().After(o.tokenUntil) {
		return nil
	}
	return []larkcore.RequestOptionFunc{larkcore.WithTenantAccessToken(o.token)}
}

// refreshToken asks Feishu for a new tenant token, bypassing the SDK's
// cache.
func (o *openAPI) refreshToken(ctx context.Context) error {
	body, _ := json.Marshal(map[string]string{"app_id": o.cfg.AppID, "app_secret": o.cfg.AppSecret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.BaseURL+"/open-apis/auth/v3/tenant_access_token/internal", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := o.http.Do(req)
	if err != nil {
		return fmt.Errorf("feishu tenant token: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&out); err != nil {
		return fmt.Errorf("feishu tenant token: HTTP %d: %w", resp.StatusCode, err)
	}
	if out.Code != 0 || out.Token == "" {
		return &APIError{Op: "tenant token", Status: resp.StatusCode, Code: out.Code, Msg: out.Msg}
	}
	ttl := time.Duration(out.Expire)*time.Second - 3*time.Minute
	if ttl <= 0 {
		ttl = time.Minute
	}
	o.mu.Lock()
	o.token, o.tokenUntil = out.Token, time.Now().Add(ttl)
	o.mu.Unlock()
	return nil
}

// maxTextRunes keeps a text message well under Feishu's 150 KB.
const maxTextRunes = 30000

// textContent is the content of a text message, built with json.Marshal.
func textContent(s string) (string, error) {
	b, err := json.Marshal(map[string]string{"text": clip.Runes(s, maxTextRunes)})
	return string(b), err
}

// outgoingText is what an Outgoing says as plain text.
// mentioning is text after a text message's mention of each of users
// that is a Feishu id (<at user_id="ou_…"></at>: doc server-docs/im-v1/
// message/create, content of a text message; the client shows the
// name), at most approval.MaxMentions. An "<at" in text itself is
// defused (a zero-width joiner after "<"), so only these mentions notify.
func mentioning(users []approval.UserID, text string) string {
	var b strings.Builder
	n := 0
	for _, u := range users {
		if n == approval.MaxMentions || !feishuID.MatchString(string(u)) {
			continue
		}
		n++
		b.WriteString(`<at user_id="` + string(u) + `"></at> `)
	}
	return b.String() + atTag.ReplaceAllString(text, "<\u200d$1")
}

// feishuID matches the ids Feishu gives people (open_id ou_…, union_id
// on_…): only such an id is put in a mention.
var feishuID = regexp.MustCompile(`^o[un]_[A-Za-z0-9]{1,64}$`)

// atTag finds "<at" (any case) in text, which Feishu would read as a
// mention.
var atTag = regexp.MustCompile(`<((?i)at)`)

func outgoingText(out channels.Outgoing) string {
	if out.Kind != channels.OutToolResult {
		return out.Text
	}
	mark := "🔧"
	if out.IsError {
		mark = "⚠️"
	}
	return fmt.Sprintf("%s %s\n%s", mark, out.Tool, out.Text)
}

// Send says out in the chat: as a reply to to.ReplyTo when there is one (in
// its thread when the conversation is one), else as a new message in
// to.ChatID. The uuid (Feishu's idempotency key, 1 h) is derived from the
// message answered and what is said, so a retry, or a second replica
// answering the same re-delivered message, is sent once.
func (c *Channel) Send(ctx context.Context, to channels.Target, out channels.Outgoing) error {
	text := outgoingText(out)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if len(out.Mentions) > 0 {
		text = mentioning(out.Mentions, text)
	}
	content, err := textContent(text)
	if err != nil {
		return fmt.Errorf("feishu send: %w", err)
	}
	uuid := randomUUID()
	if to.ReplyTo != "" {
		uuid = hashUUID("say", to.ChatID, to.ReplyTo, string(out.Kind), out.Tool, text)
	}
	_, err = c.api.post(ctx, to, larkim.MsgTypeText, content, uuid)
	return err
}

// post replies to to.ReplyTo or creates a message in to.ChatID and
// returns the new message's id.
func (o *openAPI) post(ctx context.Context, to channels.Target, msgType, content, uuid string) (string, error) {
	var id string
	if err := o.chatLimit.take(ctx, to.ChatID); err != nil {
		return "", fmt.Errorf("feishu send: %w", err)
	}
	if to.ReplyTo != "" {
		req := larkim.NewReplyMessageReqBuilder().MessageId(to.ReplyTo).Body(larkim.NewReplyMessageReqBodyBuilder().
			MsgType(msgType).Content(content).ReplyInThread(to.ThreadID != "").Uuid(uuid).Build()).Build()
		err := o.do(ctx, "reply", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
			resp, err := o.client.im.Message.Reply(ctx, req, opts...)
			if err != nil {
				return nil, 0, "", err
			}
			if resp.Success() && resp.Data != nil {
				id = larkcore.StringValue(resp.Data.MessageId)
			}
			return resp.ApiResp, resp.Code, resp.Msg, nil
		})
		return id, err
	}
	if to.ChatID == "" {
		return "", errors.New("feishu send: no chat and no message to reply to")
	}
	req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(larkim.CreateMessageV1ReceiveIDTypeChatId).
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(to.ChatID).MsgType(msgType).Content(content).Uuid(uuid).Build()).Build()
	err := o.do(ctx, "create", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := o.client.im.Message.Create(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		if resp.Success() && resp.Data != nil {
			id = larkcore.StringValue(resp.Data.MessageId)
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	return id, err
}

// ShowApproval sends the approval's card (an interactive message) to the
// chat and remembers the view, so a click can be answered with the card's
// next state.
func (c *Channel) ShowApproval(ctx context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	content, err := cards.FeishuCardJSON(v, c.cfg.Lang)
	if err != nil {
		return approval.CardRef{}, err
	}
	to.ReplyTo = "" // the card stands on its own in the chat
	id, err := c.api.post(ctx, to, larkim.MsgTypeInteractive, content, cardUUID(to, v))
	if err != nil {
		return approval.CardRef{}, fmt.Errorf("feishu show approval %s: %w", v.ApprovalID, err)
	}
	if id == "" {
		return approval.CardRef{}, fmt.Errorf("feishu show approval %s: the answer has no message_id", v.ApprovalID)
	}
	c.cards.remember(id, v)
	return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: id}, nil
}

// cardUUID is the idempotency key of an approval's card: Feishu sends at
// most one message per uuid within an hour and answers a repeat with the
// first message (doc server-docs/im-v1/message/create, uuid), so the key
// names what makes the card a message of its own: the approval, the place
// (chat, or person for a 1:1 card), the kind (the approval's card, the
// requester's status card of approve_in, the onlookers' redacted card)
// and the escalation step. A retry of the same card is the same key, so
// it is sent once; an escalation step's card in the on-call chat, or a
// private approval's redacted card beside its approvers' card, is a
// message of its own.
func cardUUID(to channels.Target, v cards.View) string {
	kind := "card"
	switch {
	case v.WaitsIn != "":
		kind = "status"
	case v.Redacted:
		kind = "redacted"
	}
	return hashUUID(kind, string(v.ApprovalID), to.ChatID, string(to.UserID), strconv.Itoa(v.Step))
}

// SettleApproval patches the card to its final state. When a click on
// this card was just answered with the "processing" card, Feishu may apply
// that answer after this patch; the patch is then repeated shortly after.
func (c *Channel) SettleApproval(ctx context.Context, ref approval.CardRef, v cards.View) error {
	if ref.MessageID == "" {
		return errors.New("feishu settle: the card reference has no message id")
	}
	content, err := cards.FeishuCardJSON(v, c.cfg.Lang)
	if err != nil {
		return err
	}
	if err := c.api.patch(ctx, ref.MessageID, content); err != nil {
		return fmt.Errorf("feishu settle approval %s: %w", v.ApprovalID, err)
	}
	if c.cards.remember(ref.MessageID, v) {
		c.bg.Go(func() {
			time.Sleep(repatchDelay)
			if err := c.api.patch(context.WithoutCancel(ctx), ref.MessageID, content); err != nil {
				c.log.Warn("re-patching a settled card failed", "msg_id", ref.MessageID, "err", err)
			}
		})
	}
	return nil
}

// FoldsResults marks Feishu as a channel whose people read a tool's result
// in the answer after it (and an approved call's on its card):
// channels.ResultFolder.
func (c *Channel) FoldsResults() {}

var _ channels.ResultFolder = (*Channel)(nil)

// ShowProgress redraws a pending card (a quorum's votes so far) in place,
// buttons and all (channels.ProgressShower).
func (c *Channel) ShowProgress(ctx context.Context, ref approval.CardRef, v cards.View) error {
	if ref.MessageID == "" {
		return errors.New("feishu progress: the card reference has no message id")
	}
	content, err := cards.FeishuCardJSON(v, c.cfg.Lang)
	if err != nil {
		return err
	}
	if err := c.api.patch(ctx, ref.MessageID, content); err != nil {
		return fmt.Errorf("feishu progress of approval %s: %w", v.ApprovalID, err)
	}
	c.cards.remember(ref.MessageID, v)
	return nil
}

var _ channels.ProgressShower = (*Channel)(nil)

// repatchDelay is how long after a "processing" answer a settled card is
// patched again.
var repatchDelay = 1500 * time.Millisecond

// patch redraws card messageID with content. Redraws of one message are
// coalesced: while one waits for the message's PATCH budget (5 per
// second), a newer redraw of the same message replaces it, and the older
// one returns without sending (the newer one says more). Feishu refuses
// a sixth PATCH of a message in a second with 230020 (doc
// server-docs/im-v1/message-card/patch).
func (o *openAPI) patch(ctx context.Context, messageID, content string) error {
	gen := o.redraws.queue(messageID)
	if err := o.msgLimit.take(ctx, messageID); err != nil {
		o.redraws.done(messageID, gen)
		return fmt.Errorf("feishu patch: %w", err)
	}
	if !o.redraws.current(messageID, gen) {
		return nil // a newer redraw of this message goes instead
	}
	defer o.redraws.done(messageID, gen)
	req := larkim.NewPatchMessageReqBuilder().MessageId(messageID).Body(larkim.NewPatchMessageReqBodyBuilder().Content(content).Build()).Build()
	return o.do(ctx, "patch", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := o.client.im.Message.Patch(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
}

// redraws numbers the redraws of each message, so that one superseded
// while it waited is dropped.
type redraws struct {
	mu   sync.Mutex
	last map[string]uint64 // message id → the newest redraw's number
	n    uint64
}

// queue numbers a new redraw of id, the newest.
func (r *redraws) queue(id string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]uint64{}
	}
	r.n++
	r.last[id] = r.n
	return r.n
}

// current reports whether gen is still the newest redraw of id.
func (r *redraws) current(id string, gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[id] == gen
}

// done forgets id once its newest redraw gen has gone.
func (r *redraws) done(id string, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[id] == gen {
		delete(r.last, id)
	}
}

// shownCard is a card this process sent or updated.
type shownCard struct {
	view         cards.View
	at           time.Time
	processingAt time.Time // when a click was answered with the processing card
}

const (
	maxCards = 2000
	cardTTL  = 24 * time.Hour
)

// remember stores the view of a card (by message id) and reports whether
// a processing answer was given for it in the last few seconds.
func (m *cardMemory) remember(messageID string, v cards.View) (recentProcessing bool) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if sc, ok := m.cards[messageID]; ok {
		recentProcessing = !sc.processingAt.IsZero() && now.Sub(sc.processingAt) < 5*time.Second
		sc.view, sc.at = v, now
		return recentProcessing
	}
	m.addCardLocked(messageID, v, now)
	return false
}

// rememberLoaded stores the view of a card this process did not send (read
// from the store on a click) unless one is known already, and returns
// the view remembered: an update that got here first wins.
func (m *cardMemory) rememberLoaded(messageID string, v cards.View) cards.View {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sc, ok := m.cards[messageID]; ok {
		if sc.view.ApprovalID == v.ApprovalID {
			return sc.view
		}
		return v
	}
	m.addCardLocked(messageID, v, time.Now())
	return v
}

func (m *cardMemory) addCardLocked(messageID string, v cards.View, now time.Time) {
	if len(m.cards) >= maxCards {
		for id, sc := range m.cards {
			if now.Sub(sc.at) > cardTTL || len(m.cards) >= maxCards {
				delete(m.cards, id)
			}
		}
	}
	m.cards[messageID] = &shownCard{view: v, at: now}
}

// shown returns the view remembered for a card.
func (m *cardMemory) shown(messageID string) (cards.View, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sc, ok := m.cards[messageID]
	if !ok {
		return cards.View{}, false
	}
	return sc.view, true
}

func (m *cardMemory) markProcessing(messageID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sc, ok := m.cards[messageID]; ok {
		sc.processingAt = time.Now()
	}
}

// hashUUID derives an idempotency key (≤ 50 characters) from parts.
func hashUUID(kind string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return kind + "-" + hex.EncodeToString(h.Sum(nil))[:40]
}

func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "r-" + hex.EncodeToString(b[:])
}
