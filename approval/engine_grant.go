package approval

import (
	"context"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/clip"
)

// auditGrant writes the confirm record of a claimed approval, with the
// grant choice that applies to it (empty for an approval that grants
// nothing).
func (e *Engine) auditGrant(a *Approval, actor UserID, src Source, note string, g GrantChoice) {
	e.appendAudit(a, audit.Record{
		Time:          e.cfg.Clock.Now().UTC(),
		Event:         audit.EventConfirm,
		ApprovalID:    string(a.ID),
		Session:       string(a.Session),
		Tool:          a.Tool(),
		PayloadSHA256: a.PayloadSHA256,
		Actor:         string(actor),
		Source:        string(src),
		Reason:        note,
		Grant:         string(g),
		Proposed:      a.ProposedSHA256,
	})
}

// maxGrantSummary bounds a grant's payload summary (runes).
const maxGrantSummary = 80

// grant records a session grant for each call of an executed approval that
// its approver allowed for the session: same session, requester, tool and
// payload, for the approval's GrantWindow from now, remembering who
// approved and when. A grant that cannot be recorded is logged: the call
// will ask again, which is safe.
func (e *Engine) grant(ctx context.Context, a *Approval) {
	now := e.cfg.Clock.Now().UTC()
	at := a.DecidedAt
	if at.IsZero() {
		at = now
	}
	for i, c := range a.Calls {
		if !a.Verdicts.Approved(i) {
			continue // declined by a per-call decision: nothing granted for it
		}
		g := Grant{
			Session:       a.Session,
			User:          a.Requester,
			Tool:          c.Tool,
			PayloadSHA256: c.PayloadSHA256,
			Summary:       clip.Runes(clip.FirstLine(c.Summary), maxGrantSummary),
			ApprovalID:    a.ID,
			ApprovedBy:    a.DecidedBy,
			ApprovedAt:    at,
			ExpiresAt:     now.Add(a.GrantWindow),
		}
		if err := e.cfg.Store.PutGrant(ctx, g, a.GrantWindow); err != nil {
			e.log.Warn("recording a session grant failed", "approval_id", a.ID, "tool", c.Tool, "err", err)
		}
	}
}

// Grants returns the session's live grants, oldest first (as /grants
// numbers them).
func (e *Engine) Grants(ctx context.Context, s SessionKey) ([]Grant, error) {
	return e.cfg.Store.Grants(ctx, s)
}

// Revoke removes the session's grants with those keys, or all of them when
// keys is empty, in the store every replica reads, and audits each
// removal as a revoke by actor. It reports how many live grants it
// removed.
func (e *Engine) Revoke(ctx context.Context, s SessionKey, actor UserID, src Source, keys ...string) (int, error) {
	gs, err := e.cfg.Store.Grants(ctx, s)
	if err != nil {
		return 0, err
	}
	n, err := e.cfg.Store.Revoke(ctx, s, keys...)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, g := range gs {
		if len(keys) > 0 && !want[g.Key()] {
			continue
		}
		e.cfg.Audit.Append(audit.Record{
			Time:          e.cfg.Clock.Now().UTC(),
			Event:         audit.EventRevoke,
			ApprovalID:    string(g.ApprovalID),
			Session:       string(s),
			Tool:          g.Tool,
			PayloadSHA256: g.PayloadSHA256,
			Actor:         string(actor),
			Source:        string(src),
		})
	}
	return n, nil
}

// ChatPending returns the approvals pending in one chat, oldest first
// (Store.ChatPending).
func (e *Engine) ChatPending(ctx context.Context, channel, chatID string) ([]*Approval, error) {
	return e.cfg.Store.ChatPending(ctx, channel, chatID)
}

// ChatCode returns a's short code in its chat, its approvers' chat when
// it has one (Codes among the approvals pending there, a included): through the store's ChatCoder where it has
// one, else from ChatPending.
func (e *Engine) ChatCode(ctx context.Context, a *Approval) (string, error) {
	if cc, ok := e.cfg.Store.(ChatCoder); ok {
		return cc.ChatCode(ctx, a)
	}
	place := a.DecidesIn() // the approvers' chat, when it has one
	waiting, err := e.cfg.Store.ChatPending(ctx, place.Channel, place.ChatID)
	if err != nil {
		return "", err
	}
	return CodeIn(waiting, a), nil
}
