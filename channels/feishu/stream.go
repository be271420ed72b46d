package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// cardStream is the CardKit cards of one streamed answer (a stream.Sink).
// An answer goes on in a new card when the current one would break one
// of CardKit's limits (doc cardkit-v1/card-element/content, error table;
// docs/platform-rules.md): streaming mode closes itself 10 minutes after
// it was opened (200850), a card is at most 30 KB (200860), an element's
// content at most 100,000 characters. The card is then finished (its
// last text, streaming off) before the rest of the answer streams into
// the next one: the cards together say the answer once, complete, and
// none is left streaming.
type cardStream struct {
	c      *Channel
	to     channels.Target
	cardID string // the current card ("" between cards)
	seq    int
	shown  string    // the text the current card shows
	opened time.Time // when the current card's streaming began
	offset int       // where in the answer the current card's text begins
}

// A streaming card is finished before CardKit ends it: streamCardFor
// before its 10 minutes, and its JSON at most streamCardBytes (30 KB,
// less a margin); its element at most streamMaxChars characters.
const (
	streamCardFor   = 9*time.Minute + 30*time.Second
	streamCardBytes = 30*1024 - 1024
	streamMaxChars  = 100000
)

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

// fitCut is the length of the longest prefix of part (cut between
// runes, at a line's end when one is near) a streaming card can show.
// At least one rune: a card always makes progress.
func fitCut(part string) int {
	fits := func(n int) bool {
		if utf8.RuneCountInString(part[:n]) > streamMaxChars {
			return false
		}
		card, err := streamCard(part[:n])
		return err == nil && len(card) <= streamCardBytes
	}
	if fits(len(part)) {
		return len(part)
	}
	lo, hi := 0, len(part) // fits(lo), !fits(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		for mid > lo && !utf8.RuneStart(part[mid]) {
			mid--
		}
		if mid == lo {
			break
		}
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if nl := strings.LastIndexByte(part[:lo], '\n'); nl > lo*3/4 {
		lo = nl + 1
	}
	if lo == 0 {
		_, size := utf8.DecodeRuneInString(part)
		lo = size
	}
	return lo
}

// streamEnded reports whether err is CardKit ending the card's streaming
// (its 10 minutes, or its 30 KB).
func streamEnded(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Code == codeStreamingClosed || ae.Code == codeStreamCardFull)
}

func (s *cardStream) Open(ctx context.Context, text string) error {
	return s.show(ctx, text)
}

func (s *cardStream) Update(ctx context.Context, text string) error {
	return s.show(ctx, text)
}

// show makes the cards show text, the whole answer so far: the current
// card the part from its offset while it fits and its time lasts; else
// the card is finished with what fits and the rest goes on in a new card.
func (s *cardStream) show(ctx context.Context, text string) error {
	for {
		if s.offset > len(text) {
			return nil // (a shorter text than shown: nothing to take back)
		}
		part := text[s.offset:]
		if s.cardID == "" {
			if part == "" {
				return nil
			}
			if err := s.openCard(ctx, part[:fitCut(part)]); err != nil {
				return err
			}
			continue
		}
		cut := fitCut(part)
		if cut == len(part) && s.c.now().Sub(s.opened) < streamCardFor {
			if part == s.shown {
				return nil
			}
			err := s.update(ctx, part)
			if !streamEnded(err) {
				return err
			}
			// CardKit ended the card: it keeps what it shows.
			s.c.log.Info("CardKit ended a streaming card; the answer goes on in a new card", "card_id", s.cardID, "err", err)
			cut = len(s.shown)
		}
		// The card is full, or its time is up: finish it with what fits
		// and go on in a new card.
		if err := s.finish(ctx, part[:cut]); err != nil {
			return err
		}
	}
}

// openCard creates a card entity showing part, in streaming mode, and
// sends it.
func (s *cardStream) openCard(ctx context.Context, part string) error {
	data, err := streamCard(part)
	if err != nil {
		return err
	}
	var cardID string
	req := larkcardkit.NewCreateCardReqBuilder().Body(larkcardkit.NewCreateCardReqBodyBuilder().Type("card_json").Data(data).Build()).Build()
	err = s.c.api.do(ctx, "cardkit create", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.api.client.cardkit.Card.Create(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		if resp.Success() && resp.Data != nil {
			cardID = larkcore.StringValue(resp.Data.CardId)
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	if err != nil {
		return err
	}
	if cardID == "" {
		return errors.New("feishu cardkit create: no card_id in the answer")
	}
	content, err := json.Marshal(map[string]any{"type": "card", "data": map[string]any{"card_id": cardID}})
	if err != nil {
		return err
	}
	// Sent once: the uuid is the card's, so a retry is not a second message.
	if _, err = s.c.api.post(ctx, s.to, larkim.MsgTypeInteractive, string(content), hashUUID("stream", cardID)); err != nil {
		return err
	}
	s.cardID, s.seq, s.shown, s.opened = cardID, 0, part, s.c.now()
	return nil
}

// update shows part on the current card.
func (s *cardStream) update(ctx context.Context, part string) error {
	s.seq++
	req := larkcardkit.NewContentCardElementReqBuilder().CardId(s.cardID).ElementId(streamElement).
		Body(larkcardkit.NewContentCardElementReqBodyBuilder().Content(cardText(part)).Sequence(s.seq).
			Uuid(hashUUID("stream-content", s.cardID, fmt.Sprint(s.seq))).Build()).Build()
	err := s.c.api.do(ctx, "cardkit content", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.api.client.cardkit.CardElement.Content(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
	if err == nil {
		s.shown = part
	}
	return err
}

// finish ends the current card showing keep (a prefix of its part; what
// it shows when CardKit ended it), and moves the answer's offset past
// it: the next text goes to a new card.
func (s *cardStream) finish(ctx context.Context, keep string) error {
	if keep != s.shown {
		if err := s.update(ctx, keep); err != nil {
			if !streamEnded(err) {
				return err
			}
			keep = s.shown // CardKit ended it first: it keeps what it shows
		}
	}
	if err := s.streamingOff(ctx); err != nil && !streamEnded(err) {
		return err
	}
	s.offset += len(keep)
	s.cardID, s.shown = "", ""
	return nil
}

// Close shows the final text, then switches the last card's streaming
// mode off (also when the text could not be shown: a card left streaming
// shows 生成中 for ever).
func (s *cardStream) Close(ctx context.Context, text string, _ bool) error {
	uerr := s.show(ctx, text)
	if s.cardID == "" {
		return uerr
	}
	return errors.Join(uerr, s.streamingOff(ctx))
}

// streamingOff switches the current card's streaming mode off.
func (s *cardStream) streamingOff(ctx context.Context) error {
	s.seq++
	settings, err := json.Marshal(map[string]any{"config": map[string]any{"streaming_mode": false}})
	if err != nil {
		return err
	}
	req := larkcardkit.NewSettingsCardReqBuilder().CardId(s.cardID).
		Body(larkcardkit.NewSettingsCardReqBodyBuilder().Settings(string(settings)).Sequence(s.seq).
			Uuid(hashUUID("stream-settings", s.cardID, fmt.Sprint(s.seq))).Build()).Build()
	return s.c.api.do(ctx, "cardkit settings", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := s.c.api.client.cardkit.Card.Settings(ctx, req, opts...)
		if err != nil {
			return nil, 0, "", err
		}
		return resp.ApiResp, resp.Code, resp.Msg, nil
	})
}

var _ channels.Streamer = (*Channel)(nil)
