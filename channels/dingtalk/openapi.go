package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// tokenMargin is how long before its expiry an access token is renewed.
const tokenMargin = 5 * time.Minute

// webhookMargin is how long before its expiry a sessionWebhook is no
// longer used.
const webhookMargin = time.Minute

// maxBody bounds what is read of an API answer.
const maxBody = 1 << 20

// apiClient calls the DingTalk OpenAPI with plain net/http.
type apiClient struct {
	base, key, secret string
	http              *http.Client
	now               func() time.Time
	metrics           channels.PlatformMetrics // Config.Metrics, or NoPlatformMetrics
	log               *slog.Logger
	retries           int                                              // Config.MaxRetries
	maxWait           time.Duration                                    // Config.MaxRetryWait
	sleep             func(ctx context.Context, d time.Duration) error // waits between tries (sleepCtx)

	fetch sync.Mutex // one token request at a time
	mu    sync.Mutex
	token string
	until time.Time
}

// accessToken returns the cached app token, fetching a new one when it is
// missing or within tokenMargin of its expiry; concurrent callers share
// one fetch.
func (a *apiClient) accessToken(ctx context.Context) (string, error) {
	if t := a.cached(); t != "" {
		return t, nil
	}
	a.fetch.Lock()
	defer a.fetch.Unlock()
	if t := a.cached(); t != "" {
		return t, nil
	}
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int64  `json:"expireIn"`
	}
	body := map[string]string{"appKey": a.key, "appSecret": a.secret}
	if err := a.call(ctx, http.MethodPost, tokenPath, "", body, &out); err != nil {
		return "", fmt.Errorf("dingtalk: access token: %w", err)
	}
	if out.AccessToken == "" {
		return "", errors.New("dingtalk: access token: empty token in the answer")
	}
	if out.ExpireIn <= 0 {
		out.ExpireIn = 7200
	}
	a.mu.Lock()
	a.token, a.until = out.AccessToken, a.now().Add(time.Duration(out.ExpireIn)*time.Second-tokenMargin)
	a.mu.Unlock()
	return out.AccessToken, nil
}

func (a *apiClient) cached() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" && a.now().Before(a.until) {
		return a.token
	}
	return ""
}

// do calls path with the access token.
func (a *apiClient) do(ctx context.Context, method, path string, in, out any) error {
	tok, err := a.accessToken(ctx)
	if err != nil {
		return err
	}
	return a.call(ctx, method, path, tok, in, out)
}

// call sends in as JSON and decodes a 2xx answer into out; a non-2xx
// answer is an error with DingTalk's code and message. Every answer is
// counted (Config.Metrics) under the API's path without "/v1.0/" and
// the code DingTalk answered (answerCode). A throttle (HTTP 429 or one
// of DingTalk's throttle codes, throttle.go) is counted as one; one that
// passes within seconds is tried again, at most Config.MaxRetries times,
// after Retry-After (when sent) or a backoff: DingTalk refused it before
// carrying it out, so the new try cannot send a message twice. Nothing
// else is tried again. A 200 answer that still refused something (an
// out that is a refuser) is counted with its code: "undelivered" when a
// space or a user was not reached (deliverResults success:false,
// invalidStaffIdList), then also a delivery failure, as is every failed
// call that carried a message or a card (not the access token);
// "flow_controlled" when batchSend throttled users (a throttle; batchSend
// retries them).
func (a *apiClient) call(ctx context.Context, method, path, token string, in, out any) error {
	api := strings.TrimPrefix(path, "/v1.0/")
	for attempt := 0; ; attempt++ {
		err := postJSON(ctx, a.http, method, a.base+path, token, in, out)
		code := answerCode(err)
		isThrottle, passes := throttled(err)
		if r, ok := out.(refuser); ok && err == nil {
			if c, t := r.refusal(); c != "" {
				code, isThrottle = c, t
			}
		}
		a.metrics.Request(Name, api, code)
		if isThrottle {
			a.metrics.Throttled(Name, api)
		}
		if err != nil && isThrottle && passes && attempt < a.retries {
			wait := retryWait(retryAfter(err, a.now()), attempt, a.maxWait)
			a.log.Warn("dingtalk throttled an API call; trying it again", "api", api, "code", code, "in", wait, "attempt", attempt+1)
			a.metrics.Retried(Name, api)
			if serr := a.sleep(ctx, wait); serr != nil {
				err = errors.Join(err, serr)
			} else {
				continue
			}
		}
		if code == codeUndelivered || (err != nil && path != tokenPath) {
			if err != nil {
				a.log.Warn("dingtalk refused an API call; what it carried was not delivered", "api", api, "code", code, "err", err)
			}
			a.metrics.DeliveryFailed(Name, api)
		}
		return err
	}
}

