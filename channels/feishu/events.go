package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// messageAckWait is how long the message handler waits for the router
// before acking anyway (Feishu allows 3 s for the whole handler): an error
// the router returns within it (not bound yet, channel not registered) is
// returned so Feishu re-delivers; a slower router keeps going in the
// background.
var messageAckWait = 2 * time.Second

// onMessage handles im.message.receive_v1: p2p messages, and group
// messages that mention the bot (the mention stripped). It hands the
// message to the router and returns.
func (c *intake) onMessage(ctx context.Context, ev *larkim.P2MessageReceiveV1) error {
	h := c.slot.Handler()
	if h == nil {
		return fmt.Errorf("feishu: channel not started")
	}
	if ev == nil || ev.Event == nil || ev.Event.Message == nil {
		return nil
	}
	m, ok := c.toMessage(ev)
	if !ok {
		return nil
	}
	errc := make(chan error, 1)
	// In order within a chat: a message received before another is not
	// overtaken by it here.
	if !c.bg.GoInOrder(m.ChatID, func() { errc <- h.HandleMessage(context.WithoutCancel(ctx), m) }) {
		return fmt.Errorf("feishu: channel closed")
	}
	timer := time.NewTimer(messageAckWait)
	defer timer.Stop()
	select {
	case err := <-errc:
		if err != nil {
			c.log.Warn("the router refused a message; Feishu will re-deliver it", "msg_id", m.MessageID, "err", err)
		}
		return err
	case <-timer.C:
		return nil
	}
}

// toMessage turns the event into a channels.Message, or reports that the
// bot should not act on it (not from a user, not text, a group message
// that does not mention the bot, nothing left after the mention).
func (c *intake) toMessage(ev *larkim.P2MessageReceiveV1) (channels.Message, bool) {
	msg := ev.Event.Message
	var sender string
	if s := ev.Event.Sender; s != nil {
		if t := larkcore.StringValue(s.SenderType); t != "" && t != "user" {
			return channels.Message{}, false // other bots, the app itself
		}
		if s.SenderId != nil {
			sender = larkcore.StringValue(s.SenderId.OpenId)
		}
	}
	msgID := larkcore.StringValue(msg.MessageId)
	log := c.log.With("msg_id", msgID, "chat_id", larkcore.StringValue(msg.ChatId))
	if sender == "" {
		log.Debug("message without a sender open_id ignored")
		return channels.Message{}, false
	}
	raw, ok := messageText(larkcore.StringValue(msg.MessageType), larkcore.StringValue(msg.Content))
	if !ok {
		log.Debug("non-text message ignored", "type", larkcore.StringValue(msg.MessageType))
		return channels.Message{}, false
	}
	chatType := larkcore.StringValue(msg.ChatType)
	text, mentioned := c.stripMentions(raw, msg.Mentions)
	if chatType != "p2p" && !mentioned {
		return channels.Message{}, false
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return channels.Message{}, false
	}
	var eventID string
	if ev.EventV2Base != nil && ev.EventV2Base.Header != nil {
		eventID = ev.EventV2Base.Header.EventID
	}
	thread := larkcore.StringValue(msg.ThreadId)
	return channels.Message{
		Channel:   Name,
		ChatID:    larkcore.StringValue(msg.ChatId),
		ChatType:  chatType,
		ThreadID:  thread,
		UserID:    approval.UserID(sender),
		MessageID: msgID,
		EventID:   eventID,
		Text:      text,
		CreatedAt: msTime(larkcore.StringValue(msg.CreateTime)),
	}, true
}

