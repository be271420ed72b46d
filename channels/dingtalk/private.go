package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
)

// Privacy in groups (channels.PrivateChannel). A private approval's whole
// card is delivered in the group to its recipients only
// (imGroupOpenDeliverModel.recipients: "部分人可见"), outTrackId
// "<approval id>-private", beside the redacted card everyone sees; what
// the turn says privately goes by the robot's 1:1 send
// (oToMessages/batchSend), never by the group's sessionWebhook. Without a
// card template (or in HTTP mode) the whole card is a markdown message by
// that 1:1 send too.

// privateTrack ends the outTrackId (and the markdown ref) of a private
// approval's card for its recipients.
const privateTrack = "-private"

// ShowApprovalTo delivers the card of v in the group of to, visible to
// users only, and returns its reference; without a card template, the
// markdown of v goes to each of them by the robot's 1:1 send.
//
// A member from outside the organisation (an encrypted senderId,
// isExternal) is left out: the card's recipients are user ids of its
// userIdType (1: staff ids, doc create-and-deliver-cards) and the 1:1
// send takes staff ids (BatchSendOTORequest.userIds), so DingTalk has no
// way to show them anything but to the whole group. They read the
// redacted card like everyone; when nobody else may see the whole card
// (an external member approving their own private request), it fails
// (errExternalOnly): nothing is shown, rather than the whole card to the
// group.
func (c *Channel) ShowApprovalTo(ctx context.Context, to channels.Target, users []approval.UserID, v cards.View) ([]approval.CardRef, error) {
	if len(users) == 0 {
		return nil, fmt.Errorf("dingtalk: show approval %s privately: no one to show it to", v.ApprovalID)
	}
	var staff []approval.UserID
	for _, u := range users {
		if isExternal(u) {
			c.log.Warn("a private approval's card is not shown to a member from outside the organisation: DingTalk reaches them in the group only",
				"approval_id", v.ApprovalID, "user_id", u)
			continue
		}
		staff = append(staff, u)
	}
	if len(staff) == 0 {
		return nil, fmt.Errorf("dingtalk: show approval %s privately: %w", v.ApprovalID, errExternalOnly)
	}
	users = staff
	if to.ChatID == "" {
		return c.showDirect(ctx, users, v)
	}
	info, _ := c.chats.chat(to.ChatID, kindUnknown)
	track := cardTrack(v) + privateTrack
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = string(u)
	}
	if c.cfg.CardTemplateID == "" || c.cfg.Mode == ModeHTTP || !info.group {
		if err := c.sendDirect(ctx, info.robotCode, ids, "sampleMarkdown",
			map[string]string{"title": cards.DingTalkMarkdownTitle(v), "text": cards.DingTalkMarkdown(v, c.cfg.Lang, false)}); err != nil {
			return nil, fmt.Errorf("dingtalk: show approval %s privately: %w", v.ApprovalID, err)
		}
		return []approval.CardRef{{Channel: Name, ChatID: to.ChatID, MessageID: markdownRefDirect + track, Private: true}}, nil
	}
	ref, err := c.createCard(ctx, channels.Target{Channel: Name, ChatID: to.ChatID, UserID: users[0]}, info, track, v, ids)
	if err != nil {
		return nil, fmt.Errorf("dingtalk: show approval %s privately: %w", v.ApprovalID, err)
	}
	ref.Private = true
	return []approval.CardRef{ref}, nil
}

// errExternalOnly is (wrapped in) the error of a private approval whose
// every viewer is a member from outside the organisation.
var errExternalOnly = fmt.Errorf("%w: only members from outside the organisation may see it, and DingTalk shows them nothing apart from the group", approval.ErrNoPrivateView)

// SendTo says out to users by the robot's 1:1 send.
func (c *Channel) SendTo(ctx context.Context, to channels.Target, users []approval.UserID, out channels.Outgoing) error {
	text := out.Text
	if out.Kind == channels.OutToolResult && out.Tool != "" {
		text = out.Tool + ": " + text
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	info, _ := c.chats.chat(to.ChatID, kindUnknown)
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = string(u)
	}
	return c.sendDirect(ctx, info.robotCode, ids, "sampleText", map[string]string{"content": text})
}

// sendDirect sends msgKey with param to each of users in their 1:1 chat
// with the robot (oToMessages/batchSend).
func (c *Channel) sendDirect(ctx context.Context, robotCode string, users []string, msgKey string, param map[string]string) error {
	if len(users) == 0 {
		return errors.New("dingtalk: no one to send to")
	}
	p, err := json.Marshal(param)
	if err != nil {
		return err
	}
	return c.batchSend(ctx, robotCode, users, msgKey, string(p))
}

// maxBatchUsers is the most userIds of one batchSend ("最多传20个",
// BatchSendOTORequest.userIds, aliyun dingtalk SDK robot_1_0).
const maxBatchUsers = 20

// flowRetries and flowBackoff bound the new tries of a batchSend for
// the users DingTalk throttled (flowControlledStaffIdList): nothing was
// sent to them.
const (
	flowRetries = 2
	flowBackoff = time.Second
)

