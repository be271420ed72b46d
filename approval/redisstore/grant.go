package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Grants live in the slot of their session, so each operation is one
// script on one slot (Redis Cluster):
//
//	<prefix>{<shard>}:grant:<GrantID(key)>   STRING the grant's JSON, PX until it expires
//	<prefix>{<shard>}:grants:<session>       ZSET   the session's grants: GrantID scored by
//	                                                expiry (unix ms); PX until the last expires
//
// The index may name a grant whose record has expired (its TTL ended
// first): every script drops index entries past their score, and a member
// without a record is skipped.

// putGrantLua records a grant and indexes it.
//
//	KEYS[1] the grant's record   KEYS[2] the session's index
//	ARGV[1] JSON   ARGV[2] TTL in ms   ARGV[3] GrantID
//	ARGV[4] expiry in unix ms   ARGV[5] now in unix ms
const putGrantLua = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local ttl = tonumber(top[2]) - tonumber(ARGV[5])
if ttl < 1 then
  ttl = 1
end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`

// listGrantsLua returns the JSON of the session's live grants.
//
//	KEYS[1] the session's index   ARGV[1] base <prefix>{<shard>}:
//	ARGV[2] now in unix ms
const listGrantsLua = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local out = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local v = redis.call('GET', ARGV[1] .. 'grant:' .. m)
  if v then
    out[#out + 1] = v
  end
end
return out
`