// firstRetryWait is the first wait before a throttled call is tried
// again: DingTalk's QPS limits hold for one second ("因为qps限流限制时间是
// 1秒，所以当遇到限流错误时，可以在程序中sleep 1秒", doc development/
// how-to-process-api-throttling-on-the-dingtalk-server).
const firstRetryWait = time.Second

// retryWait is how long to wait after failed attempt (0 for the first
// call) before the next: after (Retry-After, when the answer had one: ≥
// 0) when given, else firstRetryWait × 2^attempt; at most max.
func retryWait(after time.Duration, attempt int, max time.Duration) time.Duration {
	if after >= 0 {
		return min(after, max)
	}
	wait := firstRetryWait
	for range attempt {
		if wait >= max {
			break
		}
		wait *= 2
	}
	return min(wait, max)
}

// retryAfter is the Retry-After of err's answer as a wait from now: a
// number of seconds or an HTTP date; -1 when it had none (or a bad one).
func retryAfter(err error, now time.Time) time.Duration {
	ae := (*apiError)(nil)
	if !errors.As(err, &ae) || ae.RetryAfter == "" {
		return -1
	}
	v := strings.TrimSpace(ae.RetryAfter)
	if n, perr := strconv.ParseInt(v, 10, 64); perr == nil {
		if n < 0 || n > int64(24*time.Hour/time.Second) {
			return -1
		}
		return time.Duration(n) * time.Second
	}
	if t, perr := http.ParseTime(v); perr == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tokenPath is the access token's API: its failure carries no message.
const tokenPath = "/v1.0/oauth2/accessToken"

// codeUndelivered is the code counted for a 200 answer that reached
// nobody of a space or a user.
const codeUndelivered = "undelivered"

// codeFlowControlled is the code counted for a 200 answer of batchSend
// that names users DingTalk throttled (flowControlledStaffIdList) and
// none it could not reach.
const codeFlowControlled = "flow_controlled"

// refuser is a 200 API answer that can still say what it refused
// (cardAnswer, batchAnswer): the code to count, "" when nothing, and
// whether it was a throttle.
type refuser interface {
	refusal() (code string, throttled bool)
}

// errBadAnswer is (wrapped in) the error of a 2xx answer whose body is
// not what the API answers.
var errBadAnswer = errors.New("bad answer")

// answerCode is the code label of an API call's outcome: "0" for
// success, DingTalk's code, "http_<status>" when the body had none,
// "bad_answer" for a 2xx body that would not decode, or "transport" when
// no answer came.
func answerCode(err error) string {
	ae := (*apiError)(nil)
	switch {
	case err == nil:
		return "0"
	case errors.As(err, &ae) && ae.Code != "":
		return ae.Code
	case errors.As(err, &ae):
		return "http_" + strconv.Itoa(ae.Status)
	case errors.Is(err, errBadAnswer):
		return "bad_answer"
	}
	return "transport"
}

// apiError is a non-2xx OpenAPI answer or an errcode in a 200 body.
type apiError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the answer's Retry-After header ("" without one).
	RetryAfter string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("dingtalk API: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

func postJSON(ctx context.Context, hc *http.Client, method, url, token string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("x-acs-dingtalk-access-token", token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		return &apiError{Status: resp.StatusCode, Code: e.Code, Message: e.Message, RetryAfter: resp.Header.Get("Retry-After")}
	}
	// Old-style APIs (the sessionWebhook) answer 200 with an errcode.
	var legacy struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if json.Unmarshal(body, &legacy) == nil && legacy.ErrCode != nil && *legacy.ErrCode != 0 {
		return &apiError{Status: resp.StatusCode, Code: fmt.Sprint(*legacy.ErrCode), Message: legacy.ErrMsg}
	}
	if out != nil && len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("dingtalk API: %w: %w", errBadAnswer, err)
		}
	}
	return nil
}

// chatKind is what a card reference says of its chat's type.
type chatKind int

const (
	kindUnknown chatKind = iota // an older reference: ask the chat map
	kindGroup
	kindDirect
)

// chat returns what the channel knows of a conversation. A conversation
// not seen by this process (a restart, another replica) is of kind, and a
// group when kind is unknown.
func (b *chatBook) chat(id string, kind chatKind) (chatInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	info, ok := b.chats[id]
	if !ok {
		info.group = kind != kindDirect
	}
	if info.robotCode == "" {
		info.robotCode = b.cfg.RobotCode
	}
	return info, ok
}

