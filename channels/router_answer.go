package channels

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/words"
)

// answerCommand answers the answer command c (ParseCommand) of m: a
// typed answer to another agent's question waiting in the chat, the one
// c's code names or, without one, the only question waiting there (the
// only one the sender may answer, when several wait). The text is read
// by approval.ParseAnswers; a text it refuses is answered with why (the
// question stays open); else the answer is decided as the sender, bound
// to the hash of the question as it waits (decideTyped). A code (c.Arg,
// not a commonWord) followed by an answer that names nothing waiting in
// the chat is answered with that (a mistyped code, a question already
// ended): neither the agent's nor a waiting question's answer. It reports
// whether it answered: with no question waiting in the chat and no code
// naming one, the text is the agent's ("answer me this: …", "answer this
// mail").
func (r *Router) answerCommand(ctx context.Context, cmdr Commander, ch Channel, to Target, m Message, c Command, l words.Lang,
	say func(string) bool, unavailable func(error) bool, log *slog.Logger) bool {
	waiting, err := cmdr.ChatPending(ctx, m.Channel, m.ChatID)
	if err != nil {
		return unavailable(err)
	}
	now := r.cfg.Clock.Now()
	var live []*approval.Approval
	for _, a := range waiting {
		if now.Before(a.ExpiresAt) {
			live = append(live, a)
		}
	}
	codes := approval.Codes(live)
	var a *approval.Approval
	text := c.Body
	if c.Arg != "" {
		switch found := approval.ByCode(live, c.Arg); {
		case len(found) == 1:
			a, text = found[0], c.Text
		case len(found) > 1:
			return say(words.Text(l, words.QuestionAmbiguous, r.pendingLines(l, found, codes, now, readerOf(m))))
		case c.Text != "" && !commonWord(c.Arg):
			// The strict form (a code, then an answer) naming nothing
			// waiting: a mistyped code, or a question that has ended.
			// Neither the agent's nor part of a waiting question's answer.
			log.Info("an answer command names no approval waiting in the chat; nothing was answered", "code", c.Arg)
			return say(words.Text(l, words.QuestionNoSuchCode, c.Arg))
		}
	}
	if a == nil {
		var qs []*approval.Approval
		for _, w := range live {
			if w.IsQuestion() {
				qs = append(qs, w)
			}
		}
		if len(qs) > 1 {
			var theirs []*approval.Approval
			for _, w := range qs {
				if w.AllowsIn(m.UserID, approval.Approve, m.Channel, m.ChatID) {
					theirs = append(theirs, w)
				}
			}
			if len(theirs) > 0 {
				qs = theirs
			}
		}
		switch len(qs) {
		case 0:
			return false
		case 1:
			a = qs[0]
		default:
			return say(words.Text(l, words.QuestionAmbiguous, r.pendingLines(l, qs, codes, now, readerOf(m))))
		}
	}
	code := codes[a.ID]
	log = log.With("approval_id", a.ID)
	if !a.IsQuestion() {
		return say(words.Text(l, words.QuestionNotQuestion, code))
	}
	if !r.replyFor(r.writtenAt(m), a) {
		// Written before the question existed (a delayed or replayed
		// message): not an answer to it.
		log.Info("a typed answer written before the question was asked is not an answer to it")
		return say(words.Text(l, words.CmdNoSuchCode, code))
	}
	qs, err := approval.ParseQuestions(a.Calls[0].Args)
	if err != nil {
		log.Error("a waiting question cannot be read; nothing was answered", "err", err)
		return say(approval.UserMessageIn(err, r.cfg.Lang))
	}
	edit, err := approval.ParseAnswers(qs, text)
	if err != nil {
		log.Info("a typed answer was refused; nothing was answered", "err", err)
		return say(AnswerRefusal(r.cfg.Lang, err, code))
	}
	r.decideTyped(ctx, r.decider, ch, to, m, a, approval.ReplyConfirm, "", edit, log)
	return true
}

// AnswerRefusal words why a typed answer (approval.ParseAnswers; a
// DingTalk card's inputs) was refused, in lang; code is the question's
// code in its chat ("" when unknown).
func AnswerRefusal(lang string, err error, code string) string {
	var te *approval.AnswerTextError
	if !errors.As(err, &te) {
		return approval.UserMessageIn(err, lang)
	}
	l := words.Of(lang)
	switch te.Fault {
	case approval.AnswerNoSuchOption:
		return words.Text(l, words.QuestionBadOption, te.Question, te.Options, te.Option)
	case approval.AnswerOneOption:
		return words.Text(l, words.QuestionOneOption, te.Question)
	case approval.AnswerNoSuchQuestion:
		return words.Text(l, words.QuestionNoSuchQ, te.Question, te.Questions)
	case approval.AnswerNeedsLines:
		return words.Text(l, words.QuestionNeedsLines, cards.AnswerCommand(code))
	case approval.AnswerTwice:
		return words.Text(l, words.QuestionTwice, te.Question)
	case approval.AnswerTooLong:
		return words.Text(l, words.QuestionTooLong, te.Question, approval.MaxAnswerRunes)
	}
	return words.Text(l, words.QuestionNothing, cards.AnswerCommand(code))
}