// messageText extracts the text of a text or post message.
func messageText(msgType, content string) (string, bool) {
	switch msgType {
	case "text":
		var t struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(content), &t) != nil {
			return "", false
		}
		return t.Text, true
	case "post":
		var p struct {
			Title   string `json:"title"`
			Content [][]struct {
				Tag  string `json:"tag"`
				Text string `json:"text"`
				Key  string `json:"user_id"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(content), &p) != nil {
			return "", false
		}
		var lines []string
		if p.Title != "" {
			lines = append(lines, p.Title)
		}
		for _, para := range p.Content {
			var b strings.Builder
			for _, el := range para {
				switch el.Tag {
				case "text", "a", "code_block":
					b.WriteString(el.Text)
				case "at":
					b.WriteString("@" + el.Key)
				}
			}
			lines = append(lines, b.String())
		}
		return strings.Join(lines, "\n"), true
	}
	return "", false
}

// stripMentions removes the bot's @_user_N placeholders from text,
// replaces the others by @name, and reports whether the bot was
// mentioned. When the bot's open_id is unknown, any mention counts.
func (c *intake) stripMentions(text string, mentions []*larkim.MentionEvent) (string, bool) {
	bot := c.botOpenID()
	mentioned := false
	for _, m := range mentions {
		if m == nil {
			continue
		}
		key := larkcore.StringValue(m.Key)
		if key == "" {
			continue
		}
		var openID string
		if m.Id != nil {
			openID = larkcore.StringValue(m.Id.OpenId)
		}
		isBot := (bot != "" && openID == bot) || (bot == "" && key != "@_all")
		repl := ""
		if isBot {
			mentioned = true
		} else {
			repl = "@" + larkcore.StringValue(m.Name)
		}
		text = strings.ReplaceAll(text, key, repl)
	}
	return text, mentioned
}

// msTime parses a millisecond timestamp; zero if it is not one.
func msTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// onCardAction handles card.action.trigger: a click on 确认 / 取消, which
// submits the card's form, so the reason typed beside the buttons rides
// along (action.form_value) and becomes the decision's comment, on either
// button. It waits up to CallbackWait for the decision and answers with a
// toast and the card's next state: the final card when the outcome
// arrived (with the clicker's reason when the click decided), else the
// "processing" card (the final card follows by a patch, from
// SettleApproval). A click by someone who may not decide gets a toast
// naming who may, and the card is unchanged; a malformed value gets an
// error toast and decides nothing.
func (c *intake) onCardAction(ctx context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
	w := wordsIn(c.cfg.Lang)
	h := c.slot.Handler()
	if h == nil {
		return toast("error", w.unavailable), nil
	}
	if ev == nil || ev.Event == nil || ev.Event.Action == nil {
		return toast("error", w.malformed), nil
	}
	e := ev.Event
	val, err := cards.ParseFeishuButtonValue(e.Action.Value)
	if err != nil {
		c.log.Warn("card click with a malformed value; nothing decided", "err", err)
		return toast("error", w.malformed), nil
	}
	a := channels.CardAction{Channel: Name, ApprovalID: val.ApprovalID, Verb: val.Decision, PayloadSHA256: val.PayloadSHA256,
		Comment: cards.ParseFeishuReason(e.Action.FormValue), Resolution: val.Resolution, Grant: val.Grant}
	if val.Decision == cards.AnswerDecision {
		// A question's answer: the card's selects, option button and
		// free text, approved as the answered input (the engine checks
		// it and binds it to the hash the card showed).
		a.Verb = approval.Approve
		if a.Edits, err = cards.ParseFeishuAnswers(e.Action.FormValue, val); err != nil {
			c.log.Warn("card click with a malformed or empty answer; nothing decided", "err", err)
			return toast("error", w.malformed), nil
		}
	} else if val.Decision == cards.EditDecision {
		// 按修改确认: approve the arguments as the card's inputs hold them.
		a.Verb = approval.Approve
		if a.Edits, err = cards.ParseFeishuEdits(e.Action.FormValue, val.Calls); err != nil {
			c.log.Warn("card click with malformed arguments; nothing decided", "err", err)
			return toast("error", w.malformed), nil
		}
	} else if val.Decision == approval.Approve {
		// A batch card's choices per call (取消 declines them all).
		if a.Calls, err = cards.ParseFeishuCalls(e.Action.FormValue, val.Calls); err != nil {
			c.log.Warn("card click with a malformed choice; nothing decided", "err", err)
			return toast("error", w.malformed), nil
		}
	}
	if e.Operator != nil {
		a.UserID = approval.UserID(e.Operator.OpenID)
	}
	if e.Context != nil {
		a.ChatID, a.MessageID = e.Context.OpenChatID, e.Context.OpenMessageID
	}
	if ev.EventV2Base != nil && ev.EventV2Base.Header != nil {
		a.EventID = ev.EventV2Base.Header.EventID
	}
	if a.UserID == "" {
		return toast("error", w.malformed), nil
	}
	// The window starts now: finding the card's view counts against it.
	timer := time.NewTimer(c.cfg.CallbackWait)
	defer timer.Stop()
	// The view is read before the decision: once decided, the approval is
	// no longer pending and its view can no longer be asked for.
	view, haveView := c.viewFor(ctx, a)
	type result struct {
		o   approval.Outcome
		err error
	}
	done := make(chan result, 1)
	if !c.bg.Go(func() {
		// The decision runs the tool: it must not end with the callback.
		o, err := h.HandleCardAction(context.WithoutCancel(ctx), a)
		done <- result{o, err}
	}) {
		return toast("error", w.unavailable), nil
	}
	select {
	case r := <-done:
		if ae := (*approval.AnswerError)(nil); errors.As(r.err, &ae) {
			// An answer of the wrong type (an MCP server's elicitation):
			// the person is told which field and why; nothing is decided.
			return toast("error", ae.In(c.cfg.Lang)), nil
		}
		if r.err != nil {
			c.log.Error("card decision failed", "approval_id", a.ApprovalID, "err", r.err)
			return toast("error", w.failed), nil
		}
		return c.outcomeResponse(a, r.o, view, haveView), nil
	case <-timer.C:
		resp := toast("info", w.processing)
		if haveView {
			c.cards.markProcessing(a.MessageID)
			resp.Card = rawCard(cards.FeishuProcessingCard(view, c.cfg.Lang))
		}
		return resp, nil
	}
}

// viewFor returns the view of the clicked card: the one this process
// sent or last updated; else, when another replica sent the card or this
// process restarted since, the approval's pending view read from
// Config.Views, checked to be the clicked approval's and remembered, so
// that the processing answer and the settle that follows behave as on the
// replica that sent it. The read is bounded by half the callback window;
// without a view (none, or no Config.Views) the click is still decided,
// and answered with a toast only.
//
// The views find the approval by its id and give its view only if the
// clicked message is one of its cards, whoever clicks and whatever the
// session scope.
func (c *intake) viewFor(ctx context.Context, a channels.CardAction) (cards.View, bool) {
	if v, ok := c.cards.shown(a.MessageID); ok && v.ApprovalID == a.ApprovalID {
		return v, true
	}
	if a.MessageID == "" || c.cfg.Views == nil {
		return cards.View{}, false
	}
	lctx, cancel := context.WithTimeout(ctx, c.cfg.CallbackWait/2)
	defer cancel()
	v, err := c.cfg.Views.ApprovalView(lctx, Name, a.ApprovalID, a.MessageID)
	if err != nil {
		c.log.Warn("could not read the view of a clicked card; answering without a card", "approval_id", a.ApprovalID, "msg_id", a.MessageID, "err", err)
		return cards.View{}, false
	}
	if v == nil || v.ApprovalID != a.ApprovalID {
		c.log.Debug("the clicked approval is not the session's pending one; answering without a card", "approval_id", a.ApprovalID, "msg_id", a.MessageID)
		return cards.View{}, false
	}
	return c.cards.rememberLoaded(a.MessageID, *v), true
}

// outcomeResponse is the answer to click a, whose outcome is known.
func (c *intake) outcomeResponse(a channels.CardAction, o approval.Outcome, view cards.View, haveView bool) *callback.CardActionTriggerResponse {
	w := wordsIn(c.cfg.Lang)
	text := c.cfg.Text.TextIn(c.cfg.Lang, o.Status)
	if o.Resolution != "" {
		// A frozen approval resolved: said as its card says it.
		text = cards.ApplyOutcome(cards.View{}, o, c.cfg.Text, c.cfg.Lang).StatusText
	}
	switch o.Status {
	case approval.StatusUnauthorized:
		switch {
		case haveView && view.Approvers != "":
			return toast("warning", fmt.Sprintf(w.mayApprove, view.Approvers))
		case o.Content != "":
			// The engine's words for the refusal name who may decide.
			return toast("warning", o.Content)
		}
		return toast("warning", fmt.Sprintf(w.mayApprove, w.someoneElse))
	case approval.StatusTampered, approval.StatusMissing:
		return toast("error", text)
	case approval.StatusAlreadyDecided:
		if _, why, ok := strings.Cut(o.Detail, ": "); ok && why != "" {
			// The approval was withdrawn with a reason (a hook that gave
			// up: the agent was told no): say it.
			text += ": " + why
		}
		return toast("info", text)
	case approval.StatusAwaitingQuorum:
		// Counted (or counted before), with the progress; the approval
		// still waits, and its cards were redrawn with the votes
		// (Presenter.Progress): no card in the answer, the buttons stay.
		return toast("info", o.Content)
	}
	kind := "info"
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed:
		kind = "success"
	case approval.StatusFailed, approval.StatusFrozen:
		kind = "error"
	}
	resp := toast(kind, text)
	switch {
	case haveView && !view.Final && o.DecidedBy == a.UserID:
		// This click decided: its reason is the recorded comment.
		resp.Card = rawCard(cards.FeishuDecidedCard(view, o, c.cfg.Text, a.Comment, c.cfg.Lang))
	case haveView && !view.Final:
		resp.Card = rawCard(cards.FeishuOutcomeCard(view, o, c.cfg.Text, c.cfg.Lang))
	case haveView && view.Status == approval.StatusFrozen && o.Resolution != "" && o.DecidedBy == a.UserID:
		// This click resolved the frozen card: its note is the recorded
		// comment, as the settle's patch shows it (a retry that froze
		// again has its three buttons again).
		resp.Card = rawCard(cards.FeishuDecidedCard(view, o, c.cfg.Text, a.Comment, c.cfg.Lang))
	case haveView:
		resp.Card = rawCard(cards.FeishuCard(view, c.cfg.Lang))
	}
	return resp
}

func toast(kind, text string) *callback.CardActionTriggerResponse {
	return &callback.CardActionTriggerResponse{Toast: &callback.Toast{Type: kind, Content: clip.Runes(text, 200)}}
}

func rawCard(card map[string]any) *callback.Card {
	if card == nil {
		return nil
	}
	return &callback.Card{Type: "raw", Data: card}
}

type channelWords struct {
	unavailable, malformed, failed, processing, mayApprove, someoneElse string
}

// wordsIn returns the channel's sentences in lang, from the catalogue of
// package words.
func wordsIn(lang string) channelWords {
	l := words.Of(lang)
	return channelWords{
		unavailable: words.Text(l, words.FeishuUnavailable),
		malformed:   words.Text(l, words.FeishuMalformed),
		failed:      words.Text(l, words.FeishuFailed),
		processing:  words.Text(l, words.CardProcessing),
		mayApprove:  words.Text(l, words.FeishuMayApprove),
		someoneElse: words.Text(l, words.FeishuSomeoneElse),
	}
}
