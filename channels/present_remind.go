package channels

import (
	"context"
	"errors"
	"fmt"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/words"
)

// Remind tells the people who may decide a, still pending, that it waits
// (approval.Notifier): one message where they decide it (its approvers'
// chat, else its own chat; with approve_in direct, to each listed person
// 1:1), mentioning them (Outgoing.Mentions, approval.Approval.Mentioned:
// at most approval.MaxMentions, the rest counted in words). It says the
// approval's code there, who asked, until when and who may approve; what
// it would do only when it is not private (cards.ReminderText of the
// redacted view otherwise), so nobody reads a private call in a reminder.
func (p *Presenter) Remind(ctx context.Context, a *approval.Approval, n int) error {
	where := a.DecidesIn()
	v := p.pendingView(a)
	if where.ChatID != "" {
		v = p.pendingCardIn(ctx, a, where)
	}
	code := v.Code
	if a.Private() {
		v = cards.Redact(v)
		v.Code = code
	}
	mention, more := a.Mentioned(approval.MaxMentions)
	text := cards.ReminderText(v, p.cfg.Lang)
	if more > 0 {
		text += " (" + words.In(p.cfg.Lang, words.ReminderMore, more) + ")"
	}
	out := Outgoing{Kind: OutNotice, Text: text, Mentions: mention}
	log := p.log.With("approval_id", a.ID, "reminder", n+1)
	ch, err := p.reg.Channel(where.Channel)
	if err != nil {
		return fmt.Errorf("remind %s: %w", a.ID, err)
	}
	if where.Direct {
		pc, ok := ch.(PrivateChannel)
		if !ok {
			return fmt.Errorf("remind %s: %w", a.ID, ErrNoPrivacy)
		}
		var to []approval.UserID
		for _, u := range a.Approvers.Users {
			if u != a.Requester {
				to = append(to, u)
			}
		}
		if len(to) == 0 {
			return errors.New("remind: nobody to send the reminder to")
		}
		out.Mentions = nil
		return pc.SendTo(ctx, Target{Channel: where.Channel}, to, out)
	}
	to := Target{Channel: where.Channel, ChatID: where.ChatID}
	if a.ApproveIn == nil {
		to.ThreadID, to.UserID = p.threadOf(a), a.Requester
	}
	if err := ch.Send(ctx, to, out); err != nil {
		log.Warn("sending the reminder failed", "channel", to.Channel, "chat_id", to.ChatID, "err", err)
		return err
	}
	return nil
}
