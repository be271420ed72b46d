package memstore

import (
	"context"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Reminders implements approval.Store.
func (s *Store) Reminders(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.Reminders", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rem.due(now, limit), nil
}

// Remind implements approval.Store.
func (s *Store) Remind(ctx context.Context, id approval.ID, now time.Time) (approval.RemindResult, error) {
	if err := ctx.Err(); err != nil {
		return approval.RemindResult{}, approval.E("memstore.Remind", errkind.Unavailable, id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	if r == nil {
		s.rem.remove(id)
		return approval.RemindResult{Code: approval.RemindMissing}, nil
	}
	_, at, ok := r.NextReminder()
	if !ok || r.State != approval.StatePending || !now.Before(r.ExpiresAt) {
		s.rem.remove(id)
		return approval.RemindResult{Code: approval.RemindNone, Approval: r.Clone()}, nil
	}
	n, due := r.DueReminder(now)
	if !due {
		s.rem.set(id, at)
		return approval.RemindResult{Code: approval.RemindNotDue, Approval: r.Clone()}, nil
	}
	r.Reminded = n + 1
	if _, next, ok := r.NextReminder(); ok {
		s.rem.set(id, next)
	} else {
		s.rem.remove(id)
	}
	return approval.RemindResult{Code: approval.RemindTaken, Approval: r.Clone(), N: n}, nil
}