// Send says out in the chat: through its sessionWebhook while valid, else
// through the robot send API.
func (c *Channel) Send(ctx context.Context, to channels.Target, out channels.Outgoing) error {
	text := out.Text
	if out.Kind == channels.OutToolResult && out.Tool != "" {
		text = out.Tool + ": " + text
	}
	hook := map[string]any{"msgtype": "text", "text": map[string]string{"content": text}}
	if ids := mentionIDs(out.Mentions); len(ids) > 0 {
		// A mention is the sessionWebhook's: "at":{"atUserIds":[…]} with
		// "@<id>" in the text (the robot's reply through sessionWebhook,
		// docs/platform-rules-dingtalk.md). The robot send API's
		// sampleText takes content only: there the text names them
		// without notifying.
		at := ""
		for _, id := range ids {
			at += "@" + id + " "
		}
		hook = map[string]any{"msgtype": "text", "text": map[string]string{"content": at + text}, "at": map[string]any{"atUserIds": ids}}
	}
	return c.post(ctx, to, kindUnknown, "sampleText", map[string]string{"content": text}, hook)
}

// mentionIDs are the staff ids of users a text can mention, at most
// approval.MaxMentions: an external member's encrypted id ($:LWCP_v1:$…)
// is no staff id and is left out.
func mentionIDs(users []approval.UserID) []string {
	var ids []string
	for _, u := range users {
		if len(ids) == approval.MaxMentions {
			break
		}
		if s := string(u); s != "" && !strings.HasPrefix(s, "$:") && !strings.ContainsAny(s, " @\n") {
			ids = append(ids, s)
		}
	}
	return ids
}

// sendMarkdown says a markdown message in the chat (of kind, when this
// process has not seen it).
func (c *Channel) sendMarkdown(ctx context.Context, to channels.Target, kind chatKind, title, text string) error {
	return c.post(ctx, to, kind, "sampleMarkdown", map[string]string{"title": title, "text": text},
		map[string]any{"msgtype": "markdown", "markdown": map[string]string{"title": title, "text": text}})
}

// post sends hook through the sessionWebhook if it is valid, else msgKey
// and param through the robot send API (of a group or of a 1:1 chat, as
// the chat was seen, else by kind).
func (c *Channel) post(ctx context.Context, to channels.Target, kind chatKind, msgKey string, param map[string]string, hook map[string]any) error {
	info, _ := c.chats.chat(to.ChatID, kind)
	if info.webhook != "" && c.now().Before(info.webhookTo.Add(-webhookMargin)) && c.chats.webhookAllowed(info.webhook) {
		err := postJSON(ctx, c.api.http, http.MethodPost, info.webhook, "", hook, nil)
		c.api.metrics.Request(Name, "sessionWebhook", answerCode(err))
		if err == nil {
			return nil
		}
		c.log.Warn("sessionWebhook send failed; using the robot send API", "chat_id", to.ChatID, "err", err)
	}
	p, err := json.Marshal(param)
	if err != nil {
		return err
	}
	if info.group {
		body := map[string]any{"robotCode": info.robotCode, "openConversationId": to.ChatID, "msgKey": msgKey, "msgParam": string(p)}
		return c.api.do(ctx, http.MethodPost, "/v1.0/robot/groupMessages/send", body, nil)
	}
	if to.UserID == "" {
		return fmt.Errorf("dingtalk: no user to send to in 1:1 chat %s", to.ChatID)
	}
	return c.batchSend(ctx, info.robotCode, []string{string(to.UserID)}, msgKey, string(p))
}

// markdownRef prefixes the ref of an approval shown as a markdown message:
// "md:g:<approval id>" in a group, "md:p:<approval id>" in a 1:1 chat, so
// that settling it after a restart, or on another replica, posts through
// the right robot send API. (Refs written before the kind was kept are
// "md:<approval id>": their chat is a group unless this process saw it.)
// statusTrack ends the outTrackId (and the markdown ref) of a requester's
// status card (approve_in): "<approval id>-status".
const statusTrack = "-status"

// escalationTrack and the step's number end the outTrackId (and the
// markdown ref) of the card a step of an approval's escalation sent to
// its chat: "<approval id>-e1".
const escalationTrack = "-e"

const (
	markdownRef       = "md:"
	markdownRefGroup  = markdownRef + "g:"
	markdownRefDirect = markdownRef + "p:"
)

