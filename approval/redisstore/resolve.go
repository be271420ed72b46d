package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Resolve implements approval.Store in one round trip (the resolve
// script; a retry adds the ZADD that puts the approval back in the expiry
// index, in the same pipeline, and with ReplicaAcks the WAIT, as a claim
// does: a retry runs a tool).
func (s *Store) Resolve(ctx context.Context, id approval.ID, req approval.ResolveRequest) (approval.ClaimResult, error) {
	const op = "redisstore.Resolve"
	if err := ctxErr(ctx, op, id); err != nil {
		return approval.ClaimResult{}, err
	}
	if !req.Resolution.Valid() {
		return approval.ClaimResult{}, approval.E(op, errkind.Invalid, id, fmt.Errorf("unknown resolution %q", req.Resolution))
	}
	shard, ok := id.Shard()
	if !ok {
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	}
	var oj string
	if req.Resolution != approval.ResolveRetry {
		o := req.Outcome.Clone()
		o.Status, o.Resolution, o.DecidedBy = req.Resolution.ResolvedStatus(), req.Resolution, req.Actor
		var err error
		if oj, err = outcomeJSON(o); err != nil {
			return approval.ClaimResult{}, approval.E(op, errkind.Invalid, id, err)
		}
	}
	base := s.base(shard)
	keys := []string{base + "ap:" + string(id)}
	args := []any{string(id), string(req.Resolution), encodeHash(req.PayloadSHA256),
		string(req.Actor), string(req.Source), req.Comment, fmtTime(req.Now), oj,
		s.channel, durMS(s.retention), s.nonce(), req.Channel, req.ChatID}
	if req.Resolution == approval.ResolveRetry {
		// In the index before the claim can exist: a retry whose run
		// never ends is frozen again by the sweeper (an entry for a
		// resolution that did not win is removed at the next sweep).
		ms, _ := splitTime(req.Now)
		if err := s.c.ZAdd(ctx, s.dueKey(), redis.Z{Score: float64(ms), Member: string(id)}).Err(); err != nil {
			return approval.ClaimResult{}, unavailable(op, id, err)
		}
	}
	var res []any
	var err error
	acked := int64(-1)
	if s.acks > 0 && req.Resolution == approval.ResolveRetry {
		res, acked, err = s.claimAcked(ctx, s.resolve, keys, args)
	} else {
		res, err = s.resolve.Run(ctx, s.cmd, keys, args...).Slice()
	}
	if err != nil {
		return approval.ClaimResult{}, unavailable(op, id, err)
	}
	code := replyCode(res)
	if code == "missing" {
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	}
	if len(res) != 3 {
		return approval.ClaimResult{}, internal(op, id, "unexpected resolve reply of %d items", len(res))
	}
	ended, _ := res[1].(int64)
	a, err := decodeReply(id, res[2])
	if err != nil {
		return approval.ClaimResult{}, internal(op, id, "%v", err)
	}
	out := approval.ClaimResult{Code: approval.ClaimCode(code), Approval: a, Ended: ended == 1}
	if acked >= 0 && acked < int64(s.acks) && out.Code == approval.ClaimOK {
		out.Unreplicated = true
		s.log.Warn("redisstore: a retry's claim was not acknowledged by enough replicas in time", "approval_id", string(id),
			"acked", acked, "want", s.acks, "timeout", s.ackWait)
	}
	return out, nil
}
