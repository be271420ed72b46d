package memstore

import (
	"context"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Escalations implements approval.Store.
func (s *Store) Escalations(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.Escalations", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.esc.due(now, limit), nil
}

// Escalate implements approval.Store.
func (s *Store) Escalate(ctx context.Context, id approval.ID, now time.Time) (approval.EscalateResult, error) {
	if err := ctx.Err(); err != nil {
		return approval.EscalateResult{}, approval.E("memstore.Escalate", errkind.Unavailable, id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	if r == nil {
		s.esc.remove(id)
		return approval.EscalateResult{Code: approval.EscalateMissing}, nil
	}
	_, at, ok := r.NextEscalation()
	if !ok || r.State != approval.StatePending || !now.Before(r.ExpiresAt) {
		s.esc.remove(id)
		return approval.EscalateResult{Code: approval.EscalateNone, Approval: r.Clone()}, nil
	}
	if now.Before(at) {
		s.esc.set(id, at)
		return approval.EscalateResult{Code: approval.EscalateNotDue, Approval: r.Clone()}, nil
	}
	step := r.Escalated
	r.Escalated++
	s.listLocked(id, r.Escalation[step].To) // listed in the step's chat (ChatPending)
	if _, next, ok := r.NextEscalation(); ok {
		s.esc.set(id, next)
	} else {
		s.esc.remove(id)
	}
	return approval.EscalateResult{Code: approval.EscalateTaken, Approval: r.Clone(), Step: step}, nil
}
