package feishu

import (
	"context"
	"errors"
	"fmt"
	"strings"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
)

// Privacy in groups. Feishu's ephemeral cards ("仅特定人可见") cannot be
// patched, are seen only while their person is online and notify nobody,
// so an approval card shown that way could never end in its final state
// and would never reach an approver who is away. A private approval's
// whole card is therefore sent to each person who may see it in their
// 1:1 chat with the bot (im/v1/messages with receive_id_type open_id),
// patched to its final state like any card; the group gets the redacted
// card (channels.PrivateChannel).

// ShowApprovalTo sends the card of v to each of users in their 1:1 chat
// with the bot and returns a reference to each card sent (its chat is
// that 1:1 chat). A person it cannot reach is logged and left out; it
// fails only when the card reached nobody.
func (c *Channel) ShowApprovalTo(ctx context.Context, _ channels.Target, users []approval.UserID, v cards.View) ([]approval.CardRef, error) {
	content, err := cards.FeishuCardJSON(v, c.cfg.Lang)
	if err != nil {
		return nil, err
	}
	var refs []approval.CardRef
	var errs []error
	for _, u := range users {
		id, chat, err := c.api.postTo(ctx, u, larkim.MsgTypeInteractive, content, hashUUID("private", string(v.ApprovalID), string(u)))
		if err != nil {
			c.log.Warn("the private card could not be sent to a person who may see it", "approval_id", v.ApprovalID, "user_id", u, "err", err)
			errs = append(errs, err)
			continue
		}
		c.cards.remember(id, v)
		refs = append(refs, approval.CardRef{Channel: Name, ChatID: chat, MessageID: id, Private: true})
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("feishu show approval %s privately: reached nobody: %w", v.ApprovalID, errors.Join(append(errs, errors.New("no one to send it to"))...))
	}
	return refs, nil
}

// SendTo says out to each of users in their 1:1 chat with the bot; the
// uuid binds the message answered, the person and the text, so a retry is
// sent once.
func (c *Channel) SendTo(ctx context.Context, to channels.Target, users []approval.UserID, out channels.Outgoing) error {
	text := outgoingText(out)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	content, err := textContent(text)
	if err != nil {
		return fmt.Errorf("feishu send privately: %w", err)
	}
	var errs []error
	for _, u := range users {
		uuid := randomUUID()
		if to.ReplyTo != "" {
			uuid = hashUUID("psay", string(u), to.ReplyTo, string(out.Kind), out.Tool, text)
		}
		if _, _, err := c.api.postTo(ctx, u, larkim.MsgTypeText, content, uuid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// postTo creates a message for the person user (an open_id) in their 1:1
// chat with the bot, and returns its id and that chat's id (the open_id
// when Feishu does not say).
func (o *openAPI) postTo(ctx context.Context, user approval.UserID, msgType, content, uuid string) (id, chat string, err error) {
	if user == "" {
		return "", "", errors.New("feishu send privately: no person")
	}
	if err := o.chatLimit.take(ctx, "user:"+string(user)); err != nil {
		return "", "", fmt.Errorf("feishu send privately: %w", err)
	}
	req := larkim.NewCreateMessageReqBuilder().ReceiveIdType(larkim.CreateMessageV1ReceiveIDTypeOpenId).
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(string(user)).MsgType(msgType).Content(content).Uuid(uuid).Build()).Build()
	err = o.do(ctx, "create", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := o.client.im.Message.Create(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		if resp.Success() && resp.Data != nil {
			id, chat = larkcore.StringValue(resp.Data.MessageId), larkcore.StringValue(resp.Data.ChatId)
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	if err == nil && id == "" {
		err = errors.New("feishu send privately: the answer has no message_id")
	}
	if chat == "" {
		chat = string(user)
	}
	return id, chat, err
}

var _ channels.PrivateChannel = (*Channel)(nil)
