package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Escalations implements approval.Store: a ZRANGEBYSCORE of the
// escalation index.
func (s *Store) Escalations(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "redisstore.Escalations", s.escKey(), now, limit)
}

// Escalate implements approval.Store in two round trips and one more for
// the indexes: the record is read (HGETALL) and judged by now in Go; a
// step that is due is taken by the escalate script, which checks that the
// record is still as it was read; then the escalation index and the
// step's chat index are updated in one pipeline. (The indexes live in
// slots of their own: a lost entry only delays a step or leaves the
// approval out of that chat's /pending, never a claim.)
func (s *Store) Escalate(ctx context.Context, id approval.ID, now time.Time) (approval.EscalateResult, error) {
	const op = "redisstore.Escalate"
	if err := ctxErr(ctx, op, id); err != nil {
		return approval.EscalateResult{}, err
	}
	a, err := s.Get(ctx, id)
	if err != nil && approval.KindOf(err) == errkind.NotFound {
		s.unescalate(ctx, id)
		return approval.EscalateResult{Code: approval.EscalateMissing}, nil
	}
	if err != nil {
		return approval.EscalateResult{}, err
	}
	_, at, ok := a.NextEscalation()
	if !ok || a.State != approval.StatePending || !now.Before(a.ExpiresAt) {
		s.unescalate(ctx, id)
		return approval.EscalateResult{Code: approval.EscalateNone, Approval: a}, nil
	}
	if now.Before(at) {
		ms, _ := splitTime(at)
		if err := s.c.ZAdd(ctx, s.escKey(), redis.Z{Score: float64(ms), Member: string(id)}).Err(); err != nil {
			return approval.EscalateResult{}, unavailable(op, id, err)
		}
		return approval.EscalateResult{Code: approval.EscalateNotDue, Approval: a}, nil
	}
	step := a.Escalated
	taken := a.Clone()
	taken.Escalated++
	_, eu, ep, err := escalatedFields(taken)
	if err != nil {
		return approval.EscalateResult{}, approval.E(op, errkind.Invalid, id, err)
	}
	shard, _ := id.Shard()
	nowMS, nowNS := splitTime(now)
	res, err := s.escalate.Run(ctx, s.c, []string{s.recordKey(shard, id)},
		strconv.Itoa(step), nowMS, nowNS, eu, ep, s.nonce()).Slice()
	if err != nil {
		return approval.EscalateResult{}, unavailable(op, id, err)
	}
	code := replyCode(res)
	if code == "missing" {
		s.unescalate(ctx, id)
		return approval.EscalateResult{Code: approval.EscalateMissing}, nil
	}
	if len(res) != 2 {
		return approval.EscalateResult{}, internal(op, id, "unexpected escalate reply of %d items", len(res))
	}
	rec, err := decodeReply(id, res[1])
	if err != nil {
		return approval.EscalateResult{}, internal(op, id, "%v", err)
	}
	if code != "taken" {
		// Another replica took the step, or the approval ended or
		// expired meanwhile: judge it again as it is now.
		if _, next, ok := rec.NextEscalation(); ok && rec.State == approval.StatePending && now.Before(rec.ExpiresAt) {
			ms, _ := splitTime(next)
			s.c.ZAdd(ctx, s.escKey(), redis.Z{Score: float64(ms), Member: string(id)})
			return approval.EscalateResult{Code: approval.EscalateNotDue, Approval: rec}, nil
		}
		s.unescalate(ctx, id)
		return approval.EscalateResult{Code: approval.EscalateNone, Approval: rec}, nil
	}
	st := rec.Escalation[step]
	expMS, _ := splitTime(rec.ExpiresAt)
	life := min(max(rec.ExpiresAt.Sub(s.clk.Now()), 0), maxLife)
	chat := s.chatKey(st.To.Channel, st.To.ChatID)
	pipe := s.c.Pipeline()
	if _, next, ok := rec.NextEscalation(); ok {
		ms, _ := splitTime(next)
		pipe.ZAdd(ctx, s.escKey(), redis.Z{Score: float64(ms), Member: string(id)})
	} else {
		pipe.ZRem(ctx, s.escKey(), string(id))
	}
	pipe.ZAdd(ctx, chat, redis.Z{Score: float64(expMS), Member: string(id)})
	pipe.PExpire(ctx, chat, time.Duration(durMS(life+s.retention))*time.Millisecond)
	if _, err := pipe.Exec(ctx); err != nil {
		s.log.Warn("redisstore: updating the indexes of an escalation failed", "approval_id", id, "err", err)
	}
	return approval.EscalateResult{Code: approval.EscalateTaken, Approval: rec, Step: step}, nil
}

// unescalate drops id from the escalation index; a failure only makes a
// later sweep ask again.
func (s *Store) unescalate(ctx context.Context, id approval.ID) {
	if err := s.c.ZRem(ctx, s.escKey(), string(id)).Err(); err != nil {
		s.log.Warn("redisstore: dropping an approval from the escalation index failed", "approval_id", id, "err", err)
	}
}