// markdownKind returns the chat kind a markdown ref keeps, and whether
// ref is a markdown ref.
func markdownKind(ref string) (chatKind, bool) {
	switch {
	case strings.HasPrefix(ref, markdownRefGroup):
		return kindGroup, true
	case strings.HasPrefix(ref, markdownRefDirect):
		return kindDirect, true
	case strings.HasPrefix(ref, markdownRef):
		return kindUnknown, true
	}
	return kindUnknown, false
}

// cardAnswer is the answer of the card APIs. createAndDeliver answers
// HTTP 200 and success true even when a space was not reached (a group
// the robot is not in, a staff id that does not exist): its
// result.deliverResults hold one result per space, each to be checked
// (doc create-and-deliver-cards; docs/platform-rules.md).
type cardAnswer struct {
	Success *bool           `json:"success"`
	Result  json.RawMessage `json:"result"`
}

// errNotDelivered is (wrapped in) the error of a card created but not
// delivered to its space: nobody received it.
var errNotDelivered = errors.New("the card was not delivered")

// refusal implements refuser: codeUndelivered when a space was not
// reached (or success is false).
func (a cardAnswer) refusal() (string, bool) {
	if a.err("") != nil {
		return codeUndelivered, false
	}
	return "", false
}

func (a cardAnswer) err(what string) error {
	if a.Success != nil && !*a.Success {
		return fmt.Errorf("dingtalk: %s: success=false", what)
	}
	var r struct {
		DeliverResults []struct {
			SpaceType string `json:"spaceType"`
			SpaceID   string `json:"spaceId"`
			Success   *bool  `json:"success"`
			ErrorMsg  string `json:"errorMsg"`
		} `json:"deliverResults"`
	}
	if len(a.Result) == 0 || a.Result[0] != '{' || json.Unmarshal(a.Result, &r) != nil {
		return nil // an update's result: true
	}
	var missed []string
	for _, d := range r.DeliverResults {
		if d.Success != nil && !*d.Success {
			missed = append(missed, fmt.Sprintf("%s %s: %s", d.SpaceType, d.SpaceID, d.ErrorMsg))
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("dingtalk: %s: %w: %s", what, errNotDelivered, strings.Join(missed, "; "))
	}
	return nil
}

// ShowApproval sends the interactive card of v (createAndDeliver, callback
// over the stream, outTrackId = the approval id); with no card template or
// in HTTP mode, a markdown message answered by typing 确认 / 取消.
//
// The approval of an external member (their id is the encrypted senderId,
// isExternal) is a markdown message too, saying why: a card click
// carries a userId that DingTalk does not match to the sender's
// encrypted id, so the requester's click would be taken for another
// person's (and pass "not the requester" rules), while a typed reply
// carries the same senderId as the request.
func (c *Channel) ShowApproval(ctx context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	info, _ := c.chats.chat(to.ChatID, kindUnknown)
	track := cardTrack(v)
	external := isExternal(v.Requester)
	if c.cfg.CardTemplateID == "" || c.cfg.Mode == ModeHTTP || external {
		md := cards.DingTalkMarkdown(v, c.cfg.Lang, info.group)
		if external && !v.Final {
			md += "  \n\n" + words.In(c.cfg.Lang, words.DingTalkExternalRequester)
		}
		err := c.sendMarkdown(ctx, to, kindUnknown, cards.DingTalkMarkdownTitle(v), md)
		if err != nil {
			return approval.CardRef{}, err
		}
		ref := markdownRefDirect
		if info.group {
			ref = markdownRefGroup
		}
		return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: ref + track}, nil
	}
	return c.createCard(ctx, to, info, track, v, nil)
}

// isExternal reports whether u is the encrypted id of a member from
// outside the organisation: a message's senderId ("$:LWCP_v1:$…"), taken
// when it has no senderStaffId. A staff id never starts with "$".
func isExternal(u approval.UserID) bool { return strings.HasPrefix(string(u), "$:") }

