package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkcardkit "github.com/larksuite/oapi-sdk-go/v3/service/cardkit/v1"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/internal/stream"
)

// Streaming answers (CardKit): DefaultStreamInterval is Config.StreamInterval's
// default, minStreamInterval its least value; streamElement is the id of
// the card's text element.
const (
	DefaultStreamInterval = 300 * time.Millisecond
	minStreamInterval     = 100 * time.Millisecond
	streamElement         = "answer"
)

// CardKit's answers that end a streaming card (doc
// cardkit-v1/card-element/content, error table): streaming mode closed
// itself 10 minutes after it was opened; the card would be over 30 KB.
const (
	codeStreamingClosed = 200850
	codeStreamCardFull  = 200860
)

// OpenStream starts a streamed answer (channels.Streamer): a CardKit card
// entity in streaming mode whose markdown element shows the text so far,
// sent as a reply (or to the chat), updated at most once per
// StreamInterval with the whole text and an increasing sequence, and at
// the end given the final text and switched out of streaming mode, also
// when an update or the model failed. With StreamInterval < 0 it refuses:
// the answer comes whole.
func (c *Channel) OpenStream(_ context.Context, to channels.Target) (channels.AnswerStream, error) {
	if c.cfg.StreamInterval < 0 {
		return nil, errors.New("feishu: streaming is off (stream_interval < 0)")
	}
	sink := &cardStream{c: c, to: to}
	return stream.Answer{Writer: stream.New(sink, c.cfg.StreamInterval, c.log.With("chat_id", to.ChatID, "msg_id", to.ReplyTo))}, nil
}

// cardStream is the CardKit card of one streamed answer (a stream.Sink).
type cardStream struct {
	c      *Channel
	to     channels.Target
	cardID string
	seq    int
	shown  string // the text the card shows
}

// streamCard is the card entity's JSON 2.0: one markdown element, in
// streaming mode.
func streamCard(text string) (string, error) {
	b, err := json.Marshal(map[string]any{
		"schema": "2.0",
		"config": map[string]any{"streaming_mode": true, "update_multi": true},
		"body": map[string]any{"elements": []any{map[string]any{
			"tag": "markdown", "element_id": streamElement, "content": cardText(text),
		}}},
	})
	return string(b), err
}

// cardText keeps the model's text from mentioning people in the card: a
// card's markdown renders <at id=…></at> as a mention.
func cardText(s string) string {
	return strings.ReplaceAll(s, "<at", "&lt;at")
}

func (s *cardStream) Open(ctx context.Context, text string) error {
	data, err := streamCard(text)
	if err != nil {
		return err
	}
	req := larkcardkit.NewCreateCardReqBuilder().Body(larkcardkit.NewCreateCardReqBodyBuilder().Type("card_json").Data(data).Build()).Build()
	err = s.c.do(ctx, "cardkit create", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.client.Cardkit.V1.Card.Create(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		if resp.Success() && resp.Data != nil {
			s.cardID = larkcore.StringValue(resp.Data.CardId)
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	if err != nil {
		return err
	}
	if s.cardID == "" {
		return errors.New("feishu cardkit create: no card_id in the answer")
	}
	content, err := json.Marshal(map[string]any{"type": "card", "data": map[string]any{"card_id": s.cardID}})
	if err != nil {
		return err
	}
	// Sent once: the uuid is the card's, so a retry is not a second message.
	if _, err = s.c.post(ctx, s.to, larkim.MsgTypeInteractive, string(content), hashUUID("stream", s.cardID)); err != nil {
		return err
	}
	s.shown = text
	return nil
}

func (s *cardStream) Update(ctx context.Context, text string) error {
	s.seq++
	req := larkcardkit.NewContentCardElementReqBuilder().CardId(s.cardID).ElementId(streamElement).
		Body(larkcardkit.NewContentCardElementReqBodyBuilder().Content(cardText(text)).Sequence(s.seq).
			Uuid(hashUUID("stream-content", s.cardID, fmt.Sprint(s.seq))).Build()).Build()
	err := s.c.do(ctx, "cardkit content", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.client.Cardkit.V1.CardElement.Content(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	if err == nil {
		s.shown = text
	}
	return err
}

// Close shows the final text, then switches streaming mode off (also when
// the text could not be shown: a card left streaming shows 生成中 for ever).
func (s *cardStream) Close(ctx context.Context, text string, _ bool) error {
	var uerr error
	if text != s.shown {
		uerr = s.Update(ctx, text)
	}
	s.seq++
	settings, err := json.Marshal(map[string]any{"config": map[string]any{"streaming_mode": false}})
	if err != nil {
		return err
	}
	req := larkcardkit.NewSettingsCardReqBuilder().CardId(s.cardID).
		Body(larkcardkit.NewSettingsCardReqBodyBuilder().Settings(string(settings)).Sequence(s.seq).
			Uuid(hashUUID("stream-settings", s.cardID, fmt.Sprint(s.seq))).Build()).Build()
	serr := s.c.do(ctx, "cardkit settings", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.client.Cardkit.V1.Card.Settings(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	return errors.Join(uerr, serr)
}

var _ channels.Streamer = (*Channel)(nil)
