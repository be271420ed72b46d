package channels

import (
	"context"
	"fmt"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/words"
)

// Escalate carries out step step of a's timed escalation
// (approval.Notifier): it shows a, with its buttons and the
// code it has in that chat, in the step's chat, and tells the chat where
// a waited so far (its approvers' chat when it has one) that nobody
// decided in time and who else was asked. If the card cannot be sent,
// that chat is told so instead, and the error is returned: a still waits
// where it was, and the step's people may decide it there or by a typed
// code.
func (p *Presenter) Escalate(ctx context.Context, a *approval.Approval, step int) ([]approval.CardRef, error) {
	if step < 0 || step >= len(a.Escalation) {
		return nil, fmt.Errorf("escalate %s: no step %d", a.ID, step)
	}
	st := a.Escalation[step]
	log := p.log.With("approval_id", a.ID, "step", step+1)
	v := p.pendingCardIn(ctx, a, st.To)
	v.Step = step + 1
	refs, err := p.showStep(ctx, a, st, v)
	l := words.Of(p.cfg.Lang)
	text := a.EscalatedIn(p.cfg.Lang)
	if err != nil {
		text = words.Text(l, words.EscalationFailed, words.Span(l, st.After), st.To.ChatID)
	}
	where := a.DecidesIn()
	to := Target{Channel: where.Channel, ChatID: where.ChatID}
	if a.ApproveIn == nil {
		to.ThreadID, to.UserID = p.threadOf(a), a.Requester
	}
	if ch, cerr := p.reg.Channel(to.Channel); cerr == nil {
		notice(ctx, ch, to, log, text)
	} else {
		log.Warn("the chat where the approval waits cannot be told of its escalation", "err", cerr)
	}
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// showStep sends v, a's card with the step's number, to the chat of
// escalation step st. A private approval (approval.Approval.Private) is
// shown there as it is in its own chat: a step of mode chat lets everyone
// there decide, so its chat gets the whole card (recorded as private: it
// is settled whole); a step of mode users gets the whole card shown to
// its people only (PrivateChannel) and the redacted card in its chat.
func (p *Presenter) showStep(ctx context.Context, a *approval.Approval, st approval.Escalation, v cards.View) ([]approval.CardRef, error) {
	to := Target{Channel: st.To.Channel, ChatID: st.To.ChatID}
	if !a.Private() || st.Approvers.Mode == approval.ApproverChat {
		ref, err := p.showIn(ctx, a, to, v)
		if err != nil {
			return nil, err
		}
		ref.Private = a.Private()
		return []approval.CardRef{ref}, nil
	}
	refs, err := p.showTo(ctx, a, to, st.Approvers.Users, v, true)
	if err != nil {
		return nil, err
	}
	if ref, err := p.showIn(ctx, a, to, cards.Redact(v)); err != nil {
		p.log.Warn("the redacted card could not be sent to the escalation chat; the step's people have theirs all the same",
			"channel", to.Channel, "chat_id", to.ChatID, "approval_id", a.ID, "err", err)
	} else {
		refs = append(refs, ref)
	}
	return refs, nil
}

// pendingCardIn is a's pending card as a chat other than its own shows it
// (place: a chat its escalation asked): with the code a has there.
func (p *Presenter) pendingCardIn(ctx context.Context, a *approval.Approval, place approval.Place) cards.View {
	v := p.pendingView(a)
	waiting, err := p.store.ChatPending(ctx, place.Channel, place.ChatID)
	if err != nil {
		p.log.Warn("finding the approval's code in its escalation chat failed; the card has no code", "approval_id", a.ID, "err", err)
		return v
	}
	v.Code = approval.CodeIn(waiting, a)
	return v
}
