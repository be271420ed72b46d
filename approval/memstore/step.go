package memstore

import (
	"context"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// stepKind is one kind of timed step of a pending approval, taken by
// takeStep: a reminder (reminderStep) or an escalation step
// (escalationStep). C is the kind's result code.
type stepKind[C ~string] struct {
	op string // names the operation in errors
	// index returns the kind's index: pending approvals with a step
	// left, at its time.
	index func(*Store) *timeIndex
	// next returns the next step of a (the steps of the kind taken so
	// far) and when it is due; false when none is left.
	next func(a *approval.Approval) (n int, at time.Time, ok bool)
	// take takes the step of r that is due at now (its next step is) and
	// returns it: r counts it, and whatever else the step changes is done.
	take func(s *Store, r *approval.Approval, now time.Time) int
	// The kind's result codes.
	taken, notDue, none, missing C
}

// reminderStep is a reminder (Store.Remind): the latest one due is taken,
// those before it passed over.
var reminderStep = stepKind[approval.RemindCode]{
	op:    "memstore.Remind",
	index: func(s *Store) *timeIndex { return s.rem },
	next:  (*approval.Approval).NextReminder,
	take: func(_ *Store, r *approval.Approval, now time.Time) int {
		n, _ := r.DueReminder(now)
		r.Reminded = n + 1
		return n
	},
	taken: approval.RemindTaken, notDue: approval.RemindNotDue, none: approval.RemindNone, missing: approval.RemindMissing,
}

// escalationStep is a step of an approval's escalation (Store.Escalate):
// taken one at a time, in order; the approval is listed in the step's chat
// (ChatPending).
var escalationStep = stepKind[approval.EscalateCode]{
	op:    "memstore.Escalate",
	index: func(s *Store) *timeIndex { return s.esc },
	next: func(a *approval.Approval) (int, time.Time, bool) {
		_, at, ok := a.NextEscalation()
		return a.Escalated, at, ok
	},
	take: func(s *Store, r *approval.Approval, _ time.Time) int {
		step := r.Escalated
		r.Escalated++
		s.listLocked(r.ID, r.Escalation[step].To)
		return step
	},
	taken: approval.EscalateTaken, notDue: approval.EscalateNotDue, none: approval.EscalateNone, missing: approval.EscalateMissing,
}

// Reminders implements approval.Store.
func (s *Store) Reminders(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "memstore.Reminders", s.rem, now, limit)
}

// Remind implements approval.Store with takeStep.
func (s *Store) Remind(ctx context.Context, id approval.ID, now time.Time) (approval.RemindResult, error) {
	code, a, n, err := takeStep(ctx, s, &reminderStep, id, now)
	return approval.RemindResult{Code: code, Approval: a, N: n}, err
}

// Escalations implements approval.Store.
func (s *Store) Escalations(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "memstore.Escalations", s.esc, now, limit)
}

// Escalate implements approval.Store with takeStep.
func (s *Store) Escalate(ctx context.Context, id approval.ID, now time.Time) (approval.EscalateResult, error) {
	code, a, step, err := takeStep(ctx, s, &escalationStep, id, now)
	return approval.EscalateResult{Code: code, Approval: a, Step: step}, err
}

// dueIn returns up to limit approvals of the index x due at or before
// now, earliest first.
func (s *Store) dueIn(ctx context.Context, op string, x *timeIndex, now time.Time, limit int) ([]approval.ID, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E(op, errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return x.due(now, limit), nil
}

// takeStep takes the step of kind k of approval id that is due at now,
// under the store's lock: it returns the code, a copy of the record after
// the call (nil when missing) and the step taken.
func takeStep[C ~string](ctx context.Context, s *Store, k *stepKind[C], id approval.ID, now time.Time) (C, *approval.Approval, int, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, 0, approval.E(k.op, errkind.Unavailable, id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := k.index(s)
	r := s.recs[id]
	if r == nil {
		x.remove(id)
		return k.missing, nil, 0, nil
	}
	_, at, ok := k.next(r)
	if !ok || r.State != approval.StatePending || !now.Before(r.ExpiresAt) {
		x.remove(id)
		return k.none, r.Clone(), 0, nil
	}
	if now.Before(at) {
		x.set(id, at)
		return k.notDue, r.Clone(), 0, nil
	}
	n := k.take(s, r, now)
	if _, next, ok := k.next(r); ok {
		x.set(id, next)
	} else {
		x.remove(id)
	}
	return k.taken, r.Clone(), n, nil
}
