package approval

import (
	"context"
	"fmt"

	"github.com/hitlbot/hitlbot/approval/audit"
)

// escalateBatch is how many escalation steps one sweep takes at most.
const escalateBatch = 256

// escalate takes the escalation steps that are due (Store.Escalations,
// then Store.Escalate, which takes each step once whichever replica
// sweeps) and carries each out (escalated). It returns how many steps it
// took; an error means the index could not be read.
func (e *Engine) escalate(ctx context.Context) (int, error) {
	now := e.cfg.Clock.Now().UTC()
	ids, err := e.cfg.Store.Escalations(ctx, now, escalateBatch)
	if err != nil {
		return 0, err
	}
	taken := 0
	for _, id := range ids {
		res, err := e.cfg.Store.Escalate(ctx, id, now)
		if err != nil {
			e.log.Warn("taking an escalation step failed; retrying at the next sweep", "approval_id", id, "err", err)
			continue
		}
		if res.Code != EscalateTaken {
			continue
		}
		taken++
		e.escalated(ctx, res.Approval, res.Step)
	}
	return taken, nil
}

// escalated carries out step of a's escalation, which this engine took:
// it audits the step, has the notifier show a in the step's chat
// (Notifier.Escalate), records the cards it sent, and redraws every card
// of a, so that each says who may decide now. A card that could not be
// sent is audited with its error: the step's people may decide all the
// same (a typed 确认, the API), and a still waits where it was.
func (e *Engine) escalated(ctx context.Context, a *Approval, step int) {
	st := a.Escalation[step]
	note := fmt.Sprintf("step %d after %v: %s %s; %s", step+1, st.After, st.To.Channel, st.To.ChatID, st.Approvers.DescribeIn("en"))
	e.log.Info("approval escalated", "approval_id", a.ID, "step", step+1, "after", st.After, "channel", st.To.Channel, "chat_id", st.To.ChatID)
	cards, err := e.cfg.Notifier.Escalate(ctx, a.Clone(), step)
	if err != nil {
		e.log.Warn("showing the approval in its escalation chat failed", "approval_id", a.ID, "channel", st.To.Channel, "chat_id", st.To.ChatID, "err", err)
		e.auditNote(a, audit.EventEscalate, "", SourceSystem, "", err.Error(), note)
	} else {
		e.auditNote(a, audit.EventEscalate, "", SourceSystem, "", "", note)
	}
	rec := a
	if len(cards) > 0 {
		added, err := e.cfg.Store.AddCards(ctx, a.ID, cards)
		switch {
		case err != nil:
			e.log.Warn("recording the escalation's cards failed", "approval_id", a.ID, "err", err)
		case added != nil && added.State.Terminal() && added.Outcome != nil:
			// Decided while the card was being sent: the decision
			// settled the cards it knew of, not these.
			e.settle(withCards(added, cards), *added.Outcome)
			return
		case added != nil:
			rec = added
		default:
			if now, err := e.cfg.Store.Get(ctx, a.ID); err == nil {
				rec = now
			} else {
				rec = a.Clone()
				rec.Cards = append(rec.Cards, cards...)
			}
		}
	}
	if rec.State == StatePending {
		e.progress(rec)
	}
}

// remind sends the reminders that are due (Store.Reminders, then
// Store.Remind, which takes each once whichever replica sweeps, and never
// of an approval that has ended) through the notifier. It returns how
// many it took; an error means the index could not be read.
func (e *Engine) remind(ctx context.Context) (int, error) {
	now := e.cfg.Clock.Now().UTC()
	ids, err := e.cfg.Store.Reminders(ctx, now, escalateBatch)
	if err != nil {
		return 0, err
	}
	taken := 0
	for _, id := range ids {
		res, err := e.cfg.Store.Remind(ctx, id, now)
		if err != nil {
			e.log.Warn("taking a reminder failed; retrying at the next sweep", "approval_id", id, "err", err)
			continue
		}
		if res.Code != RemindTaken {
			continue
		}
		taken++
		a := res.Approval
		if err := e.cfg.Notifier.Remind(ctx, a.Clone(), res.N); err != nil {
			e.log.Warn("the reminder reached nobody", "approval_id", id, "reminder", res.N+1, "err", err)
			continue
		}
		e.log.Info("approval reminder sent", "approval_id", id, "reminder", res.N+1, "of", len(a.Reminders))
	}
	return taken, nil
}
