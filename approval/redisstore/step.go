package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// stepKind is one kind of timed step of a pending approval, taken by
// takeStep: a reminder (reminderStep) or an escalation step
// (escalationStep). C is the kind's result code.
type stepKind[C ~string] struct {
	// op names the operation in errors; what names the kind's index in
	// logs.
	op, what string
	// index returns the kind's index: a ZSET of ids scored by the time of
	// their next step (unix ms).
	index func(*Store) string
	// next returns the next step of a (the steps of the kind taken so
	// far) and when it is due; false when none is left.
	next func(a *approval.Approval) (n int, at time.Time, ok bool)
	// due returns the step of a to take at now, when its next step is due.
	due func(a *approval.Approval, now time.Time) int
	// count and nonce are the record fields of the steps taken and of the
	// nonce of the last call that took one (stepLua).
	count, nonce string
	// fields returns the other fields stepLua writes when step n of a is
	// taken, as name and value pairs; nil when none are.
	fields func(a *approval.Approval, n int) ([]string, error)
	// listed queues on pipe what taking step n of rec changes in other
	// indexes; nil when nothing.
	listed func(ctx context.Context, s *Store, pipe redis.Pipeliner, rec *approval.Approval, n int)
	// The kind's result codes.
	taken, notDue, none, missing C
}

// reminderStep is a reminder (Store.Remind): the latest one due is taken,
// those before it passed over.
var reminderStep = stepKind[approval.RemindCode]{
	op: "redisstore.Remind", what: "reminder",
	index: (*Store).remKey,
	next:  (*approval.Approval).NextReminder,
	due: func(a *approval.Approval, now time.Time) int {
		n, _ := a.DueReminder(now)
		return n
	},
	count: "rd", nonce: "rt",
	taken: approval.RemindTaken, notDue: approval.RemindNotDue, none: approval.RemindNone, missing: approval.RemindMissing,
}

// escalationStep is a step of an approval's escalation (Store.Escalate):
// taken one at a time, in order. Taking one writes the fields eu and ep
// (escalatedFields) and lists the approval in the step's chat.
var escalationStep = stepKind[approval.EscalateCode]{
	op: "redisstore.Escalate", what: "escalation",
	index: (*Store).escKey,
	next: func(a *approval.Approval) (int, time.Time, bool) {
		_, at, ok := a.NextEscalation()
		return a.Escalated, at, ok
	},
	due:   func(a *approval.Approval, _ time.Time) int { return a.Escalated },
	count: "ed", nonce: "et",
	fields: func(a *approval.Approval, n int) ([]string, error) {
		taken := a.Clone()
		taken.Escalated = n + 1
		_, eu, ep, err := escalatedFields(taken)
		return []string{"eu", eu, "ep", ep}, err
	},
	listed: func(ctx context.Context, s *Store, pipe redis.Pipeliner, rec *approval.Approval, n int) {
		to := rec.Escalation[n].To
		expMS, _ := splitTime(rec.ExpiresAt)
		life := min(max(rec.ExpiresAt.Sub(s.clk.Now()), 0), maxLife)
		chat := s.chatKey(to.Channel, to.ChatID)
		pipe.ZAdd(ctx, chat, redis.Z{Score: float64(expMS), Member: string(rec.ID)})
		pipe.PExpire(ctx, chat, time.Duration(durMS(life+s.retention))*time.Millisecond)
	},
	taken: approval.EscalateTaken, notDue: approval.EscalateNotDue, none: approval.EscalateNone, missing: approval.EscalateMissing,
}

// Reminders implements approval.Store: a ZRANGEBYSCORE of the reminder
// index.
func (s *Store) Reminders(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "redisstore.Reminders", s.remKey(), now, limit)
}

// Remind implements approval.Store with takeStep.
func (s *Store) Remind(ctx context.Context, id approval.ID, now time.Time) (approval.RemindResult, error) {
	code, a, n, err := takeStep(ctx, s, &reminderStep, id, now)
	return approval.RemindResult{Code: code, Approval: a, N: n}, err
}

// Escalations implements approval.Store: a ZRANGEBYSCORE of the
// escalation index.
func (s *Store) Escalations(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "redisstore.Escalations", s.escKey(), now, limit)
}

