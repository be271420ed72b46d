package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Reminders implements approval.Store: a ZRANGEBYSCORE of the reminder
// index.
func (s *Store) Reminders(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "redisstore.Reminders", s.remKey(), now, limit)
}

// Remind implements approval.Store as Escalate does, in two round trips
// and one more for the index: the record is read (HGETALL) and judged by
// now in Go; a reminder that is due is taken by the remind script, which
// checks that the record is still as it was read; then the reminder index
// is updated. (The index lives in a slot of its own: a lost entry only
// delays or drops a reminder, never a claim.)
func (s *Store) Remind(ctx context.Context, id approval.ID, now time.Time) (approval.RemindResult, error) {
	const op = "redisstore.Remind"
	if err := ctxErr(ctx, op, id); err != nil {
		return approval.RemindResult{}, err
	}
	a, err := s.Get(ctx, id)
	if err != nil && approval.KindOf(err) == errkind.NotFound {
		s.unremind(ctx, id)
		return approval.RemindResult{Code: approval.RemindMissing}, nil
	}
	if err != nil {
		return approval.RemindResult{}, err
	}
	_, at, ok := a.NextReminder()
	if !ok || a.State != approval.StatePending || !now.Before(a.ExpiresAt) {
		s.unremind(ctx, id)
		return approval.RemindResult{Code: approval.RemindNone, Approval: a}, nil
	}
	n, due := a.DueReminder(now)
	if !due {
		if err := s.remindAt(ctx, id, at); err != nil {
			return approval.RemindResult{}, unavailable(op, id, err)
		}
		return approval.RemindResult{Code: approval.RemindNotDue, Approval: a}, nil
	}
	shard, _ := id.Shard()
	nowMS, nowNS := splitTime(now)
	res, err := s.remind.Run(ctx, s.c, []string{s.recordKey(shard, id)},
		strconv.Itoa(a.Reminded), strconv.Itoa(n+1), nowMS, nowNS, s.nonce()).Slice()
	if err != nil {
		return approval.RemindResult{}, unavailable(op, id, err)
	}
	code := replyCode(res)
	if code == "missing" {
		s.unremind(ctx, id)
		return approval.RemindResult{Code: approval.RemindMissing}, nil
	}
	if len(res) != 2 {
		return approval.RemindResult{}, internal(op, id, "unexpected remind reply of %d items", len(res))
	}
	rec, err := decodeReply(id, res[1])
	if err != nil {
		return approval.RemindResult{}, internal(op, id, "%v", err)
	}
	_, nextAt, left := rec.NextReminder()
	if code != "taken" {
		// Another replica took it, or the approval ended or expired
		// meanwhile: judge it again as it is now.
		if left && rec.State == approval.StatePending && now.Before(rec.ExpiresAt) {
			_ = s.remindAt(ctx, id, nextAt)
			return approval.RemindResult{Code: approval.RemindNotDue, Approval: rec}, nil
		}
		s.unremind(ctx, id)
		return approval.RemindResult{Code: approval.RemindNone, Approval: rec}, nil
	}
	if left {
		if err := s.remindAt(ctx, id, nextAt); err != nil {
			s.log.Warn("redisstore: moving an approval in the reminder index failed", "approval_id", id, "err", err)
		}
	} else {
		s.unremind(ctx, id)
	}
	return approval.RemindResult{Code: approval.RemindTaken, Approval: rec, N: n}, nil
}

// remindAt puts id in the reminder index at t.
func (s *Store) remindAt(ctx context.Context, id approval.ID, t time.Time) error {
	ms, _ := splitTime(t)
	return s.c.ZAdd(ctx, s.remKey(), redis.Z{Score: float64(ms), Member: string(id)}).Err()
}

// unremind drops id from the reminder index; a failure only makes a later
// sweep ask again.
func (s *Store) unremind(ctx context.Context, id approval.ID) {
	if err := s.c.ZRem(ctx, s.remKey(), string(id)).Err(); err != nil {
		s.log.Warn("redisstore: dropping an approval from the reminder index failed", "approval_id", id, "err", err)
	}
}