// batchSendAPI is the robot's 1:1 send as counted (apiClient.call).
const batchSendAPI = "robot/oToMessages/batchSend"

// batchAnswer is the 200 answer of oToMessages/batchSend: the users it
// reached nobody of.
type batchAnswer struct {
	Invalid   []string `json:"invalidStaffIdList"`
	Throttled []string `json:"flowControlledStaffIdList"`
}

// refusal implements refuser: codeUndelivered when a user is no staff,
// else codeFlowControlled when users were throttled.
func (a batchAnswer) refusal() (string, bool) {
	switch {
	case len(a.Invalid) > 0:
		return codeUndelivered, len(a.Throttled) > 0
	case len(a.Throttled) > 0:
		return codeFlowControlled, true
	}
	return "", false
}

// batchSend sends msgKey with msgParam to users by the robot's 1:1 send,
// maxBatchUsers at a time. The call answers HTTP 200 with the users it
// reached nobody of: invalidStaffIdList (no staff of the org) is an
// error naming them; flowControlledStaffIdList (throttled) is sent again,
// flowRetries times at most, backing off, then an error.
func (c *Channel) batchSend(ctx context.Context, robotCode string, users []string, msgKey, msgParam string) error {
	var errs []error
	for len(users) > 0 {
		n := min(len(users), maxBatchUsers)
		batch := users[:n]
		users = users[n:]
		for try, wait := 0, flowBackoff; len(batch) > 0; try, wait = try+1, 2*wait {
			if try > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					errs = append(errs, fmt.Errorf("dingtalk: robot 1:1 send to %v: throttled: %w", batch, ctx.Err()))
					batch = nil
					continue
				}
			}
			if try > 0 {
				c.api.metrics.Retried(Name, batchSendAPI)
			}
			var out batchAnswer
			body := map[string]any{"robotCode": robotCode, "userIds": batch, "msgKey": msgKey, "msgParam": msgParam}
			if err := c.api.do(ctx, http.MethodPost, "/v1.0/"+batchSendAPI, body, &out); err != nil {
				errs = append(errs, err)
				break
			}
			if len(out.Invalid) > 0 {
				errs = append(errs, fmt.Errorf("dingtalk: robot 1:1 send: %w: no staff of the organisation: %s", errNotDelivered, strings.Join(out.Invalid, ", ")))
			}
			batch = out.Throttled
			if len(batch) > 0 && try == flowRetries {
				c.api.metrics.DeliveryFailed(Name, batchSendAPI)
				errs = append(errs, fmt.Errorf("dingtalk: robot 1:1 send: %w: throttled (flowControlledStaffIdList) %d times: %s", errNotDelivered, try+1, strings.Join(batch, ", ")))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// settlePrivateMarkdown says the end of a private approval shown as a
// markdown message (ref markdownRefDirect + "<id>-private") to its
// requester, by the robot's 1:1 send: only when nobody typed the decision
// (expired, superseded, cancelled), as for any markdown approval.
func (c *Channel) settlePrivateMarkdown(ctx context.Context, ref approval.CardRef, v cards.View) error {
	switch v.Status {
	case approval.StatusExpired, approval.StatusSuperseded, approval.StatusCancelled:
	default:
		return nil
	}
	info, _ := c.chats.chat(ref.ChatID, kindUnknown)
	return c.sendDirect(ctx, info.robotCode, []string{string(v.Requester)}, "sampleMarkdown",
		map[string]string{"title": cards.DingTalkMarkdownTitle(v), "text": cards.DingTalkMarkdown(v, c.cfg.Lang, false)})
}

var _ channels.PrivateChannel = (*Channel)(nil)

// showDirect delivers the card of v to each of users in their 1:1 chat
// with the robot (approve_in direct: no group), one card each, named
// "<card track>-<user id>". It needs the interactive card (a card
// template, the stream mode): a typed 确认 in a 1:1 chat names no
// approval of that chat, so a markdown message could never be answered.
// A person it cannot reach is logged and left out; it fails only when
// the card reached nobody.
func (c *Channel) showDirect(ctx context.Context, users []approval.UserID, v cards.View) ([]approval.CardRef, error) {
	if c.cfg.CardTemplateID == "" || c.cfg.Mode == ModeHTTP {
		return nil, fmt.Errorf("dingtalk: show approval %s 1:1: needs the interactive card (card_template_id, stream mode)", v.ApprovalID)
	}
	info := chatInfo{group: false, robotCode: c.cfg.RobotCode}
	var refs []approval.CardRef
	var errs []error
	for _, u := range users {
		ref, err := c.createCard(ctx, channels.Target{Channel: Name, UserID: u}, info, cardTrack(v)+"-"+string(u), v, nil)
		if err != nil {
			c.log.Warn("the card could not be sent 1:1 to a person who may approve", "approval_id", v.ApprovalID, "user_id", u, "err", err)
			errs = append(errs, err)
			continue
		}
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("dingtalk: show approval %s 1:1: reached nobody: %w", v.ApprovalID, errors.Join(errs...))
	}
	return refs, nil
}