// revokeLua deletes grants of the session and returns how many live ones
// it deleted.
//
//	KEYS[1] the session's index   ARGV[1] base <prefix>{<shard>}:
//	ARGV[2] now in unix ms        ARGV[3…] GrantIDs (none: all)
const revokeLua = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local ids = {}
if #ARGV > 2 then
  for i = 3, #ARGV do
    ids[#ids + 1] = ARGV[i]
  end
else
  ids = redis.call('ZRANGE', KEYS[1], 0, -1)
end
local n = 0
for _, m in ipairs(ids) do
  n = n + redis.call('DEL', ARGV[1] .. 'grant:' .. m)
  redis.call('ZREM', KEYS[1], m)
end
return n
`

// grantKeys returns the keys of a grant's record and of its session's index.
func (s *Store) grantRecordKey(sess approval.SessionKey, key string) string {
	return s.base(approval.Shard(sess)) + "grant:" + approval.GrantID(key)
}

func (s *Store) grantIndexKey(sess approval.SessionKey) string {
	return s.base(approval.Shard(sess)) + "grants:" + string(sess)
}

// PutGrant implements approval.GrantStore in one round trip.
func (s *Store) PutGrant(ctx context.Context, g approval.Grant, ttl time.Duration) error {
	const op = "redisstore.PutGrant"
	if err := ctxErr(ctx, op, g.ApprovalID); err != nil {
		return err
	}
	if ttl <= 0 {
		return nil
	}
	now := s.clk.Now()
	b, err := json.Marshal(g)
	if err != nil {
		return approval.E(op, errkind.Invalid, g.ApprovalID, err)
	}
	nowMS, _ := splitTime(now)
	ms := durMS(ttl)
	key := g.Key()
	err = s.putGrant.Run(ctx, s.cmd, []string{s.grantRecordKey(g.Session, key), s.grantIndexKey(g.Session)},
		string(b), ms, approval.GrantID(key), nowMS+ms, nowMS).Err()
	if err != nil {
		return unavailable(op, g.ApprovalID, err)
	}
	return nil
}

// GrantFor implements approval.GrantStore in one round trip (GET).
func (s *Store) GrantFor(ctx context.Context, sess approval.SessionKey, key string) (*approval.Grant, error) {
	const op = "redisstore.GrantFor"
	if err := ctxErr(ctx, op, ""); err != nil {
		return nil, err
	}
	v, err := s.cmd.Get(ctx, s.grantRecordKey(sess, key)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(op, "", err)
	}
	var g approval.Grant
	if err := json.Unmarshal([]byte(v), &g); err != nil {
		return nil, internal(op, "", "undecodable grant: %v", err)
	}
	if g.Key() != key {
		return nil, nil
	}
	return &g, nil
}

// Grants implements approval.GrantStore in one round trip.
func (s *Store) Grants(ctx context.Context, sess approval.SessionKey) ([]approval.Grant, error) {
	const op = "redisstore.Grants"
	if err := ctxErr(ctx, op, ""); err != nil {
		return nil, err
	}
	nowMS, _ := splitTime(s.clk.Now())
	vs, err := s.listGrants.Run(ctx, s.cmd, []string{s.grantIndexKey(sess)}, s.base(approval.Shard(sess)), nowMS).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(op, "", err)
	}
	out := make([]approval.Grant, 0, len(vs))
	for _, v := range vs {
		var g approval.Grant
		if err := json.Unmarshal([]byte(v), &g); err != nil {
			s.log.Error("redisstore: undecodable grant skipped", "session", string(sess), "err", err)
			continue
		}
		if g.Session != sess {
			continue
		}
		out = append(out, g)
	}
	approval.SortGrants(out)
	return out, nil
}

// Revoke implements approval.GrantStore in one round trip.
func (s *Store) Revoke(ctx context.Context, sess approval.SessionKey, keys ...string) (int, error) {
	const op = "redisstore.Revoke"
	if err := ctxErr(ctx, op, ""); err != nil {
		return 0, err
	}
	nowMS, _ := splitTime(s.clk.Now())
	args := []any{s.base(approval.Shard(sess)), nowMS}
	for _, k := range keys {
		args = append(args, approval.GrantID(k))
	}
	n, err := s.revoke.Run(ctx, s.cmd, []string{s.grantIndexKey(sess)}, args...).Int()
	if err != nil {
		return 0, unavailable(op, "", err)
	}
	return n, nil
}

// chatKey returns the key of a chat's index of approvals (ZSET: id scored
// by ExpiresAt, unix ms). The channel's length makes it unambiguous. It has
// no hash tag: Put adds to it in the same pipeline as the expiry index.
func (s *Store) chatKey(channel, chatID string) string {
	return s.prefix + "chat:" + strconv.Itoa(len(channel)) + ":" + channel + ":" + chatID
}

// ChatPending implements approval.Store in two round trips: the chat's
// index, then every record it names, pipelined; entries of approvals no
// longer pending are removed.
func (s *Store) ChatPending(ctx context.Context, channel, chatID string) ([]*approval.Approval, error) {
	const op = "redisstore.ChatPending"
	if err := ctxErr(ctx, op, ""); err != nil {
		return nil, err
	}
	key := s.chatKey(channel, chatID)
	ids, err := s.chatIDs(ctx, key)
	if err != nil {
		return nil, unavailable(op, "", err)
	}
	return s.chatRecords(ctx, key, ids)
}

// chatIDs returns the ids of a chat's index (key), after dropping the
// entries whose approval expired longer than the retention ago: they name
// records that are gone (a pending approval past its expiry is still
// pending until the sweeper or a claim ends it: the caller judges expiry
// by its clock, as with Pending). One round trip.
func (s *Store) chatIDs(ctx context.Context, key string) ([]string, error) {
	oldMS, _ := splitTime(s.clk.Now().Add(-s.retention))
	pipe := s.c.Pipeline()
	pipe.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(oldMS, 10))
	idsCmd := pipe.ZRange(ctx, key, 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	return idsCmd.Val(), nil
}

// chatRecords reads the records of ids, a chat's index (key), and returns
// the pending ones oldest first; the others are pruned from the index, by
// the next pipeline this Store sends (endedQueue).
func (s *Store) chatRecords(ctx context.Context, key string, ids []string) ([]*approval.Approval, error) {
	const op = "redisstore.ChatPending"
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		shard, ok := approval.ID(id).Shard()
		if !ok {
			continue
		}
		cmds[i] = pipe.HGetAll(ctx, s.recordKey(shard, approval.ID(id)))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(op, "", err)
	}
	var out []*approval.Approval
	var gone []any
	for i, c := range cmds {
		if c == nil || len(c.Val()) == 0 {
			gone = append(gone, ids[i])
			continue
		}
		a, err := decodeRecord(approval.ID(ids[i]), c.Val())
		if err != nil {
			s.log.Error("redisstore: undecodable record in a chat's index", "approval_id", ids[i], "err", err)
			continue
		}
		if a.State != approval.StatePending {
			gone = append(gone, ids[i])
			continue
		}
		out = append(out, a)
	}
	if len(gone) > 0 && !s.ended.addIDs(key, gone...) {
		// (Queued, they go with the next pipeline; the queue is full.)
		if err := s.c.ZRem(ctx, key, gone...).Err(); err != nil {
			s.log.Warn("redisstore: pruning a chat's index failed", "err", err)
		}
	}
	approval.SortByCreation(out)
	return out, nil
}

// ChatCode implements approval.ChatCoder: when a is the only approval in
// its chat's index (nearly always), its code is its first candidate;
// otherwise the chat's records are read, as ChatPending does. The index is
// the one this Store's Put of a read in its own round trip (chatHints), so
// the ChatCode that follows a Put, as Engine.Request's card does, costs no
// round trip when a is alone in its chat and one (the records) when it is
// not; without that, one more to read the index.
func (s *Store) ChatCode(ctx context.Context, a *approval.Approval) (string, error) {
	const op = "redisstore.ChatCode"
	if err := ctxErr(ctx, op, a.ID); err != nil {
		return "", err
	}
	place := a.DecidesIn() // the approvers' chat, when it has one
	key := s.chatKey(place.Channel, place.ChatID)
	ids, ok := s.hints.take(a.ID)
	if !ok {
		var err error
		if ids, err = s.chatIDs(ctx, key); err != nil {
			return "", unavailable(op, a.ID, err)
		}
	}
	if len(ids) == 0 || (len(ids) == 1 && ids[0] == string(a.ID)) {
		return approval.Codes([]*approval.Approval{a})[a.ID], nil
	}
	waiting, err := s.chatRecords(ctx, key, ids)
	if err != nil {
		return "", err
	}
	return approval.CodeIn(waiting, a), nil
}

var _ approval.ChatCoder = (*Store)(nil)

// hintMax+1 is the most ids of a chat's index that Put reads back: a
// chat with more pending than that is read again by ChatCode.
const hintMax = 63

// maxHints bounds chatHints: a Put whose ChatCode never comes (a store
// used without cards) leaves its hint behind, and past this many the
// hints are dropped all at once (a dropped hint costs its ChatCode one
// round trip, nothing else).
const maxHints = 4096

// chatHints keeps, per approval this Store put, the ids its Put read of
// the approval's chat index (the approvers' chat when it has one) just
// after adding it, until ChatCode takes them. The code computed from them
// is the one ChatCode would compute from the index read a moment later,
// bar an approval created earlier but put in between (which the index
// read later could miss just as well).
type chatHints struct {
	mu sync.Mutex
	m  map[approval.ID][]string
}

// put keeps ids for id; a list as long as Put reads (hintMax+1) may miss
// some, and is not kept.
func (h *chatHints) put(id approval.ID, ids []string) {
	if len(ids) > hintMax {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHints {
		h.m = make(map[approval.ID][]string)
	}
	h.m[id] = ids
}

// take returns and forgets the ids kept for id.
func (h *chatHints) take(id approval.ID) ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids, ok := h.m[id]
	if ok {
		delete(h.m, id)
	}
	return ids, ok
}