// Escalate implements approval.Store with takeStep.
func (s *Store) Escalate(ctx context.Context, id approval.ID, now time.Time) (approval.EscalateResult, error) {
	code, a, step, err := takeStep(ctx, s, &escalationStep, id, now)
	return approval.EscalateResult{Code: code, Approval: a, Step: step}, err
}

// takeStep takes the step of kind k of approval id that is due at now, in
// two round trips and one more for the indexes: the record is read
// (HGETALL) and judged by now in Go; a step that is due is taken by
// stepLua, which checks that the record is still as it was read; then the
// kind's index (and, for an escalation step, the step's chat index) is
// updated in one pipeline. (The indexes live in slots of their own: a lost
// entry only delays or drops a step, or leaves the approval out of a
// chat's /pending, never a claim.) It returns the code, the record after
// the call (nil when missing) and the step taken.
func takeStep[C ~string](ctx context.Context, s *Store, k *stepKind[C], id approval.ID, now time.Time) (C, *approval.Approval, int, error) {
	if err := ctxErr(ctx, k.op, id); err != nil {
		return "", nil, 0, err
	}
	drop := func() {
		if err := s.c.ZRem(ctx, k.index(s), string(id)).Err(); err != nil {
			s.log.Warn("redisstore: dropping an approval from the "+k.what+" index failed", "approval_id", id, "err", err)
		}
	}
	a, err := s.Get(ctx, id)
	if err != nil && approval.KindOf(err) == errkind.NotFound {
		drop()
		return k.missing, nil, 0, nil
	}
	if err != nil {
		return "", nil, 0, err
	}
	read, at, ok := k.next(a)
	if !ok || a.State != approval.StatePending || !now.Before(a.ExpiresAt) {
		drop()
		return k.none, a, 0, nil
	}
	if now.Before(at) {
		if err := s.c.ZAdd(ctx, k.index(s), indexEntry(id, at)).Err(); err != nil {
			return "", nil, 0, unavailable(k.op, id, err)
		}
		return k.notDue, a, 0, nil
	}
	n := k.due(a, now)
	var fields []string
	if k.fields != nil {
		if fields, err = k.fields(a, n); err != nil {
			return "", nil, 0, approval.E(k.op, errkind.Invalid, id, err)
		}
	}
	shard, _ := id.Shard()
	nowMS, nowNS := splitTime(now)
	args := append([]any{k.count, k.nonce, strconv.Itoa(read), strconv.Itoa(n + 1), nowMS, nowNS, s.nonce()}, anys(fields)...)
	res, err := s.step.Run(ctx, s.cmd, []string{s.recordKey(shard, id)}, args...).Slice()
	if err != nil {
		return "", nil, 0, unavailable(k.op, id, err)
	}
	code := replyCode(res)
	if code == "missing" {
		drop()
		return k.missing, nil, 0, nil
	}
	if len(res) != 2 {
		return "", nil, 0, internal(k.op, id, "unexpected step reply of %d items", len(res))
	}
	rec, err := decodeReply(id, res[1])
	if err != nil {
		return "", nil, 0, internal(k.op, id, "%v", err)
	}
	_, nextAt, left := k.next(rec)
	if code != "taken" {
		// Another replica took it, or the approval ended or expired
		// meanwhile: judge it again as it is now.
		if left && rec.State == approval.StatePending && now.Before(rec.ExpiresAt) {
			s.c.ZAdd(ctx, k.index(s), indexEntry(id, nextAt))
			return k.notDue, rec, 0, nil
		}
		drop()
		return k.none, rec, 0, nil
	}
	pipe := s.c.Pipeline()
	if left {
		pipe.ZAdd(ctx, k.index(s), indexEntry(id, nextAt))
	} else {
		pipe.ZRem(ctx, k.index(s), string(id))
	}
	if k.listed != nil {
		k.listed(ctx, s, pipe, rec, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Warn("redisstore: updating the indexes of a "+k.what+" step failed", "approval_id", id, "err", err)
	}
	return k.taken, rec, n, nil
}

// indexEntry is id in a timed index at t.
func indexEntry(id approval.ID, t time.Time) redis.Z {
	ms, _ := splitTime(t)
	return redis.Z{Score: float64(ms), Member: string(id)}
}

// anys returns ss as script arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