// createCard creates the interactive card v, named track, in the group
// to (info.group; to.UserID mentioned; when recipients are given, only
// they see it), else in the 1:1 chat of to.UserID with the robot, and
// returns its reference.
func (c *Channel) createCard(ctx context.Context, to channels.Target, info chatInfo, track string, v cards.View, recipients []string) (approval.CardRef, error) {
	body := map[string]any{
		"cardTemplateId": c.cfg.CardTemplateID,
		"outTrackId":     track,
		"callbackType":   "STREAM",
		"cardData":       map[string]any{"cardParamMap": cards.DingTalkCardData(v, c.cfg.Lang)},
		"userIdType":     1,
	}
	if info.group {
		body["openSpaceId"] = "dtv1.card//IM_GROUP." + to.ChatID
		body["imGroupOpenSpaceModel"] = map[string]any{"supportForward": false}
		deliver := map[string]any{"robotCode": info.robotCode}
		if to.UserID != "" {
			deliver["atUserIds"] = map[string]string{string(to.UserID): string(to.UserID)}
		}
		if len(recipients) > 0 {
			deliver["recipients"] = recipients
		}
		body["imGroupOpenDeliverModel"] = deliver
	} else {
		if to.UserID == "" {
			return approval.CardRef{}, fmt.Errorf("dingtalk: no user to show approval %s to in 1:1 chat %s", v.ApprovalID, to.ChatID)
		}
		body["openSpaceId"] = "dtv1.card//IM_ROBOT." + string(to.UserID)
		body["imRobotOpenSpaceModel"] = map[string]any{"supportForward": false}
		body["imRobotOpenDeliverModel"] = map[string]any{"spaceType": "IM_ROBOT", "robotCode": info.robotCode}
	}
	var out cardAnswer
	if err := c.api.do(ctx, http.MethodPost, "/v1.0/card/instances/createAndDeliver", body, &out); err != nil {
		return approval.CardRef{}, fmt.Errorf("dingtalk: create card: %w", err)
	}
	if err := out.err("create card"); err != nil {
		return approval.CardRef{}, err
	}
	return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: track}, nil
}

// FoldsResults marks DingTalk as a channel whose people read a tool's
// result in the answer after it (and an approved call's on its card):
// channels.ResultFolder.
func (c *Channel) FoldsResults() {}

var _ channels.ResultFolder = (*Channel)(nil)

// ShowProgress redraws a pending card (a quorum's votes so far) in place,
// its buttons still shown (channels.ProgressShower). A markdown approval
// (no card template) has nothing to redraw: the decider's answer says the
// progress.
func (c *Channel) ShowProgress(ctx context.Context, ref approval.CardRef, v cards.View) error {
	if _, ok := markdownKind(ref.MessageID); ok {
		return nil
	}
	return c.updateCard(ctx, ref, v)
}

var _ channels.ProgressShower = (*Channel)(nil)

// updateCard writes v's card data into the card ref.
func (c *Channel) updateCard(ctx context.Context, ref approval.CardRef, v cards.View) error {
	body := map[string]any{
		"outTrackId":        ref.MessageID,
		"cardData":          map[string]any{"cardParamMap": cards.DingTalkCardData(v, c.cfg.Lang)},
		"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true, "updatePrivateDataByKey": true},
	}
	return c.cards.putCard(ctx, ref.MessageID, body)
}

// cardTrack is the outTrackId of the card v: the approval id, then
// statusTrack for a requester's status card (approve_in: a card of its
// own beside the approval's), then escalationTrack and the step for the
// card an escalation step sent to its chat. (A private card adds
// privateTrack after that.)
func cardTrack(v cards.View) string {
	track := string(v.ApprovalID)
	if v.WaitsIn != "" {
		track += statusTrack
	}
	if v.Step > 0 {
		track += escalationTrack + strconv.Itoa(v.Step)
	}
	return track
}

// SettleApproval updates the card to its final state (PUT
// /v1.0/card/instances). For a markdown approval it posts the final state
// only when nobody typed the decision (expired, superseded, cancelled):
// the router already answers a typed one.
func (c *Channel) SettleApproval(ctx context.Context, ref approval.CardRef, v cards.View) error {
	if _, ok := markdownKind(ref.MessageID); ok && strings.HasSuffix(ref.MessageID, privateTrack) {
		return c.settlePrivateMarkdown(ctx, ref, v) // never in the group (private.go)
	}
	if kind, ok := markdownKind(ref.MessageID); ok {
		if strings.HasSuffix(ref.MessageID, statusTrack) {
			// A requester's status: nobody typed the decision in this
			// chat, so its end is always said here.
			return c.sendMarkdown(ctx, channels.Target{Channel: Name, ChatID: ref.ChatID, UserID: v.Requester}, kind,
				cards.DingTalkMarkdownTitle(v), cards.DingTalkMarkdown(v, c.cfg.Lang, false))
		}
		switch v.Status {
		case approval.StatusExpired, approval.StatusSuperseded, approval.StatusCancelled:
			return c.sendMarkdown(ctx, channels.Target{Channel: Name, ChatID: ref.ChatID, UserID: v.Requester}, kind,
				cards.DingTalkMarkdownTitle(v), cards.DingTalkMarkdown(v, c.cfg.Lang, false))
		}
		return nil
	}
	return c.updateCard(ctx, ref, v)
}
