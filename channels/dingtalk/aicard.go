package dingtalk

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	answerstream "github.com/hitlbot/hitlbot/channels/internal/stream"
)

// Streaming answers (AI card): DefaultStreamInterval is
// Config.StreamInterval's default and minStreamInterval its least value;
// aiContentKey is the template variable the text streams into. The
// flowStatus values are those open-source DingTalk bots use (unconfirmed
// as official).
const (
	DefaultStreamInterval = 500 * time.Millisecond
	minStreamInterval     = 200 * time.Millisecond
	aiContentKey          = "content"
	flowProcessing        = "1"
	flowFinished          = "3"
	flowFailed            = "5"
)

// OpenStream starts a streamed answer (channels.Streamer) on an AI card:
// createAndDeliver with the AI template (flowStatus 1) to the chat, then
// PUT /v1.0/card/streaming with the whole text so far (isFull) at most
// once per StreamInterval, and at the end isFinalize (isError when the
// model failed) and the card's flowStatus 3 (5). Without an AI template it
// refuses: the answer comes whole.
func (c *Channel) OpenStream(_ context.Context, to channels.Target) (channels.AnswerStream, error) {
	if c.cfg.AICardTemplateID == "" {
		return nil, errors.New("dingtalk: no ai_card_template_id: answers are not streamed")
	}
	sink := &aiCard{c: c, to: to}
	return answerstream.Answer{Writer: answerstream.New(sink, c.cfg.StreamInterval, c.log.With("chat_id", to.ChatID, "msg_id", to.ReplyTo))}, nil
}

// aiCard is the AI card of one streamed answer (a stream.Sink).
type aiCard struct {
	c  *Channel
	to channels.Target
	id string // outTrackId, once opened
}

// Open creates and delivers the AI card, under an outTrackId of its own
// each time (one outTrackId is one card: a second create of one is
// refused, param.cardAlreadyExist, even when the first was not
// delivered). A card not delivered to the chat (deliverResults) is an
// error: nothing is streamed into a card nobody received, and the answer
// comes whole.
func (a *aiCard) Open(ctx context.Context, text string) error {
	a.id = "answer-" + rand.Text()
	info, _ := a.c.chats.chat(a.to.ChatID, kindUnknown)
	body := map[string]any{
		"cardTemplateId": a.c.cfg.AICardTemplateID,
		"outTrackId":     a.id,
		"cardData":       map[string]any{"cardParamMap": map[string]string{"flowStatus": flowProcessing, aiContentKey: ""}},
		"userIdType":     1,
	}
	if info.group {
		body["openSpaceId"] = "dtv1.card//IM_GROUP." + a.to.ChatID
		body["imGroupOpenSpaceModel"] = map[string]any{"supportForward": false}
		body["imGroupOpenDeliverModel"] = map[string]any{"robotCode": info.robotCode}
	} else {
		if a.to.UserID == "" {
			return fmt.Errorf("dingtalk: no user to stream an answer to in 1:1 chat %s", a.to.ChatID)
		}
		body["openSpaceId"] = "dtv1.card//IM_ROBOT." + string(a.to.UserID)
		body["imRobotOpenSpaceModel"] = map[string]any{"supportForward": false}
		body["imRobotOpenDeliverModel"] = map[string]any{"spaceType": "IM_ROBOT", "robotCode": info.robotCode}
	}
	var out cardAnswer
	if err := a.c.api.do(ctx, http.MethodPost, "/v1.0/card/instances/createAndDeliver", body, &out); err != nil {
		return fmt.Errorf("dingtalk: create AI card: %w", err)
	}
	if err := out.err("create AI card"); err != nil {
		a.id = ""
		return err
	}
	return a.put(ctx, text, false, false)
}

func (a *aiCard) Update(ctx context.Context, text string) error {
	return a.put(ctx, text, false, false)
}

// Close finalises the stream with the whole text, then sets the card's
// flowStatus; the flowStatus is set even when the finalising call failed.
// The streaming call carries the whole text (its content is not a
// cardParamMap value); the card data is only the flowStatus, and the
// text too when finalising failed, cut to what a cardParamMap value may
// hold (cards.DingTalkFit: at most 1 KB).
func (a *aiCard) Close(ctx context.Context, text string, failed bool) error {
	ferr := a.put(ctx, text, true, failed)
	status := flowFinished
	if failed {
		status = flowFailed
	}
	data := map[string]string{"flowStatus": status}
	if ferr != nil {
		data[aiContentKey] = cards.DingTalkFit(text, a.c.cfg.Lang)
	}
	body := map[string]any{
		"outTrackId":        a.id,
		"cardData":          map[string]any{"cardParamMap": data},
		"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true},
	}
	var out cardAnswer
	uerr := a.c.api.do(ctx, http.MethodPut, "/v1.0/card/instances", body, &out)
	if uerr == nil {
		uerr = out.err("update AI card")
	}
	return errors.Join(ferr, uerr)
}

// put is one PUT /v1.0/card/streaming with the whole text.
func (a *aiCard) put(ctx context.Context, text string, finalize, failed bool) error {
	body := map[string]any{
		"outTrackId": a.id, "guid": rand.Text(), "key": aiContentKey, "content": text,
		"isFull": true, "isFinalize": finalize, "isError": failed,
	}
	if err := a.c.api.do(ctx, http.MethodPut, "/v1.0/card/streaming", body, nil); err != nil {
		return fmt.Errorf("dingtalk: stream AI card: %w", err)
	}
	return nil
}

var _ channels.Streamer = (*Channel)(nil)
